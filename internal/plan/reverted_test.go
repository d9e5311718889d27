package plan

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/backflow-dev/backflow/internal/observe"
	"github.com/backflow-dev/backflow/internal/values"
)

// TestRevertedChangeIsProposed: a person's change the GitOps controller
// wrote back before the cycle read the object is proposed at the person's
// value, and the decision and the receipt say the live object was
// reverted.
func TestRevertedChangeIsProposed(t *testing.T) {
	f := field("spec.replicas", 2, nil)
	f.HasDesired, f.Manager = false, "kubectl"
	f.Reverted = &observe.Revert{Live: 1, Manager: "helm-controller", From: 1, ChangedVersion: "41", Version: "42", ChangedAt: t0.Add(-time.Minute)}
	d := only(t, Plan([]observe.Observation{byAlice("euw-1", "redis-master", t0, f)}, nil, snapshot(t, testConfig), testNow))
	if d.Outcome != Allow || len(d.Changes) != 1 || !values.Equal(d.Changes[0].To, 2) || !values.Equal(d.Changes[0].From, 1) {
		t.Fatalf("why: the person's value is the change; got %s %+v %q", d.Outcome, d.Changes, d.Reasons)
	}
	want := "reverted live: spec.replicas was set to 2 by kubectl at resourceVersion 41 (seen by the watch at 2026-06-18T11:59:00Z), " +
		"and helm-controller wrote it back to 1 before this cycle read the object (resourceVersion 42)"
	if !slices.ContainsFunc(d.Reasons, func(r string) bool { return strings.HasPrefix(r, want) }) {
		t.Errorf("why: the decision says the live object was reverted; reasons %q", d.Reasons)
	}
	if !slices.ContainsFunc(d.Receipt.Spec.Observation.Evidence, func(s string) bool {
		return strings.Contains(s, "live was written back to 1 by helm-controller at resourceVersion 42")
	}) {
		t.Errorf("why: the receipt says its observation rests on the watch's transition; evidence %q", d.Receipt.Spec.Observation.Evidence)
	}
	// The same field not reverted says nothing of it.
	f.Reverted = nil
	d = only(t, Plan([]observe.Observation{byAlice("euw-1", "redis-master", t0, f)}, nil, snapshot(t, testConfig), testNow))
	if hasReason(d, "reverted live") {
		t.Errorf("a live change as it is is not reverted: %q", d.Reasons)
	}
}
