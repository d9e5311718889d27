package render

import (
	"context"
	"fmt"
	"slices"
	"strconv"

	"github.com/backflow-dev/backflow/internal/policy"
	"github.com/backflow-dev/backflow/internal/repoconfig"
	"github.com/backflow-dev/backflow/internal/values"
	"github.com/backflow-dev/backflow/internal/witness"
	"github.com/backflow-dev/backflow/internal/yamlnode"
)

// CheckPolicy checks, against the unit's rendered chart, every mayAccept
// entry of pol that lists the unit's environment and one of the objects the
// chart renders for the unit: perturbing the entry's value path must move
// the entry's field on every such object, and nothing else (a chart whose
// renderings of the same values differ fails to render). It returns one
// problem per entry that fails, naming the entry, and an error when the
// chart cannot be rendered with the unit's values.
func CheckPolicy(
	ctx context.Context,
	c *Chart,
	u *repoconfig.Unit,
	files []map[string]any,
	pol *policy.Policy,
	opts Options,
) ([]string, error) {
	base, err := c.Render(ctx, opts, files)
	if err != nil {
		return nil, err
	}
	merged, err := c.mergedValues(files)
	if err != nil {
		return nil, err
	}
	var problems []string
	for ri, rule := range pol.Rules {
		for ai, a := range rule.MayAccept {
			where := "spec.rules[" + strconv.Itoa(
				ri,
			) + "].mayAccept[" + strconv.Itoa(
				ai,
			) + "] (" + a.ValuePath + " -> " + a.Field + ")"
			if !slices.ContainsFunc(a.Environments, func(p string) bool { return policy.MatchKey(p, u.Environment) }) {
				continue
			}
			var targets []string
			for _, k := range base.Keys() {
				if inUnit(u, k) && slices.ContainsFunc(a.Objects, func(p string) bool { return policy.MatchKey(p, k) }) {
					targets = append(targets, k)
				}
			}
			if len(targets) == 0 {
				continue
			}
			msgs, err := checkEntry(ctx, c, opts, files, merged.AsMap(), base, a, targets)
			if err != nil {
				problems = append(problems, fmt.Sprintf("%s: unit %s (%s): %v", where, u.Name, u.Environment, err))
				continue
			}
			for _, m := range msgs {
				problems = append(problems, fmt.Sprintf("%s: unit %s (%s): %s", where, u.Name, u.Environment, m))
			}
		}
	}
	return problems, nil
}

func inUnit(u *repoconfig.Unit, key string) bool {
	return slices.ContainsFunc(u.Objects, func(p string) bool { return policy.MatchKey(p, key) })
}

// checkEntry perturbs one entry's value path and lists what the rendering
// changed or failed to change.
func checkEntry(ctx context.Context, c *Chart, opts Options, files []map[string]any, merged map[string]any,
	base *witness.Rendering, a policy.Accept, targets []string) ([]string, error) {
	segs, err := yamlnode.ParsePath(a.ValuePath)
	if err != nil {
		return nil, fmt.Errorf("valuePath: %w", err)
	}
	if slices.ContainsFunc(segs, func(s yamlnode.Segment) bool { return s.IsIndex }) {
		return nil, fmt.Errorf("a value path through a list cannot be checked by rendering")
	}
	cur, ok := yamlnode.Lookup(merged, segs)
	if !ok {
		return nil, fmt.Errorf(
			"the value path is not in the chart's values or the unit's values files, so rendering cannot check it",
		)
	}
	var l []leaf
	collectLeaves(map[string]any{"v": cur}, nil, &l)
	if len(l) != 1 {
		return nil, fmt.Errorf("the value at the value path is not a scalar, so rendering cannot check it")
	}
	override := map[string]any{}
	setPath(override, segs, l[0].to)
	r, err := c.Render(ctx, opts, append(slices.Clip(files), override))
	if err != nil {
		return nil, fmt.Errorf("rendering with %s set to %s: %w", a.ValuePath, values.Format(l[0].to), err)
	}
	changes := witness.Diff(base, r)
	moved := map[string]bool{}
	var out []string
	for _, ch := range changes {
		k := ch.Object + " " + ch.Field
		if ch.Field == "" {
			k = ch.Object
		}
		if ch.Field == a.Field && slices.Contains(targets, ch.Object) {
			moved[ch.Object] = true
			continue
		}
		out = append(out, "also moves "+k+", which the entry does not authorize")
	}
	for _, t := range targets {
		if !moved[t] {
			out = append(out, "does not move "+a.Field+" on "+t)
		}
	}
	slices.Sort(out)
	return out, nil
}
