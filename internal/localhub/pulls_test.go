package localhub

import (
	"strings"
	"testing"

	"github.com/google/go-github/v62/github"
)

func openPull(t testing.TB, e *env, c *github.Client, head string) *github.PullRequest {
	t.Helper()
	pr, resp, err := c.PullRequests.Create(e.ctx, testOwner, testRepo, &github.NewPullRequest{
		Title: github.String("Scale " + head), Head: github.String(head), Base: github.String("main"), Body: github.String("body"),
	})
	mustStatus(t, "create pull", resp, err, 201)
	return pr
}

func TestPullRequestLifecycle(t *testing.T) {
	e := newEnv(t, Options{})
	c := e.client(t)
	commitFile(t, e, c, "main", "backflow/prod/redis", "envs/prod/redis/values.yaml", "replicas: 4\n", "Scale redis to 4")
	pr := openPull(t, e, c, "backflow/prod/redis")
	// why: as on GitHub, mergeability is computed in the background after
	// a pull request is opened: null at first, known on a later read.
	if pr.GetNumber() != 1 || pr.GetHead().GetRef() != "backflow/prod/redis" || pr.GetNodeID() == "" || pr.Mergeable != nil || pr.GetMergeableState() != "unknown" {
		t.Fatalf("pull %v", pr)
	}
	if got := readPull(t, e, c, pr.GetNumber()); !got.GetMergeable() {
		t.Fatalf("mergeable once computed: %v %q", got.Mergeable, got.GetMergeableState())
	}

	invalid := []struct {
		name string
		np   *github.NewPullRequest
	}{
		{"duplicate", &github.NewPullRequest{Title: github.String("again"), Head: github.String("acme:backflow/prod/redis"), Base: github.String("main")}}, // why: one open PR per head and base
		{"missing head", &github.NewPullRequest{Title: github.String("x"), Head: github.String("nope"), Base: github.String("main")}},                      // why: head must exist
		{"missing base", &github.NewPullRequest{Title: github.String("x"), Head: github.String("backflow/prod/redis"), Base: github.String("nope")}},       // why: base must exist
		{"no title", &github.NewPullRequest{Head: github.String("backflow/prod/redis"), Base: github.String("main")}},                                      // why: title is required
		{"no commits", &github.NewPullRequest{Title: github.String("x"), Head: github.String("main"), Base: github.String("main")}},                        // why: nothing to merge
	}
	for _, tc := range invalid {
		_, resp, err := c.PullRequests.Create(e.ctx, testOwner, testRepo, tc.np)
		mustStatus(t, tc.name, resp, err, 422)
		if tc.name == "duplicate" && !strings.Contains(err.Error(), "A pull request already exists for acme:backflow/prod/redis.") {
			t.Fatalf("duplicate error %v", err)
		}
	}

	list, resp, err := c.PullRequests.List(e.ctx, testOwner, testRepo, &github.PullRequestListOptions{Head: "acme:backflow/prod/redis", State: "open"})
	mustStatus(t, "list by head", resp, err, 200)
	if len(list) != 1 || list[0].GetNumber() != 1 {
		t.Fatalf("list %v", list)
	}
	list, _, _ = c.PullRequests.List(e.ctx, testOwner, testRepo, &github.PullRequestListOptions{Head: "acme:other", State: "all"})
	if len(list) != 0 {
		t.Fatalf("list by other head %v", list)
	}

	upd, resp, err := c.PullRequests.Edit(e.ctx, testOwner, testRepo, 1, &github.PullRequest{Title: github.String("Scale redis"), Body: github.String("new body")})
	mustStatus(t, "edit", resp, err, 200)
	if upd.GetTitle() != "Scale redis" || upd.GetBody() != "new body" {
		t.Fatalf("edited %v", upd)
	}

	labels, resp, err := c.Issues.AddLabelsToIssue(e.ctx, testOwner, testRepo, 1, []string{"backflow", "auto-merge"})
	mustStatus(t, "add labels", resp, err, 200)
	if len(labels) != 2 {
		t.Fatalf("labels %v", labels)
	}
	resp, err = c.Issues.RemoveLabelForIssue(e.ctx, testOwner, testRepo, 1, "auto-merge")
	mustStatus(t, "remove label", resp, err, 200)
	resp, err = c.Issues.RemoveLabelForIssue(e.ctx, testOwner, testRepo, 1, "auto-merge")
	mustStatus(t, "remove absent label", resp, err, 404)
	labels, _, _ = c.Issues.ListLabelsByIssue(e.ctx, testOwner, testRepo, 1, nil)
	if len(labels) != 1 || labels[0].GetName() != "backflow" {
		t.Fatalf("labels after removal %v", labels)
	}

	cm, resp, err := c.Issues.CreateComment(e.ctx, testOwner, testRepo, 1, &github.IssueComment{Body: github.String("receipt")})
	mustStatus(t, "comment", resp, err, 201)
	_, resp, err = c.Issues.EditComment(e.ctx, testOwner, testRepo, cm.GetID(), &github.IssueComment{Body: github.String("receipt v2")})
	mustStatus(t, "edit comment", resp, err, 200)
	comments, _, _ := c.Issues.ListComments(e.ctx, testOwner, testRepo, 1, nil)
	if len(comments) != 1 || comments[0].GetBody() != "receipt v2" {
		t.Fatalf("comments %v", comments)
	}
	_, resp, err = c.Issues.CreateComment(e.ctx, testOwner, testRepo, 1, &github.IssueComment{Body: github.String("")})
	mustStatus(t, "empty comment", resp, err, 422)
	_, resp, err = c.Issues.CreateComment(e.ctx, testOwner, testRepo, 99, &github.IssueComment{Body: github.String("x")})
	mustStatus(t, "comment on missing issue", resp, err, 404)

	_, resp, err = c.PullRequests.RequestReviewers(e.ctx, testOwner, testRepo, 1, github.ReviewersRequest{Reviewers: []string{"alice"}})
	mustStatus(t, "request reviewers", resp, err, 201)
	_, resp, err = c.PullRequests.RequestReviewers(e.ctx, testOwner, testRepo, 1, github.ReviewersRequest{Reviewers: []string{e.hub.AppSlug() + "[bot]"}})
	mustStatus(t, "request the author", resp, err, 422)
	rv, resp, err := c.PullRequests.ListReviewers(e.ctx, testOwner, testRepo, 1, nil)
	mustStatus(t, "list reviewers", resp, err, 200)
	if len(rv.Users) != 1 || rv.Users[0].GetLogin() != "alice" {
		t.Fatalf("reviewers %v", rv)
	}

	files, resp, err := c.PullRequests.ListFiles(e.ctx, testOwner, testRepo, 1, nil)
	mustStatus(t, "files", resp, err, 200)
	if len(files) != 1 || files[0].GetFilename() != "envs/prod/redis/values.yaml" || !strings.Contains(files[0].GetPatch(), "+replicas: 4") {
		t.Fatalf("files %v", files)
	}
	commits, resp, err := c.PullRequests.ListCommits(e.ctx, testOwner, testRepo, 1, nil)
	mustStatus(t, "commits", resp, err, 200)
	if len(commits) != 1 || commits[0].GetCommit().GetMessage() != "Scale redis to 4" {
		t.Fatalf("commits %v", commits)
	}

	_, resp, err = c.PullRequests.Merge(e.ctx, testOwner, testRepo, 1, "", &github.PullRequestOptions{SHA: strings.Repeat("1", 40)})
	mustStatus(t, "merge with a moved head", resp, err, 409)
	res, resp, err := c.PullRequests.Merge(e.ctx, testOwner, testRepo, 1, "", &github.PullRequestOptions{SHA: pr.GetHead().GetSHA(), MergeMethod: "merge"})
	mustStatus(t, "merge", resp, err, 200)
	if !res.GetMerged() {
		t.Fatalf("merge result %v", res)
	}
	merged, _, _ := c.PullRequests.Get(e.ctx, testOwner, testRepo, 1)
	if !merged.GetMerged() || merged.GetState() != "closed" || merged.GetMergeCommitSHA() != res.GetSHA() {
		t.Fatalf("merged pull %v", merged)
	}
	fc, _, _, _ := c.Repositories.GetContents(e.ctx, testOwner, testRepo, "envs/prod/redis/values.yaml", nil)
	if s, _ := fc.GetContent(); s != "replicas: 4\n" {
		t.Fatalf("main after merge %q", s)
	}
	mc, _, _ := c.Git.GetCommit(e.ctx, testOwner, testRepo, res.GetSHA())
	if len(mc.Parents) != 2 || !mc.GetVerification().GetVerified() {
		t.Fatalf("merge commit %v", mc)
	}
	_, resp, err = c.PullRequests.Merge(e.ctx, testOwner, testRepo, 1, "", nil)
	mustStatus(t, "merge twice", resp, err, 405)
	_, resp, err = c.PullRequests.Get(e.ctx, testOwner, testRepo, 42)
	mustStatus(t, "missing pull", resp, err, 404)
}

func TestMergeConflictAndMethods(t *testing.T) {
	e := newEnv(t, Options{})
	c := e.client(t)
	commitFile(t, e, c, "main", "a", "envs/prod/redis/values.yaml", "replicas: 4\n", "four")
	commitFile(t, e, c, "main", "b", "envs/prod/redis/values.yaml", "replicas: 5\n", "five")
	commitFile(t, e, c, "main", "c", "envs/staging/redis/values.yaml", "replicas: 2\n", "staging two")
	pa, pb, pc := openPull(t, e, c, "a"), openPull(t, e, c, "b"), openPull(t, e, c, "c")

	res, resp, err := c.PullRequests.Merge(e.ctx, testOwner, testRepo, pa.GetNumber(), "", &github.PullRequestOptions{MergeMethod: "squash"})
	mustStatus(t, "squash", resp, err, 200)
	sq, _, _ := c.Git.GetCommit(e.ctx, testOwner, testRepo, res.GetSHA())
	if len(sq.Parents) != 1 || !strings.HasPrefix(sq.GetMessage(), "Scale a (#1)") {
		t.Fatalf("squash commit %v", sq)
	}

	got := readPull(t, e, c, pb.GetNumber())
	if got.GetMergeable() || got.GetMergeableState() != "dirty" {
		t.Fatalf("conflicting pull: mergeable %v state %q", got.GetMergeable(), got.GetMergeableState())
	}
	_, resp, err = c.PullRequests.Merge(e.ctx, testOwner, testRepo, pb.GetNumber(), "", &github.PullRequestOptions{SHA: pb.GetHead().GetSHA()})
	mustStatus(t, "merge a conflict", resp, err, 405)

	res, resp, err = c.PullRequests.Merge(e.ctx, testOwner, testRepo, pc.GetNumber(), "", &github.PullRequestOptions{MergeMethod: "rebase"})
	mustStatus(t, "rebase", resp, err, 200)
	rb, _, _ := c.Git.GetCommit(e.ctx, testOwner, testRepo, res.GetSHA())
	if len(rb.Parents) != 1 || rb.GetMessage() != "staging two" || rb.GetSHA() == pc.GetHead().GetSHA() {
		t.Fatalf("rebased commit %v", rb)
	}
	main, _, _ := c.Git.GetRef(e.ctx, testOwner, testRepo, "heads/main")
	if main.GetObject().GetSHA() != rb.GetSHA() {
		t.Fatal("main does not point at the rebased commit")
	}
	_, resp, err = c.PullRequests.Merge(e.ctx, testOwner, testRepo, pb.GetNumber(), "", &github.PullRequestOptions{MergeMethod: "octopus"})
	mustStatus(t, "unknown method", resp, err, 422)
}

func TestIssues(t *testing.T) {
	e := newEnv(t, Options{})
	c := e.client(t)
	is, resp, err := c.Issues.Create(e.ctx, testOwner, testRepo, &github.IssueRequest{Title: github.String("Drift in prod"), Labels: &[]string{"drift"}})
	mustStatus(t, "create issue", resp, err, 201)
	_, resp, err = c.Issues.Create(e.ctx, testOwner, testRepo, &github.IssueRequest{Body: github.String("no title")})
	mustStatus(t, "issue without title", resp, err, 422)
	list, _, _ := c.Issues.ListByRepo(e.ctx, testOwner, testRepo, &github.IssueListByRepoOptions{Labels: []string{"drift"}})
	if len(list) != 1 || list[0].GetNumber() != is.GetNumber() {
		t.Fatalf("issues %v", list)
	}
	closed, resp, err := c.Issues.Edit(e.ctx, testOwner, testRepo, is.GetNumber(), &github.IssueRequest{State: github.String("closed"), Body: github.String("resolved")})
	mustStatus(t, "close issue", resp, err, 200)
	if closed.GetState() != "closed" || closed.GetBody() != "resolved" {
		t.Fatalf("closed issue %v", closed)
	}
	list, _, _ = c.Issues.ListByRepo(e.ctx, testOwner, testRepo, nil)
	if len(list) != 0 {
		t.Fatalf("open issues %v", list)
	}
	_, resp, err = c.Issues.Edit(e.ctx, testOwner, testRepo, is.GetNumber(), &github.IssueRequest{State: github.String("done")})
	mustStatus(t, "invalid state", resp, err, 422)
	repoLabels, _, _ := c.Issues.ListLabels(e.ctx, testOwner, testRepo, nil)
	if len(repoLabels) != 1 || repoLabels[0].GetName() != "drift" {
		t.Fatalf("repo labels %v", repoLabels)
	}
}

// readPull reads a pull request until its mergeability is computed: GitHub
// answers mergeable null while its background job runs, and the hub does so
// on the first read after the head or the base moved.
func readPull(t testing.TB, e *env, c *github.Client, number int) *github.PullRequest {
	t.Helper()
	for range 2 {
		pr, resp, err := c.PullRequests.Get(e.ctx, testOwner, testRepo, number)
		mustStatus(t, "get pull", resp, err, 200)
		if pr.Mergeable != nil || pr.GetState() != "open" {
			return pr
		}
	}
	t.Fatalf("pull #%d: mergeable still null on the second read", number)
	return nil
}
