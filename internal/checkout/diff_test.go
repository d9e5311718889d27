package checkout

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestReadDiff(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	repo := copyCheckout(t)
	const policy = ".github/reverse-reconcile-policy.yaml"
	const values = "envs/prod-us-east/redis/values.yaml"
	gitIn(t, repo, "init", "-q", "-b", "main")
	gitIn(t, repo, "add", "-A")
	gitIn(t, repo, "commit", "-q", "-m", "base")
	branch := func(name, from string, files map[string]string, links map[string]string) {
		gitIn(t, repo, "checkout", "-q", "-b", name, from)
		for p, data := range files {
			if err := os.MkdirAll(filepath.Dir(filepath.Join(repo, p)), 0o755); err != nil {
				t.Fatal(err)
			}
			writeFile(t, repo, p, data)
		}
		for p, target := range links {
			if err := os.MkdirAll(filepath.Dir(filepath.Join(repo, p)), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(target, filepath.Join(repo, p)); err != nil {
				t.Fatal(err)
			}
		}
		gitIn(t, repo, "add", "-A")
		gitIn(t, repo, "commit", "-q", "-m", name)
	}
	branch("notes", "main", map[string]string{"envs/notes.txt": "no receipt\n"}, nil)
	branch("receipt", "main", map[string]string{".backflow/receipts/prod/redis.yaml": "receipt\n", values: "replicaCount: 4\n"}, nil)
	branch("link", "main", nil, map[string]string{".backflow/receipts/x.yaml": "../" + values})
	branch("big", "main", map[string]string{"envs/big.yaml": strings.Repeat("x", MaxDiffFile+1)}, nil)
	branch("badpolicy", "main", map[string]string{policy: "version: [\n"}, nil)
	// main moves on after the receipt branch: its change is not the pull request's.
	gitIn(t, repo, "checkout", "-q", "main")
	writeFile(t, repo, "envs/later.txt", "later\n")
	gitIn(t, repo, "add", "-A")
	gitIn(t, repo, "commit", "-q", "-m", "later")

	cases := []struct {
		why, base, head string
		changed         []string
		files           int
		claims          bool
		special         int
		policyErr       bool
		wantErr         error
		errText         string
	}{
		{why: "a change outside the receipts folder claims nothing", base: "main", head: "notes", changed: []string{"envs/notes.txt"}, files: 1},
		{why: "the diff runs from the merge base, so main's later commit is not in it", base: "main", head: "receipt",
			changed: []string{".backflow/receipts/prod/redis.yaml", values, values}, files: 2, claims: true},
		{why: "a symlink is never read as a receipt", base: "main", head: "link", changed: []string{".backflow/receipts/x.yaml"}, files: 1, claims: true, special: 1},
		{why: "a changed file over the cap is refused, not truncated", base: "main", head: "big", wantErr: ErrTooLarge},
		{why: "a ref that does not resolve is named with its flag", base: "main", head: "nosuch", errText: "--head nosuch: "},
		{why: "a base policy that does not parse authorizes nothing", base: "badpolicy", head: "notes", changed: []string{"envs/notes.txt"}, files: 1, policyErr: true},
	}
	for _, tc := range cases {
		d, err := ReadDiff(repo, tc.base, tc.head, ".github/backflow.yaml")
		switch {
		case tc.wantErr != nil || tc.errText != "":
			if err == nil || (tc.wantErr != nil && !errors.Is(err, tc.wantErr)) || !strings.Contains(err.Error(), tc.errText) {
				t.Errorf("%s: got error %v, want %v %q", tc.why, err, tc.wantErr, tc.errText)
			}
			continue
		case err != nil:
			t.Errorf("%s: %v", tc.why, err)
			continue
		}
		if strings.Join(d.Input.Changed, ",") != strings.Join(tc.changed, ",") {
			t.Errorf("%s: changed %v, want %v", tc.why, d.Input.Changed, tc.changed)
		}
		if d.ClaimsAny() != tc.claims || len(d.Special) != tc.special || (d.PolicyErr != nil) != tc.policyErr || (d.Input.Policy == nil) != tc.policyErr {
			t.Errorf("%s: claims %v, special %v, policy error %v", tc.why, d.ClaimsAny(), d.Special, d.PolicyErr)
		}
		if d.Files != tc.files {
			t.Errorf("%s: %d file(s)", tc.why, d.Files)
		}
	}
}
