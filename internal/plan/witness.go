package plan

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/backflow-dev/backflow/internal/observe"
	"github.com/backflow-dev/backflow/internal/receipt"
	"github.com/backflow-dev/backflow/internal/repoconfig"
	"github.com/backflow-dev/backflow/internal/witness"
)

// maxMismatches bounds the mismatches one render-mismatch reason lists.
const maxMismatches = 10

// base is a unit's chart rendered with the values at the snapshot. The
// renderer refuses a chart whose two renderings of the same values differ
// (render.ErrNondeterministic), so one rendering is the base.
type base struct {
	r   *witness.Rendering
	err error
}

// witness renders the unit's chart with the values at the snapshot and with
// the write-back's edited files (trees), and checks that the rendering
// changes exactly the accepted fields of the pending decisions, each to its
// observed live value. It returns each decision's render section when the
// check passes; otherwise the decisions that could not be rendered (an
// error, retried next cycle) and those the rendering contradicts (a
// render-mismatch deny).
func (p *planner) witness(
	w *unitWork,
	pend []*pending,
	trees []map[string]any,
) (map[*pending]*receipt.Render, map[*pending]string, map[*pending]string) {
	u, uv := w.u, w.uv
	all := func(msg string) map[*pending]string {
		out := map[*pending]string{}
		for _, pd := range pend {
			out[pd] = msg
		}
		return out
	}
	b := p.base(w)
	if b.err != nil {
		return nil, all(b.err.Error()), nil
	}
	after, err := p.render(u, trees)
	if err != nil {
		return nil, all(fmt.Sprintf("render: with the edited values: %v", err)), nil
	}
	changes := witness.Diff(b.r, after)
	if mism := check(changes, pend); len(mism) > 0 {
		if len(pend) == 1 {
			return nil, nil, map[*pending]string{pend[0]: mismatchReason(mism)}
		}
		return nil, nil, p.blame(u, uv, b, pend, mism)
	}
	sections := map[*pending]*receipt.Render{}
	compared := slices.Sorted(maps.Keys(b.r.Objects))
	for k := range after.Objects {
		if _, ok := b.r.Objects[k]; !ok {
			compared = append(compared, k)
		}
	}
	slices.Sort(compared)
	for _, pd := range pend {
		s := &receipt.Render{
			Chart: after.Chart, Version: after.Version, Digest: after.Digest, Renderer: after.Renderer,
			ReleaseName: after.Release, Namespace: after.Namespace, KubeVersion: after.KubeVersion,
			ObjectsCompared: compared,
		}
		for _, c := range changes {
			if c.Object != pd.object ||
				!slices.ContainsFunc(pd.fields, func(fs *fieldState) bool { return fs.f.Path == c.Field }) {
				continue
			}
			s.ChangedFields = append(s.ChangedFields, receipt.RenderedField{
				Object: c.Object, Field: c.Field,
				Before: renderedValue(c.Before, c.HasBefore), After: renderedValue(c.After, c.HasAfter),
			})
		}
		sections[pd] = s
	}
	return sections, nil, nil
}

// renderedValue is a rendered value for a receipt: null when not rendered.
func renderedValue(v any, has bool) receipt.Value {
	if !has {
		return receipt.ValueOf(nil)
	}
	return receipt.ValueOf(v)
}

// base renders the unit's chart with the values at the snapshot, once per
// Plan call.
func (p *planner) base(w *unitWork) *base {
	if w.base != nil {
		return w.base
	}
	u := w.u
	b := &base{}
	w.base = b
	if p.snap.Renderer == nil {
		b.err = fmt.Errorf(
			"render: unit %s names chart %s, but no renderer is available, so no write-back can be witnessed",
			u.Name,
			u.Chart.Source(),
		)
		return b
	}
	b.r, b.err = p.render(u, w.uv.trees())
	if b.err != nil {
		b.err = fmt.Errorf("render: with the values at the snapshot: %w", b.err)
	}
	return b
}

// render renders u's chart with the snapshot's Renderer, one rendering at
// a time: a Renderer is not required to be safe for concurrent use.
func (p *planner) render(u *repoconfig.Unit, trees []map[string]any) (*witness.Rendering, error) {
	p.rendering.Lock()
	defer p.rendering.Unlock()
	return p.snap.Renderer.Render(u, trees)
}

// trees are the values trees of the unit's files, in order.
func (uv *unitValues) trees() []map[string]any {
	out := make([]map[string]any, len(uv.files))
	for i, vf := range uv.files {
		out[i] = vf.tree
	}
	return out
}

// check compares changes with the accepted fields of pend.
func check(changes []witness.Change, pend []*pending) []witness.Mismatch {
	var accepted []witness.Accepted
	for _, pd := range pend {
		for _, fs := range pd.fields {
			accepted = append(accepted, witness.Accepted{Object: pd.object, Field: fs.f.Path, Live: fs.live})
		}
	}
	return witness.Check(changes, accepted, isSecret)
}

// blame finds, among several decisions of a unit whose joint rendering
// disagrees, those whose own edit alone disagrees; when none does, the
// edits disagree only together and every decision is denied.
func (p *planner) blame(
	u *repoconfig.Unit,
	uv *unitValues,
	b *base,
	pend []*pending,
	joint []witness.Mismatch,
) map[*pending]string {
	denied := map[*pending]string{}
	for _, pd := range pend {
		alone := []*pending{pd}
		out, bad := p.apply(uv, alone)
		if len(bad) > 0 {
			denied[pd] = bad[pd]
			continue
		}
		_, trees, err := valuesAfter(u, uv, out)
		if err != nil {
			denied[pd] = err.Error()
			continue
		}
		r, err := p.render(u, trees)
		if err != nil {
			denied[pd] = fmt.Sprintf("render: with the edited values: %v", err)
			continue
		}
		if m := check(witness.Diff(b.r, r), alone); len(m) > 0 {
			denied[pd] = mismatchReason(m)
		}
	}
	if len(denied) == 0 {
		for _, pd := range pend {
			denied[pd] = mismatchReason(joint) + " (with the unit's other write-backs)"
		}
	}
	return denied
}

func mismatchReason(mism []witness.Mismatch) string {
	msgs := make([]string, 0, min(len(mism), maxMismatches))
	for i, m := range mism {
		if i == maxMismatches {
			msgs = append(msgs, fmt.Sprintf("and %d more", len(mism)-maxMismatches))
			break
		}
		msgs = append(msgs, m.String())
	}
	return "render-mismatch: rendering the chart with the edited values does not reproduce exactly " +
		"the accepted live fields: " + strings.Join(msgs, "; ")
}

// isSecret reports a Secret's object key, however its kind is spelt: its
// rendered values are redacted.
func isSecret(object string) bool {
	k, err := observe.ParseObjectPattern(object)
	return err == nil && k.IsSecret()
}

// deny denies the decisions in denied with their reason, which is the
// decision's own (not a failure of the planner), and returns the rest.
func (p *planner) deny(pend []*pending, denied map[*pending]string) []*pending {
	var keep []*pending
	for _, pd := range pend {
		if why, ok := denied[pd]; ok {
			denyDecision(&p.res.Decisions[pd.index], why)
			continue
		}
		keep = append(keep, pd)
	}
	return keep
}
