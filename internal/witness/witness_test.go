package witness

import (
	"slices"
	"testing"
)

func rendering(objs map[string]map[string]any) *Rendering { return &Rendering{Objects: objs} }

func TestDiff(t *testing.T) {
	const sts = "apps/v1|StatefulSet|ns|a"
	cases := []struct {
		name, why     string
		before, after map[string]any
		want          []string
	}{
		{"scalar", "a changed leaf is one change at its path",
			map[string]any{"spec": map[string]any{"replicas": int64(3)}}, map[string]any{"spec": map[string]any{"replicas": int64(4)}},
			[]string{"spec.replicas"}},
		{"number types", "3 and 3.0 are the same rendered number",
			map[string]any{"spec": map[string]any{"replicas": int64(3)}}, map[string]any{"spec": map[string]any{"replicas": 3.0}}, nil},
		{"list item", "list items are compared by index, in the observer's spelling",
			map[string]any{"c": []any{map[string]any{"image": "a"}}}, map[string]any{"c": []any{map[string]any{"image": "b"}}},
			[]string{"c[0].image"}},
		{"new subtree", "a mapping that appears contributes each of its leaves",
			map[string]any{"r": map[string]any{}}, map[string]any{"r": map[string]any{"limits": map[string]any{"cpu": "1", "memory": "1Gi"}}},
			[]string{"r.limits.cpu", "r.limits.memory"}},
		{"removed key", "a key that disappears is a change to absent",
			map[string]any{"a": "x", "b": "y"}, map[string]any{"a": "x"}, []string{"b"}},
		{"longer list", "an item added at the end is a change of that index",
			map[string]any{"l": []any{"a"}}, map[string]any{"l": []any{"a", "b"}}, []string{"l[1]"}},
		{"dotted key", "keys with dots are escaped as the observer spells them",
			map[string]any{"annotations": map[string]any{"checksum/config": "1"}}, map[string]any{"annotations": map[string]any{"checksum/config": "2"}},
			[]string{"annotations.checksum/config"}},
	}
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, c := range Diff(rendering(map[string]map[string]any{sts: tt.before}), rendering(map[string]map[string]any{sts: tt.after})) {
				got = append(got, c.Field)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("%s: got %q, want %q", tt.why, got, tt.want)
			}
		})
	}
}

func TestDiffObjects(t *testing.T) {
	// why: an object that appears or disappears is one change with no field.
	a := rendering(map[string]map[string]any{"k|A|ns|gone": {}, "k|A|ns|kept": {}})
	b := rendering(map[string]map[string]any{"k|A|ns|kept": {}, "k|A|ns|new": {}})
	got := Diff(a, b)
	if len(got) != 2 || got[0].Object != "k|A|ns|gone" || !got[0].HasBefore || got[0].HasAfter || got[1].Object != "k|A|ns|new" || !got[1].HasAfter {
		t.Errorf("got %+v", got)
	}
}

func TestCheck(t *testing.T) {
	const a, b = "apps/v1|StatefulSet|ns|a", "apps/v1|StatefulSet|ns|b"
	scale := Change{Object: a, Field: "spec.replicas", Before: int64(3), After: int64(4), HasBefore: true, HasAfter: true}
	accepted := []Accepted{{Object: a, Field: "spec.replicas", Live: 4}}
	cases := []struct {
		name, why string
		changes   []Change
		want      []string
	}{
		{"exact", "the accepted field, to the live value, and nothing else", []Change{scale}, nil},
		{"not driven", "the value path does not move the field",
			nil, []string{a + " spec.replicas: the edit does not change the rendered field (observed 4): the value path does not drive it"}},
		{"wrong value", "the field moves, but not to the observed value",
			[]Change{{Object: a, Field: "spec.replicas", After: int64(5), HasBefore: true, HasAfter: true}},
			[]string{a + " spec.replicas: the edit renders 5, observed 4"}},
		{"also moves", "another object's field moves too",
			[]Change{scale, {Object: b, Field: "spec.replicas", Before: int64(3), After: int64(4), HasBefore: true, HasAfter: true}},
			[]string{b + " spec.replicas: the edit also changes this field: 3 -> 4, which is not accepted"}},
		{"secret redacted", "a Secret's rendered values never reach a reason",
			[]Change{scale, {Object: "v1|Secret|ns|s", Field: "data.password", Before: "x", After: "y", HasBefore: true, HasAfter: true}},
			[]string{"v1|Secret|ns|s data.password: the edit also changes this field: (redacted) -> (redacted), which is not accepted"}},
		{"new object", "an object the edit makes appear is a mismatch",
			[]Change{scale, {Object: b, HasAfter: true}}, []string{b + ": the edit also renders this object, which the base commit does not"}},
	}
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, m := range Check(tt.changes, accepted, func(o string) bool { return o == "v1|Secret|ns|s" }) {
				got = append(got, m.String())
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("%s:\ngot  %q\nwant %q", tt.why, got, tt.want)
			}
		})
	}
}
