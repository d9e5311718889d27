package lifecycle

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/backflow-dev/backflow/internal/forge"
	"github.com/backflow-dev/backflow/internal/observe"
	"github.com/backflow-dev/backflow/internal/repoconfig"
)

// asserted is an observation of redis-replicas from a source trusted at
// asserted (a push by the secret URL), at t0 plus offset: with fields nil,
// live back at desired; otherwise live, claimed by alice.
func asserted(live any, offset time.Duration) observe.Observation {
	o := replicas(live, "kubectl", offset)
	o.Trust, o.Change.Attribution = observe.AttributionAsserted, observe.AttributionAsserted
	if live == nil {
		o.Fields, o.Change = nil, observe.Change{}
	}
	return o
}

// briefly makes a higher-trust observation outrank a lower one for a
// minute only, so that the planner, at t0+5m, lets the later lower-trust
// one decide: what the lifecycle does then is what is tested.
func briefly(also func(map[string]string)) func(map[string]string) {
	return func(f map[string]string) {
		f[repoconfig.Path] += "observations:\n  freshness: 1m\n"
		if also != nil {
			also(f)
		}
	}
}

// acceptsAsserted lets the role accept asserted attribution as well.
func acceptsAsserted(f map[string]string) {
	f[repoconfig.Path] = strings.Replace(f[repoconfig.Path], "attribution: [audit-log]", "attribution: [asserted, audit-log]", 1)
}

// TestLowerTrustNeitherClosesNorReplans: a pull request opened on alice's
// audit-logged change is closed as converged, or re-planned, only on an
// observation trusted as far as its receipt's attribution.
func TestLowerTrustNeitherClosesNorReplans(t *testing.T) {
	scaled := replicas(4, "kubectl", 0)
	for _, tc := range []struct {
		name, why string
		mutate    func(map[string]string)
		obs       []observe.Observation
		want      []string
		reason    string
	}{
		{"asserted back at desired", "an asserted push of no fields is no evidence against the audit log's: kept", briefly(nil),
			[]observe.Observation{scaled, asserted(nil, 2*time.Minute)}, []string{"keep"}, "unchanged"},
		{"asserted back at desired alone", "nor is it when the trusted observation is gone: no trusted observation is no evidence", briefly(nil),
			[]observe.Observation{asserted(nil, 2*time.Minute)}, []string{"keep"}, "unchanged"},
		{"audit-log back at desired", "a later observation at the receipt's trust still closes it", briefly(nil),
			[]observe.Observation{scaled, asserted(4, time.Minute), withManager(replicas(3, "kubectl", 2*time.Minute), 3, "kubectl")},
			[]string{"close:converged", "cleanup"}, "Live is back at desired"},
		{"asserted new value", "an asserted 5, which the role accepts, does not re-plan what the audit log's 4 opened", briefly(acceptsAsserted),
			[]observe.Observation{scaled, asserted(5, 2*time.Minute)}, []string{"keep"}, "believed only at asserted, below audit-log"},
		{"audit-log new value", "an audit-logged 5 re-plans it", briefly(acceptsAsserted),
			[]observe.Observation{scaled, replicas(5, "kubectl", 2*time.Minute)}, []string{"disarm", "update"}, "new live value"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := input(t, tc.mutate, tc.obs...)
			pr := proposed(t, input(t, tc.mutate, scaled), 1, "c1")
			got := decideAll(t, state{in: in, prs: []forge.PullRequest{pr}})
			if !slices.Equal(kinds(got), tc.want) {
				t.Fatalf("%s: effects %v, want %v (%+v)", tc.why, kinds(got), tc.want, got)
			}
			if !slices.ContainsFunc(got, func(e Effect) bool { return strings.Contains(e.Reason, tc.reason) }) {
				t.Errorf("%s: no effect's reason says %q: %+v", tc.why, tc.reason, got)
			}
		})
	}
}
