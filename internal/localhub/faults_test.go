package localhub

import (
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/google/go-github/v62/github"
)

func TestFaultInjection(t *testing.T) {
	const route = "/repos/{owner}/{repo}"
	cases := []struct {
		name  string
		fault Fault
		check func(t *testing.T, resp *github.Response, err error)
	}{
		{"status", Fault{Kind: FaultStatus, Status: 502, Route: route}, func(t *testing.T, resp *github.Response, err error) {
			mustStatus(t, "502", resp, err, 502) // why: plain server errors reach the client as *ErrorResponse
		}},
		{"primary rate limit", Fault{Kind: FaultRateLimit, Route: route, RetryAfter: time.Minute}, func(t *testing.T, resp *github.Response, err error) {
			var rl *github.RateLimitError // why: go-github must see a primary rate limit
			if !errors.As(err, &rl) || rl.Rate.Remaining != 0 || time.Until(rl.Rate.Reset.Time) < 30*time.Second {
				t.Fatalf("err %T %v", err, err)
			}
		}},
		{"secondary rate limit", Fault{Kind: FaultSecondaryRateLimit, Route: route, RetryAfter: 7 * time.Second}, func(t *testing.T, resp *github.Response, err error) {
			var ab *github.AbuseRateLimitError // why: secondary limits carry Retry-After
			if !errors.As(err, &ab) || ab.GetRetryAfter() != 7*time.Second {
				t.Fatalf("err %T %v", err, err)
			}
		}},
		{"429", Fault{Kind: FaultTooManyRequests, Route: route, RetryAfter: 3 * time.Second}, func(t *testing.T, resp *github.Response, err error) {
			mustStatus(t, "429", resp, err, 429) // why: go-github v62 leaves 429 and Retry-After to the caller
			if resp.Header.Get("Retry-After") != "3" {
				t.Fatalf("Retry-After %q", resp.Header.Get("Retry-After"))
			}
		}},
		{"connection reset", Fault{Kind: FaultReset, Route: route}, func(t *testing.T, resp *github.Response, err error) {
			if err == nil || resp != nil { // why: a dropped connection is a transport error, not a status
				t.Fatalf("resp %v err %v", resp, err)
			}
		}},
		{"delay", Fault{Kind: FaultDelay, Route: route, Delay: 50 * time.Millisecond}, func(t *testing.T, resp *github.Response, err error) {
			mustStatus(t, "delayed", resp, err, 200) // why: a delay still serves the request
		}},
	}
	e := newEnv(t, Options{})
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e.hub.Faults().Clear()
			e.hub.Faults().Add(tc.fault)
			// A fresh client each time: go-github refuses calls locally after a rate limit.
			c := e.tokenClient(t, e.token(t))
			_, resp, err := c.Repositories.Get(e.ctx, testOwner, testRepo)
			tc.check(t, resp, err)
			// Other routes are untouched.
			_, resp, err = c.Repositories.ListBranches(e.ctx, testOwner, testRepo, nil)
			if tc.name != "primary rate limit" && tc.name != "secondary rate limit" {
				mustStatus(t, "other route", resp, err, 200)
			}
		})
	}
}

func TestFaultShareIsDeterministicAndCounted(t *testing.T) {
	run := func() (faulted int, counts map[string]int) {
		e := newEnv(t, Options{Seed: 42})
		e.hub.Faults().Add(Fault{Kind: FaultStatus, Status: 503, Share: 0.3})
		c := e.tokenClient(t, e.token(t))
		for range 40 {
			if _, resp, _ := c.Repositories.Get(e.ctx, testOwner, testRepo); resp != nil && resp.StatusCode == 503 {
				faulted++
			}
		}
		e.hub.Faults().Clear()
		_, _, _ = c.PullRequests.List(e.ctx, testOwner, testRepo, nil)
		_, _, _ = c.Repositories.Get(e.ctx, testOwner, "missing")
		req, _ := c.NewRequest("GET", "repos/acme/gitops/no-such-endpoint", nil)
		resp, err := c.Do(e.ctx, req, nil)
		mustStatus(t, "unknown route", resp, err, http.StatusNotFound)
		return faulted, e.hub.Requests().Counts()
	}
	f1, counts := run()
	f2, _ := run()
	if f1 != f2 || f1 == 0 || f1 == 40 {
		t.Fatalf("faulted %d then %d of 40: want the same share, neither none nor all", f1, f2)
	}
	want := map[string]int{"GET /repos/{owner}/{repo}": 41, "GET /repos/{owner}/{repo}/pulls": 1, "GET unknown": 1}
	for k, v := range want {
		if counts[k] != v {
			t.Fatalf("counts[%q] = %d, want %d (all: %v)", k, counts[k], v, counts)
		}
	}
}

func TestRateLimitAccounting(t *testing.T) {
	e := newEnv(t, Options{RateLimit: 3})
	c := e.tokenClient(t, e.token(t))
	req, _ := c.NewRequest("GET", "repos/acme/gitops", nil)
	resp, err := c.Do(e.ctx, req, nil)
	mustStatus(t, "first", resp, err, 200)
	if resp.Rate.Limit != 3 || resp.Rate.Remaining != 2 {
		t.Fatalf("rate %v", resp.Rate)
	}
	etag := resp.Header.Get("ETag")
	for range 3 {
		req, _ = c.NewRequest("GET", "repos/acme/gitops", nil)
		req.Header.Set("If-None-Match", etag)
		resp, err = c.Do(e.ctx, req, nil)
		mustStatus(t, "conditional", resp, err, 304)
	}
	if resp.Rate.Remaining != 2 {
		t.Fatalf("304s were counted: %v", resp.Rate)
	}
	for range 2 {
		_, resp, err = c.Repositories.Get(e.ctx, testOwner, testRepo)
		mustStatus(t, "within budget", resp, err, 200)
	}
	_, _, err = c.Repositories.Get(e.ctx, testOwner, testRepo)
	var rl *github.RateLimitError
	if !errors.As(err, &rl) {
		t.Fatalf("over budget: %T %v", err, err)
	}
	// A new hour, a new budget.
	e.clock.Advance(time.Hour)
	c = e.tokenClient(t, e.token(t))
	_, resp, err = c.Repositories.Get(e.ctx, testOwner, testRepo)
	mustStatus(t, "next hour", resp, err, 200)
}

func TestStatePersists(t *testing.T) {
	dir := t.TempDir()
	e := newEnv(t, Options{Dir: dir})
	c := e.client(t)
	commitFile(t, e, c, "main", "topic", "README.md", "changed\n", "change")
	pr := openPull(t, e, c, "topic")
	tok := e.token(t)
	appID := e.hub.AppID()
	e.srv.Close()
	if err := e.hub.Close(); err != nil {
		t.Fatal(err)
	}

	e2 := newEnv(t, Options{Dir: dir})
	if e2.hub.AppID() != appID {
		t.Fatalf("app id %d, was %d", e2.hub.AppID(), appID)
	}
	c2 := e2.tokenClient(t, tok)
	got, resp, err := c2.PullRequests.Get(e2.ctx, testOwner, testRepo, pr.GetNumber())
	mustStatus(t, "pull after restart", resp, err, 200)
	if got.GetHead().GetSHA() != pr.GetHead().GetSHA() || got.GetTitle() != pr.GetTitle() {
		t.Fatalf("pull after restart %v", got)
	}
}
