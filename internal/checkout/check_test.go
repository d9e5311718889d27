package checkout

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/backflow-dev/backflow/internal/forge/forgetest"
	"github.com/backflow-dev/backflow/internal/repoconfig"
	"github.com/backflow-dev/backflow/internal/yamlnode"
)

// copyRepo copies testdata/repo into a temporary checkout the test may change.
func copyRepo(t *testing.T) string {
	t.Helper()
	dst := t.TempDir()
	forgetest.WriteFiles(t, dst, forgetest.ReadFiles(t, filepath.Join("testdata", "repo")))
	return dst
}

func TestCheckRedisRepository(t *testing.T) {
	rep, err := Check(copyRepo(t))
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() || len(rep.Warnings) != 0 || rep.Policy == nil || rep.Config == nil {
		t.Errorf("the redis repository must check clean: problems %v, warnings %v", rep.Problems, rep.Warnings)
	}
}

func TestCheckFindings(t *testing.T) {
	tests := []struct {
		why      string
		change   func(t *testing.T, dir string)
		problem  string
		warning  string
		runError error
		// runMessage is part of the run error's message.
		runMessage string
	}{
		{
			why:     "a values file that does not exist",
			change:  func(t *testing.T, dir string) { os.Remove(filepath.Join(dir, "envs/prod-eu-west/redis/values.yaml")) },
			problem: ".github/backflow.yaml: units[1].valuesFiles[0]: envs/prod-eu-west/redis/values.yaml does not exist",
		},
		{
			why: "a values file that is not YAML stops the check, naming the file",
			change: func(t *testing.T, dir string) {
				writeFile(t, dir, "envs/prod-eu-west/redis/values.yaml", "replica: [\n")
			},
			runError:   yamlnode.ErrUnparseable,
			runMessage: "units[1].valuesFiles[0]: envs/prod-eu-west/redis/values.yaml:1:",
		},
		{
			why: "a values file that is there but cannot be read stops the check",
			change: func(t *testing.T, dir string) {
				p := filepath.Join(dir, "envs/prod-eu-west/redis/values.yaml")
				os.Rename(p, p+".real")
				if err := os.Symlink(p+".real", p); err != nil {
					t.Fatal(err)
				}
			},
			runError:   ErrUnreadableFile,
			runMessage: "units[1].valuesFiles[0]: envs/prod-eu-west/redis/values.yaml: is or passes through a symlink",
		},
		{
			why: "a values file that is YAML but not a mapping is a problem",
			change: func(t *testing.T, dir string) {
				writeFile(t, dir, "envs/prod-eu-west/redis/values.yaml", "- 1\n")
			},
			problem: "units[1].valuesFiles[0]: envs/prod-eu-west/redis/values.yaml: values must be a mapping",
		},
		{
			why: "a policy valuePath the values do not hold yet is a warning, not an error",
			change: func(t *testing.T, dir string) {
				writeFile(t, dir, "envs/prod-eu-west/redis/values.yaml", "architecture: replication\n")
			},
			warning: ".github/reverse-reconcile-policy.yaml: spec.rules[0].mayAccept[0]: valuePath replica.replicaCount is not in the values of units[1] (redis in prod-eu-west) yet",
		},
		{
			why: "a policy role nobody holds is a warning",
			change: func(t *testing.T, dir string) {
				replaceIn(t, filepath.Join(dir, ".github/backflow.yaml"), "platform-sre:", "platform-dba:")
			},
			warning: "role platform-sre is not in .github/backflow.yaml roles, so nobody holds it",
		},
		{
			why:     "a missing policy is a problem",
			change:  func(t *testing.T, dir string) { os.Remove(filepath.Join(dir, ".github/reverse-reconcile-policy.yaml")) },
			problem: ".github/backflow.yaml: policy: .github/reverse-reconcile-policy.yaml: file does not exist",
		},
		{
			why: "an invalid policy is a problem",
			change: func(t *testing.T, dir string) {
				replaceIn(t, filepath.Join(dir, ".github/reverse-reconcile-policy.yaml"), "default: deny", "default: allow")
			},
			problem: ".github/reverse-reconcile-policy.yaml: spec.default",
		},
		{
			why: "an invalid config is a problem, reported with its paths",
			change: func(t *testing.T, dir string) {
				replaceIn(t, filepath.Join(dir, ".github/backflow.yaml"), "valuesFiles:", "valuesFile:")
			},
			problem: ".github/backflow.yaml: units[0].valuesFile: unknown key",
		},
		{
			why:      "a checkout without a config cannot be checked",
			change:   func(t *testing.T, dir string) { os.Remove(filepath.Join(dir, ".github/backflow.yaml")) },
			runError: repoconfig.ErrUnreadable,
		},
		{
			why: "a symlinked config is refused",
			change: func(t *testing.T, dir string) {
				p := filepath.Join(dir, ".github/backflow.yaml")
				os.Rename(p, p+".real")
				if err := os.Symlink(p+".real", p); err != nil {
					t.Fatal(err)
				}
			},
			runError: repoconfig.ErrSymlink,
		},
	}
	for _, tt := range tests {
		dir := copyRepo(t)
		tt.change(t, dir)
		rep, err := Check(dir)
		if tt.runError != nil {
			if !errors.Is(err, tt.runError) || !strings.Contains(fmt.Sprint(err), tt.runMessage) {
				t.Errorf("%s: error %v, want %v with %q", tt.why, err, tt.runError, tt.runMessage)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", tt.why, err)
		}
		if tt.problem != "" && !anyContains(errorStrings(rep.Problems), tt.problem) {
			t.Errorf("%s: problems %v, want %q", tt.why, rep.Problems, tt.problem)
		}
		if tt.problem == "" && !rep.OK() {
			t.Errorf("%s: unexpected problems %v", tt.why, rep.Problems)
		}
		if tt.warning != "" && !anyContains(rep.Warnings, tt.warning) {
			t.Errorf("%s: warnings %v, want %q", tt.why, rep.Warnings, tt.warning)
		}
	}
	if _, err := Check(filepath.Join(t.TempDir(), "nope")); !errors.Is(err, ErrNoRepository) {
		t.Errorf("why: a missing checkout cannot be checked: %v", err)
	}
}

func anyContains(list []string, want string) bool {
	for _, s := range list {
		if strings.Contains(s, want) {
			return true
		}
	}
	return false
}

func TestCheckCountsEveryProblem(t *testing.T) {
	tests := []struct {
		why    string
		file   string
		old    string
		new    string
		wantN  int
		prefix string
	}{
		{"two invalid places in the config are two problems, each named by its file", ".github/backflow.yaml", "clusters: [prod-us-east-1]", "clusters: [012, true]", 2, repoconfig.Path + ": environments.prod-us-east.clusters["},
		{"two invalid places in the policy are two problems, each named by its file", ".github/reverse-reconcile-policy.yaml", "  default: deny", "  default: maybe\n  colour: red", 2, ".github/reverse-reconcile-policy.yaml: spec."},
	}
	for _, tt := range tests {
		dir := copyRepo(t)
		replaceIn(t, filepath.Join(dir, tt.file), tt.old, tt.new)
		rep, err := Check(dir)
		if err != nil {
			t.Fatalf("%s: %v", tt.why, err)
		}
		if len(rep.Problems) != tt.wantN {
			t.Errorf("%s: %d problems, want %d: %q", tt.why, len(rep.Problems), tt.wantN, errorStrings(rep.Problems))
		}
		for _, p := range errorStrings(rep.Problems) {
			if !strings.HasPrefix(p, tt.prefix) || strings.Contains(p, "\n") {
				t.Errorf("%s: problem %q: want one line starting %q", tt.why, p, tt.prefix)
			}
		}
	}
}

func replaceIn(t *testing.T, path, old, repl string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), old) {
		t.Fatalf("%s does not contain %q", path, old)
	}
	writeFile(t, filepath.Dir(path), filepath.Base(path), strings.Replace(string(data), old, repl, 1))
}

func errorStrings(errs []error) []string {
	out := make([]string, len(errs))
	for i, e := range errs {
		out[i] = e.Error()
	}
	return out
}
