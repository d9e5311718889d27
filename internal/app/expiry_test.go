package app

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/backflow-dev/backflow/internal/bot"
)

// TestTemporaryAcceptancesGauge: the gauge sums every repository's
// temporary acceptances as its latest cycle found them, so cycling one
// repository neither drops nor doubles another's.
func TestTemporaryAcceptancesGauge(t *testing.T) {
	m := NewMetrics("test")
	scrape := func() string {
		rec := httptest.NewRecorder()
		m.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
		return rec.Body.String()
	}
	if got := scrape(); !strings.Contains(got, `backflow_temporary_acceptances{state="due"} 0`) {
		t.Fatal("no due series at zero before the first cycle")
	}
	c := NewCycler(nil, m)
	repo := func(name string, states ...string) *bot.Report {
		rr := &bot.RepoReport{Repo: name}
		for _, s := range states {
			rr.Expiries = append(rr.Expiries, bot.ExpiryReport{State: s})
		}
		return &bot.Report{Repos: []*bot.RepoReport{rr}}
	}
	c.record(repo("acme/a", "in-force", "in-force", "due"))
	c.record(repo("acme/b", "in-force", "superseded"))
	c.record(repo("acme/a", "in-force", "due"))
	c.record(&bot.Report{Repos: []*bot.RepoReport{{Repo: "acme/b", Skipped: "paused"}}})
	got := scrape()
	for _, want := range []string{
		`backflow_temporary_acceptances{state="in-force"} 2`,
		`backflow_temporary_acceptances{state="due"} 1`,
		`backflow_temporary_acceptances{state="void"} 0`,
		// why: a superseded acceptance is counted, so a dashboard sees it.
		`backflow_temporary_acceptances{state="superseded"} 1`} {
		if !strings.Contains(got, want) {
			t.Errorf("want %s in\n%s", want, got)
		}
	}
}
