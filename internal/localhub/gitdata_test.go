package localhub

import (
	"testing"

	"github.com/google/go-github/v62/github"
)

// commitFile makes a commit on top of from through the Git database API
// (blob, tree, commit, ref) as a GitHub App does, pointing branch at it; it
// returns from's SHA.
func commitFile(t testing.TB, e *env, c *github.Client, from, branch, path, content, msg string) string {
	t.Helper()
	ref, resp, err := c.Git.GetRef(e.ctx, testOwner, testRepo, "heads/"+from)
	mustStatus(t, "get base ref", resp, err, 200)
	base := ref.GetObject().GetSHA()
	parent, resp, err := c.Git.GetCommit(e.ctx, testOwner, testRepo, base)
	mustStatus(t, "get base commit", resp, err, 200)
	blob, resp, err := c.Git.CreateBlob(e.ctx, testOwner, testRepo, &github.Blob{Content: github.String(content), Encoding: github.String("utf-8")})
	mustStatus(t, "create blob", resp, err, 201)
	tree, resp, err := c.Git.CreateTree(e.ctx, testOwner, testRepo, parent.GetTree().GetSHA(), []*github.TreeEntry{
		{Path: github.String(path), Mode: github.String("100644"), Type: github.String("blob"), SHA: blob.SHA},
	})
	mustStatus(t, "create tree", resp, err, 201)
	commit, resp, err := c.Git.CreateCommit(e.ctx, testOwner, testRepo, &github.Commit{
		Message: github.String(msg), Tree: tree, Parents: []*github.Commit{{SHA: github.String(base)}},
	}, nil)
	mustStatus(t, "create commit", resp, err, 201)
	if _, resp, _ := c.Git.GetRef(e.ctx, testOwner, testRepo, "heads/"+branch); resp != nil && resp.StatusCode == 404 {
		_, resp, err = c.Git.CreateRef(e.ctx, testOwner, testRepo, &github.Reference{Ref: github.String("refs/heads/" + branch), Object: &github.GitObject{SHA: commit.SHA}})
		mustStatus(t, "create ref", resp, err, 201)
	} else {
		_, resp, err = c.Git.UpdateRef(e.ctx, testOwner, testRepo, &github.Reference{Ref: github.String("refs/heads/" + branch), Object: &github.GitObject{SHA: commit.SHA}}, true)
		mustStatus(t, "update ref", resp, err, 200)
	}
	return base
}

func TestGitDatabase(t *testing.T) {
	e := newEnv(t, Options{})
	c := e.client(t)
	ref, resp, err := c.Git.GetRef(e.ctx, testOwner, testRepo, "heads/main")
	mustStatus(t, "get ref", resp, err, 200)
	main := ref.GetObject().GetSHA()
	_, resp, err = c.Git.GetRef(e.ctx, testOwner, testRepo, "heads/nope")
	mustStatus(t, "missing ref", resp, err, 404)

	blob, resp, err := c.Git.CreateBlob(e.ctx, testOwner, testRepo, &github.Blob{Content: github.String("aGVsbG8="), Encoding: github.String("base64")})
	mustStatus(t, "create blob", resp, err, 201)
	got, resp, err := c.Git.GetBlobRaw(e.ctx, testOwner, testRepo, blob.GetSHA())
	mustStatus(t, "get blob", resp, err, 200)
	if string(got) != "hello" {
		t.Fatalf("blob %q", got)
	}
	_, resp, err = c.Git.CreateBlob(e.ctx, testOwner, testRepo, &github.Blob{Content: github.String("x"), Encoding: github.String("rot13")})
	mustStatus(t, "bad encoding", resp, err, 422)

	parent, _, _ := c.Git.GetCommit(e.ctx, testOwner, testRepo, main)
	tree, resp, err := c.Git.CreateTree(e.ctx, testOwner, testRepo, parent.GetTree().GetSHA(), []*github.TreeEntry{
		{Path: github.String("deep/new/file.txt"), Mode: github.String("100644"), Type: github.String("blob"), Content: github.String("new\n")},
		{Path: github.String("README.md"), Mode: github.String("100644"), Type: github.String("blob")}, // no sha: delete
	})
	mustStatus(t, "create tree", resp, err, 201)
	paths := map[string]bool{}
	for _, en := range tree.Entries {
		paths[en.GetPath()] = true
	}
	if !paths["deep/new/file.txt"] || paths["README.md"] || !paths["envs/prod/redis/values.yaml"] {
		t.Fatalf("tree paths %v", paths)
	}
	_, resp, err = c.Git.CreateTree(e.ctx, testOwner, testRepo, "", []*github.TreeEntry{{Path: github.String("a"), Mode: github.String("100999"), Type: github.String("blob"), Content: github.String("x")}})
	mustStatus(t, "bad mode", resp, err, 422)

	commit, resp, err := c.Git.CreateCommit(e.ctx, testOwner, testRepo, &github.Commit{Message: github.String("api commit"), Tree: tree, Parents: []*github.Commit{{SHA: github.String(main)}}}, nil)
	mustStatus(t, "create commit", resp, err, 201)
	if !commit.GetVerification().GetVerified() {
		t.Fatalf("an App's API commit should be verified: %v", commit.GetVerification())
	}
	authored, resp, err := c.Git.CreateCommit(e.ctx, testOwner, testRepo, &github.Commit{Message: github.String("by a person"), Tree: tree,
		Committer: &github.CommitAuthor{Name: github.String("Ann"), Email: github.String("ann@example.com")}}, nil)
	mustStatus(t, "commit with committer", resp, err, 201)
	if authored.GetVerification().GetVerified() {
		t.Fatal("a commit with a custom committer is not signed by GitHub")
	}
	_, resp, err = c.Git.CreateCommit(e.ctx, testOwner, testRepo, &github.Commit{Message: github.String("x"), Tree: &github.Tree{SHA: github.String(main)}}, nil)
	mustStatus(t, "commit with a commit as tree", resp, err, 422)

	newRef := &github.Reference{Ref: github.String("refs/heads/topic"), Object: &github.GitObject{SHA: commit.SHA}}
	_, resp, err = c.Git.CreateRef(e.ctx, testOwner, testRepo, newRef)
	mustStatus(t, "create ref", resp, err, 201)
	_, resp, err = c.Git.CreateRef(e.ctx, testOwner, testRepo, newRef)
	mustStatus(t, "create existing ref", resp, err, 422)
	refs, resp, err := c.Git.ListMatchingRefs(e.ctx, testOwner, testRepo, &github.ReferenceListOptions{Ref: "heads/"})
	mustStatus(t, "matching refs", resp, err, 200)
	if len(refs) != 2 {
		t.Fatalf("refs %v", refs)
	}
	// authored has no parent: not a fast-forward of topic.
	back := &github.Reference{Ref: github.String("refs/heads/topic"), Object: &github.GitObject{SHA: authored.SHA}}
	_, resp, err = c.Git.UpdateRef(e.ctx, testOwner, testRepo, back, false)
	mustStatus(t, "non-fast-forward", resp, err, 422)
	_, resp, err = c.Git.UpdateRef(e.ctx, testOwner, testRepo, back, true)
	mustStatus(t, "forced update", resp, err, 200)
	resp, err = c.Git.DeleteRef(e.ctx, testOwner, testRepo, "heads/topic")
	mustStatus(t, "delete ref", resp, err, 204)
	resp, err = c.Git.DeleteRef(e.ctx, testOwner, testRepo, "heads/topic")
	mustStatus(t, "delete missing ref", resp, err, 422)
}
