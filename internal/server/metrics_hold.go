package server

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// The holds on the live objects: how many are in place, how long a
// person's change was at risk of the forward controller's revert before a
// hold closed the window (or the revert came first), and why holds were
// released. The wiring records them from each repository's cycle.

// holdMetrics are the backflow_hold_* metrics.
type holdMetrics struct {
	inPlace  *prometheus.GaugeVec
	atRisk   *prometheus.HistogramVec
	released *prometheus.CounterVec
}

// Outcomes of the at-risk window.
const (
	// AtRiskHeld: a hold was placed on the changed object.
	AtRiskHeld = "held"
	// AtRiskReverted: the forward controller reverted the change while no
	// hold was on the object.
	AtRiskReverted = "reverted"
)

func newHoldMetrics() holdMetrics {
	return holdMetrics{
		inPlace: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "backflow_hold_in_place",
			Help: "backflow's sealed holds on the live objects as of each repository's latest cycle, by repository.",
		}, []string{"repository"}),
		atRisk: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "backflow_hold_at_risk_seconds",
			Help: "Time a person's live change was open to the forward controller's revert, by outcome: from the change " +
				"to its hold placed (held), or to the revert observed on an object without a hold (reverted).",
			Buckets: []float64{0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 900, 3600},
		}, []string{"outcome"}),
		released: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "backflow_hold_releases_total",
			Help: "Holds released, by reason (applied, closed, gone, contested, maximum, mark-removed).",
		}, []string{"reason"}),
	}
}

func (h holdMetrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{h.inPlace, h.atRisk, h.released}
}

// KnownHoldReleases sets the release counter of each reason to zero, and
// creates both at-risk histograms empty.
func (m *Metrics) KnownHoldReleases(reasons ...string) {
	for _, r := range reasons {
		m.hold.released.WithLabelValues(r)
	}
	m.hold.atRisk.WithLabelValues(AtRiskHeld)
	m.hold.atRisk.WithLabelValues(AtRiskReverted)
}

// HoldsInPlace sets how many of repo's holds are in place.
func (m *Metrics) HoldsInPlace(repo string, n int) {
	m.hold.inPlace.WithLabelValues(repo).Set(float64(n))
}

// HoldAtRisk records an at-risk window by its outcome (AtRiskHeld,
// AtRiskReverted).
func (m *Metrics) HoldAtRisk(outcome string, d time.Duration) {
	m.hold.atRisk.WithLabelValues(outcome).Observe(d.Seconds())
}

// HoldReleased counts a hold released, by reason.
func (m *Metrics) HoldReleased(reason string) { m.hold.released.WithLabelValues(reason).Inc() }
