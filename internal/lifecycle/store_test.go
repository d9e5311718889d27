package lifecycle

import (
	"strings"
	"testing"

	"github.com/backflow-dev/backflow/internal/forge"
	"github.com/backflow-dev/backflow/internal/plan"
	"github.com/backflow-dev/backflow/internal/receipt"
)

// unitStore names an accepted proposal its own way, as a store other than
// the pull request one would (a ConfigHub Unit's revision).
type unitStore struct{ plan.PullRequests }

func (unitStore) Applied(mergeCommit string) string { return "unit-revision-of-" + mergeCommit }

// The proven receipt's writeBack.newRevision is the store's, the
// follow-up's rules unchanged: a store is named in the snapshot, not in
// the lifecycle.
func TestProvenRevisionIsTheStores(t *testing.T) {
	const merge = "abcdef0123456789abcdef0123456789abcdef01"
	for _, tc := range []struct {
		name  string
		store plan.Store
		want  string
	}{
		{"the pull request store names the merge commit", nil, merge},
		{"another store names its own revision", unitStore{}, "unit-revision-of-" + merge},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The receipt as the write-back committed it.
			wb := input(t, nil, replicas(4, "kubectl", 0)).Result.WriteBacks[0]
			s := scenario{Values: "4", Observations: []scenarioObservation{{Live: 4, Manager: "kubectl", At: "21m"}},
				Pulls: []scenarioPull{{Number: 1, Proposes: 4, Head: "c1", State: "merged", MergedAt: "10m"}}}
			in := s.input(t)
			in.Snapshot.Store = tc.store
			pr := s.Pulls[0].pull(t, s)
			pr.MergeCommitSHA = merge
			chains := in.FollowUps([]forge.PullRequest{pr})
			if len(chains) != 1 || len(chains[0]) != 1 || chains[0][0].Kind != Proven {
				t.Fatalf("follow-up chains %v, want one proven", chains)
			}
			e := chains[0][0]
			_, comment, err := e.Evidence.Proven(e.Pull, wb.Receipts)
			if err != nil {
				t.Fatal(err)
			}
			docs := ProvenReceipts(comment)
			if len(docs) != 1 {
				t.Fatalf("proven receipts %d, want 1", len(docs))
			}
			r, _, err := receipt.Parse("proven.yaml", []byte(docs[0]))
			if err != nil {
				t.Fatal(err)
			}
			if got := r.Spec.WriteBack.NewRevision; got != tc.want {
				t.Errorf("newRevision %q, want %q", got, tc.want)
			}
			if !strings.Contains(comment, tc.want) {
				t.Errorf("the comment does not carry the store's revision %q", tc.want)
			}
		})
	}
}
