package hold

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

var (
	commitKey = []byte("test commit key")
	since     = time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
)

func record() Record {
	return Record{Repo: "acme/gitops", PR: 7, Branch: "backflow/prod/web", Fingerprint: "sha256:ab", Cluster: "prod-1",
		Object: "apps/v1|Deployment|web|web", UID: "u-1", Fields: []string{"spec.replicas"}, Controller: FluxKustomize,
		Applier: "flux-system/apps", Since: since, Until: since.Add(time.Hour)}
}

func sealed(t *testing.T, r Record) map[string]string {
	t.Helper()
	v, err := Seal(commitKey, r)
	if err != nil {
		t.Fatal(err)
	}
	return map[string]string{Annotation: v, KustomizeReconcile: Disabled}
}

func TestReadJudgesTheHold(t *testing.T) {
	r := record()
	ann := sealed(t, r)
	got, st := Read(commitKey, "prod-1", "u-1", ann)
	if st != Sealed || got.PR != 7 || got.Applier != "flux-system/apps" || !got.Since.Equal(since) {
		t.Fatalf("why: backflow's own hold reads back sealed, as it was; got %s %+v", st, got)
	}
	edited := strings.Replace(ann[Annotation], `"pr":7`, `"pr":8`, 1)
	other := record()
	other.UID = "u-2"
	for _, tc := range []struct {
		why          string
		cluster, uid string
		ann          map[string]string
		want         State
	}{
		{"nothing there", "prod-1", "u-1", map[string]string{}, None},
		{"a person's own mark is left alone", "prod-1", "u-1", map[string]string{KustomizeReconcile: Disabled}, Unsealed},
		{"helm-controller's mark by a person too", "prod-1", "u-1", map[string]string{HelmDriftDetection: Disabled}, Unsealed},
		{"an edited record is forged", "prod-1", "u-1", map[string]string{Annotation: edited, KustomizeReconcile: Disabled}, Forged},
		{"a record copied to another object is forged", "prod-1", "u-2", ann, Forged},
		{"a record copied to another cluster is forged", "prod-2", "u-1", ann, Forged},
		{"a record sealed for another object is forged here", "prod-1", "u-1", sealed(t, other), Forged},
		{"not JSON", "prod-1", "u-1", map[string]string{Annotation: "held", KustomizeReconcile: Disabled}, Forged},
		{"unknown keys", "prod-1", "u-1", map[string]string{Annotation: strings.Replace(ann[Annotation], "{", `{"x":1,`, 1)}, Forged},
		{"backflow's record without its mark", "prod-1", "u-1", map[string]string{Annotation: ann[Annotation]}, Unmarked},
	} {
		if _, st := Read(commitKey, tc.cluster, tc.uid, tc.ann); st != tc.want {
			t.Errorf("why: %s: %s, want %s", tc.why, st, tc.want)
		}
	}
	if _, st := Read([]byte("another key"), "prod-1", "u-1", ann); st != Forged {
		t.Errorf("why: a record sealed under another key is forged; got %s", st)
	}
	if _, st := Read(nil, "prod-1", "u-1", ann); st != Forged {
		t.Errorf("why: without a key nothing is authentic; got %s", st)
	}
}

func TestSealRefuses(t *testing.T) {
	for _, tc := range []struct {
		why  string
		edit func(*Record)
		want string
	}{
		{"no uid", func(r *Record) { r.UID = "" }, "misses"},
		{"no fields", func(r *Record) { r.Fields = nil }, "misses"},
		{"no proposal", func(r *Record) { r.Fingerprint = "" }, "misses"},
		{"Argo CD has no per-object hold", func(r *Record) { r.Controller = "argocd" }, `controller "argocd" has no per-object hold`},
	} {
		r := record()
		tc.edit(&r)
		if _, err := Seal(commitKey, r); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("why: %s: %v", tc.why, err)
		}
	}
	if _, err := Seal(nil, record()); err == nil {
		t.Error("why: nothing is sealed without a key")
	}
}

// annotationsOnly checks that a patch touches metadata.annotations (and
// the resourceVersion precondition) and nothing else.
func annotationsOnly(t *testing.T, patch []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(patch, &m); err != nil {
		t.Fatal(err)
	}
	md, _ := m["metadata"].(map[string]any)
	if len(m) != 1 || md == nil {
		t.Fatalf("why: a hold's patch touches metadata only: %s", patch)
	}
	for k := range md {
		if k != "annotations" && k != "resourceVersion" {
			t.Fatalf("why: a hold's patch touches annotations only: %s", patch)
		}
	}
	return md["annotations"].(map[string]any)
}

func TestPatches(t *testing.T) {
	r := record()
	v, err := Seal(commitKey, r)
	if err != nil {
		t.Fatal(err)
	}
	p, err := Place(r, v, "412")
	if err != nil {
		t.Fatal(err)
	}
	ann := annotationsOnly(t, p)
	if ann[KustomizeReconcile] != Disabled || ann[Annotation] != v || len(ann) != 2 || !strings.Contains(string(p), `"resourceVersion":"412"`) {
		t.Errorf("place %s", p)
	}
	if _, err := Place(r, v, ""); err == nil {
		t.Error("why: a hold is placed only on the version it was decided on")
	}
	helm := r
	helm.Controller = FluxHelm
	if p, _ := Place(helm, v, "1"); !strings.Contains(string(p), HelmDriftDetection) {
		t.Errorf("why: helm-controller's mark is its drift detection switch: %s", p)
	}
	rel, err := Release(r, Sealed)
	if err != nil {
		t.Fatal(err)
	}
	if ann := annotationsOnly(t, rel); len(ann) != 2 || ann[Annotation] != nil || ann[KustomizeReconcile] != nil {
		t.Errorf("release %s", rel)
	}
	if rel, _ := Release(r, Unmarked); strings.Contains(string(rel), KustomizeReconcile) {
		t.Errorf("why: a mark someone else removed is not touched again: %s", rel)
	}
	for _, st := range []State{None, Forged, Unsealed} {
		if _, err := Release(r, st); err == nil {
			t.Errorf("why: a %s hold is never released", st)
		}
	}
	if ann := annotationsOnly(t, Reconcile(since)); ann[RequestedAt] != "2026-12-01T10:00:00Z" {
		t.Errorf("reconcile %v", ann)
	}
}

func TestDue(t *testing.T) {
	r := record()
	open := PullState{Found: true, Open: true}
	merged := PullState{Found: true, Merged: true, MergeCommit: "0123456789abcdef"}
	applied := merged
	applied.Applied = "main@sha1:0123456789abcdef"
	later := merged
	later.Applied, later.AppliedIncludesMerge = "main@sha1:fedcba", true
	stale := merged
	stale.Applied = "main@sha1:aaaa"
	expired := stale
	expired.Expired = "the temporary acceptance x expired"
	openExpired := open
	openExpired.Expired = expired.Expired
	for _, tc := range []struct {
		why       string
		st        State
		p         PullState
		now       time.Time
		release   bool
		reconcile bool
		cause     string
		reasonHas string
	}{
		{"open and within its time: kept", Sealed, open, since.Add(time.Minute), false, false, "", "is open"},
		{"merged but not applied: kept", Sealed, stale, since.Add(time.Minute), false, false, "", "not the merge yet"},
		{"the merge applied: released, then reconcile", Sealed, applied, since.Add(time.Minute), true, true, CauseApplied, "is applied by flux-system/apps"},
		{"a later revision applied", Sealed, later, since.Add(time.Minute), true, true, CauseApplied, "is applied"},
		{"closed without merge: released", Sealed, PullState{Found: true}, since.Add(time.Minute), true, true, CauseClosed, "closed without merge"},
		{"the pull request gone", Sealed, PullState{}, since.Add(time.Minute), true, true, CauseGone, "no pull request"},
		{"past the maximum", Sealed, open, since.Add(time.Hour), true, true, CauseMaximum, "maximum hold time"},
		{"merged as a temporary acceptance that has expired, the merge not applied: released, then reconcile", Sealed,
			expired, since.Add(time.Minute), true, true, CauseExpired, "the change it protected has expired: the temporary acceptance x"},
		{"an open pull request has no receipt on the default branch to expire", Sealed, openExpired,
			since.Add(time.Minute), false, false, "", "is open"},
		{"someone else changed a held field", Sealed, PullState{Found: true, Open: true, Contested: "bob"}, since, true, false, CauseContested, "bob changed"},
		{"the unit no longer opts in, its pull request still open: released, then reconcile", Sealed,
			PullState{Found: true, Open: true, Unheld: "its unit has no hold: any more"}, since, true, true, CauseUnheld,
			"no longer holds: its unit has no hold:"},
		{"the unit removed while merged and not applied: released all the same", Sealed,
			PullState{Found: true, Merged: true, MergeCommit: "0123", Unheld: "no unit of the config writes to it"}, since,
			true, true, CauseUnheld, "no unit of the config"},
		{"the repository no longer served, its pull request open: released", Sealed,
			PullState{Found: true, Open: true, Unserved: "not among the installation's repositories"}, since, true, true,
			CauseUnserved, "is no longer served: not among"},
		{"a forged hold naming an unserved repository is still never released", Forged,
			PullState{Unserved: "gone"}, since, false, false, "", "not backflow's"},
		{"the mark removed by a person", Unmarked, open, since, true, false, CauseMarkRemoved, "removed by someone else"},
		{"a forged hold is never released", Forged, PullState{}, since.Add(48 * time.Hour), false, false, "", "not backflow's"},
		{"a person's mark is never released", Unsealed, PullState{}, since.Add(48 * time.Hour), false, false, "", "not backflow's"},
	} {
		d := Due(r, tc.st, tc.p, tc.now)
		if d.Release != tc.release || d.Reconcile != tc.reconcile || d.Cause != tc.cause || !strings.Contains(d.Reason, tc.reasonHas) {
			t.Errorf("why: %s: %+v", tc.why, d)
		}
	}
	if AppliedRevision("main@sha1:abc") != "abc" || AppliedRevision("sha1:abc") != "abc" || AppliedRevision("abc") != "abc" {
		t.Error("applied revisions")
	}
}

// FuzzRead: whatever the annotation holds, it reads as sealed only when it
// carries the very record backflow sealed (a spelling of it JSON allows).
func FuzzRead(f *testing.F) {
	v, _ := Seal(commitKey, record())
	f.Add(v)
	f.Add(strings.Replace(v, `"pr":7`, `"pr":70`, 1))
	f.Add(strings.Replace(v, `{`, `{ `, 1))
	f.Add(`{"v":1}`)
	f.Fuzz(func(t *testing.T, value string) {
		r, st := Read(commitKey, "prod-1", "u-1", map[string]string{Annotation: value, KustomizeReconcile: Disabled})
		if st != Sealed {
			return
		}
		if again, err := Seal(commitKey, r); err != nil || again != v {
			t.Errorf("a record backflow did not seal reads sealed: %q", value)
		}
	})
}
