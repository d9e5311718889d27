package source

import (
	"context"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/backflow-dev/backflow/internal/observe"
)

// revertRig is a watched redis-replicas at 3 applied by helm-controller,
// and a clock the test moves.
type revertRig struct {
	t       *testing.T
	s       *KubeSource
	changed chan observe.ObjectKey
	update  func(obj *unstructured.Unstructured, rv string)
	mu      sync.Mutex
	now     time.Time
}

func newRevertRig(t *testing.T, setup ...func(*revertRig)) *revertRig {
	t.Helper()
	at := "2026-11-29T10:00:10Z"
	s, client, changed := fakeKube(t, statefulSet(t, 3, "redis:7", nil, managedEntry{"helm-controller", "Apply", "", at, applyAll}))
	r := &revertRig{t: t, s: s, changed: changed, now: t0.Add(time.Minute)}
	s.Now = r.clock
	for _, f := range setup {
		f(r)
	}
	ctx := context.Background()
	if res := s.Read(ctx); len(res.Errors) > 0 || len(res.Observations) != 1 {
		t.Fatalf("the first list: %+v", res)
	}
	<-changed // the initial list
	r.update = func(obj *unstructured.Unstructured, rv string) {
		t.Helper()
		obj.SetResourceVersion(rv)
		if _, err := client.Resource(stsGVR).Namespace("redis").Update(ctx, obj, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		<-changed // the watch has seen the write
	}
	return r
}

func (r *revertRig) clock() time.Time { r.mu.Lock(); defer r.mu.Unlock(); return r.now }

func (r *revertRig) advance(d time.Duration) { r.mu.Lock(); r.now = r.now.Add(d); r.mu.Unlock() }

// scaleThenRevert is alice's scale to 4 at resourceVersion 8 and
// helm-controller's force apply back to 3 at 9, with no Read between.
func (r *revertRig) scaleThenRevert() {
	r.update(statefulSet(r.t, 4, "redis:7", nil, managedEntry{"helm-controller", "Apply", "", "2026-11-29T10:00:10Z", applyNoReplicas},
		managedEntry{"kubectl", "Update", "scale", "2026-11-29T10:00:20Z", scaled}), "8")
	r.update(statefulSet(r.t, 3, "redis:7", nil, managedEntry{"helm-controller", "Apply", "", "2026-11-29T10:00:20Z", applyAll}), "9")
}

func (r *revertRig) field() observe.Observation {
	r.t.Helper()
	res := r.s.Read(context.Background())
	if len(res.Errors) > 0 || len(res.Observations) != 1 {
		r.t.Fatalf("read: %+v", res)
	}
	return res.Observations[0]
}

func TestKubeSourceKeepsARevertedChange(t *testing.T) {
	r := newRevertRig(t)
	r.s.Audit = &AuditLog{}
	r.scaleThenRevert()
	// The audit webhook's batch arrives after the revert.
	r.s.Audit.Add(parseEvents(t, scaleEvent{id: "a", user: "alice", groups: []string{"sre"}, replicas: 4, at: t0.Add(20*time.Second + 300*time.Millisecond)})...)
	r.advance(DefaultAuditSettle)
	o := r.field()
	if len(o.Fields) != 1 {
		t.Fatalf("why: the person's change is kept though the controller wrote over it first; got %+v", o.Fields)
	}
	f := o.Fields[0]
	if f.Path != "spec.replicas" || f.Live != int64(4) || f.Manager != "kubectl" || f.Cause != "" || f.Reverted == nil {
		t.Fatalf("why: the field is alice's 4, with what is live now beside it; got %+v", f)
	}
	if rv := f.Reverted; rv.Live != int64(3) || rv.Manager != "helm-controller" || rv.ChangedVersion != "8" || rv.Version != "9" ||
		rv.From != int64(3) || f.Now() != int64(3) {
		t.Errorf("why: the revert names the controller, both versions and the value before; got %+v", rv)
	}
	if o.Change.Actor != "alice" || o.Change.Attribution != observe.AttributionAuditLog {
		t.Errorf("why: an audit event that arrives after the revert still attributes the transition; got %+v", o.Change)
	}
	if o.ResourceVersion != "9" {
		t.Errorf("the observation is of the object as it is: resourceVersion %s", o.ResourceVersion)
	}

	// Past the window the transition is let go; the forward apply's write
	// over the change is reported as before, as the controller's.
	r.advance(observe.DefaultTransitionWindow + time.Second)
	o = r.field()
	if len(o.Fields) != 1 || o.Fields[0].Reverted != nil || o.Fields[0].Cause != observe.CauseForwardApply || o.Fields[0].Live != int64(3) {
		t.Fatalf("why: past the window only the forward apply's value is reported; got %+v", o.Fields)
	}
}

func TestKubeSourceRevertedChangeAppliedIsNoLongerReverted(t *testing.T) {
	r := newRevertRig(t)
	r.scaleThenRevert()
	if o := r.field(); len(o.Fields) != 1 || o.Fields[0].Reverted == nil {
		t.Fatalf("why: reverted before the read; got %+v", o.Fields)
	}
	// The merged 4 is applied by the controller.
	r.update(statefulSet(t, 4, "redis:7", nil, managedEntry{"helm-controller", "Apply", "", "2026-11-29T10:01:40Z", applyAll}), "10")
	o := r.field()
	if len(o.Fields) != 1 || o.Fields[0].Reverted != nil || o.Fields[0].Cause != observe.CauseForwardApply ||
		o.Fields[0].Live != int64(4) || o.Fields[0].Manager != "helm-controller" {
		t.Fatalf("why: at the person's value by the forward apply, the field is applied, not reverted; got %+v", o.Fields)
	}
}

func TestKubeSourceRevertedChangeAdmission(t *testing.T) {
	r := newRevertRig(t, func(r *revertRig) { r.s.Admission = &observe.AdmissionLog{Now: r.clock} })
	if err := r.s.Admission.Add(observe.AdmissionRecord{ReviewUID: "alice-7", Operation: "UPDATE", User: "alice", Groups: []string{"sre"},
		UID: "u-1", OldResourceVersion: "7", Received: r.clock(),
		Object: observe.AuditObject{Group: "apps", Version: "v1", Resource: "statefulsets", Subresource: "scale", Namespace: "redis", Name: "redis-replicas"},
		Fields: []observe.AdmissionField{{Path: "spec.replicas", Value: int64(4)}}}); err != nil {
		t.Fatal(err)
	}
	r.scaleThenRevert()
	if recs := r.s.Admission.RecordsOf(observe.ObjectKey{APIVersion: "apps/v1", Kind: "StatefulSet", Namespace: "redis", Name: "redis-replicas"}); len(recs) != 0 {
		t.Fatalf("the revert takes the field back from alice's record in the log: %+v", recs)
	}
	o := r.field()
	if len(o.Fields) != 1 || o.Fields[0].Reverted == nil || o.Change.Actor != "alice" || o.Change.Attribution != observe.AttributionAdmission {
		t.Fatalf("why: the record the watch confirmed for alice's write is kept with its transition; got %+v %+v", o.Change, o.Fields)
	}
}

func TestKubeSourceRevertNotByTheController(t *testing.T) {
	r := newRevertRig(t)
	r.update(statefulSet(t, 4, "redis:7", nil, managedEntry{"helm-controller", "Apply", "", "2026-11-29T10:00:10Z", applyNoReplicas},
		managedEntry{"kubectl", "Update", "scale", "2026-11-29T10:00:20Z", scaled}), "8")
	// bob scales again to 5: his value is live, and reported as it is.
	r.update(statefulSet(t, 5, "redis:7", nil, managedEntry{"helm-controller", "Apply", "", "2026-11-29T10:00:10Z", applyNoReplicas},
		managedEntry{"kubectl", "Update", "scale", "2026-11-29T10:00:30Z", scaled}), "9")
	o := r.field()
	if len(o.Fields) != 1 || o.Fields[0].Reverted != nil || o.Fields[0].Live != int64(5) {
		t.Fatalf("why: a person's value live is the change, never an older transition; got %+v", o.Fields)
	}
}

// TestKubeSourceSettledChangeIsNotJudgedAgain: a change a cycle reported
// with its author is settled; the controller's revert of it afterwards is
// the forward apply's write, and never attaches to the next person's
// change on the object.
func TestKubeSourceSettledChangeIsNotJudgedAgain(t *testing.T) {
	r := newRevertRig(t, func(r *revertRig) { r.s.Audit = &AuditLog{} })
	// bob scales to 5, his audit event is in, and a cycle reports it.
	r.update(statefulSet(t, 5, "redis:7", nil, managedEntry{"helm-controller", "Apply", "", "2026-11-29T10:00:10Z", applyNoReplicas},
		managedEntry{"kubectl", "Update", "scale", "2026-11-29T10:00:20Z", scaled}), "8")
	r.s.Audit.Add(parseEvents(t, scaleEvent{id: "b", user: "bob", replicas: 5, at: t0.Add(20 * time.Second)})...)
	r.advance(DefaultAuditSettle)
	if o := r.field(); o.Change.Actor != "bob" || len(o.Fields) != 1 || o.Fields[0].Reverted != nil {
		t.Fatalf("bob's change as it is: %+v %+v", o.Change, o.Fields)
	}
	// The controller writes it back: reported as the forward apply's.
	r.update(statefulSet(t, 3, "redis:7", nil, managedEntry{"helm-controller", "Apply", "", "2026-11-29T10:00:30Z", applyAll}), "9")
	if o := r.field(); len(o.Fields) != 1 || o.Fields[0].Reverted != nil || o.Fields[0].Cause != observe.CauseForwardApply {
		t.Fatalf("why: a judged change written back is the forward apply's, not judged again; got %+v", o.Fields)
	}
	// Not settled while it waits for its author: a change reported below
	// admission stays a transition.
	r.update(statefulSet(t, 4, "redis:7", nil, managedEntry{"helm-controller", "Apply", "", "2026-11-29T10:00:30Z", applyNoReplicas},
		managedEntry{"kubectl", "Update", "scale", "2026-11-29T10:00:40Z", scaled}), "10")
	r.advance(DefaultAuditSettle)
	if o := r.field(); o.Change.Attribution.Rank() >= observe.AttributionAdmission.Rank() {
		t.Fatalf("without its own audit event: %+v", o.Change)
	}
	r.update(statefulSet(t, 3, "redis:7", nil, managedEntry{"helm-controller", "Apply", "", "2026-11-29T10:00:50Z", applyAll}), "11")
	r.advance(DefaultAuditSettle)
	if o := r.field(); len(o.Fields) != 1 || o.Fields[0].Reverted == nil || o.Fields[0].Live != int64(4) {
		t.Fatalf("why: a change not yet reported with its author is kept through the revert; got %+v", o.Fields)
	}
}
