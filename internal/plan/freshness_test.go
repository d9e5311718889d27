package plan

import (
	"slices"
	"testing"
	"time"

	"github.com/backflow-dev/backflow/internal/observe"
)

// TestLowerTrustNeverOverridesWithinFreshness: a newer observation of lower
// trust does not replace a higher-trust one of the same object while that
// is fresh (an hour by default), whichever the sources list first; past
// the window the newer one decides.
func TestLowerTrustNeverOverridesWithinFreshness(t *testing.T) {
	snap := sharedSnapshot(t, "stage-eu", "prod/values.yaml")
	trusted := webObs("stage-1", 5) // audit-log, at t0
	atDesired := webObs("stage-1", 3)
	atDesired.ObservedAt = t0.Add(time.Minute)
	atDesired.Fields, atDesired.Change = nil, observe.Change{Attribution: observe.AttributionAsserted, Claimed: observe.AttributionAsserted}
	for _, tc := range []struct {
		name string
		now  time.Time
		want Outcome
	}{
		{"within the window: the audit-logged change stands", t0.Add(30 * time.Minute), Allow},
		{"past it: the newer observation decides", t0.Add(2 * time.Hour), Noop},
	} {
		for _, order := range [][]observe.Observation{{trusted, atDesired}, {atDesired, trusted}} {
			d := only(t, Plan(slices.Clone(order), nil, snap, tc.now))
			if d.Outcome != tc.want {
				t.Errorf("%s, the %s observation read first: %s %v, want %s", tc.name, order[0].Change.Attribution, d.Outcome, d.Reasons, tc.want)
			}
		}
	}
}
