package lifecycle

import (
	"slices"
	"testing"
	"time"

	"github.com/backflow-dev/backflow/internal/forge"
	"github.com/backflow-dev/backflow/internal/observe"
)

// ambiguously is alice's observation of redis-replicas whose live text
// cannot say what the field holds (cub-scout's "-"), at t0 plus offset.
func ambiguously(offset time.Duration) observe.Observation {
	o := replicas("-", "kubectl", offset)
	o.Fields[0].Ambiguous = "cub-scout prints \"-\" live for a field that is absent, null, \"\" or the string \"-\""
	return o
}

// TestAmbiguousLiveDecidesNothing: a field the observer's text cannot
// read neither closes, re-plans nor proves or reverts a pull request; the
// lifecycle waits for a source that reads the object itself.
func TestAmbiguousLiveDecidesNothing(t *testing.T) {
	scaled := replicas(4, "kubectl", 0)
	merged := func(t *testing.T) forge.PullRequest {
		pr := closed(proposed(t, input(t, nil, scaled), 1, "c1"), true)
		pr.MergedAt, pr.MergeCommitSHA = t0.Add(10*time.Minute), "m1"
		return edit(t, pr, func(m *Marker) { m.BranchDeleted = true })
	}
	for _, tc := range []struct {
		name, why string
		state     func(t *testing.T) state
		want      []string
	}{
		{"open", "an ambiguous live text is no evidence that live went back or moved on: kept",
			func(t *testing.T) state {
				return state{in: input(t, nil, scaled, ambiguously(2*time.Minute)),
					prs: []forge.PullRequest{proposed(t, input(t, nil, scaled), 1, "c1")}}
			}, []string{"keep"}},
		{"merged", "nor does it prove or revert a merged change: the follow-up waits",
			func(t *testing.T) state {
				return state{in: input(t, setValues("4"), ambiguously(30*time.Minute)), prs: []forge.PullRequest{merged(t)}}
			}, []string{"follow-up"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := decideAll(t, tc.state(t))
			if !slices.Equal(kinds(got), tc.want) {
				t.Fatalf("%s: effects %v, want %v (%+v)", tc.why, kinds(got), tc.want, got)
			}
		})
	}
}
