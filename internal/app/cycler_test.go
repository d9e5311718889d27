package app

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/backflow-dev/backflow/internal/bot"
)

// Why: repositories cycle concurrently, but one installation's at most
// perInstallation at a time (its rate limits are shared); another
// installation's are not held back by them.
func TestCyclerBoundsCyclesPerInstallation(t *testing.T) {
	c := NewCycler(nil, nil)
	c.SetPerInstallation(2)
	ctx := context.Background()
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	var releases []func()
	for range 2 {
		release, err := c.slot(ctx, "acme")
		if err != nil {
			t.Fatal(err)
		}
		releases = append(releases, release)
	}
	// Full: a wait that is given up takes no slot.
	if _, err := c.slot(cancelled, "ACME"); err == nil {
		t.Fatal("a third cycle of the installation started while two ran")
	}
	if release, err := c.slot(ctx, "other"); err != nil {
		t.Fatalf("another installation waited: %v", err)
	} else {
		release()
	}
	releases[0]()
	release, err := c.slot(ctx, "acme")
	if err != nil {
		t.Fatalf("no room after a cycle ended: %v", err)
	}
	release()
	releases[1]()
}

// Why: an effect has one name from the lifecycle to the log to the metric
// label, so an operator reading "auto-merge" in the log finds the same word
// on the dashboard; each series is there at zero before the first cycle.
func TestCyclerCountsPullRequestsUnderTheEffectsNames(t *testing.T) {
	m := NewMetrics("test")
	scrape := func() string {
		rec := httptest.NewRecorder()
		m.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
		return rec.Body.String()
	}
	kinds := []string{bot.ActOpen, bot.ActUpdate, bot.ActClose, bot.ActMerge, bot.ActAutoMerge}
	before := scrape()
	for _, k := range kinds {
		if want := `backflow_pull_requests_total{action="` + k + `"} 0`; !strings.Contains(before, want) {
			t.Errorf("no %s series at zero before the first cycle", k)
		}
	}
	rep := &bot.Report{Repos: []*bot.RepoReport{{}}}
	for _, k := range append(kinds, bot.ActKeep, bot.ActProven) {
		rep.Repos[0].Actions = append(rep.Repos[0].Actions, bot.Action{Kind: k}, bot.Action{Kind: k, DryRun: true})
	}
	NewCycler(nil, m).record(rep)
	after := scrape()
	for _, k := range kinds {
		if want := `backflow_pull_requests_total{action="` + k + `"} 1`; !strings.Contains(after, want) {
			t.Errorf("the %s effect is not counted under its own name", k)
		}
	}
	for _, line := range strings.Split(after, "\n") {
		if !strings.HasPrefix(line, "backflow_pull_requests_total{") {
			continue
		}
		action := strings.TrimSuffix(strings.SplitN(line, `"`, 3)[1], `"`)
		if !slices.Contains(kinds, action) {
			t.Errorf("a pull request series not named as an effect: %s", line)
		}
	}
}
