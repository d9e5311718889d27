package server

import (
	"runtime"
	"runtime/debug"

	"github.com/prometheus/client_golang/prometheus"
)

// The label values each labelled metric is known to take, set to zero when
// the metrics are made so that dashboards and alerts see every series from
// the start (rate() of a series that appears at its first increment misses
// that increment, and an absent series cannot be told from a zero one).
var (
	knownCycleResults   = []string{"ok", "error"}
	knownFixResults     = []string{"proven", "reverted"}
	knownWebhookResults = []string{
		resultQueued,
		resultIgnored,
		resultDuplicate,
		resultUnauthorized,
		resultTooLarge,
		resultBadRequest,
		resultUnavailable,
		resultError,
	}
	// knownGitHubStatuses are the statuses a dashboard watches for: ok,
	// not modified (a conditional read), rate limited, and no response.
	knownGitHubStatuses = []string{"200", "304", "403", "429", "0"}
	knownPushResults    = []string{
		resultQueued,
		resultUnauthorized,
		resultTooLarge,
		resultBadRequest,
		resultUnavailable,
		resultError,
	}
	// knownServerErrors are the kinds the server counts itself; the wiring
	// adds its own with KnownErrors.
	knownServerErrors = []string{"repositories", "cycle", "observations"}
	// knownAttributions are the attribution levels, weakest first.
	knownAttributions = []string{"unknown", "asserted", "managed-fields", "admission", "audit-log"}
)

// preset creates each series of the server's own labels at zero.
func (m *Metrics) preset() {
	for _, r := range knownCycleResults {
		m.cycles.WithLabelValues(r)
	}
	for _, r := range knownFixResults {
		m.fixes.WithLabelValues(r)
	}
	for e := range events {
		for _, r := range knownWebhookResults {
			m.webhooks.WithLabelValues(e, r)
		}
	}
	for _, r := range knownWebhookResults {
		m.webhooks.WithLabelValues("other", r)
	}
	for _, st := range knownGitHubStatuses {
		m.githubRequests.WithLabelValues(st)
	}
	for _, r := range knownPushResults {
		m.observations.WithLabelValues(r)
	}
	m.KnownErrors(knownServerErrors...)
	for _, a := range knownAttributions {
		m.attributions.WithLabelValues(a)
	}
}

// KnownDecisions sets the decision counter of each outcome to zero (the
// planner's outcomes, which the server does not know).
func (m *Metrics) KnownDecisions(outcomes ...string) {
	for _, o := range outcomes {
		m.decisions.WithLabelValues(o)
	}
}

// KnownPullRequests sets the pull request counter of each action to zero:
// the wiring names them, as the effects they count are named.
func (m *Metrics) KnownPullRequests(actions ...string) {
	for _, a := range actions {
		m.pullRequests.WithLabelValues(a)
	}
}

// KnownErrors sets the error counter of each kind to zero.
func (m *Metrics) KnownErrors(kinds ...string) {
	for _, k := range kinds {
		m.errors.WithLabelValues(k)
	}
}

// KnownWaits creates the wait histogram of each reason, empty.
func (m *Metrics) KnownWaits(reasons ...string) {
	for _, r := range reasons {
		m.githubWaits.WithLabelValues(r)
	}
}

// DecisionAttribution counts a decision by how far its actor is believed
// (unknown, asserted, managed-fields, admission, audit-log).
func (m *Metrics) DecisionAttribution(level string) { m.attributions.WithLabelValues(level).Inc() }

// ReceiptRefused counts a failed receipt check posted on a write-back pull
// request.
func (m *Metrics) ReceiptRefused() { m.receiptsRefused.Inc() }

// newBuildInfo is backflow_build_info: 1, labelled with what was built.
func newBuildInfo(version string) prometheus.Gauge {
	revision := "unknown"
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, s := range info.Settings {
			if s.Key == "vcs.revision" && s.Value != "" {
				revision = s.Value
			}
		}
	}
	if version == "" {
		version = "dev"
	}
	g := prometheus.NewGauge(prometheus.GaugeOpts{
		Name:        "backflow_build_info",
		Help:        "1, labelled with the version, the VCS revision and the Go release of the running binary.",
		ConstLabels: prometheus.Labels{"version": version, "revision": revision, "goversion": runtime.Version()},
	})
	g.Set(1)
	return g
}

// SetVersion labels backflow_build_info with the binary's version (set at
// build time by the command); until then it says dev.
func (m *Metrics) SetVersion(version string) {
	m.registry.Unregister(m.buildInfo)
	m.buildInfo = newBuildInfo(version)
	m.registry.MustRegister(m.buildInfo)
}
