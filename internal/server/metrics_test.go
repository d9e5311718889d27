package server

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// lockingCycler spends lock before CycleStarted (waiting for its turn) and
// work after it, on the server's fake clock.
type lockingCycler struct {
	clock      *fakeClock
	lock, work time.Duration
}

func (c *lockingCycler) Repositories(context.Context) ([]string, error) {
	return []string{"acme/gitops"}, nil
}

func (c *lockingCycler) Cycle(ctx context.Context, _ string, _ []Trigger) error {
	c.clock.Advance(c.lock)
	CycleStarted(ctx)
	c.clock.Advance(c.work)
	return nil
}

// metricValue reads one unlabelled sample from /metrics.
func metricValue(t *testing.T, s *Server, name string) float64 {
	t.Helper()
	w := serve(s, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	for _, line := range strings.Split(w.Body.String(), "\n") {
		if strings.HasPrefix(line, name+" ") {
			var v float64
			fmt.Sscan(line[len(name)+1:], &v)
			return v
		}
	}
	t.Fatalf("/metrics lacks %s", name)
	return 0
}

func TestCycleDurationLeavesOutTheLockWait(t *testing.T) {
	clock := newFakeClock(time.Date(2026, 6, 18, 12, 0, 0, 0, time.UTC))
	c := &lockingCycler{clock: clock, lock: 3 * time.Second, work: 250 * time.Millisecond}
	s, err := New(testConfig(), Deps{Cycler: c, Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	s.setRepos([]string{"acme/gitops"})
	s.Request("acme/gitops", Trigger{Kind: TriggerPush})
	settle(t, s)
	// Why: a cycle that waited 3 s for the lock and worked 0.25 s must not
	// be reported as a 3.25 s cycle; the wait has its own metric.
	if got := metricValue(t, s, "backflow_cycle_duration_seconds_sum"); got != 0.25 {
		t.Errorf("cycle duration sum = %v s, want 0.25", got)
	}
	if got := metricValue(t, s, "backflow_cycle_lock_wait_seconds_sum"); got != 3 {
		t.Errorf("lock wait sum = %v s, want 3", got)
	}
}

func TestGitHubWaitsAndNotModifiedAreCounted(t *testing.T) {
	s := newTestServer(t, testConfig(), newFakeCycler(), nil, nil)
	m := s.Metrics()
	m.GitHubRequest(http.StatusNotModified)
	m.GitHubWait("writes-per-minute", 55*time.Second)
	m.GitHubWait("writes-per-minute", 5*time.Second)
	if got := counterValue(t, s, "backflow_github_requests_total", `status="304"`); got != 1 {
		t.Errorf("requests answered 304 = %v, want 1", got)
	}
	if got := counterValue(t, s, "backflow_github_wait_seconds_sum", `reason="writes-per-minute"`); got != 60 {
		t.Errorf("wait seconds for writes-per-minute = %v, want 60", got)
	}
}
