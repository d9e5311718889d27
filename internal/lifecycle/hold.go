package lifecycle

import (
	"fmt"
	"slices"
	"strings"
	"time"

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
	// AppliedIncludesMerge whether that revision holds the merge of the
	// hold's pull request (MergeOf): the cycle asks the forge.
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
	// ChangedAt is when the live change a Hold holds was made (the kept
	// transition's time, else the observation's): the start of its at-risk
	// window, which ends when the hold is placed.
	ChangedAt time.Time
	// Cause is why a Release releases (one of hold.Causes).
	Cause string
}

// Holds decides every hold of the cycle, one chain each: the holds to
// place, for this cycle's write-backs of units that opt in (before the
// unit's chain opens or updates its pull request, so an auto-merged change
// is held from the start), on each object whose change the plan allows;
// what to do with each hold found on the live objects (released when due,
// reported when it is not backflow's); and the bodies of the pull requests
// whose list of holds that changes. The executor runs these chains before
// the units' own, which it must be decided before: every marker read after
// it lists the holds in place once these chains are done.
func (in *Input) Holds(prs []forge.PullRequest, live []LiveHold) [][]Effect {
	in.held, in.heldNotes = nil, nil // the markers as their bodies say, while deciding
	var out [][]Effect
	// An object that carries any hold or mark already is not held again:
	// backflow's own is carried on, and another repository's, a person's
	// mark or a forged record is never taken over (releasing it would
	// remove what backflow did not place).
	held := map[heldObject]bool{}
	for _, h := range live {
		if h.State != hold.None {
			held[heldObject{h.Cluster, h.Object}] = true
		}
	}
	listing := map[string][]MarkerHold{}
	placing := map[string]int{} // the chain placing a proposal's holds, by holdKey
	for i := range in.Result.WriteBacks {
		c := in.placeHolds(&in.Result.WriteBacks[i], prs, held)
		for _, e := range c {
			if e.Kind == Hold {
				r := e.Hold.Record
				listing[holdKey(r.Branch, r.Fingerprint)] = append(listing[holdKey(r.Branch, r.Fingerprint)], markerHold(r))
				placing[holdKey(r.Branch, r.Fingerprint)] = len(out)
			}
		}
		if len(c) > 0 {
			out = append(out, c)
		}
	}
	written := map[int]*Pull{} // the pull requests whose body these chains write
	for _, h := range live {
		c, ok := in.decideLiveHold(h, prs)
		if ok {
			out = append(out, c)
		}
		released := false
		for _, e := range c {
			released = released || e.Kind == Release
			if e.Kind == Comment {
				written[e.Pull.PR.Number] = e.Pull
			}
		}
		if h.State == hold.Sealed && h.Record.Repo == in.Repo && !released {
			r := h.Record
			listing[holdKey(r.Branch, r.Fingerprint)] = append(listing[holdKey(r.Branch, r.Fingerprint)], markerHold(r))
		}
	}
	for _, hs := range listing {
		sortHolds(hs)
	}
	in.held = listing
	for _, st := range written {
		st.Marker.Holds = in.listed(st.PR, st.Marker)
	}
	for _, pr := range prs {
		m, ok := in.pullMarker(pr)
		if !ok || !pr.Mine || m.Branch != pr.HeadRef || written[pr.Number] != nil {
			continue
		}
		raw, _ := authenticMarker(in.CommitKey, in.Repo, pr)
		if sameHolds(raw.Holds, m.Holds) {
			continue
		}
		e := Effect{Kind: ListHolds, Branch: m.Branch, Pull: &Pull{PR: pr, Marker: m},
			Reason: fmt.Sprintf("#%d: the body lists the holds in place (%d)", pr.Number, len(m.Holds))}
		if i, ok := placing[holdKey(m.Branch, m.Fingerprint)]; ok && pr.State == forge.StateOpen {
			out[i] = append(out[i], e) // listed once placed: a hold that fails to be placed is not listed
		} else {
			out = append(out, []Effect{e})
		}
	}
	in.heldNotes = map[int][]string{}
	for n, st := range written {
		for _, e := range out {
			for _, x := range e {
				if x.Kind == Comment && x.Pull == st {
					in.heldNotes[n] = append(in.heldNotes[n], x.Note)
				}
			}
		}
	}
	return out
}

// ListHeld makes the markers of units' pull requests, read before Holds
// decided, list the holds in place as Holds decided them, so that a unit's
// chain that writes a body keeps its list of holds true.
func (in *Input) ListHeld(units []*Unit) {
	for _, u := range units {
		for _, st := range append([]*Pull{u.Open}, u.Closed...) {
			if st != nil && st.Marker != nil {
				in.withHolds(st.PR, st.Marker)
			}
		}
	}
}

// holdKey names a proposal: its branch and fingerprint.
func holdKey(branch, fingerprint string) string { return branch + "\x00" + fingerprint }

// listed are the holds in place for the proposal of pr, whose marker is m:
// none once it is closed without merge.
func (in *Input) listed(pr forge.PullRequest, m *Marker) []MarkerHold {
	if pr.State != forge.StateOpen && !pr.Merged {
		return nil
	}
	return slices.Clone(in.held[holdKey(m.Branch, m.Fingerprint)])
}

// withHolds makes m, pr's marker as its body says, list the holds in place
// and carry the notes Holds decided, once it has.
func (in *Input) withHolds(pr forge.PullRequest, m *Marker) {
	if in.held == nil || !pr.Mine || m.Branch != pr.HeadRef {
		return
	}
	m.Holds = in.listed(pr, m)
	for _, n := range in.heldNotes[pr.Number] {
		if !m.hasNote(n) {
			m.Notes = append(m.Notes, n)
		}
	}
}

// heldObject is an object on a cluster that carries a hold or a mark.
type heldObject struct {
	cluster string
	object  observe.ObjectKey
}

// placeHolds is the Hold effects of one write-back: one per allowed
// object not held yet, when its unit opts in and no person closed the same
// proposal (it is not opened again). A denied change, or one out of
// bounds, is no write-back and is never held.
func (in *Input) placeHolds(wb *plan.WriteBack, prs []forge.PullRequest, held map[heldObject]bool) []Effect {
	u := in.unit(wb.Environment, wb.Unit)
	if u == nil {
		return nil
	}
	cfg := in.Snapshot.Config.HoldOf(u)
	if cfg == nil {
		return nil
	}
	p := in.propose(wb)
	if in.closedByPerson(&Unit{Branch: wb.Branch, Closed: in.closedOf(prs, wb.Branch)}, p.Fingerprint) != nil {
		return nil
	}
	fields := map[observe.ObjectKey][]string{}
	for _, c := range p.Changes {
		fields[c.Object] = append(fields[c.Object], c.Field)
	}
	var out []Effect
	for _, object := range wb.Objects {
		if len(fields[object]) == 0 || !in.allowed(wb, object) {
			continue
		}
		o := in.newestOf(wb.Environment, object)
		if o == nil || o.UID == "" || o.ResourceVersion == "" || o.Source != observe.SourceKubernetes {
			continue // only the watch's own reading of the object names its uid and version
		}
		if held[heldObject{o.Cluster, object}] || in.releasedAtMaximum(prs, wb.Branch, p.Fingerprint, o.Cluster, object) {
			continue // held already, or held for this proposal until its maximum: not again
		}
		rec := hold.Record{Repo: in.Repo, PR: in.openNumber(prs, wb.Branch), Branch: wb.Branch, Fingerprint: p.Fingerprint,
			Cluster: o.Cluster, Object: object.String(), UID: o.UID, Fields: fields[object], Controller: cfg.Controller,
			Applier: cfg.Applier, Since: in.Now, Until: in.Now.Add(cfg.Max())}
		value, err := hold.Seal(in.CommitKey, rec)
		if err == nil {
			var patch []byte
			if patch, err = hold.Place(rec, value, o.ResourceVersion); err == nil {
				out = append(out, Effect{Kind: Hold, Branch: wb.Branch,
					Hold: &HoldAction{Cluster: o.Cluster, Object: o.Object, Patch: patch, Controller: cfg.Controller,
						Applier: cfg.Applier, Record: rec, ChangedAt: changedAt(o)},
					Reason: fmt.Sprintf("hold %s on %s (%s) until %s: %s stays off it until the merge is applied",
						object.Name, o.Cluster, strings.Join(fields[object], ", "),
						rec.Until.UTC().Format(time.RFC3339), cfg.Controller)})
				continue
			}
		}
		out = append(out, Effect{Kind: Skip, Branch: wb.Branch, Reason: "no hold placed: " + err.Error()})
	}
	return out
}

// closedOf are the closed pull requests of branch, as Index gathers them
// for a unit.
func (in *Input) closedOf(prs []forge.PullRequest, branch string) []*Pull {
	var out []*Pull
	for _, pr := range prs {
		if pr.Mine && pr.HeadRef == branch && pr.State == forge.StateClosed && !pr.Merged {
			if m, ok := in.pullMarker(pr); ok {
				out = append(out, &Pull{PR: pr, Marker: m})
			}
		}
	}
	return out
}

// openNumber is the number of the open pull request of branch, 0 when it
// is still to be opened.
func (in *Input) openNumber(prs []forge.PullRequest, branch string) int {
	for _, pr := range prs {
		if pr.Mine && pr.HeadRef == branch && pr.State == forge.StateOpen {
			return pr.Number
		}
	}
	return 0
}

// allowed says the plan allows the write-back's change on object: its
// decision is an allow written back to the write-back's branch.
func (in *Input) allowed(wb *plan.WriteBack, object observe.ObjectKey) bool {
	return slices.ContainsFunc(in.Result.Decisions, func(d plan.Decision) bool {
		return d.Environment == wb.Environment && d.Unit == wb.Unit && d.Object == object && d.Outcome == plan.Allow &&
			!d.Reported && d.WriteBack == wb.Branch
	})
}

// newestOf is the newest observation of object in env.
func (in *Input) newestOf(env string, object observe.ObjectKey) *observe.Observation {
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

// changedAt is when the live change o carries was made: the attributed
// change's time, else the earliest kept transition a revert records, else
// when o was read.
func changedAt(o *observe.Observation) time.Time {
	if !o.Change.At.IsZero() {
		return o.Change.At
	}
	var at time.Time
	for _, f := range o.Fields {
		if r := f.Reverted; r != nil && !r.ChangedAt.IsZero() && (at.IsZero() || r.ChangedAt.Before(at)) {
			at = r.ChangedAt
		}
	}
	if at.IsZero() {
		return o.ObservedAt
	}
	return at
}

// decideLiveHold is the chain for one hold found live: a Release when a
// sealed hold of this repository is due (after saying so once on the pull
// request when the maximum hold time passed), a Skip reporting a mark that
// is not backflow's, nothing while a hold is kept.
func (in *Input) decideLiveHold(h LiveHold, prs []forge.PullRequest) ([]Effect, bool) {
	switch h.State {
	case hold.None:
		return nil, false
	case hold.Forged:
		return []Effect{{Kind: Skip, Reason: fmt.Sprintf("%s on %s carries a %s annotation that is not authentic: "+
			"never trusted, never released", h.Object.Name, h.Cluster, hold.Annotation)}}, true
	case hold.Unsealed:
		return []Effect{{Kind: Skip, Reason: fmt.Sprintf("%s on %s carries the forward controller's hands-off mark "+
			"without backflow's hold: a person's, left alone", h.Object.Name, h.Cluster)}}, true
	}
	if h.Record.Repo != in.Repo {
		if why := in.unserved(h.Record); why != "" {
			return in.release(h, hold.PullState{Unserved: why}, nil)
		}
		return nil, false // another repository's hold: its own cycle decides it
	}
	p := hold.PullState{Applied: h.Applied, AppliedIncludesMerge: h.AppliedIncludesMerge, Unheld: in.unheld(h.Record)}
	st := in.pullOf(prs, h.Record)
	if st != nil {
		pr := st.PR
		p.Found, p.Open, p.Merged, p.MergeCommit = true, pr.State == forge.StateOpen, pr.Merged, pr.MergeCommitSHA
	}
	if !p.Found && p.Unheld == "" && in.proposes(h.Record) {
		// The same proposal is planned again: this cycle opens its pull
		// request (a cycle that placed the hold failed before opening it).
		return nil, false
	}
	if p.Open {
		p.Contested = in.contested(h)
	}
	p.Expired = in.expiredAcceptance(st, h)
	return in.release(h, p, st)
}

// release is the chain deciding the sealed hold h with its pull request's
// state p (the pull request st, nil when none): nothing while it is kept.
func (in *Input) release(h LiveHold, p hold.PullState, st *Pull) ([]Effect, bool) {
	d := hold.Due(h.Record, h.State, p, in.Now)
	if !d.Release {
		return nil, false
	}
	patch, err := hold.Release(h.Record, h.State)
	if err != nil {
		return []Effect{{Kind: Skip, Reason: err.Error()}}, true
	}
	act := &HoldAction{Cluster: h.Cluster, Object: h.Object, Patch: patch, Controller: h.Record.Controller,
		Applier: h.Record.Applier, Record: h.Record, Cause: d.Cause}
	if d.Reconcile {
		act.ReconcilePatch = hold.Reconcile(in.Now)
	}
	release := Effect{Kind: Release, Branch: h.Record.Branch, Pull: st, Hold: act,
		Reason: fmt.Sprintf("release the hold on %s (%s): %s", h.Object.Name, h.Cluster, d.Reason)}
	if d.Cause != hold.CauseMaximum || st == nil {
		return []Effect{release}, true
	}
	// Said before the release, and recorded in the marker: a release that
	// fails is decided again without saying it twice, and the note keeps
	// the same proposal from being held on the object again (placeHolds).
	until := "this pull request is merged and its merge applied"
	if st.PR.Merged {
		until = "its merge is applied"
	}
	text := fmt.Sprintf("The hold on %s on %s was released: %s. %s may revert the live change until %s; "+
		"backflow does not hold it again for this proposal.",
		code(h.Object.String()), code(h.Cluster), cell(d.Reason), code(h.Record.Controller), until)
	if c, ok := commentOnce(st, holdMaximumNote(h.Record.Fingerprint, h.Cluster, h.Object.String()), text); ok {
		return []Effect{c, release}, true
	}
	return []Effect{release}, true
}

// unserved says why the sealed hold r, naming another repository, is
// provably not served by this installation: its newest complete listing
// (Served) does not name r's repository. Only the cycle of the first
// served repository says so, so one chain releases it; empty otherwise,
// and always before a listing.
func (in *Input) unserved(r hold.Record) string {
	if len(in.Served) == 0 || !strings.EqualFold(in.Served[0], in.Repo) {
		return ""
	}
	if slices.ContainsFunc(in.Served, func(s string) bool { return strings.EqualFold(s, r.Repo) }) {
		return ""
	}
	return fmt.Sprintf("the installation's %d repositories (the forge's, within the allowlist) no longer include it",
		len(in.Served))
}

// unheld says why the repository's configuration no longer wants the
// hold r held: no unit writes to its branch any more, or none that does
// opts into holds (hold: on the unit or its environment); empty while one
// does.
func (in *Input) unheld(r hold.Record) string {
	cfg := in.Snapshot.Config
	if cfg == nil {
		return "" // no configuration read: nothing proves the unit stopped holding
	}
	found := false
	for i := range cfg.Units {
		if u := &cfg.Units[i]; cfg.Branch(u) == r.Branch {
			if cfg.HoldOf(u) != nil {
				return ""
			}
			found = true
		}
	}
	if !found {
		return "no unit of the repository's config writes to " + r.Branch + " any more"
	}
	return "its unit (and its environment) no longer opts into hold: in the repository's config"
}

// pullOf is the pull request of the proposal the hold r was placed for:
// the newest of the App's pull requests of its branch whose marker names
// its fingerprint; nil when there is none.
func (in *Input) pullOf(prs []forge.PullRequest, r hold.Record) *Pull {
	var st *Pull
	for _, pr := range prs {
		m, ok := in.pullMarker(pr)
		if !pr.Mine || pr.HeadRef != r.Branch || !ok || m.Fingerprint != r.Fingerprint ||
			st != nil && pr.Number < st.PR.Number {
			continue
		}
		st = &Pull{PR: pr, Marker: m}
	}
	return st
}

// MergeOf is the merge commit of the pull request the hold r was placed
// for; empty while it is not merged. The hold port's caller asks the forge
// whether the applier's revision is that merge or a later one
// (LiveHold.AppliedIncludesMerge).
func (in *Input) MergeOf(prs []forge.PullRequest, r hold.Record) string {
	if st := in.pullOf(prs, r); st != nil && st.PR.Merged {
		return st.PR.MergeCommitSHA
	}
	return ""
}

// holdMaximumNote is the note a release at the maximum hold time records
// on the pull request of the proposal (fingerprint) for the object on
// cluster.
func holdMaximumNote(fingerprint, cluster, object string) string {
	return noteHoldMaximum + ":" + fingerprint + ":" + cluster + ":" + object
}

// releasedAtMaximum says a hold of the proposal (branch, fingerprint) on
// the object on cluster was released at its maximum hold time: a pull
// request of the branch records it.
func (in *Input) releasedAtMaximum(
	prs []forge.PullRequest,
	branch, fingerprint, cluster string,
	object observe.ObjectKey,
) bool {
	note := holdMaximumNote(fingerprint, cluster, object.String())
	for _, pr := range prs {
		if pr.Mine && pr.HeadRef == branch {
			if m, ok := in.pullMarker(pr); ok && m.hasNote(note) {
				return true
			}
		}
	}
	return false
}

// contested names who else changed a held field since the hold was
// placed, as the newest observation of the object attributes it; empty
// when nobody did.
func (in *Input) contested(h LiveHold) string {
	for _, d := range in.Result.Decisions {
		if d.Object != h.Object || d.Actor == "" {
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

// proposes says this cycle's plan makes the proposal the hold r was placed
// for.
func (in *Input) proposes(r hold.Record) bool {
	for i := range in.Result.WriteBacks {
		if wb := &in.Result.WriteBacks[i]; wb.Branch == r.Branch && in.propose(wb).Fingerprint == r.Fingerprint {
			return true
		}
	}
	return false
}

// MarkerHold is a hold in place for a pull request's change, as its body
// lists it.
type MarkerHold struct {
	// Object is the object key, Cluster where it lives.
	Object  string `json:"object"`
	Cluster string `json:"cluster"`
	// Mark is the forward controller's annotation set to disabled.
	Mark string `json:"mark"`
	// Since is when the hold was placed, Until when it is released at the
	// latest.
	Since time.Time `json:"since"`
	Until time.Time `json:"until"`
}

// markerHold is how a pull request's body lists the hold r.
func markerHold(r hold.Record) MarkerHold {
	mark, _ := hold.Mark(r.Controller) // a sealed record names a controller with a mark
	return MarkerHold{Object: r.Object, Cluster: r.Cluster, Mark: mark, Since: r.Since.UTC(), Until: r.Until.UTC()}
}

// The hidden tags around the list of holds in a pull request's body.
const holdsOpen, holdsClose = "<!-- backflow:holds -->", "<!-- /backflow:holds -->"

// withoutHolds is head, the body before its marker, without the list of
// holds that ends it: only the list just before the marker is the bot's
// (text from outside, a receipt's intent, may spell the tags earlier; the
// list itself cannot, its cells escaped).
func withoutHolds(head string) string {
	trimmed := strings.TrimRight(head, "\n")
	if !strings.HasSuffix(trimmed, holdsClose) {
		return head
	}
	start := strings.LastIndex(trimmed, holdsOpen)
	if start < 0 {
		return head
	}
	return trimmed[:start]
}

// holdsSection is the body's list of the holds in place, between its
// hidden tags; empty when there are none.
func holdsSection(hs []MarkerHold) string {
	if len(hs) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString(holdsOpen + "\n### Held on the clusters\n\n")
	b.WriteString("backflow keeps the forward controller off these objects until the merge is applied " +
		"(its mark, beside backflow's sealed `" + hold.Annotation + "` record):\n\n")
	b.WriteString("| object | cluster | mark | since | until at the latest |\n| --- | --- | --- | --- | --- |\n")
	for _, h := range hs {
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", code(h.Object), code(h.Cluster), code(h.Mark+": "+hold.Disabled),
			h.Since.UTC().Format(time.RFC3339), h.Until.UTC().Format(time.RFC3339))
	}
	b.WriteString("\n" + holdsClose + "\n\n")
	return b.String()
}

// sortHolds orders a body's holds by cluster and object.
func sortHolds(hs []MarkerHold) {
	slices.SortFunc(hs, func(a, b MarkerHold) int {
		return strings.Compare(a.Cluster+"\x00"+a.Object, b.Cluster+"\x00"+b.Object)
	})
}

// sameHolds says two bodies list the same holds.
func sameHolds(a, b []MarkerHold) bool {
	return slices.EqualFunc(a, b, func(x, y MarkerHold) bool {
		return x.Object == y.Object && x.Cluster == y.Cluster && x.Mark == y.Mark && x.Since.Equal(y.Since) &&
			x.Until.Equal(y.Until)
	})
}
