package observe

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"runtime"
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
		{"a request naming another object than its objects", strings.Replace(scale, `"name": "redis-replicas"`, `"name": "redis-master"`, 1), "1541e976"},
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

// write is the watch listing the object at before (as the first list
// does) and then seeing the write to after.
func write(l *AdmissionLog, cluster string, before, after map[string]any) int {
	l.Confirm(cluster, nil, before)
	return l.Confirm(cluster, before, after)
}

func TestAdmissionLogConfirms(t *testing.T) {
	// scale.json was reviewed at resourceVersion 204, replicas 6 -> 4.
	recreated := liveReplicas("205", 4)
	recreated["metadata"].(map[string]any)["uid"] = "recreated"
	moreFields := liveReplicas("205", 4)
	moreFields["spec"].(map[string]any)["serviceName"] = "redis-headless"
	renamed := liveReplicas("205", 4)
	renamed["metadata"].(map[string]any)["name"] = "redis-master"
	cases := []struct {
		why       string
		list      map[string]any
		seen      map[string]any
		confirmed int
		pending   int
		refused   string
	}{
		{"the write from the reviewed version with the value", liveReplicas("204", 6), liveReplicas("205", 4), 1, 0, ""},
		{"the write seen after a status update of its version counts as no write", liveReplicas("204", 6), func() map[string]any {
			o := liveReplicas("205", 4)
			o["status"] = map[string]any{"readyReplicas": int64(4)}
			return o
		}(), 1, 0, ""},
		{"the same version is not the write", liveReplicas("204", 6), liveReplicas("204", 6), 0, 1, ""},
		{"the watch behind the review: it waits", liveReplicas("9", 6), nil, 0, 1, ""},
		{"the next write without the value: the write failed", liveReplicas("204", 6), liveReplicas("205", 6), 0, 0, RefusedChange},
		{"the next write changed more than the review claims", liveReplicas("204", 6), moreFields, 0, 0, RefusedChange},
		{"another object of the same name", liveReplicas("204", 6), recreated, 0, 1, ""},
		{"the uid renamed to another object", liveReplicas("204", 6), renamed, 0, 0, RefusedObject},
		{"first seen past the reviewed version: a version the watch never saw", liveReplicas("300", 4), nil, 0, 0, RefusedVersion},
	}
	for _, c := range cases {
		clock := &testClock{t: t0}
		l := &AdmissionLog{Now: clock.now}
		var refused []AdmissionRefusal
		l.OnRefuse = func(r AdmissionRefusal) { refused = append(refused, r) }
		if err := l.Add(record(t, "scale")); err != nil {
			t.Fatal(err)
		}
		n := l.Confirm("prod-us-east-1", nil, c.list)
		if c.seen != nil {
			n = l.Confirm("prod-us-east-1", c.list, c.seen)
		}
		st := l.Stats()
		if n != c.confirmed || st.Confirmed != c.confirmed || st.Pending != c.pending {
			t.Errorf("%s: confirmed %d, stats %+v; want %d confirmed, %d pending", c.why, n, st, c.confirmed, c.pending)
		}
		if c.refused == "" && len(refused) > 0 || c.refused != "" && (len(refused) != 1 || refused[0].Reason != c.refused || st.Refused[c.refused] != 1) {
			t.Errorf("%s: refused %+v, want %q", c.why, refused, c.refused)
		}
	}
}

func TestAdmissionLogRefusesAtOnce(t *testing.T) {
	cases := []struct {
		why    string
		rv     string
		name   string
		reason string
	}{
		{"a version the API server never gives", "0", "redis-replicas", RefusedVersion},
		{"no version at all", "", "redis-replicas", RefusedVersion},
		{"a version before the one the watch last saw: a transition already seen", "203", "redis-replicas", RefusedVersion},
		{"the uid of another object the watch sees", "204", "redis-master", RefusedObject},
	}
	for _, c := range cases {
		l := &AdmissionLog{Now: (&testClock{t: t0}).now}
		l.Confirm("prod-us-east-1", nil, liveReplicas("204", 6))
		r := record(t, "scale")
		r.OldResourceVersion, r.Object.Name = c.rv, c.name
		var ref *AdmissionRefusal
		if err := l.Add(r); !errors.As(err, &ref) || ref.Reason != c.reason {
			t.Errorf("%s: %v, want refused for %s", c.why, err, c.reason)
		}
		if st := l.Stats(); st.Pending != 0 || st.PendingBytes != 0 {
			t.Errorf("%s: kept %+v", c.why, st)
		}
	}
}

func TestAdmissionLogExpires(t *testing.T) {
	clock := &testClock{t: t0}
	l := &AdmissionLog{Now: clock.now, TTL: time.Minute}
	_ = l.Add(record(t, "scale"))
	clock.t = t0.Add(61 * time.Second)
	if n := write(l, "prod-us-east-1", liveReplicas("204", 6), liveReplicas("205", 4)); n != 0 {
		t.Errorf("an expired record was confirmed")
	}
	if st := l.Stats(); st.Pending != 0 || st.Expired != 1 || st.Confirmed != 0 || st.Refused[RefusedExpired] != 1 {
		t.Errorf("stats %+v", st)
	}
}

func TestAdmissionLogBoundedByBytes(t *testing.T) {
	// why: a flood must not push a waiting genuine record out, and the
	// bound is what the records hold, however few they are.
	r := record(t, "scale")
	size := r.HeldBytes()
	l := &AdmissionLog{MaxHeldBytes: 2*size + size/2}
	if l.Add(r) != nil || l.Add(r) != nil {
		t.Fatal("want two accepted")
	}
	var ref *AdmissionRefusal
	if err := l.Add(r); !errors.As(err, &ref) || ref.Reason != RefusedBudget {
		t.Fatalf("the third: %v, want refused for the budget", err)
	}
	big := r
	big.Fields = []AdmissionField{{Path: "metadata.annotations.note", Value: strings.Repeat("x", 4<<20)}}
	if big.HeldBytes() < 4<<20 {
		t.Fatalf("a 4 MiB value held %d bytes", big.HeldBytes())
	}
	if err := (&AdmissionLog{}).Add(func() AdmissionRecord { b := big; b.Fields = slices.Repeat(b.Fields, 5); return b }()); !errors.As(err, &ref) {
		t.Errorf("a record over the default budget was kept")
	}
	if n := write(l, "c", liveReplicas("204", 6), liveReplicas("205", 4)); n != 2 {
		t.Fatalf("confirmed %d", n)
	}
	st := l.Stats()
	if st.PendingBytes != 0 || st.ConfirmedBytes != 2*size || st.Refused[RefusedBudget] != 1 {
		t.Errorf("stats %+v", st)
	}
	// A waiting record takes the room of the oldest confirmed ones beyond
	// half the budget, not more.
	r.OldResourceVersion = "205"
	if err := l.Add(r); err != nil {
		t.Errorf("no room made: %v", err)
	}
	if st := l.Stats(); st.Confirmed != 1 || st.Pending != 1 || st.PendingBytes+st.ConfirmedBytes > l.MaxHeldBytes {
		t.Errorf("stats %+v", st)
	}
}

func TestAdmissionLogKeepsConfirmedBounded(t *testing.T) {
	// why: confirmed records go oldest first when the budget is full.
	size := record(t, "scale").HeldBytes()
	l := &AdmissionLog{MaxHeldBytes: 2*size + size/2}
	names := []string{"redis-a", "redis-b", "redis-c"}
	for _, name := range names {
		r := record(t, "scale")
		r.Object.Name, r.UID = name, name+"-uid"
		before, after := stsAt(name, r.UID, "204", 6), stsAt(name, r.UID, "205", 4)
		l.Confirm("c", nil, before)
		if err := l.Add(r); err != nil {
			t.Fatal(err)
		}
		if n := l.Confirm("c", before, after); n != 1 {
			t.Fatalf("%s: confirmed %d", name, n)
		}
	}
	var kept []string
	for _, name := range names {
		if len(l.RecordsOf(ObjectKey{APIVersion: "apps/v1", Kind: "StatefulSet", Namespace: "redis", Name: name})) > 0 {
			kept = append(kept, name)
		}
	}
	if !slices.Equal(kept, names[1:]) || l.Stats().ConfirmedBytes > l.MaxHeldBytes {
		t.Errorf("kept %v (%+v), want the two newest", kept, l.Stats())
	}
}

// confirmedLog holds the named records, each confirmed by the watch of
// prod-us-east-1 seeing replicas 6 -> 4 from resourceVersion 204 to 205.
func confirmedLog(t *testing.T, recs ...AdmissionRecord) []AdmissionRecord {
	t.Helper()
	clock := &testClock{t: t0}
	l := &AdmissionLog{Now: clock.now}
	l.Confirm("prod-us-east-1", nil, liveReplicas("204", 6))
	for _, r := range recs {
		_ = l.Add(r)
	}
	l.Confirm("prod-us-east-1", liveReplicas("204", 6), liveReplicas("205", 4))
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
	before := liveReplicas("204", 4)
	before["spec"].(map[string]any)["template"] = map[string]any{"spec": map[string]any{"containers": []any{map[string]any{"name": "redis"}}}}
	l.Confirm("prod-us-east-1", nil, before)
	if err := l.Add(r); err != nil {
		t.Fatal(err)
	}
	live := liveReplicas("205", 4)
	live["spec"].(map[string]any)["template"] = map[string]any{"spec": map[string]any{"containers": []any{
		map[string]any{"name": "redis"}, map[string]any{"name": "sidecar", "image": "busybox:2"}}}}
	if l.Confirm("prod-us-east-1", before, live) != 1 {
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
		l.Confirm("prod-us-east-1", nil, liveReplicas("204", 6))
		_ = l.Add(alice)
		l.Confirm("prod-us-east-1", liveReplicas("204", 6), liveReplicas("205", 4))
		if err := l.Add(forged); err == nil {
			t.Error("a review of a version already written over was kept")
		}
		// bob's later write keeps replicas 4: still not the forged write.
		l.Confirm("prod-us-east-1", liveReplicas("205", 4), liveReplicas("206", 4))
		if st := l.Stats(); st.Pending != 0 || st.Confirmed != 1 || st.Refused[RefusedVersion] != 1 {
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
		l.Confirm("prod-us-east-1", nil, liveReplicas("204", 6))
		_ = l.Add(forged)
		_ = l.Add(alice)
		l.Confirm("prod-us-east-1", liveReplicas("204", 6), liveReplicas("205", 4))
		if ch := observe(l); ch.Actor != "" || ch.Attribution != AttributionUnknown {
			t.Errorf("change %+v", ch)
		}
	})
	t.Run("beside the real one, claiming another change", func(t *testing.T) {
		// why: a record of the same transition that disagrees on what
		// changed disputes it too: never "the one that matches wins".
		l := &AdmissionLog{Now: (&testClock{t: t0}).now}
		l.Confirm("prod-us-east-1", nil, liveReplicas("204", 6))
		f := forged
		f.Fields = []AdmissionField{{Path: "spec.replicas", Value: int64(9)}}
		_ = l.Add(f)
		_ = l.Add(alice)
		l.Confirm("prod-us-east-1", liveReplicas("204", 6), liveReplicas("205", 4))
		if ch := observe(l); ch.Attribution != AttributionUnknown {
			t.Errorf("change %+v", ch)
		}
		if st := l.Stats(); st.Refused[RefusedChange] != 1 {
			t.Errorf("stats %+v", st)
		}
	})
	t.Run("a value nobody wrote", func(t *testing.T) {
		// why: a forged review of a change that never happens is never
		// confirmed.
		clock := &testClock{t: t0}
		l := &AdmissionLog{Now: clock.now}
		l.Confirm("prod-us-east-1", nil, liveReplicas("204", 6))
		_ = l.Add(forged)
		l.Confirm("prod-us-east-1", liveReplicas("204", 6), liveReplicas("205", 6))
		clock.t = t0.Add(DefaultAdmissionTTL + time.Second)
		if st := l.Stats(); st.Confirmed != 0 || st.Pending != 0 {
			t.Errorf("stats %+v", st)
		}
		if ch := observe(l); ch.Attribution != AttributionUnknown {
			t.Errorf("change %+v", ch)
		}
	})
	t.Run("a later write by someone else", func(t *testing.T) {
		// why: a record attributes its own transition only: once bob's
		// unreviewed write changed the field again, alice's record no
		// longer says who set it, even when the value comes back.
		l := &AdmissionLog{Now: (&testClock{t: t0}).now}
		l.Confirm("prod-us-east-1", nil, liveReplicas("204", 6))
		_ = l.Add(alice)
		l.Confirm("prod-us-east-1", liveReplicas("204", 6), liveReplicas("205", 4))
		l.Confirm("prod-us-east-1", liveReplicas("205", 4), liveReplicas("206", 5))
		l.Confirm("prod-us-east-1", liveReplicas("206", 5), liveReplicas("207", 4))
		if ch := observe(l); ch.Attribution != AttributionUnknown {
			t.Errorf("change %+v", ch)
		}
	})
}

func TestHeldBytesErrsHigh(t *testing.T) {
	// why: the log's budget is in bytes of heap; the estimate must not be
	// below what Go really keeps for a record's values, mappings of many
	// small entries and lists of small mappings above all.
	build := func(kind string) string {
		var b strings.Builder
		opening, closing := "{", "}"
		if kind == "list" {
			opening, closing = "[", "]"
		}
		b.WriteString(opening)
		for n := range 100000 {
			if n > 0 {
				b.WriteByte(',')
			}
			if kind == "list" {
				b.WriteString(`{"a":` + strconv.Itoa(n) + `}`)
			} else {
				b.WriteString(`"k` + strconv.Itoa(n) + `":"v"`)
			}
		}
		b.WriteString(closing)
		return b.String()
	}
	for _, kind := range []string{"map", "list"} {
		raw := []byte(`{"x":` + build(kind) + `}`)
		before := heapInUse()
		v, err := decodeAdmissionObject(raw)
		if err != nil {
			t.Fatal(err)
		}
		r := AdmissionRecord{Fields: []AdmissionField{{Path: "x", Value: v["x"]}}}
		held := int64(heapInUse()) - int64(before)
		if est := r.HeldBytes(); est < held {
			t.Errorf("%s: the heap holds %d bytes, the estimate says %d", kind, held, est)
		}
		runtime.KeepAlive(v)
	}
}

func heapInUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}
