package observe

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

func readReview(t *testing.T, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "admission", name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

var gitopsOpts = AdmissionOptions{GitOpsUsers: []string{"flux"}}

func TestParseRecordedAdmissionReviews(t *testing.T) {
	const debug = "docker.io/bitnami/redis:7.4.2-debian-12-r0-debug"
	cases := []struct {
		name    string
		why     string
		opts    AdmissionOptions
		skipped string
		sub     string
		manager string
		fields  map[string]any
	}{
		{name: "json-patch", why: "a JSON patch is reviewed as an UPDATE of the whole object", fields: map[string]any{"spec.replicas": int64(4)}},
		{name: "merge-patch", why: "a merge patch changes only what it names", fields: map[string]any{"spec.replicas": int64(5)}},
		{name: "strategic-merge-patch", why: "a strategic merge patch's list item is diffed by index in the result", fields: map[string]any{"spec.template.spec.containers[0].image": debug}},
		{name: "apply", why: "server-side apply carries its field manager", manager: "kubectl", fields: map[string]any{"spec.replicas": int64(6)}},
		{name: "scale", why: "the scale subresource's Scale maps to the object's spec.replicas", sub: "scale", fields: map[string]any{"spec.replicas": int64(4)}},
		{name: "update", why: "a full update changes only the fields whose values differ; managedFields and generation are the server's", fields: map[string]any{"spec.template.spec.containers[0].env[0].value": "standalone"}},
		{name: "impersonation", why: "the impersonated user is the one recorded", sub: "scale", fields: map[string]any{"spec.replicas": int64(7)}},
		{name: "dry-run", why: "a dry run changes nothing", skipped: "dry run"},
		{name: "gitops-apply", why: "the GitOps controller's forward apply is desired state", opts: gitopsOpts, skipped: "GitOps controller"},
		{name: "gitops-apply", why: "without the controller's identity configured, its writes are recorded like anyone's", manager: "helm-controller", fields: map[string]any{
			"spec.replicas": int64(3), "spec.template.spec.containers[0].image": "docker.io/bitnami/redis:7.4.2-debian-12-r0",
			"spec.template.spec.containers[0].env[0].value": "slave"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rv, err := ParseAdmissionReview(readReview(t, c.name), c.opts)
			if err != nil {
				t.Fatalf("%s: %v", c.why, err)
			}
			if rv.UID == "" {
				t.Errorf("%s: no uid", c.why)
			}
			if c.skipped != "" {
				if rv.Record != nil || rv.Skipped != c.skipped {
					t.Fatalf("%s: skipped %q, record %v; want skipped %q", c.why, rv.Skipped, rv.Record, c.skipped)
				}
				return
			}
			r := rv.Record
			if r == nil {
				t.Fatalf("%s: no record (skipped %q)", c.why, rv.Skipped)
			}
			if r.User != "alice" && r.User != "flux" {
				t.Errorf("%s: user %q", c.why, r.User)
			}
			if r.User == "alice" && !slices.Equal(r.Groups, []string{"sre", "system:authenticated"}) {
				t.Errorf("%s: groups %v", c.why, r.Groups)
			}
			want := AuditObject{Group: "apps", Version: "v1", Resource: "statefulsets", Subresource: c.sub, Namespace: "redis", Name: "redis-replicas"}
			if r.Object != want || r.Operation != "UPDATE" || r.Manager != c.manager {
				t.Errorf("%s: object %v operation %s manager %q", c.why, r.Object, r.Operation, r.Manager)
			}
			if r.UID != "bc236f21-e28a-4aef-9a03-80ab2d13616e" || r.OldResourceVersion == "" {
				t.Errorf("%s: uid %q resourceVersion %q", c.why, r.UID, r.OldResourceVersion)
			}
			got := map[string]any{}
			for _, f := range r.Fields {
				got[f.Path] = f.Value
			}
			if len(got) != len(c.fields) {
				t.Fatalf("%s: fields %v, want %v", c.why, got, c.fields)
			}
			for p, v := range c.fields {
				if g, ok := got[p]; !ok || g != v {
					t.Errorf("%s: %s = %v (%T), want %v", c.why, p, g, g, v)
				}
			}
		})
	}
}

func TestParseAdmissionReviewRefuses(t *testing.T) {
	scale := string(readReview(t, "scale"))
	cases := []struct {
		why  string
		body string
		uid  string
	}{
		{"not JSON", `{"kind":`, ""},
		{"another kind", `{"apiVersion":"admission.k8s.io/v1","kind":"Event","request":{"uid":"u"}}`, ""},
		{"v1beta1 is not read", strings.Replace(scale, `"admission.k8s.io/v1"`, `"admission.k8s.io/v1beta1"`, 1), ""},
		{"no request", `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}`, ""},
		{"no uid to echo", strings.Replace(scale, `"uid": "1541e976`, `"nouid": "1`, 1), ""},
		{"no user", strings.Replace(scale, `"username": "alice"`, `"username": ""`, 1), "1541e976"},
		{"object and oldObject of different objects", strings.Replace(scale, `"uid": "bc236f21-e28a-4aef-9a03-80ab2d13616e"`, `"uid": "other"`, 1), "1541e976"},
		{"an object that is not a mapping", strings.Replace(scale, `"object": {`, `"object": [], "x": {`, 1), "1541e976"},
	}
	for _, c := range cases {
		rv, err := ParseAdmissionReview([]byte(c.body), AdmissionOptions{})
		if !errors.Is(err, ErrAdmissionReview) {
			t.Errorf("%s: err %v, want ErrAdmissionReview", c.why, err)
		}
		if rv.Record != nil {
			t.Errorf("%s: recorded %+v", c.why, rv.Record)
		}
		if c.uid != "" && !strings.HasPrefix(rv.UID, c.uid) {
			t.Errorf("%s: uid %q, want the request's", c.why, rv.UID)
		}
	}
}

func TestParseAdmissionReviewSkips(t *testing.T) {
	scale := string(readReview(t, "scale"))
	cases := []struct {
		why, body, skipped string
	}{
		{"a create is not a change to a live object", strings.Replace(scale, `"operation": "UPDATE"`, `"operation": "CREATE"`, 1), "operation CREATE"},
		{"status is not desired state", strings.Replace(scale, `"subResource": "scale"`, `"subResource": "status"`, 1), "subresource status"},
		{"a controller's group counts as the controller", scale, "GitOps controller"},
		{"a write that changes nothing", strings.Replace(scale, `"replicas": 4`, `"replicas": 6`, 1), "no field changed"},
	}
	for i, c := range cases {
		opts := AdmissionOptions{}
		if i == 2 {
			opts.GitOpsGroups = []string{"sre"}
		}
		rv, err := ParseAdmissionReview([]byte(c.body), opts)
		if err != nil || rv.Record != nil || rv.Skipped != c.skipped {
			t.Errorf("%s: skipped %q, err %v; want %q", c.why, rv.Skipped, err, c.skipped)
		}
	}
}

func TestAdmissionAllowEchoesUID(t *testing.T) {
	var got struct {
		APIVersion, Kind string
		Response         struct {
			UID     string `json:"uid"`
			Allowed bool   `json:"allowed"`
		}
	}
	if err := json.Unmarshal(AdmissionAllow("u-1"), &got); err != nil {
		t.Fatal(err)
	}
	if got.APIVersion != "admission.k8s.io/v1" || got.Kind != "AdmissionReview" || got.Response.UID != "u-1" || !got.Response.Allowed {
		t.Errorf("answer %+v", got)
	}
	if AdmissionUID(readReview(t, "dry-run")) == "" || AdmissionUID([]byte("{")) != "" {
		t.Error("AdmissionUID")
	}
}

// liveReplicas is the StatefulSet as the watch sees it after a write.
func liveReplicas(rv string, replicas int64) map[string]any {
	return map[string]any{
		"apiVersion": "apps/v1", "kind": "StatefulSet",
		"metadata": map[string]any{"name": "redis-replicas", "namespace": "redis", "uid": "bc236f21-e28a-4aef-9a03-80ab2d13616e", "resourceVersion": rv},
		"spec":     map[string]any{"replicas": replicas},
	}
}

type testClock struct{ t time.Time }

func (c *testClock) now() time.Time { return c.t }

func record(t *testing.T, name string) AdmissionRecord {
	t.Helper()
	rv, err := ParseAdmissionReview(readReview(t, name), gitopsOpts)
	if err != nil || rv.Record == nil {
		t.Fatalf("%s: %v (skipped %q)", name, err, rv.Skipped)
	}
	return *rv.Record
}

func TestAdmissionLogConfirms(t *testing.T) {
	// scale.json was reviewed at resourceVersion 204, replicas 6 -> 4.
	cases := []struct {
		why       string
		seen      map[string]any
		confirmed int
		pending   int
	}{
		{"the write seen at a newer version with the value", liveReplicas("205", 4), 1, 0},
		{"the same version is not the write", liveReplicas("204", 4), 0, 1},
		{"an older version is not the write", liveReplicas("9", 4), 0, 1},
		{"a newer version without the value: the write failed", liveReplicas("205", 6), 0, 0},
		{"another object of the same name", func() map[string]any {
			o := liveReplicas("205", 4)
			o["metadata"].(map[string]any)["uid"] = "recreated"
			return o
		}(), 0, 1},
	}
	for _, c := range cases {
		clock := &testClock{t: t0}
		l := &AdmissionLog{Now: clock.now}
		if !l.Add(record(t, "scale")) {
			t.Fatal("refused")
		}
		n := l.Confirm("prod-us-east-1", c.seen)
		st := l.Stats()
		if n != c.confirmed || st.Confirmed != c.confirmed || st.Pending != c.pending {
			t.Errorf("%s: confirmed %d, stats %+v; want %d confirmed, %d pending", c.why, n, st, c.confirmed, c.pending)
		}
	}
}

func TestAdmissionLogExpires(t *testing.T) {
	clock := &testClock{t: t0}
	l := &AdmissionLog{Now: clock.now, TTL: time.Minute}
	l.Add(record(t, "scale"))
	clock.t = t0.Add(61 * time.Second)
	if n := l.Confirm("prod-us-east-1", liveReplicas("205", 4)); n != 0 {
		t.Errorf("an expired record was confirmed")
	}
	if st := l.Stats(); st.Pending != 0 || st.Expired != 1 || st.Confirmed != 0 {
		t.Errorf("stats %+v", st)
	}
}

func TestAdmissionLogRefusesWhenFull(t *testing.T) {
	// why: a flood must not push a waiting genuine record out.
	l := &AdmissionLog{MaxPending: 2}
	r := record(t, "scale")
	if !l.Add(r) || !l.Add(r) || l.Add(r) {
		t.Fatal("want two accepted, the third refused")
	}
	if n := l.Confirm("c", liveReplicas("205", 4)); n != 2 {
		t.Fatalf("confirmed %d", n)
	}
	if !l.Add(r) {
		t.Error("room again once confirmed")
	}
}

func TestAdmissionLogKeepsConfirmedBounded(t *testing.T) {
	l := &AdmissionLog{MaxConfirmed: 2}
	for _, v := range []string{"205", "206", "207"} {
		r := record(t, "scale")
		r.OldResourceVersion = fmt.Sprint(mustAtoi(t, v) - 1)
		l.Add(r)
		l.Confirm("c", liveReplicas(v, 4))
	}
	k := ObjectKey{APIVersion: "apps/v1", Kind: "StatefulSet", Namespace: "redis", Name: "redis-replicas"}
	if got := l.RecordsOf(k); len(got) != 2 || got[0].ConfirmedVersion != "206" {
		t.Errorf("kept %d, first confirmed at %q", len(got), got[0].ConfirmedVersion)
	}
}

// confirmedLog holds the named records, each confirmed by the watch of
// prod-us-east-1 seeing replicas 4 at resourceVersion 205.
func confirmedLog(t *testing.T, recs ...AdmissionRecord) []AdmissionRecord {
	t.Helper()
	clock := &testClock{t: t0}
	l := &AdmissionLog{Now: clock.now}
	for _, r := range recs {
		l.Add(r)
	}
	l.Confirm("prod-us-east-1", liveReplicas("205", 4))
	return l.RecordsOf(ObjectKey{APIVersion: "apps/v1", Kind: "StatefulSet", Namespace: "redis", Name: "redis-replicas"})
}

func TestAttributeAdmission(t *testing.T) {
	alice := record(t, "scale")
	mallory := record(t, "scale")
	mallory.ReviewUID, mallory.User, mallory.Groups = "forged", "mallory", []string{"sre"}
	bob := record(t, "scale")
	bob.User = "bob"
	replicas := Field{Path: "spec.replicas", Live: int64(4)}
	aliceEvent := ev{id: "a-1", user: "alice", groups: []string{"sre"}, sub: "scale", body: scaleBody(4), at: t0.Add(10 * time.Second)}
	bobEvent := ev{id: "b-1", user: "bob", sub: "scale", body: scaleBody(4), at: t0.Add(10 * time.Second)}
	cases := []struct {
		why      string
		records  []AdmissionRecord
		events   []AuditEvent
		field    Field
		cluster  string
		actor    string
		level    Attribution
		evidence []string
	}{
		{why: "a confirmed record names alice at admission, with the review and its time",
			records: confirmedLog(t, alice), field: replicas, actor: "alice", level: AttributionAdmission,
			evidence: []string{"admission review 1541e976", "by alice (groups sre, system:authenticated)", "received at 2026-11-29T10:00:00Z", "resourceVersion 205"}},
		{why: "a forged record beside the real one: the field is unknown and the disagreement named",
			records: confirmedLog(t, alice, mallory), field: replicas, level: AttributionUnknown,
			evidence: []string{"disagree", "says alice", "admission review forged says mallory"}},
		{why: "two records that agree attribute",
			records: confirmedLog(t, alice, alice), field: replicas, actor: "alice", level: AttributionAdmission},
		{why: "a record and an audit event naming the same user: the audit level holds",
			records: confirmedLog(t, alice), events: parseEvents(t, aliceEvent), field: replicas, actor: "alice", level: AttributionAuditLog,
			evidence: []string{"audit event a-1", "admission review"}},
		{why: "a record and an audit event that disagree: unknown",
			records: confirmedLog(t, alice), events: parseEvents(t, bobEvent), field: replicas, level: AttributionUnknown,
			evidence: []string{"audit event b-1 says bob", "says alice"}},
		{why: "the observed value is not the recorded one: no attribution",
			records: confirmedLog(t, alice), field: Field{Path: "spec.replicas", Live: int64(5)}, level: AttributionUnknown},
		{why: "a cub-scout string joins by value",
			records: confirmedLog(t, alice), field: Field{Path: "spec.replicas", Live: "4", Textual: true}, actor: "alice", level: AttributionAdmission},
		{why: "records confirmed in another cluster do not attribute this one's",
			records: confirmedLog(t, alice), field: replicas, cluster: "prod-eu-west-1", level: AttributionUnknown},
		{why: "a field the record did not change is not attributed",
			records: confirmedLog(t, alice), field: Field{Path: "spec.template.spec.containers[0].image", Live: "redis:8"}, level: AttributionUnknown},
		{why: "an unconfirmed record attributes nothing",
			records: []AdmissionRecord{bob}, field: replicas, level: AttributionUnknown},
	}
	for _, c := range cases {
		o := redisObservation(c.field)
		o.ObservedAt = t0.Add(time.Minute)
		if c.cluster != "" {
			o.Cluster = c.cluster
		}
		got := AttributeAll(o, c.events, c.records)
		by := got.Fields[0].By
		if by.Actor != c.actor || by.Attribution != c.level {
			t.Errorf("%s: %q at %s (%s); want %q at %s", c.why, by.Actor, by.Attribution, by.Evidence, c.actor, c.level)
		}
		for _, w := range c.evidence {
			if !strings.Contains(by.Evidence, w) {
				t.Errorf("%s: evidence %q lacks %q", c.why, by.Evidence, w)
			}
		}
		if got.Change.Actor != c.actor || got.Change.Attribution != c.level {
			t.Errorf("%s: change %q at %s", c.why, got.Change.Actor, got.Change.Attribution)
		}
	}
}

func TestAttributeAdmissionWholeItem(t *testing.T) {
	// why: an item added to a list is recorded whole; a field below it is
	// attributed by the value the item holds there.
	r := AdmissionRecord{ReviewUID: "r", User: "alice", UID: "bc236f21-e28a-4aef-9a03-80ab2d13616e", OldResourceVersion: "204",
		Object: AuditObject{Group: "apps", Version: "v1", Resource: "statefulsets", Namespace: "redis", Name: "redis-replicas"},
		Fields: []AdmissionField{{Path: "spec.template.spec.containers[1]", Value: map[string]any{"name": "sidecar", "image": "busybox:2"}}}}
	l := &AdmissionLog{Now: (&testClock{t: t0}).now}
	l.Add(r)
	live := liveReplicas("205", 4)
	live["spec"].(map[string]any)["template"] = map[string]any{"spec": map[string]any{"containers": []any{
		map[string]any{"name": "redis"}, map[string]any{"name": "sidecar", "image": "busybox:2"}}}}
	if l.Confirm("prod-us-east-1", live) != 1 {
		t.Fatal("not confirmed")
	}
	o := AttributeAll(redisObservation(Field{Path: "spec.template.spec.containers[1].image", Live: "busybox:2"}), nil,
		l.RecordsOf(ObjectKey{APIVersion: "apps/v1", Kind: "StatefulSet", Namespace: "redis", Name: "redis-replicas"}))
	if o.Change.Actor != "alice" || o.Change.Attribution != AttributionAdmission {
		t.Errorf("change %+v", o.Change)
	}
}

// TestAdmissionForger is the threat model of the security docs: someone in
// the cluster who can reach the webhook's port posts reviews of their own.
func TestAdmissionForger(t *testing.T) {
	alice := record(t, "scale")
	forged := record(t, "scale")
	forged.ReviewUID, forged.User = "forged", "mallory"
	key := ObjectKey{APIVersion: "apps/v1", Kind: "StatefulSet", Namespace: "redis", Name: "redis-replicas"}
	observe := func(l *AdmissionLog) Change {
		return AttributeAll(redisObservation(Field{Path: "spec.replicas", Live: int64(4)}), nil, l.RecordsOf(key)).Change
	}
	t.Run("after the fact", func(t *testing.T) {
		// why: the watch saw alice's write before the forged review came;
		// a review must precede the write it claims, so it is never confirmed.
		l := &AdmissionLog{Now: (&testClock{t: t0}).now}
		l.Add(alice)
		l.Confirm("prod-us-east-1", liveReplicas("205", 4))
		l.Add(forged)
		l.Confirm("prod-us-east-1", liveReplicas("205", 4))
		// bob's later write keeps replicas 4: still not the forged write.
		l.Confirm("prod-us-east-1", liveReplicas("206", 4))
		if st := l.Stats(); st.Pending != 0 || st.Confirmed != 1 {
			t.Errorf("stats %+v", st)
		}
		if ch := observe(l); ch.Actor != "alice" || ch.Attribution != AttributionAdmission {
			t.Errorf("change %+v", ch)
		}
	})
	t.Run("beside the real one", func(t *testing.T) {
		// why: a review posted ahead of alice's write is confirmed with hers;
		// two records of one write that disagree leave it unknown.
		l := &AdmissionLog{Now: (&testClock{t: t0}).now}
		l.Add(forged)
		l.Add(alice)
		l.Confirm("prod-us-east-1", liveReplicas("205", 4))
		if ch := observe(l); ch.Actor != "" || ch.Attribution != AttributionUnknown {
			t.Errorf("change %+v", ch)
		}
	})
	t.Run("a value nobody wrote", func(t *testing.T) {
		// why: a forged review of a change that never happens is never
		// confirmed and expires.
		clock := &testClock{t: t0}
		l := &AdmissionLog{Now: clock.now}
		l.Add(forged)
		l.Confirm("prod-us-east-1", liveReplicas("205", 6))
		clock.t = t0.Add(DefaultAdmissionTTL + time.Second)
		if st := l.Stats(); st.Confirmed != 0 || st.Pending != 0 {
			t.Errorf("stats %+v", st)
		}
		if ch := observe(l); ch.Attribution != AttributionUnknown {
			t.Errorf("change %+v", ch)
		}
	})
	t.Run("another object's uid", func(t *testing.T) {
		// why: a review naming the object but carrying another uid is
		// confirmed by nothing the watch sees of it.
		l := &AdmissionLog{Now: (&testClock{t: t0}).now}
		f := forged
		f.UID = "not-the-object"
		l.Add(f)
		l.Confirm("prod-us-east-1", liveReplicas("205", 4))
		if ch := observe(l); ch.Attribution != AttributionUnknown {
			t.Errorf("change %+v", ch)
		}
	})
}

func mustAtoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}
