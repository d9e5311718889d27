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
