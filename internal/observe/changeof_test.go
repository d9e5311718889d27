package observe

import (
	"testing"
	"time"
)

func TestChangeOfNarrowsToTheSelectedFields(t *testing.T) {
	// why: alice's replicas, now at desired, is still hers in
	// managedFields; joined with bob's image the observation's change was
	// unknown, and the planner denied bob's change as nobody's.
	scaleByAlice := ev{id: "alice-1", user: "alice", groups: []string{"sre"}, sub: "scale", body: scaleBody(4), at: t0.Add(10 * time.Second)}
	imageByBob := ev{id: "bob-1", user: "bob", groups: []string{"dev"}, at: t0.Add(20 * time.Second), body: map[string]any{"spec": map[string]any{"template": map[string]any{
		"spec": map[string]any{"containers": []any{map[string]any{"name": "redis", "image": "redis:8"}}}}}}}
	replicas := Field{Path: "spec.replicas", Live: int64(4), Desired: int64(4), HasDesired: true}
	image := Field{Path: "spec.template.spec.containers[0].image", Live: "redis:8"}
	isImage := func(f *Field) bool { return f.Path == image.Path }
	whole := Attribute(redisObservation(replicas, image), parseEvents(t, scaleByAlice, imageByBob))
	if whole.Change.Actor != "" {
		t.Fatalf("the whole observation's change = %+v, want unknown", whole.Change)
	}
	got := ChangeOf(whole, isImage)
	if got.Actor != "bob" || got.Attribution != AttributionAuditLog || len(got.Groups) != 1 || got.Groups[0] != "dev" {
		t.Errorf("the image's change = %+v, want bob at audit-log", got)
	}
	if all := ChangeOf(whole, func(*Field) bool { return true }); all.Actor != "" || all.Evidence != whole.Change.Evidence {
		t.Errorf("every field's change = %+v, want the whole observation's %+v", all, whole.Change)
	}
	if none := ChangeOf(whole, func(*Field) bool { return false }); none.Actor != whole.Change.Actor || none.Evidence != whole.Change.Evidence {
		t.Errorf("no field's change = %+v, want the observation's", none)
	}

	// The weakest level among the selected fields: bob's image at
	// audit-log and his tag through managedFields only.
	tag := Field{Path: "metadata.labels.tier", Live: "cache", Manager: "bob", ManagedAt: t0.Add(30 * time.Second)}
	mixed := Attribute(redisObservation(replicas, image, tag), parseEvents(t, scaleByAlice, imageByBob))
	if got := ChangeOf(mixed, func(f *Field) bool { return f.Path != replicas.Path }); got.Actor != "bob" || got.Attribution != AttributionManagedFields {
		t.Errorf("image and tag = %+v, want bob at managed-fields", got)
	}

	// A field at desired whose latest recorded write set another value:
	// the records contradict the object, and no subset is trusted more
	// than the whole observation.
	carolSetFive := ev{id: "carol-1", user: "carol", sub: "scale", body: scaleBody(5), at: t0.Add(15 * time.Second)}
	contradicted := Attribute(redisObservation(replicas, image), parseEvents(t, scaleByAlice, carolSetFive, imageByBob))
	if contradicted.Change.Actor != "" {
		t.Fatalf("the contradicted observation's change = %+v, want unknown", contradicted.Change)
	}
	if got := ChangeOf(contradicted, isImage); got.Actor != "" || got.Attribution != AttributionUnknown || got.Evidence != contradicted.Change.Evidence {
		t.Errorf("the image's change beside a contradicted field = %+v, want %+v", got, contradicted.Change)
	}

	// A source's stronger claim is kept, as Attribute keeps it.
	claimed := redisObservation(Field{Path: "spec.replicas", Live: int64(4), Manager: "kubectl", ManagedAt: t0})
	claimed.Change = Change{Actor: "alice", Attribution: AttributionAuditLog, Claimed: AttributionAuditLog, Intent: "given"}
	claimed = Attribute(claimed, nil)
	if got := ChangeOf(claimed, func(*Field) bool { return true }); got.Actor != "alice" || got.Attribution != AttributionAuditLog || got.Intent != "given" {
		t.Errorf("the source's claim = %+v, want alice at audit-log", got)
	}
}
