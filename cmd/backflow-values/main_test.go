package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func runCLI(args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	code = run(args, &out, &errb)
	return code, out.String(), errb.String()
}

// TestSameAsBackflowValues runs the commands of `backflow values` through
// this binary's root: the same output and exit codes, errors prefixed with
// this binary's name.
func TestSameAsBackflowValues(t *testing.T) {
	const original = "# replicas\nreplicas: 3 # keep\nname: web\nflag: yes\n"
	f := filepath.Join(t.TempDir(), "values.yaml")
	if err := os.WriteFile(f, []byte(original), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		args      []string
		code      int
		out, errs string
		why       string
	}{
		{[]string{"set", "--file", f, "--path", "replicas", "--value", "4"}, 0, "# replicas\nreplicas: 4 # keep\nname: web\nflag: yes\n", "", "an edit prints the new file"},
		{[]string{"set", "--file", f, "--path", "name", "--value", "yes"}, 0, "# replicas\nreplicas: 3 # keep\nname: \"yes\"\nflag: yes\n", "", "a YAML 1.1 look-alike is quoted"},
		{[]string{"get", "--file", f, "--path", "flag"}, 0, "true\n", "", "get reads as Helm does"},
		{[]string{"set", "--file", f, "--path", "name.first", "--value", "x"}, 1, "", "backflow-values: " + f + ": refused:", "a refused edit is a negative answer"},
		{[]string{"get", "--file", f, "--path", "missing"}, 1, "", "backflow-values: " + f + ":", "a missing path is a negative answer"},
		{[]string{"set", "--file", f, "--path", "replicas"}, 2, "", "backflow-values: values set: 1 --path but 0 --value", "a --path without its --value cannot run"},
		{[]string{"set", "--bogus"}, 2, "", "backflow-values: set: unknown flag: --bogus\nUsage: backflow-values set ", "an unknown flag cannot run, and the usage says how"},
		{[]string{}, 2, "", "backflow-values: values: choose a subcommand", "no subcommand cannot run"},
	}
	for _, c := range cases {
		code, out, errs := runCLI(c.args...)
		if code != c.code || out != c.out || !strings.HasPrefix(errs, c.errs) || (c.errs == "") != (errs == "") {
			t.Errorf("%v (%s): exit %d, stdout %q, stderr %q; want %d, %q, stderr starting %q", c.args, c.why, code, out, errs, c.code, c.out, c.errs)
		}
	}
	if got, _ := os.ReadFile(f); string(got) != original {
		t.Errorf("the file changed without --in-place: %q", got)
	}
}

func TestSetInPlace(t *testing.T) {
	f := filepath.Join(t.TempDir(), "values.yaml")
	if err := os.WriteFile(f, []byte("a:\n  b: 1 # kept\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, out, errs := runCLI("set", "--file", f, "--path", "a.b", "--value", "2", "--in-place"); code != 0 || out != "" {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errs)
	}
	got, err := os.ReadFile(f)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != "a:\n  b: 2 # kept\n" {
		t.Errorf("file %q", got)
	}
}
