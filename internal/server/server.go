package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"runtime/debug"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/robfig/cron/v3"
)

// Cycler runs reconcile cycles. The server decides only when they run and
// that one repository never has two at once; what a cycle does (and whether
// a repository is paused or observe-only) is the Cycler's business.
type Cycler interface {
	// Repositories lists the repositories to reconcile, as "owner/name".
	Repositories(ctx context.Context) ([]string, error)
	// Cycle runs one cycle for one repository. why lists the requests it
	// answers (several when requests were coalesced); never empty.
	Cycle(ctx context.Context, repo string, why []Trigger) error
}

// ObservationSink takes the body of a push to /observations (native
// observation documents or cub-scout watch events), keeps what it can use for
// the next cycles, and says which repositories it concerns. It reads the
// body at the trust ceiling configured for pushes.
type ObservationSink interface {
	Accept(ctx context.Context, body []byte) (PushResult, error)
}

// PushResult is what a push yielded.
type PushResult struct {
	// Repositories are the repositories whose objects the push concerns; a
	// cycle is started for each at once.
	Repositories []string `json:"repositories"`
	// Accepted counts documents kept (observations and triggers).
	Accepted int `json:"accepted"`
	// Rejected names each document that was skipped and why.
	Rejected []string `json:"rejected,omitempty"`
	// Notices are observers' events worth reporting that ask for no cycle
	// (an object taken out of its controller's hands); the server logs them.
	Notices []string `json:"notices,omitempty"`
}

// ErrInvalidPush wraps a sink's refusal of a push as a whole (nothing in it
// was usable); the sender gets 400 and the message.
var ErrInvalidPush = errors.New("invalid observation push")

// Deps are the server's collaborators; Cycler is required.
type Deps struct {
	Cycler Cycler
	// Sink receives pushed observations; nil disables /observations.
	Sink ObservationSink
	// Metrics; nil makes a new set.
	Metrics *Metrics
	// Logger; nil discards.
	Logger *slog.Logger
	// Clock; nil is the wall clock.
	Clock Clock
	// Jitter draws the scheduling jitter; nil is RandomJitter.
	Jitter JitterFunc
	// Changed is told of every authenticated webhook event about a
	// repository ("owner/name", the X-GitHub-Event, the payload's action),
	// once per delivery and before its work is queued, so that state cached
	// about the repository can be dropped; optional.
	Changed func(repo, event, action string)
	// Handlers are more routes, by ServeMux pattern ("POST /audit"),
	// mounted as they are: each authenticates and caps its own requests,
	// and may start cycles with Request or RequestAll. Like /webhook and
	// /observations, they answer 503 on a standby replica.
	Handlers map[string]http.Handler
	// Gate, when set, lets cycles run only while this process leads, and
	// makes it ready only then; nil means it always leads.
	Gate Gate
}

// Server is backflow's long-running process: schedule, webhooks, pushed
// observations, health and metrics.
type Server struct {
	cfg        Config
	sched      cron.Schedule
	cycler     Cycler
	sink       ObservationSink
	metrics    *Metrics
	log        *slog.Logger
	clock      Clock
	jitter     JitterFunc
	queue      *queue
	deliveries *deliveries
	gate       Gate

	loaded     atomic.Bool // the first repository list has loaded
	scheduling atomic.Bool // the scheduler loop is running
	stopping   atomic.Bool

	mu    sync.RWMutex
	repos map[string]bool

	handlers  map[string]http.Handler
	changed   func(repo, event, action string)
	refreshCh chan struct{} // capacity 1: refresh requests coalesce
	started   atomic.Bool
	readyOnce sync.Once
	readyC    chan struct{} // closed when the server first becomes ready
}

// New checks cfg and builds a server. It refuses to build one without a
// webhook secret (ErrNoWebhookSecret), or with a sink but neither an
// observation secret nor a token.
func New(cfg Config, deps Deps) (*Server, error) {
	if deps.Cycler == nil {
		return nil, errors.New("server: a cycler is required")
	}
	sched, err := cfg.check(deps.Sink != nil)
	if err != nil {
		return nil, err
	}
	s := &Server{
		cfg: cfg, sched: sched, cycler: deps.Cycler, sink: deps.Sink,
		metrics: deps.Metrics, log: deps.Logger, clock: deps.Clock, jitter: deps.Jitter,
		deliveries: newDeliveries(cfg.DeliveryMemory, cfg.DeliveryTTL),
		repos:      map[string]bool{},
		handlers:   deps.Handlers,
		gate:       deps.Gate,
		changed:    deps.Changed,
		refreshCh:  make(chan struct{}, 1),
		readyC:     make(chan struct{}),
	}
	if s.metrics == nil {
		s.metrics = NewMetrics()
	}
	if s.gate == nil {
		// One replica leads from the start: no transition to count.
		s.metrics.leading.Store(true)
		s.metrics.leader.Set(1)
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.clock == nil {
		s.clock = SystemClock{}
	}
	if s.jitter == nil {
		s.jitter = RandomJitter
	}
	s.queue = newQueue(cfg.MaxConcurrent, s.runCycle)
	return s, nil
}

// Metrics returns the server's metrics, for the wiring to record into.
func (s *Server) Metrics() *Metrics { return s.metrics }

// Ready reports what /readyz answers: the first repository list has loaded,
// the scheduler is running and this process leads.
func (s *Server) Ready() bool {
	return s.loaded.Load() && s.scheduling.Load() && !s.stopping.Load() && s.leading()
}

// ReadyC is closed when the scheduler first runs (the server is ready then,
// unless it is a standby), for callers that wait for it (tests, a demo)
// rather than poll /readyz.
func (s *Server) ReadyC() <-chan struct{} { return s.readyC }

// Handler serves /healthz, /readyz, /metrics, /webhook and, with a sink,
// /observations. A standby replica is live on /healthz, not ready on
// /readyz, and answers 503 on the routes that start cycles.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		if !s.Ready() {
			writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "not ready"})
			return
		}
		writeJSON(w, http.StatusOK, map[string]string{"status": "ready"})
	})
	mux.Handle("GET /metrics", s.metrics.Handler())
	mux.Handle("POST /webhook", s.leaderOnly(http.HandlerFunc(s.handleWebhook)))
	if s.sink != nil {
		mux.Handle("POST /observations", s.leaderOnly(http.HandlerFunc(s.handleObservations)))
		if len(s.cfg.ObservationURLTokens) > 0 {
			mux.Handle("POST /observations/{token}", s.leaderOnly(http.HandlerFunc(s.handleSecretURL)))
		}
	}
	for pattern, h := range s.handlers {
		mux.Handle(pattern, s.leaderOnly(h))
	}
	return mux
}

// Request queues a cycle of repo for t, as a webhook does. It never waits
// for the cycle, and returns false once the server is shutting down.
func (s *Server) Request(repo string, t Trigger) bool { return s.queue.enqueue(repo, t) }

// RequestAll queues a cycle of every repository of the current list.
func (s *Server) RequestAll(t Trigger) bool {
	for _, r := range s.Repositories() {
		if !s.queue.enqueue(r, t) {
			return false
		}
	}
	return true
}

// Run serves on ln and runs the schedule until ctx ends (SIGTERM, SIGINT in
// the command), then shuts down gracefully: it stops accepting requests,
// stops the schedule, drops cycles that have not started and lets running
// ones finish within Config.ShutdownTimeout. It returns nil after a clean
// shutdown.
func (s *Server) Run(ctx context.Context, ln net.Listener) error {
	if !s.started.CompareAndSwap(false, true) {
		return errors.New("server: Run called twice")
	}
	hs := &http.Server{
		Handler:           s.Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
	bg, stopBackground := context.WithCancel(context.Background())
	var background sync.WaitGroup
	background.Add(2)
	go func() { defer background.Done(); s.start(bg) }()
	go func() { defer background.Done(); s.refresher(bg) }()

	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	s.log.Info("serving", "addr", ln.Addr().String(), "schedule", s.cfg.Schedule, "jitter", s.cfg.Jitter.String(),
		"observations", s.sink != nil)

	var serveErr error
	select {
	case <-ctx.Done():
	case serveErr = <-served:
	}
	s.log.Info("shutting down", "timeout", s.cfg.ShutdownTimeout.String())
	s.stopping.Store(true)
	// Refuse new work first: a webhook answered during the shutdown gets
	// 503 and its delivery id is forgotten, so a redelivery is processed by
	// the next process.
	s.queue.close()
	stopBackground()
	background.Wait()
	deadline, cancel := context.WithTimeout(context.Background(), s.cfg.ShutdownTimeout)
	defer cancel()
	if err := hs.Shutdown(deadline); err != nil && serveErr == nil {
		serveErr = fmt.Errorf("stopping the HTTP server: %w", err)
	}
	drainErr := s.queue.drain(deadline)
	if drainErr != nil {
		s.log.Error("shutdown", "err", drainErr)
	} else {
		s.log.Info("stopped")
	}
	if serveErr != nil && !errors.Is(serveErr, http.ErrServerClosed) {
		return serveErr
	}
	return drainErr
}

// start loads the repository list (retrying with backoff until it loads),
// cycles every repository once, then runs the schedule.
func (s *Server) start(ctx context.Context) {
	wait := s.cfg.RetryRepositories
	for {
		repos, err := s.cycler.Repositories(ctx)
		if err == nil {
			s.setRepos(repos)
			s.loaded.Store(true)
			s.log.Info("repositories loaded", "count", len(repos))
			s.enqueueAll(repos, Trigger{Kind: TriggerStartup})
			break
		}
		s.metrics.Error("repositories")
		s.log.Error("loading repositories", "err", err, "retry_in", wait.String())
		select {
		case <-ctx.Done():
			return
		case <-s.clock.After(wait):
		}
		wait = min(2*wait, 5*time.Minute)
	}
	s.schedule(ctx)
}

// schedule fires a cycle of every repository at each time of the cron
// schedule, each delayed by a jitter below Config.Jitter.
func (s *Server) schedule(ctx context.Context) {
	s.scheduling.Store(true)
	defer s.scheduling.Store(false)
	s.readyOnce.Do(func() { close(s.readyC) })
	for {
		now := s.clock.Now()
		next := s.sched.Next(now)
		if s.cfg.Jitter > 0 {
			next = next.Add(s.jitter(s.cfg.Jitter))
		}
		select {
		case <-ctx.Done():
			return
		case <-s.clock.After(next.Sub(now)):
		}
		repos, err := s.cycler.Repositories(ctx)
		if err != nil {
			// The last list is still good enough to cycle: a listing failure
			// must not stop reconciling.
			s.metrics.Error("repositories")
			s.log.Error("refreshing repositories", "err", err)
			repos = s.Repositories()
		} else {
			s.setRepos(repos)
		}
		s.enqueueAll(repos, Trigger{Kind: TriggerSchedule})
	}
}

// refresher reloads the repository list when installation events ask for
// it, and cycles the repositories that were not known before.
func (s *Server) refresher(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.refreshCh:
		}
		repos, err := s.cycler.Repositories(ctx)
		if err != nil {
			s.metrics.Error("repositories")
			s.log.Error("refreshing repositories", "err", err)
			continue
		}
		added := s.setRepos(repos)
		s.loaded.Store(true)
		s.log.Info("repositories refreshed", "count", len(repos), "added", len(added))
		s.enqueueAll(added, Trigger{Kind: TriggerInstallation})
	}
}

// requestRefresh asks the refresher for a new repository list without
// waiting; requests made while one is pending coalesce.
func (s *Server) requestRefresh() {
	select {
	case s.refreshCh <- struct{}{}:
	default:
	}
}

// setRepos replaces the repository list and returns the repositories that
// were not in it.
func (s *Server) setRepos(repos []string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var added []string
	next := make(map[string]bool, len(repos))
	for _, r := range repos {
		next[r] = true
		if !s.repos[r] {
			added = append(added, r)
		}
	}
	s.repos = next
	return added
}

// Repositories returns the current repository list, sorted.
func (s *Server) Repositories() []string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]string, 0, len(s.repos))
	for r := range s.repos {
		out = append(out, r)
	}
	slices.Sort(out)
	return out
}

func (s *Server) watched(repo string) bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.repos[repo]
}

func (s *Server) enqueueAll(repos []string, t Trigger) {
	for _, r := range repos {
		s.queue.enqueue(r, t)
	}
}

// runCycle runs one cycle and records it, when this process leads; a
// standby's requests are dropped (the leader has its own).
func (s *Server) runCycle(ctx context.Context, repo string, why []Trigger) {
	kinds := make([]string, len(why))
	for i, t := range why {
		kinds[i] = string(t.Kind)
	}
	log := s.log.With("repo", repo)
	ctx, release, ok := s.term(ctx)
	if !ok {
		log.Debug("cycle skipped: standby", "why", kinds)
		return
	}
	defer release()
	requested := s.clock.Now()
	started := requested
	ctx = context.WithValue(ctx, cycleStartKey{}, func() { started = s.clock.Now() })
	err := s.safeCycle(ctx, repo, why)
	end := s.clock.Now()
	wait, d := started.Sub(requested), end.Sub(started)
	s.metrics.Cycle(wait, d, err)
	if err != nil {
		s.metrics.Error("cycle")
		log.Error("cycle failed", "why", kinds, "duration", d.String(), "waited", wait.String(), "err", err)
		return
	}
	log.Info("cycle done", "why", kinds, "duration", d.String(), "waited", wait.String())
}

type cycleStartKey struct{}

// CycleStarted tells the server that the cycle whose context ctx is has
// its turn and starts its work now: the time before it was spent waiting
// (for a lock other cycles hold), and is measured apart from the cycle's
// duration. A Cycler that never calls it has no wait.
func CycleStarted(ctx context.Context) {
	if mark, ok := ctx.Value(cycleStartKey{}).(func()); ok {
		mark()
	}
}

// safeCycle keeps one repository's failing cycle from ending the process.
func (s *Server) safeCycle(ctx context.Context, repo string, why []Trigger) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("cycle of %s panicked: %v\n\n%s", repo, r, debug.Stack())
		}
	}()
	return s.cycler.Cycle(ctx, repo, why)
}
