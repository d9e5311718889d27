package lifecycle

import (
	"strings"
	"testing"
	"time"

	"github.com/backflow-dev/backflow/internal/observe"
)

// TestRevertedProposalSaysSo: the pull request opened for a change the
// GitOps controller reverted before the cycle says so in its body, and
// where live stands is read from what is live now, not from the kept
// transition.
func TestRevertedProposalSaysSo(t *testing.T) {
	o := replicas(4, "kubectl", time.Minute)
	o.Fields[0].Reverted = &observe.Revert{Live: 3, Manager: "helm-controller", From: 3, ChangedVersion: "48213", Version: "48214",
		ChangedAt: t0}
	in := input(t, nil, o)
	if len(in.Result.WriteBacks) != 1 {
		t.Fatalf("why: the reverted change is still proposed; %+v", in.Result.Decisions)
	}
	p := in.propose(&in.Result.WriteBacks[0])
	body := p.Body(in.Marker(p, nil, nil))
	if !strings.Contains(body, "reverted live: spec.replicas was set to 4 by kubectl at resourceVersion 48213") ||
		!strings.Contains(body, "helm-controller wrote it back to 3") {
		t.Errorf("why: the body says the live object was reverted:\n%s", body)
	}
	c := p.Changes[0]
	if got := in.liveState(usEast, c); got != liveReverted {
		t.Errorf("why: the field is at the old value by the forward apply now; live state %d, want %d", got, liveReverted)
	}
	if r := in.revertOf(usEast, c); r == nil || r.Version != "48214" {
		t.Errorf("revert %+v", r)
	}
}
