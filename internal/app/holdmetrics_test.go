package app

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/backflow-dev/backflow/internal/bot"
)

// TestHoldMetrics: the holds in place are each repository's as its latest
// cycle left them, every at-risk window the cycles closed is in the
// histogram under its outcome, a revert seen again by a later cycle is
// counted once, and releases are counted by reason.
func TestHoldMetrics(t *testing.T) {
	m := NewMetrics("test")
	scrape := func() string {
		rec := httptest.NewRecorder()
		m.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
		return rec.Body.String()
	}
	before := scrape()
	for _, want := range []string{
		// why: every release reason is a series from the start.
		`backflow_hold_releases_total{reason="maximum"} 0`,
		`backflow_hold_releases_total{reason="mark-removed"} 0`,
		`backflow_hold_releases_total{reason="unheld"} 0`,
		`backflow_hold_releases_total{reason="unserved"} 0`,
		// why: both at-risk outcomes exist before the first cycle.
		`backflow_hold_at_risk_seconds_count{outcome="held"} 0`,
		`backflow_hold_at_risk_seconds_count{outcome="reverted"} 0`,
	} {
		if !strings.Contains(before, want) {
			t.Errorf("before the first cycle: want %s", want)
		}
	}
	c := NewCycler(nil, m)
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	revert := bot.RevertReport{Key: "prod-1\x00apps/v1|Deployment|web|web\x00spec.replicas\x00204\x00205",
		Window: 4 * time.Second}
	c.record(&bot.Report{Started: t0, Repos: []*bot.RepoReport{
		{Repo: "acme/a", Holds: bot.HoldsReport{Read: true, InPlace: 2, Held: []time.Duration{300 * time.Millisecond,
			7 * time.Second}, Reverts: []bot.RevertReport{revert}}},
		{Repo: "acme/b", Holds: bot.HoldsReport{Read: true, InPlace: 1}},
	}})
	c.record(&bot.Report{Started: t0.Add(time.Minute), Repos: []*bot.RepoReport{
		{Repo: "acme/a", Holds: bot.HoldsReport{Read: true, InPlace: 0, Released: []string{"applied", "maximum"},
			Reverts: []bot.RevertReport{revert}}},
		// why: a repository whose holds were not read keeps its last count.
		{Repo: "acme/b", Skipped: "paused"},
	}})
	got := scrape()
	for _, want := range []string{
		`backflow_hold_in_place{repository="acme/a"} 0`,
		`backflow_hold_in_place{repository="acme/b"} 1`,
		`backflow_hold_at_risk_seconds_count{outcome="held"} 2`,
		`backflow_hold_at_risk_seconds_bucket{outcome="held",le="0.5"} 1`,
		`backflow_hold_at_risk_seconds_sum{outcome="held"} 7.3`,
		// why: the same revert read again next cycle is one revert.
		`backflow_hold_at_risk_seconds_count{outcome="reverted"} 1`,
		`backflow_hold_at_risk_seconds_sum{outcome="reverted"} 4`,
		`backflow_hold_releases_total{reason="applied"} 1`,
		`backflow_hold_releases_total{reason="maximum"} 1`,
		`backflow_hold_releases_total{reason="closed"} 0`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("want %s", want)
		}
	}
	// why: a revert remembered past a day is forgotten (the map is bounded).
	c.record(&bot.Report{Started: t0.Add(25 * time.Hour), Repos: []*bot.RepoReport{{Repo: "acme/a",
		Holds: bot.HoldsReport{Read: true}}}})
	if n := len(c.reverts); n != 0 {
		t.Errorf("%d reverts remembered after a day", n)
	}
}
