package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// scenarioDir is a planner scenario (internal/plan/testdata/scenarios),
// whose goldens the planner's own tests hold; here they check that the
// command prints what the planner decides.
func scenarioDir(name string) string {
	return filepath.Join("..", "..", "internal", "plan", "testdata", "scenarios", name)
}

// TestPlanPrintsTheGoldens runs backflow plan on scenarios (one with a
// --trust flag) and compares its JSON and Markdown with the planner's
// goldens; the allow's receipt passes backflow verify.
func TestPlanPrintsTheGoldens(t *testing.T) {
	for _, tc := range []struct {
		name, why string
		extra     []string
		markdown  bool
	}{
		{"seed-incident", "the seed's incident, in JSON and Markdown", nil, true},
		{"trust-ceiling", "--trust lowers what the files claim", []string{"--trust", "asserted"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := scenarioDir(tc.name)
			args := append([]string{"plan", "--repo", filepath.Join(dir, "repo"), "--observations", filepath.Join(dir, "observations"),
				"--now", "2026-06-18T12:05:00Z"}, tc.extra...)
			for _, f := range []struct {
				format, golden string
				want           bool
			}{{"json", "expected.json", true}, {"markdown", "expected.md", tc.markdown}} {
				if !f.want {
					continue
				}
				code, stdout, stderr := runCLI(t, append(args, "--format", f.format)...)
				want, err := os.ReadFile(filepath.Join(dir, f.golden))
				if err != nil {
					t.Fatal(err)
				}
				if code != 0 || stdout != string(want) {
					t.Errorf("%s: %s: exit %d, stderr %s\n--- got\n%s\n--- want\n%s", tc.why, f.format, code, stderr, stdout, want)
				}
			}
		})
	}
	dir := scenarioDir("seed-incident")
	code, stdout, _ := runCLI(t, "plan", "--repo", filepath.Join(dir, "repo"), "--observations", filepath.Join(dir, "observations"), "--format", "json")
	var out struct {
		Decisions []struct {
			Receipt json.RawMessage `json:"receipt"`
		} `json:"decisions"`
	}
	if err := json.Unmarshal([]byte(stdout), &out); code != 0 || err != nil || len(out.Decisions) != 1 {
		t.Fatalf("exit %d, %v", code, err)
	}
	// JSON is YAML: the printed receipt is a receipt file as it is.
	file := filepath.Join(t.TempDir(), "receipt.yaml")
	if err := os.WriteFile(file, out.Decisions[0].Receipt, 0o644); err != nil {
		t.Fatal(err)
	}
	repo, err := filepath.Abs(filepath.Join(dir, "repo"))
	if err != nil {
		t.Fatal(err)
	}
	t.Chdir(repo)
	if code, stdout, stderr := runCLI(t, "verify", "--policy", ".github/reverse-reconcile-policy.yaml", file); code != 0 || stdout != "verified 1 receipt(s)\n" {
		t.Errorf("backflow verify of the printed receipt: exit %d\n%s%s", code, stdout, stderr)
	}
}

// copyTree copies the scenario folder src to a temporary folder, so a test
// can break one file of it.
func copyTree(t *testing.T, src string) string {
	t.Helper()
	dst := t.TempDir()
	err := filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

func TestPlanExitCodes(t *testing.T) {
	seed := scenarioDir("seed-incident")
	write := func(dir, rel, text string) {
		if err := os.WriteFile(filepath.Join(dir, filepath.FromSlash(rel)), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		name, why string
		// prepare returns the repo and observations folders to plan.
		prepare func(t *testing.T) (repo, obs string)
		extra   []string
		code    int
		// stdout, when set, must appear in the JSON output.
		stdout string
	}{
		{"valid", "the seed's incident plans", func(t *testing.T) (string, string) {
			return filepath.Join(seed, "repo"), filepath.Join(seed, "observations")
		}, nil, 0, `"outcome": "allow"`},
		{"bad format", "an unknown --format is a usage error", func(t *testing.T) (string, string) {
			return filepath.Join(seed, "repo"), filepath.Join(seed, "observations")
		}, []string{"--format", "yaml"}, 2, ""},
		{"bad trust", "--trust takes an attribution level", func(t *testing.T) (string, string) {
			return filepath.Join(seed, "repo"), filepath.Join(seed, "observations")
		}, []string{"--trust", "total"}, 2, ""},
		{"missing observations", "a PATH that does not exist cannot be read", func(t *testing.T) (string, string) {
			return filepath.Join(seed, "repo"), filepath.Join(seed, "no-such-folder")
		}, nil, 2, ""},
		{"no config", "a checkout without .github/backflow.yaml is unreadable", func(t *testing.T) (string, string) {
			return t.TempDir(), filepath.Join(seed, "observations")
		}, nil, 2, ""},
		{"invalid config", "an unknown key in the repo config", func(t *testing.T) (string, string) {
			dir := copyTree(t, seed)
			write(dir, "repo/.github/backflow.yaml", "version: 1\npolicy: .github/reverse-reconcile-policy.yaml\nbogus: true\n")
			return filepath.Join(dir, "repo"), filepath.Join(dir, "observations")
		}, nil, 2, ""},
		{"invalid policy", "a policy whose default is not deny", func(t *testing.T) (string, string) {
			dir := copyTree(t, seed)
			write(dir, "repo/.github/reverse-reconcile-policy.yaml", "apiVersion: backflow.dev/v1alpha1\nkind: ReverseReconcilePolicy\nmetadata: {name: p}\nspec:\n  default: allow\n  rules: []\n")
			return filepath.Join(dir, "repo"), filepath.Join(dir, "observations")
		}, nil, 2, ""},
		{"missing policy", "the policy the config names does not exist", func(t *testing.T) (string, string) {
			dir := copyTree(t, seed)
			if err := os.Remove(filepath.Join(dir, "repo", ".github", "reverse-reconcile-policy.yaml")); err != nil {
				t.Fatal(err)
			}
			return filepath.Join(dir, "repo"), filepath.Join(dir, "observations")
		}, nil, 2, ""},
		{"malformed observation", "a document that does not parse is an error in the output, the others still plan", func(t *testing.T) (string, string) {
			dir := copyTree(t, seed)
			write(dir, "observations/broken.yaml", "apiVersion: backflow.dev/v1alpha1\nkind: ObjectStateObserved\nspec: {cluster: x}\n")
			return filepath.Join(dir, "repo"), filepath.Join(dir, "observations")
		}, nil, 0, `broken.yaml:`},
		{"missing values file", "the unit's values cannot be read: its decision fails closed", func(t *testing.T) (string, string) {
			dir := copyTree(t, seed)
			if err := os.Remove(filepath.Join(dir, "repo", "envs", "prod-us-east", "redis", "values.yaml")); err != nil {
				t.Fatal(err)
			}
			return filepath.Join(dir, "repo"), filepath.Join(dir, "observations")
		}, nil, 0, `"outcome": "deny"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			repo, obs := c.prepare(t)
			args := append([]string{"plan", "--repo", repo, "--observations", obs, "--format", "json"}, c.extra...)
			code, stdout, stderr := runCLI(t, args...)
			if code != c.code || !strings.Contains(stdout, c.stdout) {
				t.Errorf("%s: exit %d (want %d)\nstdout %s\nstderr %s", c.why, code, c.code, stdout, stderr)
			}
			if code == 2 && stderr == "" {
				t.Errorf("%s: exit 2 without a message on stderr", c.why)
			}
		})
	}
}

func TestPlanTableFormat(t *testing.T) {
	seed := scenarioDir("seed-incident")
	code, stdout, _ := runCLI(t, "plan", "--repo", filepath.Join(seed, "repo"), filepath.Join(seed, "observations"))
	if code != 0 || !strings.Contains(stdout, "redis  prod-us-east  apps/v1|StatefulSet|redis|redis-replicas  allow") {
		t.Errorf("exit %d, table:\n%s", code, stdout)
	}
}
