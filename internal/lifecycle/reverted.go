package lifecycle

import (
	"fmt"
	"slices"

	"github.com/backflow-dev/backflow/internal/observe"
	"github.com/backflow-dev/backflow/internal/plan"
	"github.com/backflow-dev/backflow/internal/values"
)

// liveNow is an observed field as the object holds it now: where the
// GitOps controller wrote over the person's value before the object was
// read (the watch kept the person's transition, see observe.Revert), the
// value and the manager of that write, not the person's. What the planner
// proposes is the person's value; what proves or reverts a change, or says
// where live stands, is what is live now.
func liveNow(f observe.Field) observe.Field {
	if r := f.Reverted; r != nil {
		f.Live, f.Manager, f.Removed, f.Reverted = r.Live, r.Manager, false, nil
		f.Cause = observe.CauseForwardApply
	}
	return f
}

// revertedNote is the comment, made once, on an open pull request whose
// proposal is a person's change the GitOps controller reverted before the
// cycle read the object: the pull request is what brings it back.
func (in *Input) revertedNote(st *Pull) []Effect {
	for _, c := range st.Marker.Changes {
		r := in.revertOf(st.Marker.Environment, c)
		if r == nil {
			continue
		}
		text := fmt.Sprintf("The GitOps controller's forward apply reverted the live change: %s on %s was written "+
			"back to %s by %s (resourceVersion %s) before backflow read it, and the watch kept the change it proposes "+
			"(%s, resourceVersion %s). This pull request stays open: merging it restores the fix.",
			code(c.Field), code(c.Object.String()), code(values.Format(r.Live)), cell(r.Manager), cell(r.Version),
			code(values.Format(c.To)), cell(r.ChangedVersion))
		if e, ok := commentOnce(st, noteReverted, text); ok {
			return []Effect{e}
		}
		return nil
	}
	return nil
}

// revertOf is the revert the newest trusted observation of the change's
// object records on its field, or nil.
func (in *Input) revertOf(env string, c MarkerChange) *observe.Revert {
	seen := in.Result.ObservedOf(env, c.Object)
	if seen == nil {
		return nil
	}
	newest := newestTrusted(seen, c)
	if newest == nil {
		return nil
	}
	i := slices.IndexFunc(newest.Fields, func(f observe.Field) bool { return f.Path == c.Field })
	if i < 0 {
		return nil
	}
	return newest.Fields[i].Reverted
}

// newestTrusted is the newest of seen's observations from a source trusted
// as far as the change's receipt (trustedToDecide), or nil.
func newestTrusted(seen *plan.Observed, c MarkerChange) *observe.Observation {
	var newest *observe.Observation
	for i := range seen.Observations {
		o := &seen.Observations[i]
		if trustedToDecide(c, o.TrustLevel()) && (newest == nil || o.ObservedAt.After(newest.ObservedAt)) {
			newest = o
		}
	}
	return newest
}
