package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// Every command keeps the contract: 2 and nothing on stdout for a wrong
// argument count (the message names the command and its usage), a wrong
// flag, or an input that cannot be read or parsed (the message names the
// path as given).
func TestExitCodeContract(t *testing.T) {
	dir := t.TempDir()
	bad := writeFile(t, dir, "bad.yaml", "a: [\n")
	badRepo := filepath.Join(dir, "badrepo")
	if err := os.MkdirAll(filepath.Join(badRepo, ".github"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, badRepo, ".github/backflow.yaml", "version: [\n")
	missing := filepath.Join(dir, "nonexistent")
	// A checkout whose repo config and policy are valid but one of whose
	// values files is not YAML, and one whose values file is valid but a
	// mapping it is not.
	badValues := copyTree(t, filepath.Join(scenarioDir("grouping"), "repo"))
	writeFile(t, badValues, "envs/prod-eu-west/redis/values.yaml", "replica: [\n")
	listValues := copyTree(t, filepath.Join(scenarioDir("grouping"), "repo"))
	writeFile(t, listValues, "envs/prod-eu-west/redis/values.yaml", "- 1\n")
	groupingObs := filepath.Join(scenarioDir("grouping"), "observations")
	seed := filepath.Join("..", "..", "testdata", "seed")
	scenario := scenarioDir("grouping")

	for _, tc := range []struct {
		args []string
		code int
		// stderr must hold each of these.
		want []string
	}{
		{[]string{"no-such-command"}, 2, []string{`unknown command "no-such-command"`}},
		{[]string{"version", "extra"}, 2, []string{"version: accepts 0 arg(s)", "Usage: backflow version"}},
		{[]string{"version", "--bogus"}, 2, []string{"version: unknown flag: --bogus", "Usage: backflow version"}},
		{[]string{"--log-level", "loud", "version"}, 2, []string{"--log-level"}},
		{[]string{"version", "--log-format", "xml"}, 2, []string{"--log-format"}},
		{[]string{"policy", "check"}, 2, []string{"policy check: accepts 1 arg(s), received 0", "Usage: backflow policy check POLICY"}},
		{[]string{"policy", "check", bad}, 2, []string{bad}},
		{[]string{"policy", "check", missing}, 2, []string{missing}},
		{[]string{"argocd", "ignore-differences", "extra"}, 2, []string{"argocd ignore-differences: accepts 0 arg(s)"}},
		{[]string{"argocd", "ignore-differences", "--repo", badRepo}, 2, []string{badRepo, ".github/backflow.yaml"}},
		{[]string{"argocd", "ignore-differences", "--repo", missing}, 2, []string{missing}},
		{[]string{"policy", "explain", "--policy", bad, "--role", "r", "--environment", "e", "--object", "o", "--field", "f", "--value-path", "v"}, 2, []string{bad}},
		{[]string{"receipts", "table"}, 2, []string{"receipts table: requires at least 1 arg(s)", "Usage: backflow receipts table RECEIPT..."}},
		{[]string{"receipts", "table", bad}, 2, []string{bad}},
		{[]string{"verify"}, 2, []string{"verify: requires at least 1 arg(s)"}},
		{[]string{"verify", "--policy", bad, bad}, 2, []string{bad}},
		{[]string{"config", "validate", "--repo", missing}, 2, []string{missing}},
		{[]string{"config", "validate", "--repo", badRepo}, 2, []string{badRepo, "line 1"}},
		{[]string{"config", "validate", "--repo", badValues}, 2, []string{badValues, "envs/prod-eu-west/redis/values.yaml:1"}},
		{[]string{"config", "validate", "--repo", listValues}, 1, []string{"envs/prod-eu-west/redis/values.yaml: values must be a mapping"}},
		{[]string{"plan", "--repo", badValues, "--observations", groupingObs}, 2, []string{"envs/prod-eu-west/redis/values.yaml:1"}},
		{[]string{"config", "validate", "extra"}, 2, []string{"config validate: accepts 0 arg(s)", "Usage: backflow config validate"}},
		{[]string{"config", "schema", "--kind", "nope"}, 2, []string{"--kind"}},
		{[]string{"plan", "--repo", missing, "--observations", bad}, 2, []string{missing}},
		{[]string{"plan", "--repo", filepath.Join(scenario, "repo"), "--observations", bad}, 2, []string{bad, "line 1"}},
		{[]string{"plan", "--repo", filepath.Join(scenario, "repo"), "--observations", missing}, 2, []string{missing}},
		{[]string{"plan", "--repo", filepath.Join(seed, "repo")}, 2, []string{"--observations is required"}},
		{[]string{"run", "--config", missing}, 2, []string{missing}},
		{[]string{"run", "--once", "--config", bad}, 2, []string{"bad.yaml"}},
		{[]string{"run", "extra"}, 2, []string{"run: accepts 0 arg(s)"}},
		{[]string{"serve", "--config", missing}, 2, []string{missing}},
		{[]string{"serve", "--config", bad}, 2, []string{"bad.yaml"}},
		{[]string{"values", "get", "--file", missing, "--path", "a"}, 2, []string{missing}},
		{[]string{"values", "get", "--file", bad, "--path", "a"}, 2, []string{bad}},
		{[]string{"values", "get", "x"}, 2, []string{"values get: accepts 0 arg(s)", "Usage: backflow values get"}},
		{[]string{"map", "--chart", missing, "--object", "v1|ConfigMap|ns|n", "--field", "data.x"}, 2, []string{missing}},
		{[]string{"localhub", "--listen", "127.0.0.1:0", "--dir", dir, "--repo", "o/r=" + missing}, 2, []string{missing}},
		{[]string{"localhub", "--listen", "127.0.0.1:0", "--dir", dir, "--confighub-unit", "s/u=" + missing}, 2, []string{missing}},
		{[]string{"localhub", "--listen", "127.0.0.1:0", "--dir", dir, "--confighub-unit", "s/u=" + bad}, 2, []string{bad}},
		{[]string{"demo", "extra"}, 2, []string{"demo: accepts 0 arg(s)"}},
		{[]string{"version"}, 0, nil},
		{[]string{"--version"}, 0, nil},
		{[]string{"config", "schema", "--kind", "bot"}, 0, nil},
	} {
		code, stdout, stderr := runCLI(t, tc.args...)
		if code != tc.code {
			t.Errorf("%v: exit %d, want %d (stderr %q)", tc.args, code, tc.code, stderr)
			continue
		}
		if code == 2 && stdout != "" {
			t.Errorf("%v: exit 2 with stdout %.200q: a command that could not run prints nothing there", tc.args, stdout)
		}
		for _, w := range tc.want {
			if !strings.Contains(stderr, w) {
				t.Errorf("%v: stderr %q does not name %q", tc.args, stderr, w)
			}
		}
	}
}

// run does one cycle without --once, and accepts --once as before: both
// get as far as reading the config.
func TestRunWithoutOnce(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "nope.yaml")
	for _, args := range [][]string{{"run", "--config", missing}, {"run", "--once", "--config", missing}} {
		if code, _, stderr := runCLI(t, args...); code != 2 || !strings.Contains(stderr, missing) || strings.Contains(stderr, "--once") {
			t.Errorf("%v: exit %d, stderr %q: want the config's error", args, code, stderr)
		}
	}
}

// Every command has long help that says more than its one-line summary.
func TestEveryCommandHasLongHelp(t *testing.T) {
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Hidden || c.Name() == "help" || c.Name() == "completion" {
			return
		}
		if len(strings.TrimSpace(c.Long)) <= len(c.Short) {
			t.Errorf("%q has no long help", c.CommandPath())
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(newRootCmd())
}

// --version prints what the version command prints.
func TestVersionFlag(t *testing.T) {
	_, a, _ := runCLI(t, "version")
	_, b, _ := runCLI(t, "--version")
	if a == "" || a != b {
		t.Errorf("version %q, --version %q", a, b)
	}
}
