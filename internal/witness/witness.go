package witness

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/backflow-dev/backflow/internal/observe"
	"github.com/backflow-dev/backflow/internal/repoconfig"
	"github.com/backflow-dev/backflow/internal/values"
	"github.com/backflow-dev/backflow/internal/yamlnode"
)

// ErrRender marks a chart that could not be loaded or rendered: nothing is
// written, and the next cycle tries again.
var ErrRender = errors.New("render failed")

// Renderer renders a unit's chart with its values files, given as the
// values trees of the unit's files in Helm's override order.
type Renderer interface {
	Render(u *repoconfig.Unit, files []map[string]any) (*Rendering, error)
}

// Rendering is a chart rendered with one set of values.
type Rendering struct {
	// Chart and Version are the chart's own (Chart.yaml); Digest is the
	// sha256 of the chart as fetched or read.
	Chart, Version, Digest string
	// Renderer names the library and its version.
	Renderer string
	// Release, Namespace and KubeVersion are what the chart was rendered
	// as and for.
	Release, Namespace, KubeVersion string
	// Objects are the rendered objects by key apiVersion|Kind|namespace|name.
	Objects map[string]map[string]any
}

// Keys returns the rendered objects' keys, sorted.
func (r *Rendering) Keys() []string { return slices.Sorted(maps.Keys(r.Objects)) }

// Change is one rendered field that differs between two renderings. An
// object that appears or disappears as a whole is one Change with an empty
// Field.
type Change struct {
	Object, Field string
	// Before and After are the rendered values; Has* say whether the field
	// is rendered at all.
	Before, After       any
	HasBefore, HasAfter bool
}

// Diff lists every leaf field that differs between two renderings, sorted
// by object then field. Lists are compared item by item; a mapping or list
// that appears or disappears contributes each of its leaves.
func Diff(before, after *Rendering) []Change {
	var out []Change
	for _, k := range slices.Sorted(maps.Keys(before.Objects)) {
		a, ok := after.Objects[k]
		if !ok {
			out = append(out, Change{Object: k, HasBefore: true})
			continue
		}
		diffValue(k, nil, before.Objects[k], a, true, true, &out)
	}
	for _, k := range slices.Sorted(maps.Keys(after.Objects)) {
		if _, ok := before.Objects[k]; !ok {
			out = append(out, Change{Object: k, HasAfter: true})
		}
	}
	slices.SortStableFunc(out, func(a, b Change) int {
		return cmp.Or(cmp.Compare(a.Object, b.Object), cmp.Compare(a.Field, b.Field))
	})
	return out
}

func diffValue(obj string, at []yamlnode.Segment, a, b any, hasA, hasB bool, out *[]Change) {
	am, aMap := a.(map[string]any)
	bm, bMap := b.(map[string]any)
	al, aList := a.([]any)
	bl, bList := b.([]any)
	switch {
	case hasA && hasB && aMap && bMap && (len(am) > 0 || len(bm) > 0):
		keys := slices.Sorted(maps.Keys(am))
		for k := range bm {
			if _, ok := am[k]; !ok {
				keys = append(keys, k)
			}
		}
		for _, k := range keys {
			av, ina := am[k]
			bv, inb := bm[k]
			diffValue(obj, appendSeg(at, yamlnode.Segment{Key: k}), av, bv, ina, inb, out)
		}
	case hasA && hasB && aList && bList && (len(al) > 0 || len(bl) > 0):
		for i := range max(len(al), len(bl)) {
			var av, bv any
			if i < len(al) {
				av = al[i]
			}
			if i < len(bl) {
				bv = bl[i]
			}
			diffValue(obj, appendSeg(at, yamlnode.Segment{Index: i, IsIndex: true}), av, bv, i < len(al), i < len(bl), out)
		}
	case hasA && !hasB && (aMap && len(am) > 0 || aList && len(al) > 0):
		diffValue(obj, at, a, emptyLike(a), true, true, out)
	case !hasA && hasB && (bMap && len(bm) > 0 || bList && len(bl) > 0):
		diffValue(obj, at, emptyLike(b), b, true, true, out)
	case hasA != hasB || !values.Equal(a, b):
		c := Change{Object: obj, Field: yamlnode.FormatPath(at), HasBefore: hasA, HasAfter: hasB}
		if hasA {
			c.Before = a
		}
		if hasB {
			c.After = b
		}
		*out = append(*out, c)
	}
}

// emptyLike is an empty mapping or list of v's kind, whose absent items
// diffValue reports as appearing or disappearing.
func emptyLike(v any) any {
	if _, ok := v.(map[string]any); ok {
		return map[string]any{}
	}
	return []any{}
}

func appendSeg(at []yamlnode.Segment, s yamlnode.Segment) []yamlnode.Segment {
	return append(slices.Clip(at), s)
}

// Accepted is one field a write-back accepts: the object, the Kubernetes
// field and the observed live value the rendering must now produce.
type Accepted struct {
	Object, Field string
	Live          any
}

// Mismatch is one way a rendering disagrees with the accepted fields.
type Mismatch struct {
	Object, Field string
	// Why says what the rendering changed or failed to change.
	Why string
}

// String writes the mismatch as "<object> <field>: <why>".
func (m Mismatch) String() string {
	if m.Field == "" {
		return m.Object + ": " + m.Why
	}
	return m.Object + " " + m.Field + ": " + m.Why
}

// Check compares a write-back's rendered changes with its accepted fields:
// the set of changed (object, field) pairs must equal the accepted set and
// each new rendered value must equal the observed live value. redact hides
// values of objects whose values must not be shown.
func Check(changes []Change, accepted []Accepted, redact func(object string) bool) []Mismatch {
	show := func(object string, v any, has bool) string {
		switch {
		case !has:
			return "absent"
		case redact != nil && redact(object):
			return "(redacted)"
		}
		return values.Format(v)
	}
	byKey := map[string]Change{}
	for _, c := range changes {
		byKey[c.Object+" "+c.Field] = c
	}
	var out []Mismatch
	want := map[string]bool{}
	for _, a := range accepted {
		k := a.Object + " " + a.Field
		want[k] = true
		c, ok := byKey[k]
		switch {
		case !ok:
			out = append(
				out,
				Mismatch{
					a.Object,
					a.Field,
					fmt.Sprintf(
						"the edit does not change the rendered field (observed %s): the value path does not drive it",
						show(a.Object, a.Live, true),
					),
				},
			)
		case !c.HasAfter || !values.Equal(c.After, a.Live):
			out = append(
				out,
				Mismatch{
					a.Object,
					a.Field,
					fmt.Sprintf("the edit renders %s, observed %s", show(c.Object, c.After, c.HasAfter), show(a.Object, a.Live, true)),
				},
			)
		}
	}
	for _, c := range changes {
		k := c.Object + " " + c.Field
		if want[k] {
			continue
		}
		switch {
		case c.Field == "" && c.HasAfter:
			out = append(out, Mismatch{c.Object, "", "the edit also renders this object, which the base commit does not"})
		case c.Field == "":
			out = append(out, Mismatch{c.Object, "", "the edit also stops rendering this object"})
		default:
			out = append(
				out,
				Mismatch{c.Object, c.Field, fmt.Sprintf("the edit also changes this field: %s -> %s, which is not accepted",
					show(c.Object, c.Before, c.HasBefore), show(c.Object, c.After, c.HasAfter))},
			)
		}
	}
	return out
}

// Key is the object key apiVersion|Kind|namespace|name of a rendered object.
func Key(apiVersion, kind, namespace, name string) string {
	return observe.ObjectKey{APIVersion: apiVersion, Kind: kind, Namespace: namespace, Name: name}.String()
}
