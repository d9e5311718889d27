package cli

import (
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync"
	"testing"
)

func writeValues(t *testing.T, content string, mode os.FileMode) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "values.yaml")
	if err := os.WriteFile(p, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestValuesGet(t *testing.T) {
	f := writeValues(t, `# values
replicas: 3
flag: yes
mode: 0755
version: "1.10"
podAnnotations:
  prometheus.io/scrape: "true"
list: [a, b]
docs: |
  two
  lines
`, 0o644)
	cases := []struct {
		path, want string
		code       int
		why        string
	}{
		{"replicas", "3\n", 0, "an int"},
		{"flag", "true\n", 0, "Helm reads yes as a bool"},
		{"mode", "493\n", 0, "Helm reads 0755 as octal"},
		{"version", "\"1.10\"\n", 0, "a quoted string stays a string and prints quoted"},
		{`podAnnotations.prometheus\.io/scrape`, "\"true\"\n", 0, "an escaped dot in a key"},
		{"podAnnotations", "prometheus.io/scrape: \"true\"\n", 0, "a mapping prints as YAML"},
		{"list", "- a\n- b\n", 0, "a list prints as YAML"},
		{"list[1]", "b\n", 0, "a list item"},
		{"docs", "|\n  two\n  lines\n", 0, "a multi-line string"},
		{"missing", "", 1, "a missing path is a negative answer"},
		{"replicas.x", "", 1, "a path through a scalar names nothing"},
		{"a..b", "", 2, "a path that does not parse cannot run"},
	}
	for _, c := range cases {
		code, out, errOut := runCLI(t, "values", "get", "--file", f, "--path", c.path)
		if code != c.code || out != c.want {
			t.Errorf("%s (%s): exit %d, stdout %q, stderr %q; want exit %d, stdout %q", c.path, c.why, code, out, errOut, c.code, c.want)
		}
	}
}

func TestValuesGetExitCodes(t *testing.T) {
	bad := writeValues(t, "a: [1, 2\nb: 1\n", 0o644)
	multi := writeValues(t, "a: 1\n---\na: 2\n", 0o644)
	cases := []struct {
		args []string
		code int
		out  string
		why  string
	}{
		{[]string{"--file", bad, "--path", "b"}, 2, "", "an unparseable file cannot run"},
		{[]string{"--file", filepath.Join(t.TempDir(), "nope.yaml"), "--path", "a"}, 2, "", "an unreadable file cannot run"},
		{[]string{"--file", multi, "--path", "a"}, 1, "", "several documents and none chosen is refused"},
		{[]string{"--file", multi, "--path", "a", "--document", "1"}, 0, "2\n", "the chosen document"},
		{[]string{"--path", "a"}, 2, "", "--file is required"},
		{[]string{"--file", multi, "--path", "a", "--document", "-1"}, 2, "", "a negative document index cannot run"},
		{[]string{"--file", multi, "--path", "a", "--document", "2"}, 1, "", "no such document is refused"},
	}
	for _, c := range cases {
		code, out, _ := runCLI(t, append([]string{"values", "get"}, c.args...)...)
		if code != c.code || out != c.out {
			t.Errorf("%v (%s): exit %d, stdout %q; want %d, %q", c.args, c.why, code, out, c.code, c.out)
		}
	}
}

func TestValuesSet(t *testing.T) {
	const original = "# replicas\nreplicas: 3 # keep\nname: web\n"
	cases := []struct {
		args []string
		want string
		code int
		why  string
	}{
		{[]string{"--path", "replicas", "--value", "4"}, "# replicas\nreplicas: 4 # keep\nname: web\n", 0, "an int, comment kept"},
		{[]string{"--path", "replicas", "--value", `"4"`}, "# replicas\nreplicas: \"4\" # keep\nname: web\n", 0, "a quoted value is a string"},
		{[]string{"--path", "name", "--value", "yes"}, "# replicas\nreplicas: 3 # keep\nname: \"yes\"\n", 0, "a YAML 1.1 look-alike is quoted"},
		{[]string{"--path", "replicas", "--value", "5", "--path", "extra.key", "--value", "x"}, "# replicas\nreplicas: 5 # keep\nname: web\nextra:\n  key: x\n", 0, "several edits and a new key"},
		{[]string{"--path", "name.first", "--value", "x"}, "", 1, "a path through a scalar is refused with no output"},
		{[]string{"--path", "replicas"}, "", 2, "a --path without its --value cannot run"},
		{[]string{"--path", "a[", "--value", "1"}, "", 2, "a path that does not parse cannot run"},
	}
	for _, c := range cases {
		f := writeValues(t, original, 0o644)
		code, out, errOut := runCLI(t, append([]string{"values", "set", "--file", f}, c.args...)...)
		if code != c.code || out != c.want {
			t.Errorf("%v (%s): exit %d, stdout %q, stderr %q; want %d, %q", c.args, c.why, code, out, errOut, c.code, c.want)
		}
		if got, _ := os.ReadFile(f); string(got) != original {
			t.Errorf("%v (%s): the file changed without --in-place", c.args, c.why)
		}
	}
}

func TestValuesSetInPlace(t *testing.T) {
	f := writeValues(t, "a:\r\n  b: 1\r\n", 0o600)
	code, out, errOut := runCLI(t, "values", "set", "--file", f, "--path", "a.b", "--value", "2", "--in-place")
	if code != 0 || out != "" {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	got, err := os.ReadFile(f)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != "a:\r\n  b: 2\r\n" {
		t.Errorf("file %q: CRLF must be kept", got)
	}
	info, err := os.Stat(f)
	if err != nil {
		t.Fatal(err)
	}
	if info.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", info.Mode().Perm())
	}
	entries, _ := os.ReadDir(filepath.Dir(f))
	if len(entries) != 1 {
		t.Errorf("temporary files left behind: %v", entries)
	}
	// A refused in-place edit leaves the file as it was.
	code, _, errOut = runCLI(t, "values", "set", "--file", f, "--path", "a.b.c", "--value", "x", "--in-place")
	if code != 1 || !strings.Contains(errOut, "refused") {
		t.Errorf("refusal: exit %d, stderr %q", code, errOut)
	}
	if again, _ := os.ReadFile(f); string(again) != string(got) {
		t.Errorf("a refused edit changed the file: %q", again)
	}
}

// TestValuesGCRestored: values commands run side by side in one process turn
// the collector off and, when the last returns, give back exactly the
// settings they found.
func TestValuesGCRestored(t *testing.T) {
	f := writeValues(t, "a: 1\n", 0o644)
	const percent, limit = 77, int64(3 << 30)
	oldPercent := debug.SetGCPercent(percent)
	oldLimit := debug.SetMemoryLimit(limit)
	defer func() {
		debug.SetGCPercent(oldPercent)
		debug.SetMemoryLimit(oldLimit)
	}()
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			args := []string{"values", "get", "--file", f, "--path", "a"}
			if i%2 == 1 {
				args = []string{"values", "set", "--file", f, "--path", "a", "--value", "2"}
			}
			var out, errOut strings.Builder
			if code := Run(args, &out, &errOut); code != 0 {
				t.Errorf("%v: exit %d: %s", args, code, errOut.String())
			}
		}()
	}
	wg.Wait()
	if got := debug.SetGCPercent(percent); got != percent {
		t.Errorf("GC percent after the commands: %d, want %d", got, percent)
	}
	if got := debug.SetMemoryLimit(-1); got != limit {
		t.Errorf("memory limit after the commands: %d, want %d", got, limit)
	}
}

func TestValuesInline(t *testing.T) {
	const manifest = `apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: podinfo
spec:
  values:
    replicaCount: 2 # by hand
    env:
    - name: TZ
      value: UTC
`
	f := writeValues(t, manifest, 0o644)
	cases := []struct {
		args []string
		code int
		out  string
		why  string
	}{
		{[]string{"get", "--file", f, "--inline", "--path", "replicaCount"}, 0, "2\n", "found by kind"},
		{[]string{"get", "--file", f, "--root", "spec.values", "--path", "env[name=TZ].value"}, 0, "UTC\n", "an explicit root and a selector"},
		{[]string{"get", "--file", f, "--path", "env[name=TZ].value"}, 1, "", "without a root the manifest is the values"},
		{[]string{"get", "--file", f, "--inline", "--root", "spec.values", "--path", "a"}, 2, "", "--inline and --root together cannot run"},
		{[]string{"set", "--file", f, "--inline", "--path", "env[name=TZ].value", "--value", "CET"}, 0, strings.Replace(manifest, "value: UTC", "value: CET", 1), "a byte-minimal edit of inline values"},
		{[]string{"set", "--file", f, "--root", "spec.chart", "--path", "a", "--value", "1"}, 1, "", "a root that is not there is refused"},
	}
	for _, c := range cases {
		code, out, errOut := runCLI(t, append([]string{"values"}, c.args...)...)
		if code != c.code || out != c.out {
			t.Errorf("%v (%s): exit %d, stdout %q, stderr %q; want %d, %q", c.args, c.why, code, out, errOut, c.code, c.out)
		}
	}
}
