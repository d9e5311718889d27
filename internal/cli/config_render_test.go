package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/backflow-dev/backflow/internal/forge/forgetest"
)

// chartRepo is the redis example repository with the real bitnami/redis
// chart vendored at charts/redis and named by both units.
func chartRepo(t *testing.T) string {
	t.Helper()
	dir := configRepo(t)
	src := filepath.Join("..", "..", "internal", "demo", "sample", "charts", "redis")
	forgetest.WriteFiles(t, filepath.Join(dir, "charts", "redis"), forgetest.ReadFiles(t, src))
	replaceIn(t, filepath.Join(dir, ".github", "backflow.yaml"), `      version: "25.5.3"`, `      version: "23.1.1"`+"\n      path: charts/redis")
	return dir
}

func replaceIn(t *testing.T, path, old, replacement string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), old) {
		t.Fatalf("broken fixture: %q not in %s", old, path)
	}
	if err := os.WriteFile(path, []byte(strings.ReplaceAll(string(data), old, replacement)), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestConfigValidateRendersCharts(t *testing.T) {
	const entry = "spec.rules[0].mayAccept[0]"
	cases := []struct {
		name, why string
		valuePath string
		code      int
		want      []string
	}{
		{"right mapping", "replica.replicaCount moves the replicas StatefulSet's spec.replicas and nothing else",
			"replica.replicaCount", 0, nil},
		{"wrong mapping", "master.count does not move the replicas StatefulSet, and moves the master StatefulSet, which the entry does not authorize",
			"master.count", 1, []string{
				entry + " (master.count -> spec.replicas): unit redis (prod-us-east): also moves apps/v1|StatefulSet|redis|redis-master spec.replicas, which the entry does not authorize",
				entry + " (master.count -> spec.replicas): unit redis (prod-us-east): does not move spec.replicas on apps/v1|StatefulSet|redis|redis-replicas",
			}},
	}
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			dir := chartRepo(t)
			replaceIn(t, filepath.Join(dir, ".github", "reverse-reconcile-policy.yaml"), "valuePath: replica.replicaCount", "valuePath: "+tt.valuePath)
			code, out, errOut := runCLI(t, "config", "validate", "--repo", dir)
			if code != tt.code {
				t.Fatalf("%s: exit %d, stdout %q, stderr %q", tt.why, code, out, errOut)
			}
			for _, w := range tt.want {
				if !strings.Contains(errOut, ".github/reverse-reconcile-policy.yaml: "+w+"\n") {
					t.Errorf("%s: stderr lacks %q:\n%s", tt.why, w, errOut)
				}
			}
		})
	}
}

// A chart file that is not YAML stops the check with exit 2 naming it; a
// chart that is YAML but not a valid chart is a problem (exit 1).
func TestConfigValidateUnparseableChart(t *testing.T) {
	dir := chartRepo(t)
	writeFile(t, dir, "charts/redis/values.yaml", "replica: [\n")
	code, out, errOut := runCLI(t, "config", "validate", "--repo", dir)
	if code != 2 || out != "" || !strings.Contains(errOut, "chart charts/redis: values.yaml: ") || !strings.Contains(errOut, "line 1") {
		t.Errorf("a chart values.yaml that is not YAML: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	dir = chartRepo(t)
	writeFile(t, dir, "charts/redis/Chart.yaml", "apiVersion: v2\nversion: 1.0.0\n")
	if code, _, errOut := runCLI(t, "config", "validate", "--repo", dir); code != 1 || !strings.Contains(errOut, "chart charts/redis") {
		t.Errorf("a Chart.yaml without a name: exit %d, stderr %q", code, errOut)
	}
}

func TestMapCommand(t *testing.T) {
	// why: the command prints the driving value path first, with what else
	// it moves, and the cost.
	code, out, errOut := runCLI(t, "map", "--chart", filepath.Join("..", "..", "testdata", "charts", "podinfo"),
		"--object", "apps/v1|Deployment|default|podinfo", "--field", "spec.replicas", "--release", "podinfo")
	if code != 0 {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	lines := strings.Split(out, "\n")
	if len(lines) < 4 || !strings.HasPrefix(lines[2], "1     replicaCount  1 -> 2 (direct)  nothing else") || !strings.Contains(out, "\ncost: 90 scalar leaves, ") {
		t.Errorf("output:\n%s", out)
	}
	code, _, errOut = runCLI(t, "map", "--chart", filepath.Join("..", "..", "testdata", "charts", "podinfo"),
		"--object", "apps/v1|Deployment|default|nothing", "--field", "spec.replicas")
	if code != 2 || !strings.Contains(errOut, "does not render apps/v1|Deployment|default|nothing") {
		t.Errorf("an object the chart does not render: exit %d, stderr %q", code, errOut)
	}
}

func TestMapCommandChartSources(t *testing.T) {
	// why: a fetched chart is pinned to one version, and a chart folder has
	// none to give; a chart that cannot be fetched is a usage error naming it.
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--chart", "oci://127.0.0.1:1/charts/podinfo"}, "--version is required with --repo or an oci:// chart"},
		{[]string{"--repo", "http://127.0.0.1:1/charts", "--chart", "podinfo"}, "--version is required"},
		{[]string{"--chart", filepath.Join("..", "..", "testdata", "charts", "podinfo"), "--version", "6.14.1"}, "--version goes with --repo or an oci:// chart"},
		{[]string{"--chart", "oci://127.0.0.1:1/charts/podinfo", "--version", "6.14.1"}, "cannot fetch chart oci://127.0.0.1:1/charts/podinfo:6.14.1"},
	} {
		t.Setenv("XDG_CACHE_HOME", t.TempDir())
		args := append([]string{"map", "--object", "apps/v1|Deployment|default|podinfo", "--field", "spec.replicas"}, tc.args...)
		if code, _, errOut := runCLI(t, args...); code != 2 || !strings.Contains(errOut, tc.want) {
			t.Errorf("%v: exit %d, stderr %q, want 2 and %q", tc.args, code, errOut, tc.want)
		}
	}
}
