package observe

import (
	"strconv"
	"strings"
	"testing"
	"time"
)

// scaledObj is redis-replicas at rv with replicas set by kubectl through
// scale, or applied by helm-controller when applied is true.
func scaledObj(uid, rv string, replicas int64, applied bool) map[string]any {
	manager, fields := "kubectl", map[string]any{"f:spec": map[string]any{"f:replicas": map[string]any{}}}
	if applied {
		manager = "helm-controller"
	}
	return map[string]any{
		"apiVersion": "apps/v1", "kind": "StatefulSet",
		"metadata": map[string]any{"name": "redis-replicas", "namespace": "redis", "uid": uid, "resourceVersion": rv,
			"managedFields": []any{map[string]any{"manager": manager, "operation": "Update", "time": "2026-11-29T10:00:20Z",
				"fieldsType": "FieldsV1", "fieldsV1": fields}}},
		"spec": map[string]any{"replicas": replicas},
	}
}

var transitionGitOps = []string{"helm-controller"}

func TestTransitionLogRecords(t *testing.T) {
	c := &testClock{t: time.Date(2026, 11, 29, 10, 0, 20, 0, time.UTC)}
	l := &TransitionLog{Now: c.now}
	n, err := l.Record("prod", scaledObj("u-1", "7", 3, true), scaledObj("u-1", "8", 4, false), transitionGitOps, nil, nil)
	if err != nil || n != 1 {
		t.Fatalf("why: alice's scale is one transition; got %d, %v", n, err)
	}
	for _, tc := range []struct {
		why      string
		old, obj map[string]any
	}{
		{"a list is no transition", nil, scaledObj("u-1", "8", 4, false)},
		{"the same version again is no write", scaledObj("u-1", "8", 4, false), scaledObj("u-1", "8", 4, false)},
		{"the controller's write is nobody's change", scaledObj("u-1", "8", 4, false), scaledObj("u-1", "9", 3, true)},
		{"a write that left the value as it was changed nothing", scaledObj("u-1", "8", 4, false), scaledObj("u-1", "9", 4, false)},
	} {
		if n, err := l.Record("prod", tc.old, tc.obj, transitionGitOps, nil, nil); n != 0 || err != nil {
			t.Errorf("why: %s; kept %d, %v", tc.why, n, err)
		}
	}
	ts := l.Of("prod", "u-1")
	if len(ts) != 1 || ts[0].Path != "spec.replicas" || ts[0].Old != int64(3) || ts[0].New != int64(4) || ts[0].Manager != "kubectl" ||
		ts[0].FromVersion != "7" || ts[0].ResourceVersion != "8" || !ts[0].At.Equal(c.t) {
		t.Fatalf("transitions %+v", ts)
	}
	if len(l.Of("other", "u-1")) != 0 {
		t.Error("why: a transition is of its cluster only")
	}
	// A later write of the field replaces the earlier.
	c.t = c.t.Add(time.Second)
	if _, err := l.Record("prod", scaledObj("u-1", "9", 4, false), scaledObj("u-1", "10", 5, false), transitionGitOps, nil, nil); err != nil {
		t.Fatal(err)
	}
	if ts := l.Of("prod", "u-1"); len(ts) != 1 || ts[0].New != int64(5) || ts[0].Old != int64(4) {
		t.Fatalf("why: one transition per field, the latest; got %+v", ts)
	}
	// Expiry by the clock.
	c.t = c.t.Add(DefaultTransitionWindow + time.Millisecond)
	if ts := l.Of("prod", "u-1"); len(ts) != 0 {
		t.Fatalf("why: past the window a transition is let go; got %+v", ts)
	}
	if st := l.Stats(); st.Held != 0 || st.Bytes != 0 || st.Expired != 1 {
		t.Errorf("stats %+v", st)
	}
	// Malformed managedFields are an error naming the entry.
	bad := scaledObj("u-1", "11", 4, false)
	bad["metadata"].(map[string]any)["managedFields"] = "nope"
	if _, err := l.Record("prod", scaledObj("u-1", "10", 3, true), bad, transitionGitOps, nil, nil); err == nil ||
		!strings.Contains(err.Error(), "managedFields") {
		t.Errorf("err = %v", err)
	}
}

func TestTransitionLogBounded(t *testing.T) {
	c := &testClock{t: time.Date(2026, 11, 29, 10, 0, 20, 0, time.UTC)}
	record := func(l *TransitionLog, uid string) {
		t.Helper()
		if _, err := l.Record("prod", scaledObj(uid, "1", 3, true), scaledObj(uid, "2", 4, false), transitionGitOps, nil, nil); err != nil {
			t.Fatal(err)
		}
	}
	l := &TransitionLog{Now: c.now, Max: 3}
	for _, uid := range []string{"a", "b", "c", "d"} {
		record(l, uid)
	}
	if st := l.Stats(); st.Held != 3 || st.Dropped != 1 || len(l.Of("prod", "a")) != 0 || len(l.Of("prod", "d")) != 1 {
		t.Errorf("why: at Max the oldest is dropped; stats %+v", st)
	}
	one := (&Transition{Cluster: "prod", UID: "a", Object: ObjectKey{APIVersion: "apps/v1", Kind: "StatefulSet", Namespace: "redis",
		Name: "redis-replicas"}, Path: "spec.replicas", Old: int64(3), New: int64(4), Manager: "kubectl", FromVersion: "1", ResourceVersion: "2"}).HeldBytes()
	l = &TransitionLog{Now: c.now, MaxBytes: 2*one + one/2}
	for _, uid := range []string{"a", "b", "c"} {
		record(l, uid)
	}
	if st := l.Stats(); st.Held != 2 || st.Bytes > l.MaxBytes || st.Dropped != 1 {
		t.Errorf("why: the bytes are bounded too; stats %+v (one is %d)", st, one)
	}
	l.Forget("prod", func(uid string) bool { return uid == "c" })
	if st := l.Stats(); st.Held != 1 || len(l.Of("prod", "c")) != 1 {
		t.Errorf("why: a deleted object's transitions go with it; stats %+v", st)
	}
}

func TestRevertedFields(t *testing.T) {
	ts := []Transition{{Path: "spec.replicas", Old: int64(3), New: int64(4), Manager: "kubectl", ResourceVersion: "8",
		Records: []AdmissionRecord{{ReviewUID: "r"}}}}
	for _, tc := range []struct {
		why      string
		obj      map[string]any
		reverted bool
	}{
		{"written back by the controller", scaledObj("u", "9", 3, true), true},
		{"applied at the person's value", scaledObj("u", "10", 4, true), false},
		{"a person's value live", scaledObj("u", "9", 5, false), false},
	} {
		live, err := LiveChanges(tc.obj, transitionGitOps, nil)
		if err != nil {
			t.Fatal(err)
		}
		fs, recs := RevertedFields(ts, live, "9")
		if got := len(fs) == 1; got != tc.reverted {
			t.Errorf("why: %s: reverted %v, want %v", tc.why, got, tc.reverted)
			continue
		}
		if tc.reverted && (fs[0].Live != int64(4) || fs[0].Now() != int64(3) || fs[0].Reverted.Manager != "helm-controller" || len(recs) != 1 ||
			!strings.Contains(fs[0].Reverted.String(), "written back to 3 by helm-controller (resourceVersion 9) after the person's change from 3 at resourceVersion 8")) {
			t.Errorf("why: %s: %+v %+v %s", tc.why, fs[0], recs, fs[0].Reverted)
		}
	}
}

// BenchmarkTransitionLog is what the watch adds per write of a watched
// object with 1,000 objects held: recording the transition and reading it
// back for the object's observation.
func BenchmarkTransitionLog(b *testing.B) {
	l := &TransitionLog{}
	uids := make([]string, 1000)
	for i := range uids {
		uids[i] = "u-" + strconv.Itoa(i)
		if _, err := l.Record("prod", scaledObj(uids[i], "1", 3, true), scaledObj(uids[i], "2", 4, false), transitionGitOps, nil, nil); err != nil {
			b.Fatal(err)
		}
	}
	reverted := scaledObj("u-0", "3", 3, true)
	live, err := LiveChanges(reverted, transitionGitOps, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := range b.N {
		uid := uids[i%len(uids)]
		if _, err := l.Record("prod", scaledObj(uid, "2", 3, true), scaledObj(uid, "3", 5, false), transitionGitOps, nil, nil); err != nil {
			b.Fatal(err)
		}
		if fs, _ := RevertedFields(l.Of("prod", uid), live, "4"); len(fs) != 1 {
			b.Fatalf("reverted %v", fs)
		}
	}
}
