package plan

import (
	"testing"

	"github.com/backflow-dev/backflow/internal/observe"
)

// reviewStore names its proposals its own way: the receipts take the
// method and the revision from the store, not from the planner.
type reviewStore struct{ PullRequests }

func (reviewStore) NewRevision(branch string) string { return "refs/heads/" + branch }

// The receipt's writeBack.method and newRevision come from the snapshot's
// store; without one, the pull-request store names the branch.
func TestReceiptNamesTheStore(t *testing.T) {
	obs := []observe.Observation{byAlice("euw-1", "redis-master", t0, field("spec.replicas", 2, 1))}
	for _, tc := range []struct {
		why   string
		store Store
		want  string
	}{
		{"a snapshot without a store writes back by pull request, named by its branch", nil, "backflow/prod-eu-west/redis"},
		{"another store names the revision its own way", reviewStore{}, "refs/heads/backflow/prod-eu-west/redis"},
	} {
		snap := snapshot(t, testConfig)
		snap.Store = tc.store
		d := only(t, Plan(obs, nil, snap, testNow))
		if d.Outcome != Allow {
			t.Fatalf("%s: %s %q", tc.why, d.Outcome, d.Reasons)
		}
		if w := d.Receipt.Spec.WriteBack; w.NewRevision != tc.want || w.Method != "pull-request" {
			t.Errorf("%s: method %q newRevision %q, want pull-request %q", tc.why, w.Method, w.NewRevision, tc.want)
		}
	}
}
