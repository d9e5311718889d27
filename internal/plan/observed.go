package plan

import (
	"github.com/backflow-dev/backflow/internal/helmvalues"
	"github.com/backflow-dev/backflow/internal/observe"
	"github.com/backflow-dev/backflow/internal/repoconfig"
)

// Observed is what the plan knew of one object in one environment: every
// observation of it the plan was made from (believed in time, its cluster
// bound to the environment by the repo config, no other environment
// claimed), in input order, and the newest by its date. The lifecycle
// reads live state from here rather than mapping clusters again.
type Observed struct {
	Environment string
	// Object is the observed object's key.
	Object observe.ObjectKey
	// Observations are the object's observations in the environment.
	Observations []observe.Observation
	// Newest is the latest observed of Observations (the first of those
	// as late).
	Newest *observe.Observation
}

// Desired is one unit's merged desired values at the snapshot, as Helm
// reads its values files in order (MergeValues); a file that cannot be
// read or parsed adds nothing.
type Desired struct {
	Environment, Unit string
	// Values is the merged tree; read only.
	Values map[string]any
	// Objects are the desired objects of a unit of documents (plain
	// manifests or a revision store's document: each document's tree) or of a
	// kustomization (kustomize's build), by object key, whose fields are
	// written as themselves; read only.
	Objects map[string]map[string]any
}

// ObservedOf is what the plan knew of object in env, or nil.
func (r *Result) ObservedOf(env string, object observe.ObjectKey) *Observed {
	for i := range r.Observed {
		if o := &r.Observed[i]; o.Environment == env && o.Object == object {
			return o
		}
	}
	return nil
}

// DesiredOf is the unit's merged desired value at valuePath on the
// snapshot.
func (r *Result) DesiredOf(env, unit, valuePath string) (any, bool) {
	for _, d := range r.Desired {
		if d.Environment == env && d.Unit == unit {
			return repoconfig.Lookup(d.Values, valuePath)
		}
	}
	return nil, false
}

// DesiredFieldOf is the desired value of field on object in a unit of
// manifests or a kustomization, whose fields are written as themselves.
func (r *Result) DesiredFieldOf(env, unit string, object observe.ObjectKey, field string) (any, bool) {
	for _, d := range r.Desired {
		if d.Environment == env && d.Unit == unit {
			v, ok := repoconfig.Lookup(d.Objects[object.String()], field)
			return helmvalues.Plain(v), ok
		}
	}
	return nil, false
}

// observed records every mapped group's observations, in the groups'
// order.
func (p *planner) observed(groups []*group, observations []observe.Observation) {
	at := map[groupKey]int{}
	for _, g := range groups {
		if g.env == "" {
			continue
		}
		at[groupKey{env: g.env, object: g.newest.Object}] = len(p.res.Observed)
		p.res.Observed = append(p.res.Observed, Observed{Environment: g.env, Object: g.key})
	}
	for i := range observations {
		o := &observations[i]
		env, _ := p.environmentOf(o)
		j, ok := at[groupKey{env: env, object: o.Object}]
		if env == "" || !ok {
			continue
		}
		rec := &p.res.Observed[j]
		rec.Observations = append(rec.Observations, *o)
	}
	for i := range p.res.Observed {
		rec := &p.res.Observed[i]
		for j := range rec.Observations {
			if o := &rec.Observations[j]; rec.Newest == nil || o.ObservedAt.After(rec.Newest.ObservedAt) {
				rec.Newest = o
			}
		}
	}
}

// desired records every unit's merged desired values: the planner's
// reading where it read the unit whole, otherwise each file that reads
// through the same readings.
func (p *planner) desired() {
	for i := range p.cfg.Units {
		u := &p.cfg.Units[i]
		if uv, ok := p.values[u]; ok && uv.err == nil {
			p.res.Desired = append(p.res.Desired, Desired{Environment: u.Environment, Unit: u.Name, Values: uv.merged,
				Objects: uv.objects()})
			continue
		}
		var trees []map[string]any
		for _, file := range u.ValuesFiles {
			data, ok := p.snap.Files[file]
			if !ok {
				continue
			}
			if tree, err := repoconfig.ValuesRead(file, data, u.RootOf(file), p.readings); err == nil {
				trees = append(trees, tree)
			}
		}
		p.res.Desired = append(p.res.Desired, Desired{Environment: u.Environment, Unit: u.Name, Values: MergeValues(trees)})
	}
}

// objects are the desired objects of a unit whose fields are written as
// themselves, by object key; nil for a unit of values files.
func (uv *unitValues) objects() map[string]map[string]any {
	switch {
	case uv.kust != nil:
		return uv.kust.built.Objects
	case uv.docs != nil:
		out := make(map[string]map[string]any, len(uv.docs.index))
		for key, i := range uv.docs.index {
			out[key.String()] = uv.files[i].tree
		}
		return out
	}
	return nil
}
