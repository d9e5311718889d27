package render

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/backflow-dev/backflow/internal/values"
	"github.com/backflow-dev/backflow/internal/witness"
	"github.com/backflow-dev/backflow/internal/yamlnode"
)

// DefaultMaxRenders bounds the renderings one Map call makes.
const DefaultMaxRenders = 2000

// Driver is a value path whose perturbation moves the target field.
type Driver struct {
	// ValuePath is the values path, in Helm's --set syntax.
	ValuePath string
	// Value is the merged value there; Perturbed what Map set it to.
	Value, Perturbed any
	// Before and After are the target field's rendered values.
	Before, After any
	// HasBefore and HasAfter say whether the field is rendered at all.
	HasBefore, HasAfter bool
	// Direct says the field renders the perturbed value itself.
	Direct bool
	// Also are the other rendered fields the perturbation moves, as
	// "<object> <field>" (an object that appears or disappears is named
	// alone), sorted.
	Also []string
}

// MapResult is what Map found, and what it cost.
type MapResult struct {
	// Drivers are ranked: direct drivers first, then those that move fewer
	// other fields, then by value path.
	Drivers []Driver
	// Leaves is the number of scalar leaves of the merged values perturbed;
	// Renders the renderings made (the base included); Failed the leaves
	// whose perturbation could not be rendered.
	Leaves, Renders, Failed int
	// Truncated says the render budget ran out before every leaf was tried.
	Truncated bool
}

// leaf is one scalar of the merged values and its perturbation.
type leaf struct {
	path      []yamlnode.Segment
	value, to any
}

// Map finds the value paths that drive one rendered field: it perturbs each
// scalar leaf of the merged values (the chart's defaults under the files'
// values; leaves inside lists are left alone), renders, and keeps the paths
// that move object's field. Leaves are tried in groups, split while a group
// moves the field or fails to render, so the cost grows with the drivers
// found, not the leaves: this assumes perturbations in one group do not
// cancel each other out. maxRenders bounds the renderings (DefaultMaxRenders
// when zero).
func (c *Chart) Map(
	ctx context.Context,
	opts Options,
	files []map[string]any,
	object, field string,
	maxRenders int,
) (*MapResult, error) {
	if maxRenders <= 0 {
		maxRenders = DefaultMaxRenders
	}
	segs, err := yamlnode.ParsePath(field)
	if err != nil {
		return nil, fmt.Errorf("field %q: %w", field, err)
	}
	base, err := c.Render(ctx, opts, files)
	if err != nil {
		return nil, err
	}
	res := &MapResult{Renders: 1}
	if _, ok := base.Objects[object]; !ok {
		return nil, fmt.Errorf(
			"the chart does not render %s with these values (it renders %d objects)",
			object,
			len(base.Objects),
		)
	}
	before, hasBefore := yamlnode.Lookup(base.Objects[object], segs)
	merged, err := c.mergedValues(files)
	if err != nil {
		return nil, err
	}
	var leaves []leaf
	collectLeaves(merged.AsMap(), nil, &leaves)
	res.Leaves = len(leaves)
	var try func(group []leaf)
	try = func(group []leaf) {
		if len(group) == 0 || ctx.Err() != nil {
			return
		}
		if res.Renders >= maxRenders {
			res.Truncated = true
			return
		}
		override := map[string]any{}
		for _, l := range group {
			setPath(override, l.path, l.to)
		}
		r, err := c.Render(ctx, opts, append(slices.Clip(files), override))
		res.Renders++
		if err == nil {
			after, hasAfter := yamlnode.Lookup(r.Objects[object], segs)
			if hasAfter == hasBefore && values.Equal(after, before) {
				return
			}
			if len(group) == 1 {
				res.Drivers = append(res.Drivers, driver(group[0], base, r, object, field, before, after, hasBefore, hasAfter))
				return
			}
		} else if len(group) == 1 {
			res.Failed++
			return
		}
		try(group[:len(group)/2])
		try(group[len(group)/2:])
	}
	try(leaves)
	if err := ctx.Err(); err != nil {
		return res, err
	}
	slices.SortFunc(res.Drivers, func(a, b Driver) int {
		if a.Direct != b.Direct {
			if a.Direct {
				return -1
			}
			return 1
		}
		return cmp.Or(cmp.Compare(len(a.Also), len(b.Also)), cmp.Compare(a.ValuePath, b.ValuePath))
	})
	return res, nil
}

func driver(l leaf, base, r *witness.Rendering, object, field string, before, after any,
	hasBefore, hasAfter bool) Driver {
	d := Driver{
		ValuePath: yamlnode.FormatPath(l.path), Value: l.value, Perturbed: l.to,
		Before: before, After: after, HasBefore: hasBefore, HasAfter: hasAfter,
		Direct: hasAfter && values.Equal(after, l.to),
	}
	for _, c := range witness.Diff(base, r) {
		if c.Object == object && c.Field == field {
			continue
		}
		if c.Field == "" {
			d.Also = append(d.Also, c.Object)
			continue
		}
		d.Also = append(d.Also, c.Object+" "+c.Field)
	}
	return d
}

// collectLeaves lists the scalar leaves of a values tree with their
// perturbations, sorted by path; nulls and lists are left alone.
func collectLeaves(m map[string]any, at []yamlnode.Segment, out *[]leaf) {
	for _, k := range slices.Sorted(maps.Keys(m)) {
		p := append(slices.Clip(at), yamlnode.Segment{Key: k})
		switch v := m[k].(type) {
		case map[string]any:
			collectLeaves(v, p, out)
		case bool:
			*out = append(*out, leaf{p, v, !v})
		case string:
			*out = append(*out, leaf{p, v, v + "x"})
		case float64:
			*out = append(*out, leaf{p, v, v + 1})
		case int64:
			*out = append(*out, leaf{p, v, float64(v) + 1})
		case int:
			*out = append(*out, leaf{p, v, float64(v) + 1})
		}
	}
}

// setPath sets a value at a path of mapping keys, making mappings on the way.
func setPath(m map[string]any, path []yamlnode.Segment, v any) {
	for _, s := range path[:len(path)-1] {
		next, ok := m[s.Key].(map[string]any)
		if !ok {
			next = map[string]any{}
			m[s.Key] = next
		}
		m = next
	}
	m[path[len(path)-1].Key] = v
}
