package github

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/backflow-dev/backflow/internal/forge"
	"github.com/backflow-dev/backflow/internal/localhub"
)

func TestLargeFileIsReadAsABlob(t *testing.T) {
	e := newEnv(t)
	big := bytes.Repeat([]byte("key: value\n"), 110_000) // 1.2 MB: over the Contents API's 1 MB
	main, _ := e.a.BranchHead(e.ctx, e.repo, "main")
	sha, err := e.a.Commit(e.ctx, forge.CommitRequest{Repo: e.repo, Branch: "big", BaseSHA: main, Method: forge.CommitAPI,
		Files: map[string][]byte{"big.yaml": big}, Message: "m", Author: forge.Author{Name: "n", Email: "e@x"}})
	if err != nil {
		t.Fatal(err)
	}
	got, err := e.a.ReadFile(e.ctx, e.repo, sha, "big.yaml")
	// Why: GitHub serves such files without content; the blob has them.
	if err != nil || !bytes.Equal(got, big) {
		t.Fatalf("ReadFile of a 1.2 MB file: %d bytes, %v; want %d bytes", len(got), err, len(big))
	}
	if n := e.hubCount("GET", "/repos/{owner}/{repo}/git/blobs/{sha}"); n != 1 {
		t.Fatalf("blob reads = %d, want 1", n)
	}
}

func TestSymlinksAreNeitherReadNorWrittenThrough(t *testing.T) {
	e := newEnv(t)
	dir := t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(dir, "envs", "prod"), 0o755))
	must(os.WriteFile(filepath.Join(dir, "envs", "prod", "values.yaml"), []byte("replicas: 3\n"), 0o644))
	must(os.Symlink("envs/prod/values.yaml", filepath.Join(dir, "link.yaml")))
	must(os.Symlink("envs", filepath.Join(dir, "linked")))
	must(e.hub.CreateRepo(localhub.RepoOptions{Owner: "acme", Name: "links", Dir: dir}))
	repo := forge.Repo{Owner: "acme", Name: "links", DefaultBranch: "main"}
	main, err := e.a.BranchHead(e.ctx, repo, "main")
	must(err)

	// Why: the bot never follows a symlink out of what policy governs.
	if _, err := e.a.ReadFile(e.ctx, repo, main, "link.yaml"); !errors.Is(err, forge.ErrNotRegularFile) {
		t.Fatalf("ReadFile of a symlink = %v, want ErrNotRegularFile", err)
	}
	files, err := e.a.ListFiles(e.ctx, repo, main, "")
	must(err)
	if !slices.Equal(files, []string{"envs/prod/values.yaml"}) {
		t.Fatalf("ListFiles = %v, want only the regular file", files)
	}
	// GitHub's Contents API answers a symlink to a file with the file's
	// content: the adapter reads by tree entry and refuses it, naming it.
	for p, link := range map[string]string{"link.yaml": "link.yaml", "linked/prod/values.yaml": "linked"} {
		_, err := e.a.ReadFile(e.ctx, repo, main, p)
		if !errors.Is(err, forge.ErrNotRegularFile) || !strings.Contains(err.Error(), ": "+link+" is a symlink") {
			t.Errorf("ReadFile of %s = %v, want ErrNotRegularFile naming the link", p, err)
		}
	}
	for _, method := range []forge.CommitMethod{forge.CommitGit, forge.CommitAPI} {
		for _, p := range []string{"link.yaml", "linked/prod/values.yaml", "linked/new.yaml", "envs/prod/values.yaml/x.yaml", "envs/prod"} {
			_, err := e.a.Commit(e.ctx, forge.CommitRequest{Repo: repo, Branch: "b", BaseSHA: main, Files: map[string][]byte{p: []byte("replicas: 4\n")},
				Message: "m", Author: forge.Author{Name: "n", Email: "e@x"}, Method: method})
			if !errors.Is(err, forge.ErrInvalid) {
				t.Errorf("a %s commit writing %s = %v, want ErrInvalid", method, p, err)
			}
		}
	}
	if _, err := e.a.BranchHead(e.ctx, repo, "b"); !errors.Is(err, forge.ErrNotFound) {
		t.Fatalf("branch b after refused commits: %v, want ErrNotFound", err)
	}
}

func TestChangedFilesFromTheMergeBase(t *testing.T) {
	e := newEnv(t)
	main, err := e.a.BranchHead(e.ctx, e.repo, "main")
	if err != nil {
		t.Fatal(err)
	}
	sha, err := e.a.Commit(e.ctx, forge.CommitRequest{Repo: e.repo, Branch: "topic", BaseSHA: main, Method: forge.CommitAPI,
		Files: map[string][]byte{"added.yaml": []byte("a: 1\n")}, Message: "m", Author: forge.Author{Name: "n", Email: "e@x"}})
	if err != nil {
		t.Fatal(err)
	}
	// Why: the whole-diff bound reads what GitHub says a pull request
	// changes, from the merge base, not from the base branch's head.
	d, err := e.a.ChangedFiles(e.ctx, e.repo, "main", sha)
	if err != nil {
		t.Fatal(err)
	}
	if d.MergeBase != main || len(d.Files) != 1 || d.Files[0].Path != "added.yaml" || d.Files[0].Status != "added" {
		t.Fatalf("ChangedFiles = %+v, want added.yaml added from %s", d, main)
	}
}

// TestContains: whether a revision is a commit or a later one, as the
// compare API's status says (ahead or identical), against the local hub.
func TestContains(t *testing.T) {
	e := newEnv(t)
	main, err := e.a.BranchHead(e.ctx, e.repo, "main")
	if err != nil {
		t.Fatal(err)
	}
	commit := func(branch, base, path string) string {
		t.Helper()
		sha, err := e.a.Commit(e.ctx, forge.CommitRequest{Repo: e.repo, Branch: branch, BaseSHA: base, Method: forge.CommitAPI,
			Files: map[string][]byte{path: []byte("a: 1\n")}, Message: "m", Author: forge.Author{Name: "n", Email: "e@x"}})
		if err != nil {
			t.Fatal(err)
		}
		return sha
	}
	merge := commit("topic", main, "merged.yaml")
	later := commit("later", merge, "later.yaml")
	other := commit("other", main, "other.yaml")
	for _, tc := range []struct {
		why           string
		commit, head  string
		want, errWant bool
	}{
		{"the merge itself (identical)", merge, merge, true, false},
		{"a later commit on top of the merge (ahead)", merge, later, true, false},
		{"a branch name resolves to its head", merge, "later", true, false},
		{"the commit before the merge (behind)", merge, main, false, false},
		{"another line of history (diverged)", merge, other, false, false},
		{"a commit the forge does not know", strings.Repeat("0", 40), later, false, true},
	} {
		got, err := e.a.Contains(e.ctx, e.repo, tc.commit, tc.head)
		if got != tc.want || (err != nil) != tc.errWant || tc.errWant && !errors.Is(err, forge.ErrNotFound) {
			t.Errorf("why: %s: %v, %v", tc.why, got, err)
		}
	}
}
