package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

var (
	testObsSecret = NewSecret([]byte("observation-secret-canary-91b2"))
	testObsToken  = NewSecret([]byte("observation-token-canary-44c0"))
)

func testConfig() Config {
	cfg := DefaultConfig()
	cfg.Listen = "127.0.0.1:0"
	cfg.WebhookSecret = testSecret
	cfg.ObservationSecret = testObsSecret
	cfg.ObservationToken = testObsToken
	cfg.MaxBodyBytes = 64 << 10
	cfg.ShutdownTimeout = 10 * time.Second
	return cfg
}

// newTestServer builds a server with the given fakes and a repository list
// already loaded (without the scheduler), logging to the test's buffer.
func newTestServer(t *testing.T, cfg Config, c *fakeCycler, sink ObservationSink, logs *bytes.Buffer) *Server {
	t.Helper()
	if logs == nil {
		logs = &bytes.Buffer{}
	}
	s, err := New(cfg, Deps{Cycler: c, Sink: sink, Logger: slog.New(slog.NewJSONHandler(&lockedWriter{w: logs}, nil)),
		Clock: newFakeClock(time.Date(2026, 6, 18, 12, 0, 0, 0, time.UTC))})
	if err != nil {
		t.Fatal(err)
	}
	s.setRepos(c.repos)
	return s
}

// lockedWriter serialises writes from concurrent handlers into one buffer.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// settle waits for every queued cycle, so that counts of effects are final.
func settle(t *testing.T, s *Server) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.queue.drain(ctx); err != nil {
		t.Fatal(err)
	}
}

type hook struct {
	event, delivery, signature string
	body                       []byte
}

func pushPayload(repo, ref string) []byte {
	return []byte(fmt.Sprintf(`{"ref":%q,"after":"abc123","repository":{"full_name":%q,"default_branch":"main"}}`, ref, repo))
}

func signedHook(event, delivery string, body []byte) hook {
	return hook{event: event, delivery: delivery, signature: Sign(testSecret, body), body: body}
}

func (h hook) request() *http.Request {
	r := httptest.NewRequest(http.MethodPost, "/webhook", bytes.NewReader(h.body))
	r.Header.Set("Content-Type", "application/json")
	if h.event != "" {
		r.Header.Set("X-GitHub-Event", h.event)
	}
	if h.delivery != "" {
		r.Header.Set("X-GitHub-Delivery", h.delivery)
	}
	if h.signature != "" {
		r.Header.Set("X-Hub-Signature-256", h.signature)
	}
	return r
}

func serve(s *Server, r *http.Request) *httptest.ResponseRecorder {
	w := httptest.NewRecorder()
	s.Handler().ServeHTTP(w, r)
	return w
}

func TestNewRefusesToStartWithoutSecrets(t *testing.T) {
	c := newFakeCycler()
	for _, tc := range []struct {
		name string
		edit func(*Config)
		sink ObservationSink
	}{
		{"no webhook secret", func(c *Config) { c.WebhookSecret = Secret{} }, nil},                                                              // unsigned webhooks would be accepted
		{"observations without secret or token", func(c *Config) { c.ObservationSecret, c.ObservationToken = Secret{}, Secret{} }, &fakeSink{}}, // pushes would be unauthenticated
		{"bad schedule", func(c *Config) { c.Schedule = "every five minutes" }, nil},                                                            // not a cron expression
		{"negative jitter", func(c *Config) { c.Jitter = -time.Second }, nil},                                                                   // cannot wait a negative time
		{"no body cap", func(c *Config) { c.MaxBodyBytes = 0 }, nil},                                                                            // an uncapped body is unbounded memory
		{"no webhook cap", func(c *Config) { c.MaxWebhookBytes = 0 }, nil},                                                                      // the same on /webhook
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig()
			tc.edit(&cfg)
			if _, err := New(cfg, Deps{Cycler: c, Sink: tc.sink}); err == nil {
				t.Fatal("New accepted the config")
			}
		})
	}
	cfg := testConfig()
	cfg.WebhookSecret = Secret{}
	if _, err := New(cfg, Deps{Cycler: c}); !errors.Is(err, ErrNoWebhookSecret) {
		t.Errorf("without a webhook secret: got %v, want ErrNoWebhookSecret", err)
	}
}

func TestWebhookBadSignaturesHaveNoEffect(t *testing.T) {
	c := newFakeCycler("acme/gitops")
	s := newTestServer(t, testConfig(), c, nil, nil)
	body := pushPayload("acme/gitops", "refs/heads/main")
	cases := badSignatures(body)
	refused := 0
	for i, tc := range cases {
		h := signedHook("push", fmt.Sprintf("bad-%d", i), body)
		h.signature = tc.header
		w := serve(s, h.request())
		if w.Code != http.StatusUnauthorized {
			t.Errorf("%s: status %d, want 401", tc.name, w.Code)
			continue
		}
		refused++
	}
	// A right signature over a different body (a replayed header) is refused.
	h := signedHook("push", "replay", pushPayload("acme/other", "refs/heads/main"))
	h.body = body
	if w := serve(s, h.request()); w.Code != http.StatusUnauthorized {
		t.Errorf("replayed signature: status %d, want 401", w.Code)
	}
	settle(t, s)
	if n := len(c.allCalls()); n != 0 {
		t.Errorf("bad signatures caused %d cycles, want 0", n)
	}
	if n := s.deliveries.len(); n != 0 {
		t.Errorf("bad signatures claimed %d delivery ids, want 0 (a forged delivery must not block the real one)", n)
	}
	if refused != len(cases) {
		t.Errorf("refused %d of %d bad signatures", refused, len(cases))
	}
	if got := counterValue(t, s, "backflow_webhook_deliveries_total", `event="push",result="unauthorized"`); got != float64(len(cases)+1) {
		t.Errorf("unauthorized deliveries metric = %v, want %d", got, len(cases)+1)
	}
}

func TestWebhookBodyCap(t *testing.T) {
	cfg := testConfig()
	cfg.MaxWebhookBytes = 1024
	big := pushPayload("acme/gitops", "refs/heads/main")
	big = append(big[:len(big)-1], []byte(`,"pad":"`+strings.Repeat("x", 2048)+`"}`)...)
	for _, tc := range []struct {
		name          string
		contentLength bool
	}{
		{"with Content-Length", true},     // refused from the header alone
		{"without Content-Length", false}, // a chunked body is refused once the reader passes the cap
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newFakeCycler("acme/gitops")
			s := newTestServer(t, cfg, c, nil, nil)
			// Correctly signed: the cap applies before, and regardless of, the signature.
			r := signedHook("push", "big-1", big).request()
			if !tc.contentLength {
				r.Body = io.NopCloser(io.MultiReader(bytes.NewReader(big)))
				r.ContentLength = -1
			}
			w := serve(s, r)
			if w.Code != http.StatusRequestEntityTooLarge {
				t.Fatalf("status %d, want 413", w.Code)
			}
			settle(t, s)
			if n := len(c.allCalls()); n != 0 {
				t.Errorf("oversized body caused %d cycles", n)
			}
		})
	}
}

func TestWebhookDuplicateDeliveries(t *testing.T) {
	body := pushPayload("acme/gitops", "refs/heads/main")
	for _, tc := range []struct {
		name       string
		concurrent bool
	}{
		{"sequential", false}, // a redelivery after the first was handled
		{"concurrent", true},  // redeliveries racing the first
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newFakeCycler("acme/gitops")
			s := newTestServer(t, testConfig(), c, nil, nil)
			codes := make([]int, 50)
			send := func(i int) { codes[i] = serve(s, signedHook("push", "delivery-1", body).request()).Code }
			if tc.concurrent {
				var wg sync.WaitGroup
				for i := range codes {
					wg.Add(1)
					go func() { defer wg.Done(); send(i) }()
				}
				wg.Wait()
			} else {
				for i := range codes {
					send(i)
				}
			}
			settle(t, s)
			accepted := 0
			for _, code := range codes {
				if code == http.StatusAccepted {
					accepted++
				} else if code != http.StatusOK {
					t.Errorf("status %d, want 202 once and 200 for duplicates", code)
				}
			}
			if accepted != 1 {
				t.Errorf("%d deliveries queued work, want 1", accepted)
			}
			if n := len(c.allCalls()); n != 1 {
				t.Errorf("%d cycles, want 1 (duplicate effects: %d)", n, n-1)
			}
		})
	}
}

func TestDeliveriesBounded(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	d := newDeliveries(3, time.Hour)
	for _, id := range []string{"a", "b", "c", "d"} {
		if !d.claim(id, now) {
			t.Fatalf("%s: not new", id)
		}
	}
	if d.len() != 3 {
		t.Errorf("kept %d ids, want 3 (the cap)", d.len())
	}
	if !d.claim("a", now) {
		t.Error("the oldest id was not evicted at the cap")
	}
	if d.claim("d", now) {
		t.Error("a recent id was forgotten")
	}
	if !d.claim("d", now.Add(time.Hour)) {
		t.Error("an id older than the TTL was still remembered")
	}
}

func TestWebhookRouting(t *testing.T) {
	for _, tc := range []struct {
		name   string
		event  string
		body   string
		status int
		want   *Trigger // nil: no cycle
	}{
		{"push to default branch", "push", string(pushPayload("acme/gitops", "refs/heads/main")), 202,
			&Trigger{Kind: TriggerPush, HeadSHA: "abc123"}}, // re-plan the repository
		{"push to another branch", "push", string(pushPayload("acme/gitops", "refs/heads/backflow/prod/redis")), 200, nil}, // the bot's own branches do not re-plan
		{"tag push", "push", string(pushPayload("acme/gitops", "refs/tags/v1")), 200, nil},                                 // tags are not the default branch
		{"branch deleted", "push", `{"ref":"refs/heads/main","deleted":true,"repository":{"full_name":"acme/gitops","default_branch":"main"}}`, 200, nil},
		{"push to an unwatched repository", "push", string(pushPayload("acme/unknown", "refs/heads/main")), 200, nil}, // not in the installation's list
		{"pull request merged", "pull_request", `{"action":"closed","number":7,"pull_request":{"number":7,"merged":true},"repository":{"full_name":"acme/gitops"}}`, 202,
			&Trigger{Kind: TriggerPullRequestClosed, PullRequest: 7, Merged: true}}, // follow-up
		{"pull request closed unmerged", "pull_request", `{"action":"closed","number":8,"pull_request":{"number":8,"merged":false},"repository":{"full_name":"acme/gitops"}}`, 202,
			&Trigger{Kind: TriggerPullRequestClosed, PullRequest: 8}}, // the cycle records the refusal
		{"pull request opened", "pull_request", `{"action":"opened","number":9,"repository":{"full_name":"acme/gitops"}}`, 200, nil},
		{"check run rerequested", "check_run", `{"action":"rerequested","check_run":{"head_sha":"def456"},"repository":{"full_name":"acme/gitops"}}`, 202,
			&Trigger{Kind: TriggerCheckRerequested, HeadSHA: "def456"}}, // verify again
		{"check suite rerequested", "check_suite", `{"action":"rerequested","check_suite":{"head_sha":"abc789"},"repository":{"full_name":"acme/gitops"}}`, 202,
			&Trigger{Kind: TriggerCheckRerequested, HeadSHA: "abc789"}}, // "Re-run all checks" asks the App as check_suite, not check_run
		{"check suite requested", "check_suite", `{"action":"requested","check_suite":{"head_sha":"abc789"},"repository":{"full_name":"acme/gitops"}}`, 200, nil}, // a push's new suite: the bot checks its own heads
		{"check run completed", "check_run", `{"action":"completed","check_run":{"head_sha":"def456"},"repository":{"full_name":"acme/gitops"}}`, 200, nil},       // our own check's events
		{"ping", "ping", `{"zen":"Design for failure."}`, 200, nil},                                         // acknowledged
		{"other event", "issues", `{"action":"opened","repository":{"full_name":"acme/gitops"}}`, 200, nil}, // acknowledged and ignored
		{"not JSON", "push", `not json`, 400, nil},                                                          // signed garbage
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newFakeCycler("acme/gitops")
			s := newTestServer(t, testConfig(), c, nil, nil)
			w := serve(s, signedHook(tc.event, "d-"+tc.name, []byte(tc.body)).request())
			if w.Code != tc.status {
				t.Fatalf("status %d, want %d: %s", w.Code, tc.status, w.Body)
			}
			settle(t, s)
			calls := c.allCalls()
			if tc.want == nil {
				if len(calls) != 0 {
					t.Fatalf("cycles %v, want none", calls)
				}
				return
			}
			if len(calls) != 1 || calls[0].repo != "acme/gitops" || len(calls[0].why) != 1 {
				t.Fatalf("cycles %v, want one of acme/gitops", calls)
			}
			got := calls[0].why[0]
			got.Delivery = ""
			if got != *tc.want {
				t.Errorf("trigger %+v, want %+v", got, *tc.want)
			}
		})
	}
}

func TestWebhookWithoutDeliveryID(t *testing.T) {
	c := newFakeCycler("acme/gitops")
	s := newTestServer(t, testConfig(), c, nil, nil)
	w := serve(s, signedHook("push", "", pushPayload("acme/gitops", "refs/heads/main")).request())
	settle(t, s)
	if w.Code != http.StatusBadRequest || len(c.allCalls()) != 0 {
		t.Errorf("status %d, %d cycles; want 400 and none (a delivery without an id cannot be de-duplicated)", w.Code, len(c.allCalls()))
	}
}

func TestInstallationRefreshesAndCyclesNewRepositories(t *testing.T) {
	c := newFakeCycler("acme/gitops")
	s := newTestServer(t, testConfig(), c, nil, nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { s.refresher(ctx); close(done) }()
	defer func() { cancel(); <-done }()

	c.setRepos("acme/gitops", "acme/platform")
	w := serve(s, signedHook("installation_repositories", "inst-1", []byte(`{"action":"added","installation":{"id":1}}`)).request())
	if w.Code != http.StatusAccepted {
		t.Fatalf("status %d, want 202", w.Code)
	}
	got := c.waitStarted(t)
	if got.repo != "acme/platform" || got.why[0].Kind != TriggerInstallation {
		t.Errorf("cycle %+v, want the added repository acme/platform", got)
	}
	if want := []string{"acme/gitops", "acme/platform"}; fmt.Sprint(s.Repositories()) != fmt.Sprint(want) {
		t.Errorf("repositories %v, want %v", s.Repositories(), want)
	}
}

func obsRequest(body []byte, edit func(*http.Request)) *http.Request {
	r := httptest.NewRequest(http.MethodPost, "/observations", bytes.NewReader(body))
	edit(r)
	return r
}

func TestObservationPush(t *testing.T) {
	body := []byte(`{"type":"drift.detected","timestamp":"2026-06-18T12:00:30Z","resource":{"kind":"StatefulSet","name":"redis-replicas","namespace":"redis"}}`)
	sig := func(r *http.Request) { r.Header.Set(ObservationSignatureHeader, Sign(testObsSecret, body)) }
	for _, tc := range []struct {
		name   string
		auth   func(*http.Request)
		status int
	}{
		{"signature", sig, 202}, // HMAC under the observation secret
		{"bearer token", func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+string(testObsToken.Reveal())) }, 202},
		{"bearer scheme in lower case", func(r *http.Request) { r.Header.Set("Authorization", "bearer "+string(testObsToken.Reveal())) }, 202}, // schemes are case-insensitive
		{"nothing", func(*http.Request) {}, 401}, // unauthenticated
		{"wrong token", func(r *http.Request) { r.Header.Set("Authorization", "Bearer nope") }, 401},
		{"basic auth", func(r *http.Request) { r.SetBasicAuth("x", string(testObsToken.Reveal())) }, 401},                               // only Bearer
		{"webhook secret's signature", func(r *http.Request) { r.Header.Set(ObservationSignatureHeader, Sign(testSecret, body)) }, 401}, // each endpoint has its own secret
		{"sha1 signature", func(r *http.Request) {
			r.Header.Set(ObservationSignatureHeader, "sha1=0000000000000000000000000000000000000000")
		}, 401},
		{"bad signature with a good token", func(r *http.Request) {
			r.Header.Set(ObservationSignatureHeader, Sign(testSecret, body))
			r.Header.Set("Authorization", "Bearer "+string(testObsToken.Reveal()))
		}, 401}, // a present signature must verify
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newFakeCycler("acme/gitops", "acme/other")
			sink := &fakeSink{result: PushResult{Repositories: []string{"acme/gitops"}, Accepted: 1}}
			s := newTestServer(t, testConfig(), c, sink, nil)
			w := serve(s, obsRequest(body, tc.auth))
			if w.Code != tc.status {
				t.Fatalf("status %d, want %d: %s", w.Code, tc.status, w.Body)
			}
			settle(t, s)
			calls := c.allCalls()
			if tc.status != 202 {
				if sink.pushes() != 0 || len(calls) != 0 {
					t.Errorf("refused push reached the sink %d times and caused %d cycles", sink.pushes(), len(calls))
				}
				return
			}
			if len(calls) != 1 || calls[0].repo != "acme/gitops" || calls[0].why[0].Kind != TriggerObservation {
				t.Fatalf("cycles %+v, want exactly one observation cycle of acme/gitops", calls)
			}
			var res PushResult
			if err := json.Unmarshal(w.Body.Bytes(), &res); err != nil || res.Accepted != 1 {
				t.Errorf("answer %s (%v), want the push result", w.Body, err)
			}
		})
	}
}

func TestObservationPushErrorsAndCap(t *testing.T) {
	cfg := testConfig()
	cfg.MaxBodyBytes = 100
	token := func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+string(testObsToken.Reveal())) }
	for _, tc := range []struct {
		name   string
		body   string
		err    error
		status int
	}{
		{"over the cap", strings.Repeat("x", 101), nil, 413},                                                // before authentication and parsing
		{"invalid", "{}", fmt.Errorf("%w: observations:1: not a recognised document", ErrInvalidPush), 400}, // the sender learns why
		{"sink failure", "{}", errors.New("disk full"), 500},                                                // not the sender's fault; the detail stays in the log
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newFakeCycler("acme/gitops")
			sink := &fakeSink{result: PushResult{Repositories: []string{"acme/gitops"}}, err: tc.err}
			s := newTestServer(t, cfg, c, sink, nil)
			r := obsRequest([]byte(tc.body), token)
			r.ContentLength = -1
			w := serve(s, r)
			settle(t, s)
			if w.Code != tc.status {
				t.Fatalf("status %d, want %d", w.Code, tc.status)
			}
			if len(c.allCalls()) != 0 {
				t.Error("a refused push caused a cycle")
			}
			if tc.status == 500 && strings.Contains(w.Body.String(), "disk") {
				t.Error("an internal error's detail reached the sender")
			}
		})
	}
}

func TestObservationsDisabledWithoutSink(t *testing.T) {
	s := newTestServer(t, testConfig(), newFakeCycler(), nil, nil)
	if w := serve(s, obsRequest([]byte("{}"), func(*http.Request) {})); w.Code != http.StatusNotFound {
		t.Errorf("status %d, want 404 when pushes are not configured", w.Code)
	}
}

func TestPerRepositoryExclusionAndCoalescing(t *testing.T) {
	c := newFakeCycler("acme/a", "acme/b")
	s := newTestServer(t, testConfig(), c, nil, nil)
	gateA := c.setBlock("acme/a")
	s.queue.enqueue("acme/a", Trigger{Kind: TriggerSchedule})
	if got := c.waitStarted(t); got.repo != "acme/a" {
		t.Fatalf("started %s", got.repo)
	}
	// While acme/a runs: ten more requests for it, and one for acme/b.
	for i := range 10 {
		s.queue.enqueue("acme/a", Trigger{Kind: TriggerPush, HeadSHA: fmt.Sprint(i)})
	}
	s.queue.enqueue("acme/b", Trigger{Kind: TriggerSchedule})
	if got := c.waitStarted(t); got.repo != "acme/b" {
		t.Fatalf("acme/b did not run beside acme/a (started %s)", got.repo)
	}
	close(gateA)
	second := c.waitStarted(t)
	settle(t, s)
	callsA := c.callsFor("acme/a")
	if len(callsA) != 2 {
		t.Fatalf("acme/a ran %d cycles, want 2 (the running one, then one for all ten requests)", len(callsA))
	}
	if second.repo != "acme/a" || len(second.why) != 10 {
		t.Errorf("second cycle %s answered %d requests, want acme/a with 10", second.repo, len(second.why))
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for repo, n := range c.maxPer {
		if n != 1 {
			t.Errorf("%s had %d cycles at once", repo, n)
		}
	}
}

func TestScheduleUnderFakeClock(t *testing.T) {
	start := time.Date(2026, 6, 18, 12, 1, 0, 0, time.UTC)
	clock := newFakeClock(start)
	c := newFakeCycler("acme/a", "acme/b")
	cfg := testConfig()
	cfg.Jitter = 30 * time.Second
	var jitters []time.Duration
	jitter := func(limit time.Duration) time.Duration {
		j := time.Duration(len(jitters)+1) * 7 * time.Second
		jitters = append(jitters, j)
		if j >= limit {
			t.Errorf("jitter %s not below %s", j, limit)
		}
		return j
	}
	s, err := New(cfg, Deps{Cycler: c, Clock: clock, Jitter: jitter})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { s.start(ctx); close(done) }()
	defer func() { cancel(); <-done; settle(t, s) }()

	// Startup: both repositories cycle once.
	for range 2 {
		if got := c.waitStarted(t); got.why[0].Kind != TriggerStartup {
			t.Errorf("first cycle %+v, want startup", got)
		}
	}
	// */5 from 12:01:00: the next slot is 12:05:00, plus 7 s of jitter.
	if d := clock.waitSleep(t); d != 4*time.Minute+7*time.Second {
		t.Fatalf("first wait %s, want 4m7s", d)
	}
	if !s.Ready() {
		t.Error("not ready while the scheduler runs")
	}
	clock.Advance(4*time.Minute + 7*time.Second)
	for range 2 {
		if got := c.waitStarted(t); got.why[0].Kind != TriggerSchedule {
			t.Errorf("cycle %+v, want schedule", got)
		}
	}
	// From 12:05:07 the next slot is 12:10:00, plus 14 s.
	if d := clock.waitSleep(t); d != 4*time.Minute+53*time.Second+14*time.Second {
		t.Fatalf("second wait %s, want 5m7s", d)
	}
	if n := len(c.allCalls()); n != 4 {
		t.Errorf("%d cycles, want 4 (2 at startup, 2 at the first tick)", n)
	}
}

func TestStartRetriesRepositoryListAndReadiness(t *testing.T) {
	clock := newFakeClock(time.Date(2026, 6, 18, 12, 0, 0, 0, time.UTC))
	c := newFakeCycler("acme/a")
	c.listErr = errList
	s, err := New(testConfig(), Deps{Cycler: c, Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { s.start(ctx); close(done) }()
	defer func() { cancel(); <-done; settle(t, s) }()

	if d := clock.waitSleep(t); d != DefaultRetryRepos {
		t.Fatalf("retry wait %s, want %s", d, DefaultRetryRepos)
	}
	if w := serve(s, httptest.NewRequest(http.MethodGet, "/readyz", nil)); w.Code != http.StatusServiceUnavailable {
		t.Errorf("/readyz %d before the repositories loaded, want 503", w.Code)
	}
	if w := serve(s, httptest.NewRequest(http.MethodGet, "/healthz", nil)); w.Code != http.StatusOK {
		t.Errorf("/healthz %d, want 200 (the process is alive)", w.Code)
	}
	c.mu.Lock()
	c.listErr = nil
	c.mu.Unlock()
	clock.Advance(DefaultRetryRepos)
	c.waitStarted(t)
	<-s.ReadyC()
	if w := serve(s, httptest.NewRequest(http.MethodGet, "/readyz", nil)); w.Code != http.StatusOK {
		t.Errorf("/readyz %d once loaded and scheduling, want 200", w.Code)
	}
}

func counterValue(t *testing.T, s *Server, name, labels string) float64 {
	t.Helper()
	w := serve(s, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	for _, line := range strings.Split(w.Body.String(), "\n") {
		if strings.HasPrefix(line, name+"{"+labels+"} ") {
			var v float64
			fmt.Sscan(line[strings.LastIndexByte(line, ' ')+1:], &v)
			return v
		}
	}
	return 0
}

func TestMetricsShowCounters(t *testing.T) {
	c := newFakeCycler("acme/gitops")
	s := newTestServer(t, testConfig(), c, nil, nil)
	serve(s, signedHook("push", "m-1", pushPayload("acme/gitops", "refs/heads/main")).request())
	serve(s, signedHook("push", "m-1", pushPayload("acme/gitops", "refs/heads/main")).request())
	bad := signedHook("bogus-event-name", "m-2", []byte(`{}`))
	bad.signature = "sha1=00"
	serve(s, bad.request())
	settle(t, s)
	m := s.Metrics()
	m.Decision("allow")
	m.PullRequest("open")
	m.Fix("proven")
	m.GitHubRequest(200)
	m.RateLimitRemaining(4321)
	m.Error("forge")

	for _, tc := range []struct {
		name, labels string
		want         float64
	}{
		{"backflow_webhook_deliveries_total", `event="push",result="queued"`, 1},
		{"backflow_webhook_deliveries_total", `event="push",result="duplicate"`, 1},
		{"backflow_webhook_deliveries_total", `event="other",result="unauthorized"`, 1}, // unknown event names do not become labels
		{"backflow_cycles_total", `result="ok"`, 1},
		{"backflow_decisions_total", `outcome="allow"`, 1},
		{"backflow_pull_requests_total", `action="open"`, 1},
		{"backflow_fixes_total", `result="proven"`, 1},
		{"backflow_github_requests_total", `status="200"`, 1},
		{"backflow_errors_total", `kind="forge"`, 1},
	} {
		if got := counterValue(t, s, tc.name, tc.labels); got != tc.want {
			t.Errorf("%s{%s} = %v, want %v", tc.name, tc.labels, got, tc.want)
		}
	}
	body := serve(s, httptest.NewRequest(http.MethodGet, "/metrics", nil)).Body.String()
	for _, want := range []string{"backflow_cycle_duration_seconds_count 1", "backflow_github_rate_limit_remaining 4321"} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	if strings.Contains(body, "bogus") {
		t.Error("an unauthenticated event name reached the metrics")
	}
}

func TestSecretsNeverLogged(t *testing.T) {
	var logs bytes.Buffer
	c := newFakeCycler("acme/gitops")
	sink := &fakeSink{result: PushResult{Repositories: []string{"acme/gitops"}}}
	s := newTestServer(t, testConfig(), c, sink, &logs)
	body := pushPayload("acme/gitops", "refs/heads/main")
	h := signedHook("push", "s-1", body)
	serve(s, h.request())
	h.signature = Sign(NewSecret([]byte("wrong")), body)
	serve(s, h.request())
	serve(s, obsRequest([]byte("{}"), func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+string(testObsToken.Reveal())) }))
	serve(s, obsRequest([]byte("{}"), func(r *http.Request) { r.Header.Set("Authorization", "Bearer wrong") }))
	settle(t, s)
	metrics := serve(s, httptest.NewRequest(http.MethodGet, "/metrics", nil)).Body.String()
	for _, secret := range []Secret{testSecret, testObsSecret, testObsToken} {
		for where, text := range map[string]string{"logs": logs.String(), "metrics": metrics, "config dump": fmt.Sprintf("%+v %#v", s.cfg, s.cfg)} {
			if strings.Contains(text, string(secret.Reveal())) {
				t.Errorf("a secret appears in the %s", where)
			}
		}
	}
	if !strings.Contains(logs.String(), `"result":"unauthorized"`) {
		t.Error("the refused delivery was not logged")
	}
}

func TestRunShutsDownGracefully(t *testing.T) {
	c := newFakeCycler("acme/a")
	gate := c.setBlock("acme/a")
	cfg := testConfig()
	s, err := New(cfg, Deps{Cycler: c, Clock: newFakeClock(time.Date(2026, 6, 18, 12, 0, 0, 0, time.UTC))})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- s.Run(ctx, ln) }()

	c.waitStarted(t) // the startup cycle is running and held
	resp, err := http.Get("http://" + ln.Addr().String() + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	s.queue.enqueue("acme/a", Trigger{Kind: TriggerPush}) // queued behind the running cycle: dropped at shutdown
	cancel()
	<-s.queue.stop // Run has refused new work
	select {
	case err := <-ran:
		t.Fatalf("Run returned (%v) while a cycle was still running", err)
	case <-c.started:
		t.Fatal("a queued cycle started after the shutdown signal")
	default:
	}
	close(gate)
	if err := <-ran; err != nil {
		t.Fatalf("Run: %v", err)
	}
	if n := len(c.callsFor("acme/a")); n != 1 {
		t.Errorf("%d cycles, want 1 (the running one finished; the queued one dropped)", n)
	}
	if _, err := http.Get("http://" + ln.Addr().String() + "/healthz"); err == nil {
		t.Error("still accepting connections after shutdown")
	}
}

func TestRunShutdownTimeoutCancelsCycles(t *testing.T) {
	c := newFakeCycler("acme/a")
	c.setBlock("acme/a") // never released: only cancellation ends it
	cfg := testConfig()
	cfg.ShutdownTimeout = 50 * time.Millisecond
	s, err := New(cfg, Deps{Cycler: c, Clock: newFakeClock(time.Date(2026, 6, 18, 12, 0, 0, 0, time.UTC))})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- s.Run(ctx, ln) }()
	c.waitStarted(t)
	cancel()
	if err := <-ran; !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Run: %v, want the shutdown timeout", err)
	}
	s.queue.wg.Wait() // the cancelled cycle returns
	if got := counterValue(t, s, "backflow_cycles_total", `result="error"`); got != 1 {
		t.Errorf("cancelled cycle counted %v times as an error, want 1", got)
	}
}

func TestExtraHandlersCanRequestCycles(t *testing.T) {
	c := newFakeCycler("acme/a", "acme/b")
	var s *Server
	extra := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		s.RequestAll(Trigger{Kind: TriggerObservation})
		w.WriteHeader(http.StatusAccepted)
	})
	s, err := New(testConfig(), Deps{Cycler: c, Handlers: map[string]http.Handler{"POST /audit": extra}})
	if err != nil {
		t.Fatal(err)
	}
	s.setRepos(c.repos)
	if w := serve(s, httptest.NewRequest(http.MethodPost, "/audit", nil)); w.Code != http.StatusAccepted {
		t.Fatalf("extra route answered %d", w.Code)
	}
	if !s.Request("acme/a", Trigger{Kind: TriggerPush}) {
		t.Fatal("Request refused before shutdown")
	}
	settle(t, s)
	if len(c.callsFor("acme/a")) == 0 || len(c.callsFor("acme/b")) != 1 {
		t.Errorf("cycles %+v, want both repositories", c.allCalls())
	}
	s.queue.close()
	if s.Request("acme/a", Trigger{Kind: TriggerPush}) || s.RequestAll(Trigger{Kind: TriggerPush}) {
		t.Error("requests accepted after shutdown began")
	}
}

func TestObservationSecretURL(t *testing.T) {
	const old, next = "url-old-canary-0123456789abcdef0123", "url-new-canary-0123456789abcdef0123"
	// A cub-scout watch --webhook delivery: Content-Type and nothing else.
	body := []byte(`{"type":"drift.detected","timestamp":"2026-06-18T12:00:30.771029411Z","observation":{"source":"kubernetes-api","mode":"watch-poll","observedAt":"2026-06-18T12:00:30.771029411Z","freshness":"point-in-time","scope":{"cluster":"prod-us-east-1","namespace":"redis","kind":"StatefulSet"}},"resource":{"kind":"StatefulSet","name":"redis-replicas","namespace":"redis"},"owner":{"type":"Flux","name":"redis"},"severity":"warning","details":{"category":"DRIFT","message":"replicas: live 4 differs from git 3"}}`)
	for _, tc := range []struct {
		name   string
		path   string
		tokens []Secret
		status int
	}{
		{"the current token", "/observations/" + next, []Secret{NewSecret([]byte(old)), NewSecret([]byte(next))}, 202},
		{"the token being rotated out still works", "/observations/" + old, []Secret{NewSecret([]byte(old)), NewSecret([]byte(next))}, 202},
		{"a rotated-out token is refused", "/observations/" + old, []Secret{NewSecret([]byte(next))}, 401},
		{"a prefix of the token is refused", "/observations/" + next[:20], []Secret{NewSecret([]byte(next))}, 401},
		{"no secret URL configured: no route", "/observations/" + next, nil, 404},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig()
			cfg.ObservationURLTokens = tc.tokens
			c := newFakeCycler("acme/gitops")
			sink := &fakeSink{result: PushResult{Repositories: []string{"acme/gitops"}, Accepted: 1}}
			var logs bytes.Buffer
			s := newTestServer(t, cfg, c, sink, &logs)
			r := httptest.NewRequest(http.MethodPost, tc.path, bytes.NewReader(body))
			r.Header.Set("Content-Type", "application/json")
			w := serve(s, r)
			settle(t, s)
			if w.Code != tc.status {
				t.Fatalf("status %d, want %d: %s", w.Code, tc.status, w.Body)
			}
			if strings.Contains(logs.String(), "canary") {
				t.Error("the secret URL's token is in the log")
			}
			if tc.status != 202 {
				if sink.pushes() != 0 || len(c.allCalls()) != 0 {
					t.Error("a refused push reached the sink or caused a cycle")
				}
				return
			}
			// why: the sink must know the push came by the weaker way in.
			if len(sink.vias) != 1 || sink.vias[0] != ViaSecretURL || len(c.allCalls()) != 1 {
				t.Errorf("vias %v, cycles %+v", sink.vias, c.allCalls())
			}
		})
	}
}

// GitHub sends webhook payloads up to 25 MB: one over the observation cap
// (2 MiB) but under GitHub's is accepted with the defaults, and the
// default webhook cap is GitHub's.
func TestWebhookAcceptsGitHubSizedPayloads(t *testing.T) {
	cfg := testConfig()
	cfg.MaxBodyBytes = DefaultMaxBodyBytes
	if cfg.MaxWebhookBytes != 25<<20 {
		t.Errorf("default webhook cap %d, want GitHub's 25 MB", cfg.MaxWebhookBytes)
	}
	big := pushPayload("acme/gitops", "refs/heads/main")
	big = append(big[:len(big)-1], []byte(`,"pad":"`+strings.Repeat("x", 3<<20)+`"}`)...)
	c := newFakeCycler("acme/gitops")
	s := newTestServer(t, cfg, c, nil, nil)
	if w := serve(s, signedHook("push", "big-3mib", big).request()); w.Code != http.StatusAccepted {
		t.Fatalf("status %d, want 202", w.Code)
	}
	settle(t, s)
}
