package checkout

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func gitIn(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t",
		"GIT_COMMITTER_EMAIL=t@example.com", "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

func TestHeadCommit(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	repo := t.TempDir()
	gitIn(t, repo, "init", "-q", "-b", "main")
	if got := HeadCommit(repo); got != "" {
		t.Errorf("why: a repository without a commit has no head commit; got %q", got)
	}
	if err := os.MkdirAll(filepath.Join(repo, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, repo, "sub/f", "x\n")
	gitIn(t, repo, "add", ".")
	gitIn(t, repo, "commit", "-q", "-m", "one")
	sha := gitIn(t, repo, "rev-parse", "HEAD")
	cases := []struct {
		why, dir, want string
		prepare        func()
	}{
		{why: "a branch's loose ref names the commit", dir: repo, want: sha},
		{why: "a folder inside a checkout is not the checkout's commit", dir: filepath.Join(repo, "sub")},
		{why: "a plain folder is a working tree", dir: t.TempDir()},
		{why: "packed refs name the commit too", dir: repo, want: sha, prepare: func() { gitIn(t, repo, "pack-refs", "--all") }},
		{why: "a detached head is its commit", dir: repo, want: sha, prepare: func() { gitIn(t, repo, "checkout", "-q", "--detach") }},
	}
	for _, tc := range cases {
		if tc.prepare != nil {
			tc.prepare()
		}
		if got := HeadCommit(tc.dir); got != tc.want {
			t.Errorf("%s: got %q, want %q", tc.why, got, tc.want)
		}
	}
}
