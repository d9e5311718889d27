package observe

import (
	"fmt"
	"strings"

	"github.com/backflow-dev/backflow/internal/values"
	"github.com/backflow-dev/backflow/internal/yamlnode"
)

// This file holds the join's value rule: a recorded write (an audit event,
// an admission record) explains a field only when the value it set is the
// live value observed. Without it, any source could claim any value and
// have it attributed to whoever last wrote the field.

// Written is what one write set at one field.
type Written struct {
	// Value is the value set, numbers as the body spelt them.
	Value any
	// Removed says the write removed the field (null in a merge patch, a
	// JSON patch remove, an object that lacks it).
	Removed bool
	// Partial says Value is a patch's part of a mapping: only the keys it
	// names were set, the others kept what they held.
	Partial bool
}

// String is the value as JSON-like text, for evidence.
func (w Written) String() string {
	if w.Removed {
		return "(removed)"
	}
	return fmt.Sprint(w.Value)
}

// writtenAt returns what a write set at the field path segs: for a create
// or an update (verb create, update), the object's value there; for a
// patch (verb patch), the value the patch wrote, read as a JSON merge
// patch, a strategic merge patch or an apply body (a JSON object) or as an
// RFC 6902 JSON patch (a JSON array). body is the decoded request body.
// live, when known, tells which list item a strategic merge patch's merge
// key names. ok is false when the body does not say what it set at the
// path: a body that does not reach it, a JSON patch move or copy.
func writtenAt(verb string, body any, segs []yamlnode.Segment, live map[string]any) (Written, bool) {
	if ops, ok := body.([]any); ok && verb == "patch" {
		return jsonPatchWritten(ops, segs)
	}
	if body == nil {
		return Written{}, false
	}
	return walkWritten(body, segs, live, verb == "patch")
}

// walkWritten follows segs down a merge-style body. In a patch, a list
// whose items all carry a merge key names its items by key (matched
// against the live item at the field's index); other lists, and every list
// of a whole object, are set whole.
func walkWritten(body any, segs []yamlnode.Segment, live map[string]any, patch bool) (Written, bool) {
	cur := body
	var liveCur any = live
	for _, s := range segs {
		switch c := cur.(type) {
		case nil:
			// null at a prefix removed everything below it.
			return Written{Removed: true}, true
		case map[string]any:
			if s.IsIndex {
				return Written{}, false
			}
			v, ok := c[s.Key]
			if !ok {
				if patch {
					return Written{}, false // the patch did not reach the field
				}
				return Written{Removed: true}, true
			}
			cur = v
			liveCur = stepLive(liveCur, s)
		case []any:
			if !s.IsIndex {
				return Written{}, false
			}
			key := ""
			if patch {
				key = listMergeKey(c)
			}
			if key == "" {
				if s.Index >= len(c) {
					return Written{Removed: true}, true
				}
				cur = c[s.Index]
				liveCur = stepLive(liveCur, s)
				continue
			}
			item, ok := keyedItem(c, key, s.Index, liveCur)
			if !ok {
				return Written{}, false
			}
			cur = item
			liveCur = stepLive(liveCur, s)
		default:
			// A scalar where the path goes on: nothing is below it.
			return Written{Removed: true}, true
		}
	}
	if m, ok := cur.(map[string]any); ok && patch {
		return Written{Value: m, Partial: true}, true
	}
	if cur == nil && patch {
		return Written{Removed: true}, true // null in a merge patch removes
	}
	return Written{Value: cur}, true
}

// keyedItem is the item of a strategic merge patch's list that names the
// live item at index by key; without the live list, the item at index.
func keyedItem(items []any, key string, index int, liveList any) (any, bool) {
	list, ok := liveList.([]any)
	if !ok {
		if index < len(items) {
			return items[index], true
		}
		return nil, false
	}
	if index >= len(list) {
		return nil, false
	}
	want, _ := list[index].(map[string]any)
	if want == nil {
		return nil, false
	}
	for _, it := range items {
		m, _ := it.(map[string]any)
		if fmt.Sprint(m[key]) == fmt.Sprint(want[key]) {
			return m, true
		}
	}
	return nil, false
}

func stepLive(cur any, s yamlnode.Segment) any {
	switch c := cur.(type) {
	case map[string]any:
		return c[s.Key]
	case []any:
		if s.IsIndex && s.Index < len(c) {
			return c[s.Index]
		}
	}
	return nil
}

// jsonPatchWritten applies an RFC 6902 patch's operations, in order, to
// the one field: the last operation that reaches it decides.
func jsonPatchWritten(ops []any, segs []yamlnode.Segment) (Written, bool) {
	var out Written
	known := false
	for _, op := range ops {
		m, _ := op.(map[string]any)
		name, _ := m["op"].(string)
		ptr, _ := m["path"].(string)
		p, err := pointerSegs(ptr)
		if err != nil {
			return Written{}, false
		}
		switch name {
		case "add", "replace":
			switch {
			case covers(p, segs):
				out, known = walkWritten(m["value"], segs[len(p):], nil, false)
			case covers(segs, p):
				return Written{}, false // a part of the field: its value is not said
			}
		case "remove":
			if covers(p, segs) {
				out, known = Written{Removed: true}, true
			} else if covers(segs, p) {
				return Written{}, false
			}
		case "move":
			from, _ := m["from"].(string)
			if fp, err := pointerSegs(from); err == nil && covers(fp, segs) {
				out, known = Written{Removed: true}, true
			}
			if covers(p, segs) || covers(segs, p) {
				return Written{}, false // the value came from elsewhere in the object
			}
		case "copy":
			if covers(p, segs) || covers(segs, p) {
				return Written{}, false
			}
		}
	}
	return out, known
}

// Holds reports whether the field's live value is what w wrote: the same
// value by values.Equal (an observer's text typed like the written value
// first), both removed (a live null counting as absent), or, for a patch's part of a mapping, every key the
// patch named holding what it set. An ambiguous live text (cub-scout's
// "-") holds any write it could be the rendering of: a removal, null, ""
// or the string "-".
func (f Field) Holds(w Written) bool {
	if f.Ambiguous != "" {
		return w.Removed || rendersAsNothing(w.Value)
	}
	if w.Removed || f.Removed {
		// An observer may spell an absent field as a live null.
		return w.Removed && (f.Removed || f.Live == nil)
	}
	return holds(f.LiveLike(w.Value), w.Value, w.Partial)
}

func holds(live, written any, partial bool) bool {
	pm, ok := written.(map[string]any)
	if !partial || !ok {
		return values.Equal(live, written)
	}
	lm, ok := live.(map[string]any)
	if !ok {
		return false
	}
	for k, v := range pm {
		if strings.HasPrefix(k, "$") {
			continue // a strategic merge patch's directive
		}
		lv, present := lm[k]
		if v == nil {
			if present {
				return false
			}
			continue
		}
		if !present || !holds(lv, v, true) {
			return false
		}
	}
	return true
}
