package server

import (
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Metrics are the process's Prometheus metrics, on a registry of their own
// (never the global one, so tests and several servers in one process do not
// collide). The server records cycles and webhook deliveries itself; the
// wiring that runs cycles records the rest through the methods below.
//
// Label values come from closed sets or from backflow's own code, never from
// unauthenticated input, so a sender cannot grow the label space.
type Metrics struct {
	registry *prometheus.Registry

	cycles         *prometheus.CounterVec
	cycleDuration  prometheus.Histogram
	cycleLockWait  prometheus.Histogram
	decisions      *prometheus.CounterVec
	pullRequests   *prometheus.CounterVec
	fixes          *prometheus.CounterVec
	githubRequests *prometheus.CounterVec
	rateRemaining  prometheus.Gauge
	githubWaits    *prometheus.HistogramVec
	errors         *prometheus.CounterVec
	webhooks       *prometheus.CounterVec
	observations   *prometheus.CounterVec
	leader         prometheus.Gauge
	transitions    prometheus.Counter
	leading        atomic.Bool

	attributions    *prometheus.CounterVec
	receiptsRefused prometheus.Counter
	buildInfo       prometheus.Gauge

	admissionRefused *prometheus.CounterVec
	admissionBusy    prometheus.Counter
	temporary        *prometheus.GaugeVec
	hold             holdMetrics
}

// NewMetrics registers backflow's metrics, with the Go runtime and process
// collectors, on a new registry.
func NewMetrics() *Metrics {
	m := &Metrics{
		registry: prometheus.NewRegistry(),
		cycles: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "backflow_cycles_total",
			Help: "Reconcile cycles run, by result (ok, error).",
		}, []string{"result"}),
		cycleDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "backflow_cycle_duration_seconds",
			Help:    "Duration of one repository's reconcile cycle, from its start (after the wait for its turn) to its end.",
			Buckets: []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300},
		}),
		cycleLockWait: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "backflow_cycle_lock_wait_seconds",
			Help: "Time a requested cycle waited for its turn (cycles that share the bot wait for one another) before it " +
				"started.",
			Buckets: []float64{0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300},
		}),
		decisions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "backflow_decisions_total",
			Help: "Decisions about observed live changes, by outcome.",
		}, []string{"outcome"}),
		pullRequests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "backflow_pull_requests_total",
			Help: "Write-back pull requests, by action (open, update, close, merge, auto-merge).",
		}, []string{"action"}),
		fixes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "backflow_fixes_total",
			Help: "Merged fixes followed up, by result (proven, reverted).",
		}, []string{"result"}),
		githubRequests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "backflow_github_requests_total",
			Help: "Requests sent to GitHub, by HTTP status (0: no response).",
		}, []string{"status"}),
		rateRemaining: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "backflow_github_rate_limit_remaining",
			Help: "X-RateLimit-Remaining of the latest GitHub response that carried it.",
		}),
		githubWaits: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "backflow_github_wait_seconds",
			Help: "Waits before requests to GitHub, by reason (embargo-primary, embargo-secondary, embargo-429, " +
				"writes-per-minute, writes-per-hour, retry, create-retry).",
			Buckets: []float64{0.1, 0.5, 1, 5, 10, 30, 60, 120, 300, 900, 3600},
		}, []string{"reason"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "backflow_errors_total",
			Help: "Errors, by kind.",
		}, []string{"kind"}),
		webhooks: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "backflow_webhook_deliveries_total",
			Help: "Webhook deliveries received, by event and result.",
		}, []string{"event", "result"}),
		observations: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "backflow_observation_pushes_total",
			Help: "Pushes to /observations, by result.",
		}, []string{"result"}),
		leader: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "backflow_leader",
			Help: "1 while this process leads its replicas and runs cycles (always, without leader election), 0 on a standby.",
		}),
		transitions: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "backflow_leader_transitions_total",
			Help: "Times this process started or stopped leading.",
		}),
	}
	m.attributions = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "backflow_decision_attributions_total",
		Help: "Decisions about observed live changes, by how far the actor is believed (unknown, asserted, managed-fields, " +
			"admission, audit-log).",
	}, []string{"attribution"})
	m.receiptsRefused = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "backflow_receipts_refused_total",
		Help: "Failed receipt checks (backflow/receipt) posted on write-back pull requests.",
	})
	m.buildInfo = newBuildInfo("")
	m.admissionRefused = newAdmissionRefused()
	// Registered with the webhook only (WatchAdmissionInFlight).
	m.admissionBusy = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "backflow_admission_reviews_busy_total",
		Help: "Admission reviews answered 429 (Retry-After) because admission.maxInFlightBytes were being read.",
	})
	m.temporary = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "backflow_temporary_acceptances",
		Help: "Temporary acceptances (break glass) on the default branches as of each repository's latest cycle, by state " +
			"(in-force, due, waiting, void, refused).",
	}, []string{"state"})
	m.registry.MustRegister(m.attributions, m.receiptsRefused, m.buildInfo, m.admissionRefused, m.temporary)
	m.hold = newHoldMetrics()
	m.registry.MustRegister(m.hold.collectors()...)
	m.preset()
	m.registry.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		m.cycles, m.cycleDuration, m.cycleLockWait, m.githubWaits, m.decisions, m.pullRequests, m.fixes,
		m.githubRequests, m.rateRemaining, m.errors, m.webhooks, m.observations,
		m.leader, m.transitions,
	)
	return m
}

// Handler serves the registry in Prometheus' exposition format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.registry, promhttp.HandlerOpts{Registry: m.registry})
}

// Cycle records one finished cycle: how long it waited for its turn and
// how long it ran.
func (m *Metrics) Cycle(wait, d time.Duration, err error) {
	result := "ok"
	if err != nil {
		result = "error"
	}
	m.cycles.WithLabelValues(result).Inc()
	m.cycleLockWait.Observe(wait.Seconds())
	m.cycleDuration.Observe(d.Seconds())
}

// Decision counts a decision with its outcome (allow, deny, ...).
func (m *Metrics) Decision(outcome string) { m.decisions.WithLabelValues(outcome).Inc() }

// PullRequest counts a pull request action, named as the effect that made
// it: open, update, close, merge, auto-merge.
func (m *Metrics) PullRequest(action string) { m.pullRequests.WithLabelValues(action).Inc() }

// Fix counts a followed-up fix by result: proven or reverted.
func (m *Metrics) Fix(result string) { m.fixes.WithLabelValues(result).Inc() }

// TemporaryAcceptances sets how many temporary acceptances are in state.
func (m *Metrics) TemporaryAcceptances(state string, n int) {
	m.temporary.WithLabelValues(state).Set(float64(n))
}

// GitHubRequest counts one request to GitHub by its HTTP status (304 for
// a conditional read answered "not modified").
func (m *Metrics) GitHubRequest(status int) {
	m.githubRequests.WithLabelValues(strconv.Itoa(status)).Inc()
}

// GitHubWait records a wait before a request to GitHub, by its reason.
func (m *Metrics) GitHubWait(reason string, d time.Duration) {
	m.githubWaits.WithLabelValues(reason).Observe(d.Seconds())
}

// RateLimitRemaining sets the remaining requests GitHub last reported.
func (m *Metrics) RateLimitRemaining(n int) { m.rateRemaining.Set(float64(n)) }

// Error counts an error of a kind (a short fixed name, never a message).
func (m *Metrics) Error(kind string) { m.errors.WithLabelValues(kind).Inc() }

// Leading records whether this process leads, counting a transition when
// that changed.
func (m *Metrics) Leading(on bool) {
	if m.leading.Swap(on) != on {
		m.transitions.Inc()
	}
	if on {
		m.leader.Set(1)
	} else {
		m.leader.Set(0)
	}
}

// webhook counts a delivery.
func (m *Metrics) webhook(event, result string) { m.webhooks.WithLabelValues(event, result).Inc() }

// observation counts a push to /observations.
func (m *Metrics) observation(result string) { m.observations.WithLabelValues(result).Inc() }
