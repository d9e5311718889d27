package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/backflow-dev/backflow/internal/forge/forgetest"
)

// configRepo copies the redis example repository into a temporary checkout.
func configRepo(t *testing.T) string {
	t.Helper()
	src := filepath.Join("..", "..", "internal", "repoconfig", "testdata", "repo")
	dst := t.TempDir()
	forgetest.WriteFiles(t, dst, forgetest.ReadFiles(t, src))
	return dst
}

func TestConfigSchema(t *testing.T) {
	code, out, _ := runCLI(t, "config", "schema")
	var s map[string]any
	if code != 0 || json.Unmarshal([]byte(out), &s) != nil || s["properties"] == nil {
		t.Fatalf("config schema: exit %d, output %.200q", code, out)
	}
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		why        string
		change     func(dir string) error
		code       int
		stdout     string
		stderr     string
		noRepoFlag bool
	}{
		{
			why:    "the redis example is valid",
			change: func(string) error { return nil },
			code:   0,
			stdout: ".github/backflow.yaml: valid (environments: 2, units: 2",
		},
		{
			why: "a missing valuePath warns on stderr and still exits 0",
			change: func(dir string) error {
				return os.WriteFile(filepath.Join(dir, "envs/prod-eu-west/redis/values.yaml"), []byte("architecture: replication\n"), 0o644)
			},
			code:   0,
			stderr: "warning: .github/reverse-reconcile-policy.yaml: spec.rules[0].mayAccept[0]: valuePath replica.replicaCount is not in the values of units[1]",
		},
		{
			why: "an invalid config exits 1 and names the place",
			change: func(dir string) error {
				p := filepath.Join(dir, ".github/backflow.yaml")
				data, _ := os.ReadFile(p)
				return os.WriteFile(p, []byte(strings.Replace(string(data), "valuesFiles:", "valuesFile:", 1)), 0o644)
			},
			code:   1,
			stderr: ".github/backflow.yaml: units[0].valuesFile: unknown key",
		},
		{
			why: "the summary counts every invalid place listed",
			change: func(dir string) error {
				p := filepath.Join(dir, ".github/backflow.yaml")
				data, _ := os.ReadFile(p)
				return os.WriteFile(p, []byte(strings.Replace(string(data), "clusters: [prod-us-east-1]", "clusters: [012, true]", 1)), 0o644)
			},
			code:   1,
			stderr: "clusters[1]: want a string\nbackflow: .github/backflow.yaml: invalid (problems: 2)",
		},
		{
			why:    "a missing values file exits 1",
			change: func(dir string) error { return os.Remove(filepath.Join(dir, "envs/prod-us-east/redis/values.yaml")) },
			code:   1,
			stderr: "envs/prod-us-east/redis/values.yaml does not exist",
		},
		{
			why: "a values file both environments read is listed with its readers",
			change: func(dir string) error {
				p := filepath.Join(dir, ".github/backflow.yaml")
				data, _ := os.ReadFile(p)
				if err := os.MkdirAll(filepath.Join(dir, "base"), 0o755); err != nil {
					return err
				}
				if err := os.WriteFile(filepath.Join(dir, "base/values.yaml"), []byte("architecture: replication\n"), 0o644); err != nil {
					return err
				}
				return os.WriteFile(p, []byte(strings.ReplaceAll(string(data), "    valuesFiles:\n      - envs/", "    valuesFiles:\n      - base/values.yaml\n      - envs/")), 0o644)
			},
			code:   0,
			stdout: "shared: base/values.yaml: read by redis (prod-us-east), redis (prod-eu-west)\n",
		},
		{
			why:    "no config at all: it could not run",
			change: func(dir string) error { return os.Remove(filepath.Join(dir, ".github/backflow.yaml")) },
			code:   2,
			stderr: ".github/backflow.yaml: file does not exist",
		},
	}
	for _, tt := range tests {
		dir := configRepo(t)
		if err := tt.change(dir); err != nil {
			t.Fatal(err)
		}
		code, out, errOut := runCLI(t, "config", "validate", "--repo", dir)
		if code != tt.code || !strings.Contains(out, tt.stdout) || !strings.Contains(errOut, tt.stderr) {
			t.Errorf("%s: exit %d (want %d)\nstdout %q\nstderr %q", tt.why, code, tt.code, out, errOut)
		}
	}
	// why: a directory that does not exist cannot be checked.
	if code, _, _ := runCLI(t, "config", "validate", "--repo", filepath.Join(t.TempDir(), "none")); code != 2 {
		t.Errorf("missing repo: exit %d, want 2", code)
	}
	// why: validate takes no arguments; DIR goes in --repo.
	if code, _, _ := runCLI(t, "config", "validate", "dir"); code != 2 {
		t.Errorf("stray argument: exit %d, want 2", code)
	}
}
