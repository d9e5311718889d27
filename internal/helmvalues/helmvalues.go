package helmvalues

import (
	"encoding/json"
	"maps"
)

// Layer merges values trees as Helm layers several -f files before it
// coalesces them with a chart's defaults (the SDK's loader.MergeMaps): later
// trees override earlier ones, mappings merge key by key, and anything else,
// a null too, replaces what was there. The nulls are kept because coalescing
// needs them: a null over a chart's default deletes the default as well,
// which a tree without the key could not say. The inputs are not modified;
// the result shares the subtrees it did not merge with them.
func Layer(trees ...map[string]any) map[string]any {
	out := map[string]any{}
	for _, t := range trees {
		out = layer(out, t)
	}
	return out
}

func layer(a, b map[string]any) map[string]any {
	out := make(map[string]any, len(a)+len(b))
	maps.Copy(out, a)
	for k, v := range b {
		if bm, ok := v.(map[string]any); ok {
			if am, ok := out[k].(map[string]any); ok {
				out[k] = layer(am, bm)
				continue
			}
		}
		out[k] = v
	}
	return out
}

// Merge is the values Helm's coalescing leaves of the layered trees, as far
// as the trees alone can tell: later trees override earlier ones, mappings
// merge key by key, and a null deletes its key, at any depth, whether an
// earlier tree held the key or not (Helm deletes it where the chart has a
// default and keeps a null value where it has none; either way the value
// is not there). The inputs are not modified; the result shares with them
// the subtrees it did not change.
func Merge(trees ...map[string]any) map[string]any {
	return prune(Layer(trees...))
}

// MergeShared is Merge for a result that is only read: a single tree
// without a null is its own merge and is returned as it is, not copied.
func MergeShared(trees []map[string]any) map[string]any {
	if len(trees) == 1 && !HasNull(trees[0]) {
		return trees[0]
	}
	return Merge(trees...)
}

// prune is t without its nulls, at every depth of its mappings; a mapping
// without a null is kept as it is. List items are left alone: a list is a
// value Helm replaces whole, not a table it coalesces.
func prune(t map[string]any) map[string]any {
	if !HasNull(t) {
		return t
	}
	out := make(map[string]any, len(t))
	for k, v := range t {
		switch x := v.(type) {
		case nil:
			continue
		case map[string]any:
			out[k] = prune(x)
		default:
			out[k] = v
		}
	}
	return out
}

// HasNull reports whether a null sits at some key of t, at any depth of
// its mappings.
func HasNull(t map[string]any) bool {
	for _, v := range t {
		switch x := v.(type) {
		case nil:
			return true
		case map[string]any:
			if HasNull(x) {
				return true
			}
		}
	}
	return false
}

// Typed copies a values tree with its numbers as Helm's values reader has
// them: every number a float64, as JSON decodes it (Helm reads values
// through sigs.k8s.io/yaml), whatever reader produced the tree (int, int64,
// uint64, float32 or an undecoded json.Number; a json.Number too large for
// a float64 is kept as written). Two trees that Helm reads alike are then
// equal, and so is their JSON: 4 and 4.0 are one number.
func Typed(v any) any { return Map(v, typed) }

func typed(v any) any {
	switch x := v.(type) {
	case json.Number:
		if f, err := x.Float64(); err == nil {
			return f
		}
	case int:
		return float64(x)
	case int8:
		return float64(x)
	case int16:
		return float64(x)
	case int32:
		return float64(x)
	case int64:
		return float64(x)
	case uint:
		return float64(x)
	case uint8:
		return float64(x)
	case uint16:
		return float64(x)
	case uint32:
		return float64(x)
	case uint64:
		return float64(x)
	case float32:
		return float64(x)
	}
	return v
}

// Plain copies a values tree read with its numbers as JSON numbers (the
// reader Helm's is held to, keeping each number as its text wrote it) with
// every number a plain Go number: an int64 where the text is an integer that
// fits one, else a float64, else (a number too large for either) its text as
// a string; an int, from a reader that gives ints, becomes an int64. It is
// the same numbers as Typed, typed apart on purpose: what the planner hands
// the values editor and the receipt is written back as text, where 3 must
// stay 3 and not become 3.0, and a rendered Kubernetes object is compared
// with the live one, whose integer fields are integers. Typed is for
// comparing values as Helm sees them; Typed(Plain(v)) is Typed(v).
func Plain(v any) any { return Map(v, plain) }

func plain(v any) any {
	switch x := v.(type) {
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return i
		}
		if f, err := x.Float64(); err == nil {
			return f
		}
		return x.String()
	case int:
		return int64(x)
	}
	return v
}

// Map copies a values tree (mappings and lists, to any depth) with f
// applied to every other value in it, nulls included.
func Map(v any, f func(any) any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = Map(e, f)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = Map(e, f)
		}
		return out
	}
	return f(v)
}
