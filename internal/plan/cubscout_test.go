package plan

import (
	"fmt"
	"strings"
	"testing"

	"github.com/backflow-dev/backflow/internal/observe"
)

// cubScout reads a cub-scout trace-diff of redis-replicas on use-1 through
// the real parser and attributes it to alice as the audit join would.
func cubScout(t *testing.T, uid string, differences string) observe.Observation {
	t.Helper()
	doc := `{"status":"changed","comparison":"authored-fields-only","context":"use-1",
"resource":{"apiVersion":"apps/v1","kind":"StatefulSet","namespace":"redis","name":"redis-replicas"},
"read":{"available":true,"uid":"` + uid + `","observedAt":"2026-06-18T12:00:00.123456789Z"},
"differences":[` + differences + `]}`
	res := observe.ParseBytes([]byte(doc), observe.Options{Name: "trace-diff.json"})
	if len(res.Errors) != 0 || len(res.Observations) != 1 {
		t.Fatalf("parse: %+v", res)
	}
	o := res.Observations[0]
	o.Change = observe.Change{Actor: "alice", Groups: []string{"sre"}, Attribution: observe.AttributionAuditLog, Claimed: observe.AttributionAuditLog}
	return o
}

func TestCubScoutLivePlaceholderIsAmbiguous(t *testing.T) {
	snap := snapshot(t, testConfig)
	o := cubScout(t, "u1", `{"field":"spec.replicas","desired":"3","live":"-"}`)
	d := only(t, Plan([]observe.Observation{o}, nil, snap, testNow))
	// why: "-" was proposed as the live value and, attributed, allowed with
	// a receipt writing "-" into desired state; then it was read as a
	// removal, though cub-scout prints "" and the string "-" the same way.
	if d.Outcome != Deny || !hasReason(d, "ambiguous: spec.replicas: cub-scout prints \"-\" live") || !strings.Contains(strings.Join(d.Reasons, "\n"), "the Kubernetes watch") ||
		hasReason(d, "field-removed") || d.Receipt != nil || d.Changes[0].To != nil {
		t.Errorf("got %s %v, to %#v, receipt %v", d.Outcome, d.Reasons, d.Changes[0].To, d.Receipt != nil)
	}
}

func TestCubScoutStructureIsNeverStale(t *testing.T) {
	snap := snapshot(t, testConfig)
	// The values file holds a list where the policy maps the field: cub-scout's
	// "2" and "3" are the list's lengths.
	snap.Files["us/values.yaml"] = []byte(strings.Replace(testValues, "replicaCount: 3 # scaled live", "replicaCount: [a, b]", 1))
	o := cubScout(t, "u1", `{"field":"spec.replicas","desired":"2","live":"3"}`)
	d := only(t, Plan([]observe.Observation{o}, nil, snap, testNow))
	if d.Outcome != Deny || !hasReason(d, "structural: spec.replicas: us/values.yaml holds a list at replica.replicaCount") || hasReason(d, "stale") {
		t.Errorf("why: a list length is structure, denied as such and never stale: %s %v", d.Outcome, d.Reasons)
	}
}

func TestCubScoutManagerHintIsNotTheWriter(t *testing.T) {
	snap := snapshot(t, testConfig+"ignoreManagers: [kubectl-scale]\n")
	o := cubScout(t, "u1", `{"field":"spec.replicas","desired":"3","live":"4","cause":"manual-edit","managerHint":"kubectl-scale"}`)
	d := only(t, Plan([]observe.Observation{o}, nil, snap, testNow))
	// why: managerHint is a representative manager, not the field's writer:
	// it must not make the change an ignored manager's.
	if d.Outcome != Allow || len(d.Changes) != 1 {
		t.Fatalf("got %s %v", d.Outcome, d.Reasons)
	}
	// why: the receipt keeps cub-scout's evidence in its observation section,
	// the hint marked as one.
	obs := d.Receipt.Spec.Observation
	if obs.UID != "u1" || !strings.Contains(strings.Join(obs.Evidence, "\n"), "spec.replicas: cause manual-edit, managerHint kubectl-scale (a representative manager, not the writer)") {
		t.Errorf("receipt observation %+v", obs)
	}
}

func TestCubScoutReceiptAnchor(t *testing.T) {
	snap := snapshot(t, testConfig)
	for _, tt := range []struct {
		why    string
		anchor observe.Anchor
		deny   bool
	}{
		{"an anchor on the unit's values folder agrees", observe.Anchor{RepoURL: "https://git.example/r", Revision: "abc", Path: "us"}, false},
		{"an anchor naming the values file agrees", observe.Anchor{File: "us/values.yaml"}, false},
		{"an anchor elsewhere compared live with another desired state", observe.Anchor{RepoURL: "https://git.example/r", Revision: "abc", Path: "eu"}, true},
	} {
		o := cubScout(t, "u1", `{"field":"spec.replicas","desired":"3","live":"4"}`)
		o.Evidence.Anchor = &tt.anchor
		d := only(t, Plan([]observe.Observation{o}, nil, snap, testNow))
		if got := hasReason(d, "anchor: "); got != tt.deny || (d.Outcome == Deny) != tt.deny {
			t.Errorf("%s: %s %v", tt.why, d.Outcome, d.Reasons)
		}
	}
}

func TestCubScoutRecreatedObject(t *testing.T) {
	snap := snapshot(t, testConfig)
	old := cubScout(t, "u-old", `{"field":"spec.replicas","desired":"3","live":"4"}`)
	old.ObservedAt = old.ObservedAt.Add(-60e9)
	recreated := cubScout(t, "u-new", `{"field":"spec.replicas","desired":"3","live":"5"}`)
	d := only(t, Plan([]observe.Observation{recreated, old}, nil, snap, testNow))
	// why: an object deleted and created again under the same name is another object.
	if !hasReason(d, "recreated: apps/v1|StatefulSet|redis|redis-replicas on cluster use-1 was deleted and created again (uid u-old") || fmt.Sprint(d.Changes[0].To) != "5" {
		t.Errorf("got %s %v %v", d.Outcome, d.Reasons, d.Changes)
	}
}
