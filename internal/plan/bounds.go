package plan

import (
	"fmt"
	"time"

	"github.com/backflow-dev/backflow/internal/observe"
	"github.com/backflow-dev/backflow/internal/repoconfig"
)

// Caps on the fields the planner reads, so that no input can make a cycle
// unbounded: per observation, and over all observations of a cycle.
const (
	maxFieldsPerObservation = 10_000
	maxFieldsPerCycle       = 200_000
)

// inBounds keeps the observations dated within the repo config's bounds
// (observations.maxSkew ahead of now, observations.maxAge before it) and
// says, for each other one, why it is refused. Time is taken from now,
// backflow's clock, never from the observation: a document dated in 2099
// would otherwise outrank every later one, and one dated in year 1 say
// nothing about now. When every observation is kept, kept is observations
// itself (with no room to append into it); otherwise it is a new slice.
func inBounds(
	observations []observe.Observation,
	cfg *repoconfig.Config,
	now time.Time,
) (kept []observe.Observation, refused []string) {
	maxSkew, maxAge, _ := cfg.Bounds()
	fields := 0
	copying := false // kept is a copy, made at the first refusal
	for i := range observations {
		o := &observations[i]
		switch {
		case len(o.Fields) > maxFieldsPerObservation:
			refused = append(
				refused,
				fmt.Sprintf(
					"%s: observation of %s lists %d fields, more than %d: refused",
					originOf(o),
					o.Object,
					len(o.Fields),
					maxFieldsPerObservation,
				),
			)
		case fields+len(o.Fields) > maxFieldsPerCycle:
			refused = append(
				refused,
				fmt.Sprintf(
					"%s: observation of %s: the cycle's observations list more than %d fields: refused",
					originOf(o),
					o.Object,
					maxFieldsPerCycle,
				),
			)
		case o.ObservedAt.After(now.Add(maxSkew)):
			refused = append(
				refused,
				fmt.Sprintf(
					"%s: observation of %s dated %s is %s ahead of backflow's clock (%s), "+
						"more than observations.maxSkew (%s): refused",
					originOf(o),
					o.Object,
					o.ObservedAt.UTC().Format(time.RFC3339),
					o.ObservedAt.Sub(now).Round(time.Second),
					now.UTC().Format(time.RFC3339),
					maxSkew,
				),
			)
		case o.ObservedAt.Before(now.Add(-maxAge)):
			refused = append(
				refused,
				fmt.Sprintf("%s: observation of %s dated %s is older than observations.maxAge (%s): refused",
					originOf(o), o.Object, o.ObservedAt.UTC().Format(time.RFC3339), maxAge),
			)
		default:
			fields += len(o.Fields)
			if copying {
				kept = append(kept, *o)
			}
			continue
		}
		if !copying {
			copying = true
			kept = append(make([]observe.Observation, 0, len(observations)-1), observations[:i]...)
		}
	}
	if !copying && len(observations) > 0 {
		kept = observations[:len(observations):len(observations)]
	}
	if len(kept) == 0 {
		kept = nil
	}
	return kept, refused
}

func originOf(o *observe.Observation) string {
	if o.Origin != "" {
		return o.Origin
	}
	return o.Source
}

// outranks reports whether cur, of higher trust than o and still fresh at
// now, keeps o from replacing it: a lower-trust observation never
// overrides a higher-trust one of the same object within its freshness,
// whichever of the two is read first.
func outranks(cur, o *observe.Observation, now time.Time, freshness time.Duration) bool {
	return cur.Change.Attribution.Rank() > o.Change.Attribution.Rank() && now.Sub(cur.ObservedAt) <= freshness
}
