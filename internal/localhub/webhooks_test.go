package localhub

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/google/go-github/v62/github"
)

func TestWebhookEvents(t *testing.T) {
	rc := &receiver{secret: "hook-secret"}
	hook := httptest.NewServer(rc)
	defer hook.Close()
	e := newEnv(t, Options{WebhookSecret: "hook-secret"})
	c := e.client(t)
	commitFile(t, e, c, "main", "topic", "README.md", "x\n", "x")
	pr := openPull(t, e, c, "topic")
	// Deliveries start once a URL is set, as when the App's webhook is configured.
	e.hub.SetWebhookURL(hook.URL)

	steps := []struct {
		name  string
		do    func()
		wants []string // event/action, in order
	}{
		{"label", func() { // why: labels on a pull request are pull_request events
			_, resp, err := c.Issues.AddLabelsToIssue(e.ctx, testOwner, testRepo, pr.GetNumber(), []string{"backflow"})
			mustStatus(t, "label", resp, err, 200)
		}, []string{"pull_request/labeled"}},
		{"check run", func() { // why: a run created completed sends created then completed
			_, resp, err := c.Checks.CreateCheckRun(e.ctx, testOwner, testRepo, github.CreateCheckRunOptions{Name: "ci", HeadSHA: pr.GetHead().GetSHA(), Conclusion: github.String("success")})
			mustStatus(t, "check run", resp, err, 201)
		}, []string{"check_run/created", "check_run/completed"}},
		{"merge", func() { // why: a merge closes the pull request and pushes the base branch
			_, resp, err := c.PullRequests.Merge(e.ctx, testOwner, testRepo, pr.GetNumber(), "", &github.PullRequestOptions{SHA: pr.GetHead().GetSHA()})
			mustStatus(t, "merge", resp, err, 200)
		}, []string{"pull_request/closed", "push"}},
	}
	total := 0
	for _, st := range steps {
		st.do()
		total += len(st.wants)
		ctx, cancel := context.WithTimeout(e.ctx, 10*time.Second)
		ds, err := e.hub.Webhooks().Wait(ctx, total)
		cancel()
		if err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		for i, want := range st.wants {
			d := ds[total-len(st.wants)+i]
			got := d.Event
			if d.Action != "" {
				got += "/" + d.Action
			}
			if got != want || d.Status != http.StatusNoContent {
				t.Fatalf("%s: delivery %q status %d, want %q", st.name, got, d.Status, want)
			}
		}
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	for _, r := range rc.got {
		if !r.validSig {
			t.Fatalf("%s: signature does not verify with the secret", r.event)
		}
	}
	closed := rc.got[3].body["pull_request"].(map[string]any)
	if closed["merged"] != true {
		t.Fatalf("closed event without merged: %v", closed["merged"])
	}
}

func TestEnterpriseBaseURL(t *testing.T) {
	e := newEnv(t, Options{})
	// go-github's WithEnterpriseURLs adds /api/v3/: the hub serves that shape too.
	c, err := github.NewClient(nil).WithAuthToken(e.token(t)).WithEnterpriseURLs(e.srv.URL, e.srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	_, resp, err := c.Repositories.Get(e.ctx, testOwner, testRepo)
	mustStatus(t, "enterprise URL", resp, err, 200)
	if n := e.hub.Requests().Count("GET", "/repos/{owner}/{repo}"); n != 1 {
		t.Fatalf("count %d", n)
	}
}
