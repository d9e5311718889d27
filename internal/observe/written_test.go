package observe

import (
	"strings"
	"testing"
)

func TestAttributeNeedsTheValueTheWriteSet(t *testing.T) {
	jsonPatch := func(ops ...map[string]any) any {
		out := []any{}
		for _, op := range ops {
			out = append(out, op)
		}
		return out
	}
	containers := func(items ...map[string]any) any {
		list := []any{}
		for _, it := range items {
			list = append(list, it)
		}
		return map[string]any{"spec": map[string]any{"template": map[string]any{"spec": map[string]any{"containers": list}}}}
	}
	cases := []struct {
		why   string
		field Field
		event ev
		actor string
	}{
		{why: "the laundering: kofi scaled to 4, a source says 8", field: Field{Path: "spec.replicas", Live: int64(8)},
			event: ev{id: "k", user: "kofi", body: scaleBody(4)}},
		{why: "the value kofi's merge patch set is his", field: Field{Path: "spec.replicas", Live: int64(4)},
			event: ev{id: "k", user: "kofi", body: scaleBody(4)}, actor: "kofi"},
		{why: "an observer's text is typed like the written value", field: Field{Path: "spec.replicas", Live: "4", Textual: true},
			event: ev{id: "k", user: "kofi", body: scaleBody(4)}, actor: "kofi"},
		{why: "a string is never the number written", field: Field{Path: "spec.replicas", Live: "4"},
			event: ev{id: "k", user: "kofi", body: scaleBody(4)}},
		{why: "a JSON patch replace sets its value", field: Field{Path: "spec.replicas", Live: int64(6)},
			event: ev{id: "k", user: "kofi", body: jsonPatch(map[string]any{"op": "replace", "path": "/spec/replicas", "value": 6})}, actor: "kofi"},
		{why: "a JSON patch's last operation decides", field: Field{Path: "spec.replicas", Live: int64(6)},
			event: ev{id: "k", user: "kofi", body: jsonPatch(map[string]any{"op": "replace", "path": "/spec/replicas", "value": 6},
				map[string]any{"op": "replace", "path": "/spec", "value": map[string]any{"replicas": 7}})}},
		{why: "a JSON patch copy does not say the value", field: Field{Path: "spec.replicas", Live: int64(6)},
			event: ev{id: "k", user: "kofi", body: jsonPatch(map[string]any{"op": "copy", "from": "/spec/x", "path": "/spec/replicas"})}},
		{why: "a strategic merge patch names the container by key", field: Field{Path: "spec.template.spec.containers[0].image", Live: "redis:8"},
			event: ev{id: "k", user: "kofi", body: containers(map[string]any{"name": "redis", "image": "redis:8"})}, actor: "kofi"},
		{why: "a strategic merge patch's other image is not the live one", field: Field{Path: "spec.template.spec.containers[0].image", Live: "evil:1"},
			event: ev{id: "k", user: "kofi", body: containers(map[string]any{"name": "redis", "image": "redis:8"})}},
		{why: "an update sets the whole object's value", field: Field{Path: "spec.replicas", Live: int64(5)},
			event: ev{id: "k", user: "kofi", verb: "update", body: map[string]any{"metadata": map[string]any{"name": "redis-replicas"}, "spec": map[string]any{"replicas": 5}}}, actor: "kofi"},
		{why: "an update without the field removed it", field: Field{Path: "spec.replicas", Live: int64(5)},
			event: ev{id: "k", user: "kofi", verb: "update", body: map[string]any{"metadata": map[string]any{"name": "redis-replicas"}, "spec": map[string]any{}}}},
		{why: "a merge patch's null removed the field, as observed", field: Field{Path: "spec.replicas", Removed: true},
			event: ev{id: "k", user: "kofi", body: map[string]any{"spec": map[string]any{"replicas": nil}}}, actor: "kofi"},
		{why: "a patch of part of a mapping holds when the keys it set hold", field: Field{Path: "spec.selector", Live: map[string]any{"a": "1", "b": "2"}},
			event: ev{id: "k", user: "kofi", body: map[string]any{"spec": map[string]any{"selector": map[string]any{"a": "1"}}}}, actor: "kofi"},
	}
	for _, tc := range cases {
		t.Run(tc.why, func(t *testing.T) {
			got := Attribute(redisObservation(tc.field), parseEvents(t, tc.event))
			if got.Fields[0].By.Actor != tc.actor || got.Change.Actor != tc.actor {
				t.Fatalf("field by %q, change by %q; want %q (evidence %q)", got.Fields[0].By.Actor, got.Change.Actor, tc.actor, got.Change.Evidence)
			}
			if tc.actor == "" && !strings.Contains(got.Change.Evidence, "spec.") {
				t.Errorf("the mismatch is not reported: evidence %q", got.Change.Evidence)
			}
		})
	}
}

func TestAttributeMismatchOverridesASourcesClaim(t *testing.T) {
	// why: a source asserting kofi's change cannot keep it when the audit
	// log says kofi set another value.
	o := redisObservation(Field{Path: "spec.replicas", Live: int64(8)})
	o.Change = Change{Actor: "kofi", Attribution: AttributionAsserted, Claimed: AttributionAsserted}
	got := Attribute(o, parseEvents(t, ev{id: "k", user: "kofi", body: scaleBody(4)}))
	if got.Change.Attribution != AttributionUnknown || !strings.Contains(got.Change.Evidence, "value mismatch") {
		t.Errorf("change %+v", got.Change)
	}
}
