package localhub

import (
	"strings"
	"testing"

	"github.com/google/go-github/v62/github"
)

func TestContentsWrites(t *testing.T) {
	e := newEnv(t, Options{})
	c := e.client(t)
	const path = "envs/prod/redis/values.yaml"
	cur, _, _, _ := c.Repositories.GetContents(e.ctx, testOwner, testRepo, path, nil)

	_, resp, err := c.Repositories.UpdateFile(e.ctx, testOwner, testRepo, path, &github.RepositoryContentFileOptions{
		Message: github.String("stale"), Content: []byte("replicas: 9\n"), SHA: github.String(strings.Repeat("c", 40))})
	mustStatus(t, "update with a stale sha", resp, err, 409)
	_, resp, err = c.Repositories.UpdateFile(e.ctx, testOwner, testRepo, path, &github.RepositoryContentFileOptions{
		Message: github.String("no sha"), Content: []byte("replicas: 9\n")})
	mustStatus(t, "update without sha", resp, err, 422)

	upd, resp, err := c.Repositories.UpdateFile(e.ctx, testOwner, testRepo, path, &github.RepositoryContentFileOptions{
		Message: github.String("Scale"), Content: []byte("replicas: 4\n"), SHA: cur.SHA})
	mustStatus(t, "update", resp, err, 200)
	if !upd.Commit.GetVerification().GetVerified() {
		t.Fatal("a contents API commit should be signed by GitHub")
	}
	created, resp, err := c.Repositories.CreateFile(e.ctx, testOwner, testRepo, ".backflow/receipts/r1.yaml", &github.RepositoryContentFileOptions{
		Message: github.String("Receipt"), Content: []byte("kind: ReverseReconcileReceipt\n")})
	mustStatus(t, "create", resp, err, 201)
	_, resp, err = c.Repositories.DeleteFile(e.ctx, testOwner, testRepo, ".backflow/receipts/r1.yaml", &github.RepositoryContentFileOptions{
		Message: github.String("Drop receipt"), SHA: created.Content.SHA})
	mustStatus(t, "delete", resp, err, 200)
	_, _, resp, err = c.Repositories.GetContents(e.ctx, testOwner, testRepo, ".backflow/receipts/r1.yaml", nil)
	mustStatus(t, "deleted file", resp, err, 404)

	// Commits found by their pull requests.
	commitFile(t, e, c, "main", "topic", "README.md", "x\n", "x")
	pr := openPull(t, e, c, "topic")
	prs, resp, err := c.PullRequests.ListPullRequestsWithCommit(e.ctx, testOwner, testRepo, pr.GetHead().GetSHA(), nil)
	mustStatus(t, "pulls for commit", resp, err, 200)
	if len(prs) != 1 || prs[0].GetNumber() != pr.GetNumber() {
		t.Fatalf("pulls for commit %v", prs)
	}
}

func TestBranchProtectionRefusesDirectUpdates(t *testing.T) {
	e := newEnv(t, Options{})
	c := e.client(t)
	commitFile(t, e, c, "main", "topic", "README.md", "x\n", "x")
	topic, _, _ := c.Git.GetRef(e.ctx, testOwner, testRepo, "heads/topic")
	sha := topic.GetObject().GetSHA()
	if err := e.hub.SetBranchProtection(testFull, "main", "ci"); err != nil {
		t.Fatal(err)
	}
	mainRef := &github.Reference{Ref: github.String("refs/heads/main"), Object: &github.GitObject{SHA: github.String(sha)}}
	_, resp, err := c.Git.UpdateRef(e.ctx, testOwner, testRepo, mainRef, false)
	mustStatus(t, "update protected branch without checks", resp, err, 422)
	if !strings.Contains(err.Error(), `Required status check "ci" is expected.`) {
		t.Fatalf("error %v", err)
	}
	_, resp, err = c.Checks.CreateCheckRun(e.ctx, testOwner, testRepo, github.CreateCheckRunOptions{Name: "ci", HeadSHA: sha, Conclusion: github.String("success")})
	mustStatus(t, "check run", resp, err, 201)
	_, resp, err = c.Git.UpdateRef(e.ctx, testOwner, testRepo, mainRef, false)
	mustStatus(t, "update protected branch with green checks", resp, err, 200)
}

// GitHub's contents read of a symlink to a regular file in the repository
// answers with that file's content; a link out of the repository, or to
// something missing, is described as a symlink.
func TestContentsOfASymlink(t *testing.T) {
	e := newEnv(t, Options{})
	c := e.client(t)
	const target = "envs/prod/redis/values.yaml"
	want, _, _, err := c.Repositories.GetContents(e.ctx, testOwner, testRepo, target, nil)
	if err != nil {
		t.Fatal(err)
	}
	for link, to := range map[string]string{"in.yaml": target, "envs/up.yaml": "prod/redis/values.yaml", "out.yaml": "/etc/passwd", "gone.yaml": "nope.yaml"} {
		blob, _, err := c.Git.CreateBlob(e.ctx, testOwner, testRepo, &github.Blob{Content: github.String(to), Encoding: github.String("utf-8")})
		if err != nil {
			t.Fatal(err)
		}
		ref, _, _ := c.Git.GetRef(e.ctx, testOwner, testRepo, "heads/main")
		parent, _, _ := c.Git.GetCommit(e.ctx, testOwner, testRepo, ref.GetObject().GetSHA())
		tree, resp, err := c.Git.CreateTree(e.ctx, testOwner, testRepo, parent.GetTree().GetSHA(), []*github.TreeEntry{
			{Path: github.String(link), Mode: github.String("120000"), Type: github.String("blob"), SHA: blob.SHA}})
		mustStatus(t, "create tree", resp, err, 201)
		commit, _, err := c.Git.CreateCommit(e.ctx, testOwner, testRepo, &github.Commit{Message: github.String(link), Tree: tree, Parents: []*github.Commit{{SHA: parent.SHA}}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		got, _, resp, err := c.Repositories.GetContents(e.ctx, testOwner, testRepo, link, &github.RepositoryContentGetOptions{Ref: commit.GetSHA()})
		mustStatus(t, "contents of "+link, resp, err, 200)
		if link == "in.yaml" || link == "envs/up.yaml" {
			body, _ := got.GetContent()
			wantBody, _ := want.GetContent()
			if got.GetType() != "file" || body != wantBody || got.GetPath() != target {
				t.Errorf("%s: %s %s, want the target's content", link, got.GetType(), got.GetPath())
			}
		} else if got.GetType() != "symlink" || got.GetTarget() != to {
			t.Errorf("%s: %s %q, want a symlink to %q", link, got.GetType(), got.GetTarget(), to)
		}
	}
}
