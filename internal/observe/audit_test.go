package observe

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// ev is one audit event as the API server writes it, with the fields a
// case overrides.
type ev struct {
	id, stage, verb, user, uri, agent string
	groups                            []string
	resource, sub, ns, name, group    string
	code                              int
	at                                time.Time
	body                              any
	impersonate                       string
}

var t0 = time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)

func (e ev) json(t *testing.T) string {
	t.Helper()
	if e.stage == "" {
		e.stage = "ResponseComplete"
	}
	if e.verb == "" {
		e.verb = "patch"
	}
	if e.resource == "" {
		e.resource, e.group = "statefulsets", "apps"
	}
	if e.ns == "" {
		e.ns = "redis"
	}
	if e.name == "" {
		e.name = "redis-replicas"
	}
	if e.code == 0 {
		e.code = 200
	}
	if e.agent == "" {
		e.agent = "kubectl/v1.34.4 (linux/amd64) kubernetes/abcdef"
	}
	if e.at.IsZero() {
		e.at = t0
	}
	ref := map[string]any{"resource": e.resource, "namespace": e.ns, "name": e.name, "apiGroup": e.group, "apiVersion": "v1"}
	if e.sub != "" {
		ref["subresource"] = e.sub
	}
	m := map[string]any{
		"kind": "Event", "apiVersion": "audit.k8s.io/v1", "level": "Request", "auditID": e.id, "stage": e.stage,
		"requestURI": e.uri, "verb": e.verb, "user": map[string]any{"username": e.user, "groups": e.groups},
		"sourceIPs": []string{"127.0.0.1"}, "userAgent": e.agent, "objectRef": ref,
		"requestReceivedTimestamp": e.at.Format(time.RFC3339Nano), "stageTimestamp": e.at.Add(5 * time.Millisecond).Format(time.RFC3339Nano),
	}
	if e.stage == "ResponseComplete" {
		m["responseStatus"] = map[string]any{"metadata": map[string]any{}, "code": e.code}
	}
	if e.body != nil {
		m["requestObject"] = e.body
	}
	if e.impersonate != "" {
		m["impersonatedUser"] = map[string]any{"username": e.impersonate, "groups": []string{"system:authenticated"}}
	}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func scaleBody(n int) any {
	return map[string]any{"spec": map[string]any{"replicas": n}}
}

func TestParseAuditEvents(t *testing.T) {
	imageSMP := map[string]any{"spec": map[string]any{"template": map[string]any{"spec": map[string]any{
		"$setElementOrder/containers": []any{map[string]any{"name": "redis"}},
		"containers":                  []any{map[string]any{"name": "redis", "image": "redis:8"}},
	}}}}
	cases := []struct {
		why     string
		lines   []ev
		sets    [][]string // per kept event
		users   []string
		manager []string
		skipped int
	}{
		{why: "a scale through the subresource sets the object's spec.replicas",
			lines: []ev{{id: "a", user: "alice", groups: []string{"sre"}, sub: "scale", body: scaleBody(4),
				uri: "/apis/apps/v1/namespaces/redis/statefulsets/redis-replicas/scale"}},
			sets: [][]string{{"spec.replicas"}}, users: []string{"alice"}, manager: []string{"kubectl"}},
		{why: "the RequestReceived stage, reads and failures are not successful writes",
			lines: []ev{
				{id: "a", stage: "RequestReceived", user: "alice"},
				{id: "b", verb: "get", user: "alice"},
				{id: "c", user: "bob", code: 403, body: scaleBody(9)},
			},
			skipped: 3},
		{why: "a strategic merge patch names list items by merge key and skips directives",
			lines: []ev{{id: "a", user: "bob", body: imageSMP, uri: "/apis/apps/v1/namespaces/redis/statefulsets/redis-replicas?fieldManager=kubectl-set"}},
			sets:  [][]string{{"spec.template.spec.containers[name=redis].image", "spec.template.spec.containers[name=redis].name"}},
			users: []string{"bob"}, manager: []string{"kubectl-set"}},
		{why: "a JSON patch sets each operation's path; move also its source",
			lines: []ev{{id: "a", user: "alice", body: []any{
				map[string]any{"op": "replace", "path": "/spec/replicas", "value": 5},
				map[string]any{"op": "test", "path": "/spec/serviceName", "value": "x"},
				map[string]any{"op": "move", "from": "/metadata/labels/a", "path": "/metadata/labels/b~1c"},
				map[string]any{"op": "add", "path": "/spec/template/spec/containers/0/env/-", "value": map[string]any{"name": "X"}},
			}}},
			sets:  [][]string{{"metadata.labels.a", "metadata.labels.b/c", "spec.replicas", "spec.template.spec.containers[0].env[*]"}},
			users: []string{"alice"}, manager: []string{"kubectl"}},
		{why: "a full update and a create set the whole object",
			lines: []ev{
				{id: "a", verb: "update", user: "ci", body: map[string]any{"metadata": map[string]any{"name": "redis-replicas"}, "spec": scaleBody(3)}},
				{id: "b", verb: "create", user: "ci", name: "-", body: map[string]any{"metadata": map[string]any{"name": "x"}}},
			},
			sets: [][]string{{"(whole object)"}, {"(whole object)"}}, users: []string{"ci", "ci"}, manager: []string{"kubectl", "kubectl"}},
		{why: "an impersonated write is the impersonated user's",
			lines: []ev{{id: "a", user: "admin", impersonate: "carol", sub: "scale", body: scaleBody(2)}},
			sets:  [][]string{{"spec.replicas"}}, users: []string{"carol"}, manager: []string{"kubectl"}},
		{why: "the status subresource sets status only, whatever else the body holds",
			lines: []ev{{id: "a", verb: "update", user: "kcm", sub: "status", body: map[string]any{"spec": scaleBody(1), "status": map[string]any{"replicas": 1}}}},
			sets:  [][]string{{"status"}}, users: []string{"kcm"}, manager: []string{"kubectl"}},
	}
	for _, tc := range cases {
		t.Run(tc.why, func(t *testing.T) {
			var b strings.Builder
			for _, l := range tc.lines {
				if l.name == "-" {
					l.name = ""
				}
				b.WriteString(l.json(t) + "\n")
			}
			res := ParseAuditEvents([]byte(b.String()), "audit.log")
			if len(res.Errors) > 0 {
				t.Fatalf("errors: %v", res.Errors)
			}
			if res.Skipped != tc.skipped {
				t.Errorf("skipped %d, want %d", res.Skipped, tc.skipped)
			}
			var sets [][]string
			var users, managers []string
			for _, e := range res.Events {
				sets, users, managers = append(sets, e.Sets), append(users, e.User), append(managers, e.Manager)
			}
			if d := cmp.Diff(tc.sets, sets); d != "" {
				t.Errorf("sets (-want +got):\n%s", d)
			}
			if d := cmp.Diff(tc.users, users); d != "" {
				t.Errorf("users (-want +got):\n%s", d)
			}
			if d := cmp.Diff(tc.manager, managers); d != "" {
				t.Errorf("managers (-want +got):\n%s", d)
			}
		})
	}
}

func TestParseAuditEventsInputs(t *testing.T) {
	good := ev{id: "a", user: "alice", sub: "scale", body: scaleBody(4)}.json(t)
	untyped := strings.NewReplacer(`"apiVersion":"audit.k8s.io/v1",`, "", `"kind":"Event",`, "").Replace(good)
	if untyped == good {
		t.Fatal("the fixture lost its kind and apiVersion keys")
	}
	cases := []struct {
		why    string
		input  string
		events int
		errs   []string
	}{
		{why: "the webhook backend posts an EventList",
			input: `{"kind":"EventList","apiVersion":"audit.k8s.io/v1","metadata":{},"items":[` + good + `]}`, events: 1},
		{why: "the items of the webhook backend's list carry no kind and apiVersion of their own",
			input: `{"kind":"EventList","apiVersion":"audit.k8s.io/v1","metadata":{},"items":[` + untyped + `]}`, events: 1},
		{why: "a line of the log must say what it is",
			input: untyped, errs: []string{"audit.log:1: audit event: kind"}},
		{why: "a bad line is named by its line number and the others are kept",
			input: good + "\n\n{not json\n" + strings.Replace(good, `"a"`, `"b"`, 1) + "\n", events: 2, errs: []string{"audit.log:3: "}},
		{why: "another API version is refused, not guessed at",
			input: strings.Replace(good, "audit.k8s.io/v1", "audit.k8s.io/v1beta1", 1), errs: []string{"audit.log:1: audit event: kind"}},
		{why: "a write without a user cannot be attributed and is an error",
			input: strings.Replace(good, `"username":"alice"`, `"username":""`, 1), errs: []string{"user.username is empty"}},
		{why: "an EventList of another version is refused as a whole",
			input: `{"kind":"EventList","apiVersion":"v2","items":[]}`, errs: []string{"EventList apiVersion"}},
	}
	for _, tc := range cases {
		t.Run(tc.why, func(t *testing.T) {
			res := ParseAuditEvents([]byte(tc.input), "audit.log")
			if len(res.Events) != tc.events {
				t.Errorf("events %d, want %d", len(res.Events), tc.events)
			}
			if len(res.Errors) != len(tc.errs) {
				t.Fatalf("errors %v, want %d", res.Errors, len(tc.errs))
			}
			for i, e := range res.Errors {
				if !strings.Contains(e.Error(), tc.errs[i]) {
					t.Errorf("error %q does not contain %q", e, tc.errs[i])
				}
			}
		})
	}
}

func parseEvents(t *testing.T, evs ...ev) []AuditEvent {
	t.Helper()
	var b strings.Builder
	for _, e := range evs {
		b.WriteString(e.json(t) + "\n")
	}
	res := ParseAuditEvents([]byte(b.String()), "audit.log")
	if len(res.Errors) > 0 {
		t.Fatal(res.Errors)
	}
	return res.Events
}

func redisObservation(fields ...Field) Observation {
	return Observation{
		Source: SourceKubernetes, Cluster: "prod-us-east-1", ObservedAt: t0.Add(time.Minute),
		Object: ObjectKey{APIVersion: "apps/v1", Kind: "StatefulSet", Namespace: "redis", Name: "redis-replicas"},
		Change: Change{Attribution: AttributionUnknown, Claimed: AttributionUnknown}, Fields: fields,
	}
}

func TestAttribute(t *testing.T) {
	replicas := Field{Path: "spec.replicas", Live: int64(4)}
	scaleByAlice := ev{id: "alice-1", user: "alice", groups: []string{"sre", "system:authenticated"}, sub: "scale", body: scaleBody(4), at: t0.Add(10 * time.Second)}
	image := Field{Path: "spec.template.spec.containers[0].image", Live: "redis:8"}
	imageByBob := ev{id: "bob-1", user: "bob", at: t0.Add(20 * time.Second), body: map[string]any{"spec": map[string]any{"template": map[string]any{"spec": map[string]any{
		"containers": []any{map[string]any{"name": "redis", "image": "redis:8"}}}}}}}
	withIntent := ev{id: "alice-2", user: "alice", groups: []string{"sre"}, at: t0.Add(30 * time.Second), body: map[string]any{
		"metadata": map[string]any{"annotations": map[string]any{IntentAnnotation: "INC-4412: replica lag"}}, "spec": map[string]any{"replicas": 4}}}
	managed := func(f Field, manager string, at time.Time, sub string) Field {
		f.Manager, f.ManagedAt, f.Subresource = manager, at, sub
		return f
	}
	cases := []struct {
		why         string
		obs         Observation
		events      []ev
		actor       string
		attribution Attribution
		intent      string
		fieldActors []string
	}{
		{why: "the seed's incident: alice's scale through the subresource is found in the audit events",
			obs: redisObservation(managed(replicas, "kubectl", t0.Add(10*time.Second), "scale")), events: []ev{scaleByAlice},
			actor: "alice", attribution: AttributionAuditLog, fieldActors: []string{"alice"}},
		{why: "cub-scout names no manager: any write that set the field counts, and the latest wins",
			obs: redisObservation(replicas), events: []ev{scaleByAlice, {id: "carol-1", user: "carol", sub: "scale", body: scaleBody(4), at: t0.Add(40 * time.Second)}},
			actor: "carol", attribution: AttributionAuditLog, fieldActors: []string{"carol"}},
		{why: "a write after the observation did not cause it",
			obs: redisObservation(replicas), events: []ev{scaleByAlice, {id: "carol-1", user: "carol", sub: "scale", body: scaleBody(4), at: t0.Add(2 * time.Minute)}},
			actor: "alice", attribution: AttributionAuditLog, fieldActors: []string{"alice"}},
		{why: "a write under another manager is not the one managedFields says last set the field",
			obs:    redisObservation(managed(replicas, "kubectl", t0.Add(10*time.Second), "scale")),
			events: []ev{scaleByAlice, {id: "x", user: "mallory", agent: "curl/8", sub: "scale", body: scaleBody(4), at: t0.Add(11 * time.Second)}},
			actor:  "alice", attribution: AttributionAuditLog, fieldActors: []string{"alice"}},
		{why: "a write through the main resource is not a write through the scale subresource",
			obs:    redisObservation(managed(replicas, "kubectl", t0.Add(10*time.Second), "scale")),
			events: []ev{{id: "x", user: "mallory", body: scaleBody(4), at: t0.Add(5 * time.Second)}},
			actor:  "kubectl", attribution: AttributionManagedFields, fieldActors: []string{"kubectl"}},
		{why: "without an event, managedFields' manager and time give managed-fields",
			obs:   redisObservation(managed(replicas, "kubectl", t0.Add(10*time.Second), "scale")),
			actor: "kubectl", attribution: AttributionManagedFields, fieldActors: []string{"kubectl"}},
		{why: "a manager without a time, and no event, is unknown",
			obs:         redisObservation(managed(replicas, "kubectl", time.Time{}, "")),
			attribution: AttributionUnknown, fieldActors: []string{""}},
		{why: "a patch of other fields does not set this one",
			obs: redisObservation(replicas), events: []ev{imageByBob},
			attribution: AttributionUnknown, fieldActors: []string{""}},
		{why: "two people's fields leave the object's actor unknown, so the planner denies",
			obs: redisObservation(replicas, image), events: []ev{scaleByAlice, imageByBob},
			attribution: AttributionUnknown, fieldActors: []string{"alice", "bob"}},
		{why: "one person's two fields are that person's change",
			obs: redisObservation(replicas, image), events: []ev{scaleByAlice, {id: "alice-3", user: "alice", groups: []string{"sre"}, at: t0.Add(20 * time.Second), body: imageByBob.body}},
			actor: "alice", attribution: AttributionAuditLog, fieldActors: []string{"alice", "alice"}},
		{why: "the intent annotation set in the same change is the intent",
			obs: redisObservation(replicas), events: []ev{scaleByAlice, withIntent},
			actor: "alice", attribution: AttributionAuditLog, intent: "INC-4412: replica lag", fieldActors: []string{"alice"}},
		{why: "an intent annotation set by an earlier change is not this change's intent",
			obs: redisObservation(replicas), events: []ev{withIntent, {id: "alice-4", user: "alice", sub: "scale", body: scaleBody(4), at: t0.Add(50 * time.Second)}},
			actor: "alice", attribution: AttributionAuditLog, fieldActors: []string{"alice"}},
		{why: "a field the forward apply wrote back is not a person's change",
			obs:    redisObservation(Field{Path: "spec.replicas", Live: int64(3), Cause: CauseForwardApply, Manager: "helm-controller", ManagedAt: t0.Add(30 * time.Second)}, image),
			events: []ev{imageByBob}, actor: "bob", attribution: AttributionAuditLog, fieldActors: []string{"helm-controller", "bob"}},
		{why: "events of another object or resource are not joined",
			obs:         redisObservation(replicas),
			events:      []ev{{id: "o", user: "alice", name: "other", sub: "scale", body: scaleBody(4)}, {id: "d", user: "alice", resource: "deployments", sub: "scale", body: scaleBody(4)}},
			attribution: AttributionUnknown, fieldActors: []string{""}},
	}
	for _, tc := range cases {
		t.Run(tc.why, func(t *testing.T) {
			got := Attribute(tc.obs, parseEvents(t, tc.events...))
			if got.Change.Actor != tc.actor || got.Change.Attribution != tc.attribution || got.Change.Intent != tc.intent {
				t.Errorf("change = %s at %s intent %q, want %s at %s intent %q (evidence %q)",
					got.Change.Actor, got.Change.Attribution, got.Change.Intent, tc.actor, tc.attribution, tc.intent, got.Change.Evidence)
			}
			var actors []string
			for _, f := range got.Fields {
				actors = append(actors, f.By.Actor)
			}
			if d := cmp.Diff(tc.fieldActors, actors); d != "" {
				t.Errorf("field actors (-want +got):\n%s", d)
			}
			if tc.attribution == AttributionAuditLog && !strings.Contains(got.Change.Evidence, "audit event") {
				t.Errorf("evidence %q does not name the audit event", got.Change.Evidence)
			}
			for _, f := range tc.obs.Fields {
				if f.By != nil {
					t.Fatal("Attribute modified its input")
				}
			}
		})
	}
}

func TestAttributeKeepsStrongerSourceAttribution(t *testing.T) {
	// why: a trusted source's audit-log attribution is not lowered by a
	// join that finds only managedFields.
	o := redisObservation(Field{Path: "spec.replicas", Live: int64(4), Manager: "kubectl", ManagedAt: t0})
	o.Change = Change{Actor: "alice", Attribution: AttributionAuditLog, Claimed: AttributionAuditLog, Intent: "given"}
	got := Attribute(o, nil)
	if got.Change.Actor != "alice" || got.Change.Attribution != AttributionAuditLog || got.Change.Intent != "given" {
		t.Errorf("change = %+v", got.Change)
	}
}

func TestAttributeResolvesMergeKeysAgainstLive(t *testing.T) {
	// why: a strategic merge patch naming the container "redis" did not
	// set the image of the container at index 1 named "sidecar".
	live := map[string]any{"spec": map[string]any{"template": map[string]any{"spec": map[string]any{"containers": []any{
		map[string]any{"name": "redis", "image": "redis:8"}, map[string]any{"name": "sidecar", "image": "busybox:2"}}}}}}
	events := parseEvents(t, ev{id: "b", user: "bob", body: map[string]any{"spec": map[string]any{"template": map[string]any{"spec": map[string]any{
		"containers": []any{map[string]any{"name": "redis", "image": "redis:8"}}}}}}})
	o := redisObservation(Field{Path: "spec.template.spec.containers[0].image", Live: "redis:8"}, Field{Path: "spec.template.spec.containers[1].image", Live: "busybox:2"})
	got := AttributeLive(o, events, nil, live)
	if got.Fields[0].By.Actor != "bob" || got.Fields[1].By.Actor != "" {
		t.Errorf("actors %q, %q; want bob, unknown", got.Fields[0].By.Actor, got.Fields[1].By.Actor)
	}
}

func TestAttributeForwardApplyBehindItsEvent(t *testing.T) {
	// why: the forward apply wrote replicas back to 4 before its audit event
	// arrived, so the latest event of the field set 3; that is the
	// controller's field and nobody's change, and bob's image change is
	// still bob's.
	fluxApply := ev{id: "flux-1", user: "flux", verb: "patch", at: t0.Add(5 * time.Second), body: map[string]any{"spec": map[string]any{"replicas": 3}}}
	bobImage := ev{id: "bob-1", user: "bob", at: t0.Add(20 * time.Second), body: map[string]any{"spec": map[string]any{"template": map[string]any{"spec": map[string]any{
		"containers": []any{map[string]any{"name": "redis", "image": "redis:8"}}}}}}}
	o := redisObservation(
		Field{Path: "spec.replicas", Live: int64(4), Cause: CauseForwardApply},
		Field{Path: "spec.template.spec.containers[0].image", Live: "redis:8"})
	got := Attribute(o, parseEvents(t, fluxApply, bobImage))
	if got.Change.Actor != "bob" || got.Change.Attribution != AttributionAuditLog {
		t.Errorf("change %+v, want bob at audit-log", got.Change)
	}
}

// An object key and the audit object of a write to it name the same object
// for the join when their groups, namespaces and names agree, whatever the
// version, resource or kind.
func TestAuditName(t *testing.T) {
	tests := []struct {
		why  string
		key  ObjectKey
		obj  AuditObject
		same bool
	}{
		{"a grouped kind and its resource", ObjectKey{"apps/v1", "Deployment", "ns", "web"},
			AuditObject{Group: "apps", Version: "v1", Resource: "deployments", Namespace: "ns", Name: "web"}, true},
		{"another version of the group", ObjectKey{"apps/v1beta2", "Deployment", "ns", "web"},
			AuditObject{Group: "apps", Version: "v1", Resource: "deployments", Namespace: "ns", Name: "web"}, true},
		{"the core group is empty", ObjectKey{"v1", "ConfigMap", "ns", "cfg"},
			AuditObject{Version: "v1", Resource: "configmaps", Namespace: "ns", Name: "cfg"}, true},
		{"a subresource writes its object", ObjectKey{"apps/v1", "Deployment", "ns", "web"},
			AuditObject{Group: "apps", Version: "v1", Resource: "deployments", Subresource: "scale", Namespace: "ns",
				Name: "web"}, true},
		{"another group", ObjectKey{"apps/v1", "Deployment", "ns", "web"},
			AuditObject{Group: "extensions", Version: "v1beta1", Resource: "deployments", Namespace: "ns", Name: "web"},
			false},
		{"a segment's bar does not run into the next", ObjectKey{"v1", "ConfigMap", "a|b", "c"},
			AuditObject{Version: "v1", Resource: "configmaps", Namespace: "a", Name: "b|c"}, false},
	}
	for _, tt := range tests {
		if got := tt.key.AuditName() == tt.obj.AuditName(); got != tt.same {
			t.Errorf("%s: %v and %v name the same object: %v, want %v", tt.why, tt.key, tt.obj, got, tt.same)
		}
	}
}
