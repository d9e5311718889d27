package helmvalues

import (
	"encoding/json"
	"reflect"
	"testing"
)

func TestMerge(t *testing.T) {
	tests := []struct {
		why   string
		trees []map[string]any
		want  map[string]any
	}{
		{"a later tree overrides, mappings merge key by key",
			[]map[string]any{{"a": map[string]any{"x": 1, "y": 2}, "b": 1}, {"a": map[string]any{"x": 3}}},
			map[string]any{"a": map[string]any{"x": 3, "y": 2}, "b": 1}},
		{"a null deletes the key an earlier tree held",
			[]map[string]any{{"a": map[string]any{"x": 1}}, {"a": nil}},
			map[string]any{}},
		{"a null nested under a key no earlier tree held is no value either: the planner kept it as a null",
			[]map[string]any{{}, {"a": map[string]any{"x": nil, "y": 1}}},
			map[string]any{"a": map[string]any{"y": 1}}},
		{"the null of a single tree is no value, at any depth",
			[]map[string]any{{"a": map[string]any{"b": map[string]any{"x": nil}}}},
			map[string]any{"a": map[string]any{"b": map[string]any{}}}},
		{"a list is a value: its null items are kept",
			[]map[string]any{{"a": []any{nil, 1}}},
			map[string]any{"a": []any{nil, 1}}},
		{"a later table replaces an earlier null",
			[]map[string]any{{"a": nil}, {"a": map[string]any{"x": 1}}},
			map[string]any{"a": map[string]any{"x": 1}}},
	}
	for _, tt := range tests {
		if got := Merge(tt.trees...); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s: got %v, want %v", tt.why, got, tt.want)
		}
		if got := MergeShared(tt.trees); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s: shared: got %v, want %v", tt.why, got, tt.want)
		}
	}
}

// A single tree without a null is its own shared merge; Merge copies it.
func TestMergeShared(t *testing.T) {
	tree := map[string]any{"a": map[string]any{"x": 1}}
	if got := MergeShared([]map[string]any{tree}); reflect.ValueOf(got).Pointer() != reflect.ValueOf(tree).Pointer() {
		t.Error("a tree without a null was copied")
	}
	got := Merge(tree)
	got["b"] = 2
	if _, ok := tree["b"]; ok {
		t.Error("Merge returned its input")
	}
}

// The sealed marker's fingerprint hashes Typed's JSON: 4 and 4.0 must give
// the same bytes, whatever type the reader gave them.
func TestTypedJSON(t *testing.T) {
	want := `{"a":[4,4.5],"b":4}`
	for _, v := range []any{
		map[string]any{"a": []any{4, 4.5}, "b": int64(4)},
		map[string]any{"a": []any{json.Number("4.0"), float32(4.5)}, "b": uint64(4)},
		map[string]any{"a": []any{float64(4), json.Number("4.5")}, "b": int32(4)},
	} {
		got, err := json.Marshal(Typed(v))
		if err != nil || string(got) != want {
			t.Errorf("%v: %s (%v), want %s", v, got, err, want)
		}
	}
	if got := Typed(json.Number("1e999")); got != json.Number("1e999") {
		t.Errorf("a number too large for a float64 became %v", got)
	}
}

// Plain gives each number the plain Go type its text says, where Typed
// gives every number a float64.
func TestPlain(t *testing.T) {
	tests := []struct {
		why  string
		in   any
		want any
	}{
		{"an integer stays an integer", json.Number("3"), int64(3)},
		{"a negative integer too", json.Number("-42"), int64(-42)},
		{"a fraction is a float64", json.Number("4.5"), 4.5},
		{"an integer past int64 is a float64", json.Number("9223372036854775808"), float64(1 << 63)},
		{"a number past float64 keeps its text", json.Number("1e999"), "1e999"},
		{"an int from another reader is an int64", 4, int64(4)},
		{"a float64 is left as it is", 4.0, 4.0},
		{"a string that looks like a number is a string", "3", "3"},
		{"nested in mappings and lists", map[string]any{"a": []any{json.Number("1"), map[string]any{"b": 2}}},
			map[string]any{"a": []any{int64(1), map[string]any{"b": int64(2)}}}},
	}
	for _, tt := range tests {
		if got := Plain(tt.in); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s: Plain(%#v) = %#v, want %#v", tt.why, tt.in, got, tt.want)
		}
	}
}
