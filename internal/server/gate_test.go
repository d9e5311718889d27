package server

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeGate is a lease the test hands out and takes back.
type fakeGate struct {
	mu     sync.Mutex
	term   context.Context
	cancel context.CancelFunc
}

func (g *fakeGate) Term() (context.Context, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.term == nil || g.term.Err() != nil {
		return nil, false
	}
	return g.term, true
}

// lead starts a term.
func (g *fakeGate) lead() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.term, g.cancel = context.WithCancel(context.Background())
}

// lose ends the term, as a lease that could not be renewed does.
func (g *fakeGate) lose() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.cancel != nil {
		g.cancel()
	}
}

// newGatedServer is newTestServer behind gate, with one extra route that
// counts its requests.
func newGatedServer(t *testing.T, c *fakeCycler, sink ObservationSink, gate Gate, extra *int) *Server {
	t.Helper()
	logs := &bytes.Buffer{}
	var mu sync.Mutex
	s, err := New(testConfig(), Deps{Cycler: c, Sink: sink, Gate: gate,
		Logger: slog.New(slog.NewJSONHandler(&lockedWriter{w: logs}, nil)),
		Clock:  newFakeClock(time.Date(2026, 6, 18, 12, 0, 0, 0, time.UTC)),
		Handlers: map[string]http.Handler{"POST /audit": http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			mu.Lock()
			*extra++
			mu.Unlock()
			w.WriteHeader(http.StatusOK)
		})}})
	if err != nil {
		t.Fatal(err)
	}
	s.setRepos(c.repos)
	return s
}

func TestStandbyRunsNoCycles(t *testing.T) {
	c := newFakeCycler("acme/a", "acme/b")
	gate := &fakeGate{}
	var extra int
	s := newGatedServer(t, c, nil, gate, &extra)

	// Every way a cycle is asked for, on a standby: none runs.
	s.Request("acme/a", Trigger{Kind: TriggerPush})
	s.RequestAll(Trigger{Kind: TriggerSchedule})
	s.enqueueAll([]string{"acme/a", "acme/b"}, Trigger{Kind: TriggerStartup})
	settle(t, s)
	if calls := c.allCalls(); len(calls) != 0 {
		t.Fatalf("a standby ran %d cycles: %+v", len(calls), calls)
	}

	// Once it leads, the same requests run.
	gate.lead()
	s = newGatedServer(t, c, nil, gate, &extra)
	s.RequestAll(Trigger{Kind: TriggerElected})
	settle(t, s)
	if calls := c.allCalls(); len(calls) != 2 || calls[0].why[0].Kind != TriggerElected {
		t.Fatalf("the leader's cycles: %+v, want one of each repository", calls)
	}
}

func TestLosingTheLeaseCancelsTheRunningCycle(t *testing.T) {
	c := newFakeCycler("acme/a")
	release := c.setBlock("acme/a")
	defer close(release)
	gate := &fakeGate{}
	gate.lead()
	var extra int
	s := newGatedServer(t, c, nil, gate, &extra)

	s.Request("acme/a", Trigger{Kind: TriggerPush})
	c.waitStarted(t)
	// A request made while the cycle runs would run another cycle after
	// it; after the lease is lost it must not.
	s.Request("acme/a", Trigger{Kind: TriggerSchedule})
	gate.lose()
	// The blocked cycle returns only through its context: settle finishing
	// proves the loss cancelled it.
	settle(t, s)
	if n := len(c.callsFor("acme/a")); n != 1 {
		t.Errorf("%d cycles ran, want 1 (the one cancelled)", n)
	}
	body := serve(s, httptest.NewRequest(http.MethodGet, "/metrics", nil)).Body.String()
	if !strings.Contains(body, `backflow_cycles_total{result="error"} 1`) {
		t.Errorf("the cancelled cycle is not counted as failed:\n%s", grepLines(body, "backflow_cycles_total"))
	}
}

func TestStandbyIsLiveNotReadyAndRefusesPushes(t *testing.T) {
	c := newFakeCycler("acme/a")
	gate := &fakeGate{}
	sink := &fakeSink{result: PushResult{Repositories: []string{"acme/a"}, Accepted: 1}}
	var extra int
	s := newGatedServer(t, c, sink, gate, &extra)
	s.loaded.Store(true)
	s.scheduling.Store(true)

	if w := serve(s, httptest.NewRequest(http.MethodGet, "/healthz", nil)); w.Code != http.StatusOK {
		t.Errorf("standby /healthz: %d, want 200 (it is alive)", w.Code)
	}
	if w := serve(s, httptest.NewRequest(http.MethodGet, "/readyz", nil)); w.Code != http.StatusServiceUnavailable {
		t.Errorf("standby /readyz: %d, want 503 (the Service must not send it pushes)", w.Code)
	}
	push := func() *http.Request {
		r := httptest.NewRequest(http.MethodPost, "/observations", strings.NewReader("{}"))
		r.Header.Set("Authorization", "Bearer "+string(testObsToken.Reveal()))
		return r
	}
	h := signedHook("push", "delivery-1", pushPayload("acme/a", "refs/heads/main"))
	for name, r := range map[string]*http.Request{"webhook": h.request(), "observations": push(),
		"audit": httptest.NewRequest(http.MethodPost, "/audit", strings.NewReader("{}"))} {
		w := serve(s, r)
		if w.Code != http.StatusServiceUnavailable || w.Header().Get("Retry-After") == "" {
			t.Errorf("standby %s: %d (Retry-After %q), want 503 with Retry-After", name, w.Code, w.Header().Get("Retry-After"))
		}
	}
	if sink.pushes() != 0 || extra != 0 {
		t.Errorf("a standby kept what it cannot act on: %d pushes, %d audit batches", sink.pushes(), extra)
	}

	gate.lead()
	if w := serve(s, httptest.NewRequest(http.MethodGet, "/readyz", nil)); w.Code != http.StatusOK {
		t.Errorf("leader /readyz: %d, want 200", w.Code)
	}
	// The delivery refused on the standby was not remembered: its
	// redelivery to the leader is processed.
	if w := serve(s, h.request()); w.Code != http.StatusAccepted {
		t.Errorf("the redelivery on the leader: %d, want 202", w.Code)
	}
	if w := serve(s, push()); w.Code != http.StatusAccepted || sink.pushes() != 1 {
		t.Errorf("a push on the leader: %d, %d kept", w.Code, sink.pushes())
	}
	settle(t, s)
}

func TestLeaderMetrics(t *testing.T) {
	metric := func(s *Server, name string) string {
		t.Helper()
		return grepLines(serve(s, httptest.NewRequest(http.MethodGet, "/metrics", nil)).Body.String(), name+" ")
	}
	single := newTestServer(t, testConfig(), newFakeCycler(), nil, nil)
	if got := metric(single, "backflow_leader"); got != "backflow_leader 1" {
		t.Errorf("without election: %q, want backflow_leader 1", got)
	}
	if got := metric(single, "backflow_leader_transitions_total"); got != "backflow_leader_transitions_total 0" {
		t.Errorf("without election: %q, want no transition", got)
	}

	var extra int
	s := newGatedServer(t, newFakeCycler(), nil, &fakeGate{}, &extra)
	if got := metric(s, "backflow_leader"); got != "backflow_leader 0" {
		t.Errorf("a standby: %q, want backflow_leader 0", got)
	}
	for _, on := range []bool{true, true, false, true} {
		s.Metrics().Leading(on)
	}
	if got := metric(s, "backflow_leader"); got != "backflow_leader 1" {
		t.Errorf("leading again: %q", got)
	}
	if got := metric(s, "backflow_leader_transitions_total"); got != "backflow_leader_transitions_total 3" {
		t.Errorf("%q, want 3 transitions (a repeated report is none)", got)
	}
}

// grepLines keeps the lines of text that start with prefix.
func grepLines(text, prefix string) string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(l, prefix) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
