package lifecycle

import (
	"fmt"
	"slices"
	"strings"

	"github.com/backflow-dev/backflow/internal/forge"
	"github.com/backflow-dev/backflow/internal/hold"
	"github.com/backflow-dev/backflow/internal/observe"
	"github.com/backflow-dev/backflow/internal/plan"
)

// This file decides the holds: where a unit opts in (hold: in the repo
// config), the forward controller is kept off an accepted change while its
// pull request waits for the merge to be applied. Placing and releasing a
// hold are effects (Hold, Release) the executor carries out through its
// hold port; what is on the live objects is read by that port before the
// cycle (LiveHold), so a restarted process carries on with the holds it
// finds sealed.

// LiveHold is what a watched object carries of a hold, as the hold port
// read it at the start of the cycle, with the applier's status.
type LiveHold struct {
	Cluster string
	Object  observe.ObjectKey
	UID     string
	// Record and State are hold.Read's judgement of the annotations.
	Record hold.Record
	State  hold.State
	// Applied is the applier's status.lastAppliedRevision, and
	// AppliedIncludesMerge whether that revision holds the merge (the
	// port asks the forge).
	Applied              string
	AppliedIncludesMerge bool
}

// HoldAction is what a Hold or Release effect applies.
type HoldAction struct {
	Cluster string
	Object  observe.ObjectKey
	// Patch is the JSON merge patch of the held object (hold.Place or
	// hold.Release): annotations only.
	Patch []byte
	// Controller and Applier name the Flux object (namespace/name) a
	// Release then asks to reconcile with ReconcilePatch; nil asks nothing.
	Controller     string
	Applier        string
	ReconcilePatch []byte
	// Record is the hold placed or released.
	Record hold.Record
}

// Holds decides every hold of the cycle, one chain each: the holds to
// place, for the open pull requests of units that opt in whose change the
// plan still allows, and what to do with each hold found on the live
// objects (released when due, reported when it is not backflow's).
func (in *Input) Holds(prs []forge.PullRequest, live []LiveHold) [][]Effect {
	var out [][]Effect
	held := map[string]bool{}
	for _, h := range live {
		if h.State == hold.Sealed && h.Record.Repo == in.Repo {
			held[h.Cluster+"\x00"+h.Object.String()] = true
		}
	}
	for _, pr := range prs {
		if !pr.Mine || pr.State != forge.StateOpen {
			continue
		}
		m, ok := in.pullMarker(pr)
		if !ok || m.Closed != "" || m.receiptRefused() {
			continue
		}
		if c := in.placeHolds(&Pull{PR: pr, Marker: m}, held); len(c) > 0 {
			out = append(out, c)
		}
	}
	for _, h := range live {
		if e, ok := in.decideLiveHold(h, prs); ok {
			out = append(out, []Effect{e})
		}
	}
	return out
}

// placeHolds is the Hold effects of one open pull request: one per object
// of its changes that is not held yet, when its unit opts in and the plan
// allows the change on the object's newest observation (a denied change,
// or one out of bounds, is never held).
func (in *Input) placeHolds(st *Pull, held map[string]bool) []Effect {
	m := st.Marker
	u := in.unit(m.Environment, m.Unit)
	if u == nil {
		return nil
	}
	cfg := in.Snapshot.Config.HoldOf(u)
	if cfg == nil {
		return nil
	}
	var out []Effect
	fields := map[string][]string{}
	var objects []string
	for _, c := range m.Changes {
		if fields[c.Object] == nil {
			objects = append(objects, c.Object)
		}
		fields[c.Object] = append(fields[c.Object], c.Field)
	}
	for _, object := range objects {
		if !in.allowed(m, object) {
			continue
		}
		o := in.newestOf(m.Environment, object)
		if o == nil || o.UID == "" || o.ResourceVersion == "" || o.Source != observe.SourceKubernetes {
			continue // only the watch's own reading of the object names its uid and version
		}
		if held[o.Cluster+"\x00"+object] {
			continue
		}
		rec := hold.Record{Repo: in.Repo, PR: st.PR.Number, Branch: m.Branch, Fingerprint: m.Fingerprint, Cluster: o.Cluster,
			Object: object, UID: o.UID, Fields: fields[object], Controller: cfg.Controller, Applier: cfg.Applier,
			Since: in.Now, Until: in.Now.Add(cfg.Max())}
		value, err := hold.Seal(in.CommitKey, rec)
		if err != nil {
			out = append(out, Effect{Kind: Skip, Branch: m.Branch, Pull: st, Reason: "no hold placed: " + err.Error()})
			continue
		}
		patch, err := hold.Place(rec, value, o.ResourceVersion)
		if err != nil {
			out = append(out, Effect{Kind: Skip, Branch: m.Branch, Pull: st, Reason: "no hold placed: " + err.Error()})
			continue
		}
		out = append(out, Effect{Kind: Hold, Branch: m.Branch, Pull: st,
			Hold: &HoldAction{Cluster: o.Cluster, Object: o.Object, Patch: patch, Controller: cfg.Controller, Applier: cfg.Applier, Record: rec},
			Reason: fmt.Sprintf("hold %s on %s (%s) for #%d until %s: %s stays off %s until the merge is applied", objectName(object),
				o.Cluster, strings.Join(fields[object], ", "), st.PR.Number, rec.Until.UTC().Format("2006-01-02T15:04:05Z"),
				cfg.Controller, strings.Join(fields[object], ", "))})
	}
	return out
}

// allowed says the plan allows the marker's unit's change on object now:
// its decision is an allow written back to the marker's branch.
func (in *Input) allowed(m *Marker, object string) bool {
	return slices.ContainsFunc(in.Result.Decisions, func(d plan.Decision) bool {
		return d.Environment == m.Environment && d.Unit == m.Unit && d.Object == object && d.Outcome == plan.Allow &&
			!d.Reported && d.WriteBack == m.Branch
	})
}

// newestOf is the newest observation of object in env.
func (in *Input) newestOf(env, object string) *observe.Observation {
	seen := in.Result.ObservedOf(env, object)
	if seen == nil {
		return nil
	}
	var newest *observe.Observation
	for i := range seen.Observations {
		if o := &seen.Observations[i]; newest == nil || o.ObservedAt.After(newest.ObservedAt) {
			newest = o
		}
	}
	return newest
}

// decideLiveHold is the effect for one hold found live: a Release when a
// sealed hold of this repository is due, a Skip reporting a mark that is
// not backflow's, nothing while a hold is kept.
func (in *Input) decideLiveHold(h LiveHold, prs []forge.PullRequest) (Effect, bool) {
	switch h.State {
	case hold.None:
		return Effect{}, false
	case hold.Forged:
		return Effect{Kind: Skip, Reason: fmt.Sprintf("%s on %s carries a %s annotation that is not authentic: never trusted, never released",
			objectName(h.Object.String()), h.Cluster, hold.Annotation)}, true
	case hold.Unsealed:
		return Effect{Kind: Skip, Reason: fmt.Sprintf("%s on %s carries the forward controller's hands-off mark without backflow's hold: "+
			"a person's, left alone", objectName(h.Object.String()), h.Cluster)}, true
	}
	if h.Record.Repo != in.Repo {
		return Effect{}, false // another repository's hold: its own cycle decides it
	}
	p := hold.PullState{Applied: h.Applied, AppliedIncludesMerge: h.AppliedIncludesMerge}
	var st *Pull
	for _, pr := range prs {
		if pr.Number == h.Record.PR && pr.Mine {
			p.Found, p.Open, p.Merged, p.MergeCommit = true, pr.State == forge.StateOpen, pr.Merged, pr.MergeCommitSHA
			st = &Pull{PR: pr}
		}
	}
	if p.Open {
		p.Contested = in.contested(h)
	}
	d := hold.Due(h.Record, h.State, p, in.Now)
	if !d.Release {
		return Effect{}, false
	}
	patch, err := hold.Release(h.Record, h.State)
	if err != nil {
		return Effect{Kind: Skip, Reason: err.Error()}, true
	}
	act := &HoldAction{Cluster: h.Cluster, Object: h.Object, Patch: patch, Controller: h.Record.Controller, Applier: h.Record.Applier,
		Record: h.Record}
	if d.Reconcile {
		act.ReconcilePatch = hold.Reconcile(in.Now)
	}
	return Effect{Kind: Release, Branch: h.Record.Branch, Pull: st, Hold: act,
		Reason: fmt.Sprintf("release the hold on %s (%s): %s", objectName(h.Object.String()), h.Cluster, d.Reason)}, true
}

// contested names who else changed a held field since the hold was
// placed, as the newest observation of the object attributes it; empty
// when nobody did.
func (in *Input) contested(h LiveHold) string {
	for _, d := range in.Result.Decisions {
		if d.Object != h.Object.String() || d.Actor == "" {
			continue
		}
		o := in.newestOf(d.Environment, d.Object)
		if o == nil || o.Change.At.Before(h.Record.Since) {
			continue
		}
		for _, c := range d.Changes {
			if slices.Contains(h.Record.Fields, c.Field) && o.Change.Actor != "" && d.Outcome != plan.Allow {
				return o.Change.Actor
			}
		}
	}
	return ""
}
