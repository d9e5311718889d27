package localhub

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-github/v62/github"
)

type gqlResponse struct {
	Data   map[string]any `json:"data"`
	Errors []struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	} `json:"errors"`
}

// enableAutoMerge sends the mutation as the GitHub adapter does, through
// client.NewRequest against the GraphQL URL.
func enableAutoMerge(t *testing.T, e *env, c *github.Client, url string, pr *github.PullRequest, head string) gqlResponse {
	t.Helper()
	body := map[string]any{
		"query": `mutation($input: EnablePullRequestAutoMergeInput!) {
  enablePullRequestAutoMerge(input: $input) { pullRequest { id autoMergeRequest { enabledAt } } }
}`,
		"variables": map[string]any{"input": map[string]any{"pullRequestId": pr.GetNodeID(), "expectedHeadOid": head, "mergeMethod": "SQUASH"}},
	}
	req, err := c.NewRequest("POST", url, body)
	if err != nil {
		t.Fatal(err)
	}
	var out gqlResponse
	resp, err := c.Do(e.ctx, req, &out)
	mustStatus(t, "graphql", resp, err, 200)
	return out
}

func TestAutoMerge(t *testing.T) {
	e := newEnv(t, Options{Permissions: widePermissions})
	c := e.client(t)
	gql := e.srv.URL + "/graphql"
	commitFile(t, e, c, "main", "clean", "envs/prod/redis/values.yaml", "replicas: 4\n", "four")
	clean := openPull(t, e, c, "clean")

	// why: with nothing required, the pull request could merge now: GitHub refuses.
	out := enableAutoMerge(t, e, c, gql, clean, clean.GetHead().GetSHA())
	if len(out.Errors) != 1 || !strings.Contains(out.Errors[0].Message, "clean status") {
		t.Fatalf("clean status: %+v", out)
	}

	if err := e.hub.SetBranchProtection(testFull, "main", "ci", "lint"); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		id   string
		head string
		want string
	}{
		{"moved head", clean.GetNodeID(), strings.Repeat("0", 40), "Head ref has moved"}, // why: expectedHeadOid pins the head
		{"unknown node", "PR_nope", clean.GetHead().GetSHA(), "Could not resolve"},       // why: ids are checked
	}
	for _, tc := range cases {
		pr := &github.PullRequest{NodeID: github.String(tc.id)}
		out := enableAutoMerge(t, e, c, gql, pr, tc.head)
		if len(out.Errors) != 1 || !strings.Contains(out.Errors[0].Message, tc.want) {
			t.Fatalf("%s: %+v", tc.name, out)
		}
	}

	if err := e.hub.SetAllowAutoMerge(testFull, false); err != nil {
		t.Fatal(err)
	}
	out = enableAutoMerge(t, e, c, gql, clean, clean.GetHead().GetSHA())
	if len(out.Errors) != 1 || !strings.Contains(out.Errors[0].Message, "Auto merge is not allowed") {
		t.Fatalf("disallowed: %+v", out)
	}
	if err := e.hub.SetAllowAutoMerge(testFull, true); err != nil {
		t.Fatal(err)
	}

	// Enterprise-style GraphQL URL, checks pending: enabled.
	out = enableAutoMerge(t, e, c, e.srv.URL+"/api/graphql", clean, clean.GetHead().GetSHA())
	if len(out.Errors) != 0 || out.Data["enablePullRequestAutoMerge"] == nil {
		t.Fatalf("enable: %+v", out)
	}
	got := readPull(t, e, c, clean.GetNumber())
	if got.GetAutoMerge() == nil || got.GetAutoMerge().GetMergeMethod() != "squash" || got.GetMergeableState() != "blocked" {
		t.Fatalf("auto_merge %v state %q", got.GetAutoMerge(), got.GetMergeableState())
	}
	_, resp, err := c.PullRequests.Merge(e.ctx, testOwner, testRepo, clean.GetNumber(), "", nil)
	mustStatus(t, "merge while checks are missing", resp, err, 405)

	head := clean.GetHead().GetSHA()
	run, resp, err := c.Checks.CreateCheckRun(e.ctx, testOwner, testRepo, github.CreateCheckRunOptions{Name: "ci", HeadSHA: head, Status: github.String("in_progress")})
	mustStatus(t, "create check run", resp, err, 201)
	_, resp, err = c.Repositories.CreateStatus(e.ctx, testOwner, testRepo, head, &github.RepoStatus{State: github.String("success"), Context: github.String("lint")})
	mustStatus(t, "create status", resp, err, 201)
	if got, _, _ := c.PullRequests.Get(e.ctx, testOwner, testRepo, clean.GetNumber()); got.GetMerged() {
		t.Fatal("merged while ci is still running")
	}
	_, resp, err = c.Checks.UpdateCheckRun(e.ctx, testOwner, testRepo, run.GetID(), github.UpdateCheckRunOptions{Name: "ci", Conclusion: github.String("success")})
	mustStatus(t, "complete check run", resp, err, 200)
	got, _, _ = c.PullRequests.Get(e.ctx, testOwner, testRepo, clean.GetNumber())
	if !got.GetMerged() || got.GetMergedBy().GetLogin() != e.hub.AppSlug()+"[bot]" {
		t.Fatalf("not auto-merged after checks turned green: merged %v state %q", got.GetMerged(), got.GetMergeableState())
	}

}

// TestAutoMergeKeptOrCancelled: GitHub cancels auto-merge when someone
// without write access pushes to the head branch, or the base branch
// changes; a push by the App or a collaborator keeps it armed.
func TestAutoMergeKeptOrCancelled(t *testing.T) {
	e := newEnv(t, Options{})
	c := e.client(t)
	if err := e.hub.SetBranchProtection(testFull, "main", "ci"); err != nil {
		t.Fatal(err)
	}
	if err := e.hub.SetPermission(testFull, "fred", "read"); err != nil {
		t.Fatal(err)
	}
	if err := e.hub.SetPermission(testFull, "fred", "owner"); err == nil {
		t.Error("an unknown permission level was accepted")
	}
	if _, resp, err := c.Git.CreateRef(e.ctx, testOwner, testRepo, &github.Reference{Ref: github.String("refs/heads/other"), Object: &github.GitObject{SHA: github.String(e.head(t, c, "main"))}}); err != nil {
		mustStatus(t, "create other", resp, err, 201)
	}
	for i, tc := range []struct {
		name  string
		push  func(branch string)
		keeps bool
	}{
		{"a push by the App", func(branch string) {
			commitFile(t, e, c, branch, branch, "envs/staging/redis/values.yaml", "replicas: 3\n", "three")
		}, true},
		{"a push by a collaborator with write access", func(branch string) {
			commitFile(t, e, e.userClient(t, "ann"), branch, branch, "envs/staging/redis/values.yaml", "replicas: 5\n", "five")
		}, true},
		{"a push by someone without write access", func(branch string) {
			commitFile(t, e, e.userClient(t, "fred"), branch, branch, "envs/staging/redis/values.yaml", "replicas: 6\n", "six")
		}, false},
		{"a base branch change", func(branch string) {
			pr := e.pullFor(t, c, branch)
			_, resp, err := c.PullRequests.Edit(e.ctx, testOwner, testRepo, pr.GetNumber(), &github.PullRequest{Base: &github.PullRequestBranch{Ref: github.String("other")}})
			mustStatus(t, "change base", resp, err, 200)
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			branch := fmt.Sprintf("armed-%d", i)
			commitFile(t, e, c, "main", branch, "envs/staging/redis/values.yaml", "replicas: 2\n", "two")
			pr := openPull(t, e, c, branch)
			if out := enableAutoMerge(t, e, c, e.srv.URL+"/graphql", pr, pr.GetHead().GetSHA()); len(out.Errors) != 0 {
				t.Fatalf("enable: %+v", out)
			}
			tc.push(branch)
			got, _, _ := c.PullRequests.Get(e.ctx, testOwner, testRepo, pr.GetNumber())
			if (got.GetAutoMerge() != nil) != tc.keeps || got.GetMerged() {
				t.Errorf("auto_merge %v merged %v, want armed %v", got.GetAutoMerge(), got.GetMerged(), tc.keeps)
			}
		})
	}
}

func TestChecksAndStatuses(t *testing.T) {
	e := newEnv(t, Options{Permissions: widePermissions})
	c := e.client(t)
	ref, _, _ := c.Git.GetRef(e.ctx, testOwner, testRepo, "heads/main")
	head := ref.GetObject().GetSHA()
	invalid := []struct {
		name string
		opts github.CreateCheckRunOptions
	}{
		{"unknown sha", github.CreateCheckRunOptions{Name: "ci", HeadSHA: strings.Repeat("b", 40)}},                                   // why: runs attach to real commits
		{"completed without conclusion", github.CreateCheckRunOptions{Name: "ci", HeadSHA: head, Status: github.String("completed")}}, // why: GitHub requires a conclusion
		{"bad conclusion", github.CreateCheckRunOptions{Name: "ci", HeadSHA: head, Conclusion: github.String("great")}},               // why: conclusions are an enum
	}
	for _, tc := range invalid {
		_, resp, err := c.Checks.CreateCheckRun(e.ctx, testOwner, testRepo, tc.opts)
		mustStatus(t, tc.name, resp, err, 422)
	}
	run, resp, err := c.Checks.CreateCheckRun(e.ctx, testOwner, testRepo, github.CreateCheckRunOptions{Name: "backflow/receipt", HeadSHA: head,
		Conclusion: github.String("success"), Output: &github.CheckRunOutput{Title: github.String("proven"), Summary: github.String("round trip closed")}})
	mustStatus(t, "create run", resp, err, 201)
	if run.GetStatus() != "completed" || run.GetApp().GetID() != e.hub.AppID() {
		t.Fatalf("run %v", run)
	}
	runs, resp, err := c.Checks.ListCheckRunsForRef(e.ctx, testOwner, testRepo, "main", &github.ListCheckRunsOptions{CheckName: github.String("backflow/receipt")})
	mustStatus(t, "list runs", resp, err, 200)
	if runs.GetTotal() != 1 || runs.CheckRuns[0].GetOutput().GetSummary() != "round trip closed" {
		t.Fatalf("runs %v", runs)
	}
	_, resp, err = c.Checks.GetCheckRun(e.ctx, testOwner, testRepo, 987654)
	mustStatus(t, "missing run", resp, err, 404)

	combined, _, _ := c.Repositories.GetCombinedStatus(e.ctx, testOwner, testRepo, "main", nil)
	if combined.GetState() != "pending" || combined.GetTotalCount() != 0 {
		t.Fatalf("no statuses: %v", combined)
	}
	for _, st := range []string{"pending", "success"} {
		_, resp, err = c.Repositories.CreateStatus(e.ctx, testOwner, testRepo, head, &github.RepoStatus{State: github.String(st), Context: github.String("ci")})
		mustStatus(t, "status "+st, resp, err, 201)
	}
	_, resp, err = c.Repositories.CreateStatus(e.ctx, testOwner, testRepo, head, &github.RepoStatus{State: github.String("error"), Context: github.String("lint")})
	mustStatus(t, "status error", resp, err, 201)
	combined, _, _ = c.Repositories.GetCombinedStatus(e.ctx, testOwner, testRepo, head, nil)
	if combined.GetState() != "failure" || combined.GetTotalCount() != 2 {
		t.Fatalf("combined %v", combined)
	}
	_, resp, err = c.Repositories.CreateStatus(e.ctx, testOwner, testRepo, head, &github.RepoStatus{State: github.String("great")})
	mustStatus(t, "bad state", resp, err, 422)
}
