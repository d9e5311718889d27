package github

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/backflow-dev/backflow/internal/forge"
	"github.com/backflow-dev/backflow/internal/localhub"
)

func TestRouteOf(t *testing.T) {
	cases := []struct{ path, want, why string }{
		{"/repos/acme/gitops/pulls/12", "/repos/{owner}/{repo}/pulls/{n}", "numbers are placeholders so counts group by kind"},
		{"/repos/acme/gitops/git/ref/heads/backflow/prod/redis", "/repos/{owner}/{repo}/git/ref/{ref}", "a ref's slashes belong to the ref"},
		{"/repos/acme/gitops/contents/envs/prod/values.yaml", "/repos/{owner}/{repo}/contents/{path}", "a file path is one placeholder"},
		{"/api/v3/repos/acme/gitops/git/commits/0123456789abcdef0123456789abcdef01234567", "/repos/{owner}/{repo}/git/commits/{sha}", "Enterprise's prefix is dropped, SHAs are placeholders"},
		{"/repos/acme/gitops/issues/3/labels/env:prod", "/repos/{owner}/{repo}/issues/{n}/labels/{name}", "label names vary"},
		{"/graphql", "/graphql", "GraphQL has one route"},
	}
	for _, tc := range cases {
		if got := routeOf(tc.path); got != tc.want {
			t.Errorf("%s: routeOf(%q) = %q, want %q", tc.why, tc.path, got, tc.want)
		}
	}
}

// Why: GitHub's secondary limit is also 500 content-creating requests an
// hour: at 80 a minute that is reached in under seven minutes, and the
// 501st write of the hour waits for the first to be an hour old, or fails
// with the hour's end when that is beyond maxWait.
func TestGateSlidingHour(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := localhub.NewFakeClock(t0)
	g := &gate{clock: clock, maxWait: 2 * time.Minute, perMinute: 80, perHour: 500, sleep: func(ctx context.Context, d time.Duration) error {
		clock.Advance(d)
		return nil
	}}
	ctx := context.Background()
	for i := range 500 {
		if err := g.wait(ctx, true); err != nil {
			t.Fatalf("write %d: %v", i+1, err)
		}
	}
	// 500 writes at 80 a minute: the last went out in the seventh minute.
	if got := clock.Now().Sub(t0); got != 6*time.Minute {
		t.Fatalf("500 writes took %s, want 6m0s", got)
	}
	err := g.wait(ctx, true)
	rl, ok := forge.IsRateLimited(err)
	if !ok || !rl.Until.Equal(t0.Add(time.Hour)) || !strings.Contains(rl.Reason, "500") {
		t.Fatalf("the 501st write = %v, want a RateLimitError until %s", err, t0.Add(time.Hour))
	}
	if err := g.wait(ctx, false); err != nil {
		t.Fatalf("a read waited: %v", err)
	}
	clock.Set(t0.Add(time.Hour - time.Minute))
	if err := g.wait(ctx, true); err != nil || !clock.Now().Equal(t0.Add(time.Hour)) {
		t.Fatalf("within maxWait of the hour: %v at %s, want sent at %s", err, clock.Now(), t0.Add(time.Hour))
	}
}

func TestGateSlidingMinute(t *testing.T) {
	clock := localhub.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	var slept time.Duration
	g := &gate{clock: clock, maxWait: time.Minute, perMinute: 3, sleep: func(ctx context.Context, d time.Duration) error {
		slept += d
		clock.Advance(d)
		return nil
	}}
	ctx := context.Background()
	var sent []time.Duration
	for i := range 7 {
		if i == 1 {
			clock.Advance(10 * time.Second)
		}
		if err := g.wait(ctx, true); err != nil {
			t.Fatal(err)
		}
		sent = append(sent, clock.Now().Sub(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)))
	}
	// Why: three writes a minute in any window: the 4th waits for the 1st to
	// be a minute old, the 5th for the 2nd, and so on; reads never wait.
	want := []time.Duration{0, 10 * time.Second, 10 * time.Second, time.Minute, 70 * time.Second, 70 * time.Second, 2 * time.Minute}
	for i := range want {
		if sent[i] != want[i] {
			t.Fatalf("write send times = %v, want %v", sent, want)
		}
	}
	if err := g.wait(ctx, false); err != nil || clock.Now().Sub(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)) != 2*time.Minute {
		t.Fatalf("a read waited: %v", err)
	}
	if g.peak != 3 {
		t.Fatalf("peak = %d, want 3", g.peak)
	}
	// An embargo beyond maxWait is refused with its end, without sleeping.
	slept = 0
	g.embargo(clock.Now().Add(5*time.Minute), "429")
	err := g.wait(ctx, false)
	if rl, ok := forge.IsRateLimited(err); !ok || rl.Reason != "429" || !rl.Until.Equal(clock.Now().Add(5*time.Minute)) || slept != 0 {
		t.Fatalf("wait during a long embargo = %v (slept %s), want a RateLimitError without sleeping", err, slept)
	}
}

func TestObserverSeesEveryRequest(t *testing.T) {
	e := newEnv(t)
	for range 2 {
		if _, err := e.a.BranchHead(e.ctx, e.repo, "main"); err != nil {
			t.Fatal(err)
		}
	}
	e.mu.Lock()
	events := append([]forge.RequestEvent(nil), e.events...)
	e.mu.Unlock()
	// Why: metrics need kinds and routes, and the 304 marked as such.
	var reads, notModified int
	for _, ev := range events {
		if ev.Route == "/repos/{owner}/{repo}/git/ref/{ref}" && ev.Kind == forge.KindRead {
			reads++
			if ev.NotModified {
				notModified++
				// A 304 is counted as one, not as the 200 it was turned into.
				if ev.Status != http.StatusNotModified {
					t.Errorf("a read answered 304 has status %d", ev.Status)
				}
			}
		}
	}
	if reads != 2 || notModified != 1 {
		t.Fatalf("events = %+v; want two ref reads, one not modified", events)
	}
}

// Why: a wait of the pacing gate or of a rate limit holds a cycle back for
// seconds to minutes; it must say so (log line and Waited, for the
// metric) with its reason and length, not only show as a slow cycle.
func TestEveryWaitIsReported(t *testing.T) {
	type wait struct {
		reason string
		d      time.Duration
	}
	var waits []wait
	var logs bytes.Buffer
	e := newEnv(t, func(c *Config) {
		c.WritesPerMinute = 1
		c.Waited = func(reason string, d time.Duration) { waits = append(waits, wait{reason, d}) }
		c.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	})
	e.hub.Faults().Add(localhub.Fault{Kind: localhub.FaultSecondaryRateLimit, Route: "/repos/{owner}/{repo}/git/ref/{ref...}", Times: 1, RetryAfter: 20 * time.Second})
	e.hub.Faults().Add(localhub.Fault{Kind: localhub.FaultStatus, Status: http.StatusBadGateway, Route: "/repos/{owner}/{repo}/pulls", Times: 1})
	head, err := e.a.BranchHead(e.ctx, e.repo, "main")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.a.ListPullRequests(e.ctx, e.repo, forge.PullRequestFilter{State: forge.StateAll}); err != nil {
		t.Fatal(err)
	}
	for _, b := range []string{"backflow/a", "backflow/b"} {
		if err := e.a.CreateBranch(e.ctx, e.repo, b, head); err != nil {
			t.Fatal(err)
		}
	}
	got := map[string]time.Duration{}
	for _, w := range waits {
		got[w.reason] += w.d
	}
	if got[WaitEmbargoSecondary] != 20*time.Second || got[WaitRetry] <= 0 || got[WaitWritesPerMinute] <= 0 || got[WaitWritesPerMinute] > time.Minute {
		t.Fatalf("waits = %+v; want a 20s secondary embargo, a retry's backoff and the minute's pacing", waits)
	}
	for _, want := range []string{"reason=embargo-secondary wait=20s", "reason=writes-per-minute"} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("the log lacks %q:\n%s", want, logs.String())
		}
	}
}

func TestETagCacheStaysWithinItsBudget(t *testing.T) {
	c := newETagCache()
	body := make([]byte, etagCacheBody)
	for i := range 40 {
		resp := &http.Response{Header: http.Header{"Etag": {fmt.Sprintf(`"%d"`, i)}}, Body: io.NopCloser(bytes.NewReader(body))}
		c.put(fmt.Sprint("GET /x/", i), resp)
		if got, _ := io.ReadAll(resp.Body); len(got) != len(body) {
			t.Fatalf("the response body was consumed: %d bytes left", len(got))
		}
	}
	// Why: a long-running bot reads many files; the cache must not grow
	// without bound, and the newest entry must be kept.
	if c.bytes > etagCacheBytes || len(c.entries) > etagCacheBytes/etagCacheBody || c.get("GET /x/39") == nil {
		t.Fatalf("cache holds %d bytes in %d entries (budget %d); newest kept: %v", c.bytes, len(c.entries), etagCacheBytes, c.get("GET /x/39") != nil)
	}
}

// Why: at about seven entries a repository, a fleet of hundreds of
// repositories filled a fixed cache and random eviction threw out entries
// about to be read again, turning free 304s into full reads. The cache
// grows with the fleet and evicts the least recently used.
func TestETagCacheEvictsTheLeastRecentlyUsed(t *testing.T) {
	c := newETagCache()
	put := func(k string) {
		c.put(k, &http.Response{Header: http.Header{"Etag": {`"` + k + `"`}}, Body: io.NopCloser(strings.NewReader(k))})
	}
	for i := range etagCacheEntries {
		put(fmt.Sprint("GET /x/", i))
	}
	c.get("GET /x/0") // used again: the oldest is now /x/1
	put("GET /x/new")
	if c.get("GET /x/0") == nil || c.get("GET /x/1") != nil || len(c.entries) != etagCacheEntries {
		t.Fatalf("after one more entry: /x/0 kept %v, /x/1 evicted %v, %d entries", c.get("GET /x/0") != nil, c.get("GET /x/1") == nil, len(c.entries))
	}
	c.resize(1000)
	for i := range 1000 * etagEntriesPerRepo {
		put(fmt.Sprint("GET /y/", i))
	}
	if len(c.entries) != 1000*etagEntriesPerRepo || c.get("GET /y/0") == nil {
		t.Fatalf("a cache sized for 1,000 repositories holds %d entries, want %d", len(c.entries), 1000*etagEntriesPerRepo)
	}
}

// Why: the state cache revalidates a repository with its latest event: the
// id must move with a change, and an unchanged repository must cost a 304.
func TestLatestEventMovesWithChanges(t *testing.T) {
	e := newEnv(t)
	first, err := e.a.LatestEvent(e.ctx, e.repo)
	if err != nil {
		t.Fatal(err)
	}
	before := e.a.Counts()
	again, err := e.a.LatestEvent(e.ctx, e.repo)
	if err != nil || again != first || e.a.Counts().NotModified-before.NotModified != 1 {
		t.Fatalf("an unchanged repository's latest event = %q (%v), want %q answered 304", again, err, first)
	}
	if _, err := e.a.CreateIssue(e.ctx, e.repo, forge.NewIssue{Title: "drift"}); err != nil {
		t.Fatal(err)
	}
	moved, err := e.a.LatestEvent(e.ctx, e.repo)
	if err != nil || moved == "" || moved == first {
		t.Fatalf("after an issue was opened the latest event = %q (%v), was %q", moved, err, first)
	}
}
