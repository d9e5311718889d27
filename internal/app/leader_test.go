package app

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/backflow-dev/backflow/internal/server"
)

// replica is one backflow serve of several, in process.
type replica struct {
	name string
	base string
	logs *syncBuffer
	msgs chan string
	stop func() error
}

// startReplica runs backflow serve with config under leader election on
// the Lease of cs, and waits until it serves.
func startReplica(t *testing.T, name, config string, cs *fake.Clientset) *replica {
	t.Helper()
	r := &replica{name: name, logs: &syncBuffer{}, msgs: make(chan string, 1000)}
	logger := slog.New(notifier{slog.NewJSONHandler(r.logs, nil), r.msgs})
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	// Short terms: a takeover after an expired lease takes about a second.
	le := &LeaderElection{Client: cs.CoordinationV1(), Namespace: "backflow", Name: "backflow", Identity: name,
		LeaseDuration: time.Second, RenewDeadline: 500 * time.Millisecond, RetryPeriod: 100 * time.Millisecond}
	up := make(chan *server.Server, 1)
	addr := make(chan net.Addr, 1)
	done := make(chan error, 1)
	go func() {
		done <- ServeWith(ctx, config, ServeOptions{LeaderElection: le}, logger, func(a net.Addr, s *server.Server) { addr <- a; up <- s })
	}()
	select {
	case s := <-up:
		r.base = "http://" + (<-addr).String()
		<-s.ReadyC()
	case err := <-done:
		t.Fatalf("%s did not start: %v\n%s", name, err, r.logs.String())
	}
	var once sync.Once
	var err error
	r.stop = func() error { once.Do(func() { cancel(); err = <-done }); return err }
	t.Cleanup(func() { _ = r.stop() })
	return r
}

func (r *replica) status(t *testing.T, method, path string, body io.Reader) int {
	t.Helper()
	req, _ := http.NewRequest(method, r.base+path, body)
	req.Header.Set("Authorization", "Bearer push-token-canary-33")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// readyRouter is what a Service does in front of the replicas: it sends
// each request to a replica whose /readyz answers 200, or answers 503.
func readyRouter(t *testing.T, replicas func() []*replica) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for _, rp := range replicas() {
			resp, err := http.Get(rp.base + "/readyz")
			if err != nil {
				continue
			}
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				u, _ := url.Parse(rp.base)
				httputil.NewSingleHostReverseProxy(u).ServeHTTP(w, r)
				return
			}
		}
		http.Error(w, "no ready endpoint", http.StatusServiceUnavailable)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestServeReplicasOneWriter runs two replicas of serve's wiring in process
// against the local hub and one Lease: only the leader is ready, takes
// pushes and cycles; the standby stays live, refuses pushes and runs no
// cycle; when the leader shuts down it releases the lease, the standby
// leads at once, cycles every repository, and opens no second pull request
// for what the first leader proposed.
func TestServeReplicasOneWriter(t *testing.T) {
	hub := gitopsHub(t, false)
	config := pushConfig(t, hub, "push-token-canary-33", `  schedule: "@every 1h"
`)

	cs := fake.NewSimpleClientset()
	var mu sync.Mutex
	var all []*replica
	service := readyRouter(t, func() []*replica { mu.Lock(); defer mu.Unlock(); return all })
	hub.SetWebhookURL(service.URL + "/webhook")

	a := startReplica(t, "a", config, cs)
	waitMsg(t, a.msgs, "leading", a.logs)
	waitMsg(t, a.msgs, "cycle done", a.logs)
	b := startReplica(t, "b", config, cs)
	mu.Lock()
	all = []*replica{a, b}
	mu.Unlock()

	for _, c := range []struct {
		r      *replica
		method string
		path   string
		want   int
	}{
		{a, http.MethodGet, "/readyz", http.StatusOK},
		{b, http.MethodGet, "/readyz", http.StatusServiceUnavailable}, // the Service sends it nothing
		{b, http.MethodGet, "/healthz", http.StatusOK},                // but it is alive: not restarted
		{b, http.MethodPost, "/observations", http.StatusServiceUnavailable},
	} {
		if got := c.r.status(t, c.method, c.path, strings.NewReader(replicasObservation(time.Now()))); got != c.want {
			t.Errorf("%s %s %s: %d, want %d", c.r.name, c.method, c.path, got, c.want)
		}
	}

	// A push through the Service reaches the leader and becomes a pull
	// request (one person must review it: it stays open).
	pushObservations(t, service.URL, "push-token-canary-33", replicasObservation(time.Now()))
	wctx, wcancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer wcancel()
	if _, err := hub.Webhooks().Wait(wctx, 1); err != nil {
		t.Fatalf("no delivery: %v\n%s", err, a.logs.String())
	}
	waitMsg(t, a.msgs, "cycle done", a.logs)

	// The leader shuts down: it releases the lease after its cycles, and
	// the standby leads and cycles every repository at once.
	stopped := time.Now()
	if err := a.stop(); err != nil {
		t.Fatalf("a's shutdown: %v", err)
	}
	waitMsg(t, b.msgs, "leading", b.logs)
	waitMsg(t, b.msgs, "cycle done", b.logs)
	t.Logf("b's first cycle done %s after a's shutdown began", time.Since(stopped).Round(time.Millisecond))
	if got := b.status(t, http.MethodGet, "/readyz", nil); got != http.StatusOK {
		t.Errorf("b /readyz after the take-over: %d", got)
	}
	metrics := get(t, b.base+"/metrics")
	for _, want := range []string{"backflow_leader 1", "backflow_leader_transitions_total 1"} {
		if !strings.Contains(metrics, want) {
			t.Errorf("b's /metrics lacks %q", want)
		}
	}
	// Stopped, b has written every log line (a message is announced just
	// before its line is written).
	if err := b.stop(); err != nil {
		t.Fatalf("b's shutdown: %v", err)
	}
	logs := b.logs.String()
	lead, cycle := strings.Index(logs, `"msg":"leading"`), strings.Index(logs, `"msg":"cycle done"`)
	if lead < 0 || cycle < lead {
		t.Fatalf("b cycled before it led (or never led):\n%s", logs)
	}
	// Its first cycle answers its election (or its start, when it was
	// elected before its repository list had loaded), not a schedule.
	first, _, _ := strings.Cut(logs[cycle:], "\n")
	if !strings.Contains(first, `"elected"`) && !strings.Contains(first, `"startup"`) {
		t.Errorf("b's first cycle answers neither its election nor its start: %s", first)
	}
	opened := 0
	for _, d := range hub.Webhooks().All() {
		if d.Event == "pull_request" && d.Action == "opened" {
			opened++
		}
	}
	if opened != 1 {
		t.Errorf("%d pull requests opened, want 1 (the new leader follows the first's)", opened)
	}
}

// nopCycler cycles nothing.
type nopCycler struct{}

func (nopCycler) Repositories(context.Context) ([]string, error) { return []string{"acme/gitops"}, nil }
func (nopCycler) Cycle(context.Context, string, []server.Trigger) error {
	return nil
}

// TestAReplicaThatStopsLeadingForgets checks the wiring of a lost lease:
// the replica stops leading (metrics), and forgets what it kept between
// cycles, which the next leader's writes would make stale.
func TestAReplicaThatStopsLeadingForgets(t *testing.T) {
	cs := fake.NewSimpleClientset()
	acquired := make(chan struct{}, 1)
	var cut sync.Once
	cutOff := make(chan struct{})
	cs.PrependReactor("*", "leases", func(action k8stesting.Action) (bool, runtime.Object, error) {
		switch action.GetVerb() {
		case "create":
			acquired <- struct{}{}
		case "update":
			select {
			case <-cutOff:
				return true, nil, errors.New("connection refused")
			default:
			}
		}
		return false, nil, nil
	})
	cfg := server.DefaultConfig()
	cfg.WebhookSecret = server.NewSecret([]byte("webhook-secret"))
	metrics := server.NewMetrics()
	var srv *server.Server
	forgot := make(chan struct{}, 4)
	le := &LeaderElection{Client: cs.CoordinationV1(), Namespace: "backflow", Name: "backflow", Identity: "a",
		LeaseDuration: time.Second, RenewDeadline: 500 * time.Millisecond, RetryPeriod: 100 * time.Millisecond}
	gate, start, err := elect(le, metrics, nil, func() *server.Server { return srv }, func() { forgot <- struct{}{} })
	if err != nil {
		t.Fatal(err)
	}
	if srv, err = server.New(cfg, server.Deps{Cycler: nopCycler{}, Metrics: metrics, Gate: gate}); err != nil {
		t.Fatal(err)
	}
	stop := start()
	defer stop()
	<-acquired
	cut.Do(func() { close(cutOff) })
	select {
	case <-forgot:
	case <-time.After(30 * time.Second):
		t.Fatal("the replica never forgot after losing the lease")
	}
	if _, ok := gate.Term(); ok {
		t.Error("the replica still leads after losing the lease")
	}
	rec := httptest.NewRecorder()
	metrics.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	for _, want := range []string{"backflow_leader 0", "backflow_leader_transitions_total 2"} {
		if !strings.Contains(rec.Body.String(), want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
}
