package reliability

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/backflow-dev/backflow/internal/forge"
	"github.com/backflow-dev/backflow/internal/lifecycle"
	"github.com/backflow-dev/backflow/internal/observe"
)

// atDesired is an observation dated at of redis-replicas with no changed
// field (live is back at desired), from a source trusted at asserted.
func atDesired(at time.Time) observe.Observation {
	o := replicas(usEastNode, 3, at)
	o.Fields, o.Change = nil, observe.Change{Attribution: observe.AttributionUnknown, Claimed: observe.AttributionAsserted}
	o.Source, o.Trust = "file", observe.AttributionAsserted
	return o
}

// Case 20: time has bounds. Observations dated in year 1, in 2099 or in
// 9999 are refused with a reason naming backflow's clock; a push dated in
// 2099 saying live is back at desired neither closes the open pull request
// nor freezes the object; and an observation dated past the grace period,
// while backflow's clock is not, proves nothing.
func TestCase20TimeBounds(t *testing.T) {
	files := gitopsFiles(t)
	reviewOnly(files)
	e := newHubEnv(t, files)
	a := e.adapter(nil)
	src := &staticSource{}
	b := e.newBot(a, src, forge.CommitGit)
	now := e.clock.Now()
	src.set(replicas(usEastNode, 4, now))
	e.cycle(b)
	refused, closedByFuture := 0, 0
	for _, at := range []time.Time{time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2099, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC)} {
		e.clock.Advance(time.Minute)
		src.set(replicas(usEastNode, 4, now), atDesired(at))
		for _, rr := range e.cycle(b).Repos {
			for _, msg := range rr.PlanErrors {
				if strings.Contains(msg, "refused") && (strings.Contains(msg, "maxSkew") || strings.Contains(msg, "maxAge")) {
					refused++
				}
			}
		}
	}
	for _, pr := range e.pulls(a, e.repo) {
		if pr.State != forge.StateOpen {
			closedByFuture++
			t.Errorf("#%d was closed by an observation from another time", pr.Number)
		}
	}
	// A later trusted observation of 5 is still acted on.
	e.clock.Advance(time.Minute)
	src.set(replicas(usEastNode, 5, e.clock.Now()), atDesired(time.Date(2099, 1, 1, 0, 0, 0, 0, time.UTC)))
	e.cycle(b)
	followed := 0
	for _, pr := range e.pulls(a, e.repo) {
		if pr.State == forge.StateOpen && strings.Contains(pr.Title, "3 -> 5") {
			followed++
		}
	}
	if followed != 1 {
		t.Error("a later trusted observation was frozen out")
	}

	// Proof: auto-merge on; the fix merges; an observation dated past the
	// grace period (10m) by a source whose clock runs ahead proves nothing
	// until backflow's own clock is past it.
	e2 := newHubEnv(t, gitopsFiles(t))
	a2 := e2.adapter(nil)
	src2 := &staticSource{}
	b2 := e2.newBot(a2, src2, forge.CommitGit)
	src2.set(replicas(usEastNode, 4, e2.clock.Now()))
	e2.cycle(b2)
	e2.clock.Advance(time.Minute)
	early := 0
	for _, ahead := range []time.Duration{4 * time.Minute, 11 * time.Minute, time.Hour} {
		o := replicas(usEastNode, 4, e2.clock.Now().Add(ahead))
		o.Change = observe.Change{Attribution: observe.AttributionUnknown}
		src2.set(o)
		e2.cycle(b2)
		for _, pr := range e2.pulls(a2, e2.repo) {
			if slices.Contains(pr.Labels, lifecycle.LabelProven) {
				early++
			}
		}
	}
	if early > 0 {
		t.Errorf("proven %d times before backflow's clock passed the grace period", early)
	}
	// Once the clock is past the grace period, a fresh observation proves it.
	e2.clock.Advance(15 * time.Minute)
	src2.set(replicas(usEastNode, 4, e2.clock.Now()))
	e2.cycle(b2)
	proven := 0
	for _, pr := range e2.pulls(a2, e2.repo) {
		if slices.Contains(pr.Labels, lifecycle.LabelProven) {
			proven++
		}
	}
	if refused != 3 || proven != 1 {
		t.Errorf("refused %d of 3 out-of-time observations; proven %d, want 1", refused, proven)
	}
	report(t, "20", "time-bounds", "out_of_time_observations_refused", refused, "pull_requests_closed_by_them", closedByFuture,
		"later_trusted_change_followed", followed, "proofs_before_the_grace_period", early, "proofs_after_it", proven)
}
