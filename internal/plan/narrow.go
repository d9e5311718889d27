package plan

import (
	"slices"
	"strings"

	"github.com/backflow-dev/backflow/internal/observe"
)

// found is what one pass over an object's fields finds: the fields the
// planner decides, mapped for an actor holding the roles held, and why the
// fields that hold a restored acceptance are no change (restoredLive).
type found struct {
	held     []string
	fields   []*fieldState
	restored []string
}

// changedFields finds the fields of o the planner decides, mapped for an
// actor holding the roles held: without the ignored fields, those that
// equal desired and those that hold a restored acceptance, in path order.
func (p *planner) changedFields(o *observe.Observation, g *group, uv *unitValues, held []string) found {
	// One allocation for the object's fields, not one each.
	states := make([]fieldState, len(o.Fields))
	out := found{held: held, fields: make([]*fieldState, 0, len(o.Fields))}
	for i := range o.Fields {
		f := &o.Fields[i]
		if p.ignoresField(f.Path) || p.cfg.IgnoresManager(f.Manager) {
			continue
		}
		fs := &states[i]
		p.fieldState(fs, f, g, uv, held)
		if fs.unchanged() {
			continue
		}
		if why := p.restoredLive(g.env, g.object, fs, o.Change.At); why != "" {
			out.restored = append(out.restored, why)
			continue
		}
		out.fields = append(out.fields, fs)
	}
	slices.SortStableFunc(out.fields, func(a, b *fieldState) int { return strings.Compare(a.f.Path, b.f.Path) })
	return out
}

// narrow returns o with its change narrowed to the fields that differ from
// desired (observe.ChangeOf), and those fields with its actor's roles:
// a field a person set to what desired now holds (the GitOps controller
// then finds it live and leaves its manager owning it) is nobody's change,
// and must not make the change of another field unknown.
//
// The fields that differ depend on the roles held, which pick the entry
// that maps each field to a value path, and the roles on the change: so
// the fields are found with the whole observation's change, and again
// with the narrowed one when it names other roles. Two passes at most: the
// narrowed change holds only when it is the change of the fields found
// with its own roles; when the second pass finds fields whose change
// names other roles again, no change is consistent with its fields and the
// whole observation's is kept, as it was before narrowing.
func (p *planner) narrow(o *observe.Observation, g *group, uv *unitValues) (*observe.Observation, found) {
	first := p.changedFields(o, g, uv, p.cfg.RolesFor(o.Change.Actor, o.Change.Groups))
	if !slices.ContainsFunc(o.Fields, func(f observe.Field) bool { return f.By != nil }) {
		// No field was attributed on its own (no audit join): the
		// observation's change is all there is.
		return o, first
	}
	fs := first
	ch := changeOf(o, fs.fields)
	if roles := p.cfg.RolesFor(ch.Actor, ch.Groups); !slices.Equal(roles, fs.held) {
		fs = p.changedFields(o, g, uv, roles)
		ch = changeOf(o, fs.fields)
		if !slices.Equal(p.cfg.RolesFor(ch.Actor, ch.Groups), roles) {
			return o, first
		}
	}
	n := *o
	n.Change = ch
	return &n, fs
}

// changeOf is o's change over fields, fields of o.
func changeOf(o *observe.Observation, fields []*fieldState) observe.Change {
	// A set keeps it linear in an observation of 100,000 fields.
	in := make(map[*observe.Field]bool, len(fields))
	for _, fs := range fields {
		in[fs.f] = true
	}
	return observe.ChangeOf(*o, func(f *observe.Field) bool { return in[f] })
}
