package plan

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/backflow-dev/backflow/internal/observe"
	"github.com/backflow-dev/backflow/internal/policy"
	"github.com/backflow-dev/backflow/internal/receipt"
	"github.com/backflow-dev/backflow/internal/repoconfig"
	"github.com/backflow-dev/backflow/internal/values"
)

// Receipt constants the planner writes.
const (
	// Operation is writeBack.provenance.operation.
	Operation = "reverse-reconcile"
	// Predicate is observation.predicate: what the observation witnesses.
	Predicate = "object-state-observed"
)

// attachReceipt builds the allowed decision's receipt, with the round trip
// read from after (the unit's desired values once the write-back is made),
// and verifies it against the snapshot's policy: a receipt that fails its
// own verification is an error, never an allow.
func (p *planner) attachReceipt(
	u *repoconfig.Unit,
	uv *unitValues,
	pd *pending,
	after map[string]any,
	trees []map[string]any,
	branch string,
	rendered *receipt.Render,
) error {
	d := &p.res.Decisions[pd.index]
	o := pd.obs
	store := p.storeOf(u)
	newRevision := store.NewRevision(branch)
	if !p.cfg.WritesBack() {
		newRevision = "(report only: nothing is written back while the repository is " + p.modeWord() + ")"
	}
	f := p.acceptFields(uv, pd, after, trees)
	r := p.proposedReceipt(u, pd, store, newRevision, branch, rendered, f)
	path := p.receiptPath(u, o.Object.APIVersion, o.Object.Kind, o.Object.Namespace, o.Object.Name)
	// Receipts are one per object: an earlier temporary acceptance of
	// other fields would end, silently, with the receipt this one
	// replaces. Carried, it still lasts its term and is restored.
	if r.Spec.Carried = p.carry(path, nil, f.changed); len(r.Spec.Carried) > 0 {
		d.Reasons = append(d.Reasons, carryNote(r.Spec.Carried)...)
	}
	if vs := receipt.Verify(r, p.snap.Policy, p.snap.PolicyPath); len(vs) > 0 {
		return fmt.Errorf("the receipt fails verification: %s", receipt.JoinViolations(vs))
	}
	d.Receipt = r
	d.ReceiptPath = path
	return nil
}

// acceptedFields is what an allowed decision's write-back changes, field
// by field, as its receipt states it.
type acceptedFields struct {
	// changed are the receipt's bounds of the changes, each to its live
	// value.
	changed []receipt.ChangedField
	// residual is the round trip's residual drift: each accepted field
	// the desired state after the write-back does not hold at its live
	// value.
	residual []any
	// rules are the matchedRule text of each field's grant, in the order
	// the fields first need it.
	rules []string
	// files are the desired files the changes are written in, sorted.
	files []string
	// placed says, once each, why a field is written in a shared file
	// rather than the file Helm takes its value from.
	placed []string
}

// acceptFields is what the write-back of pd's fields changes, with after
// the unit's desired values once it is made and trees the tree of each of
// its values files then.
func (p *planner) acceptFields(
	uv *unitValues,
	pd *pending,
	after map[string]any,
	trees []map[string]any,
) acceptedFields {
	f := acceptedFields{
		changed:  make([]receipt.ChangedField, 0, len(pd.fields)),
		residual: []any{},
		rules:    make([]string, 0, 1),
		files:    make([]string, 0, 1),
	}
	for _, fs := range pd.fields {
		cf, desired, written := writtenField(pd.object, uv, fs, after, trees)
		f.changed = append(f.changed, cf)
		if fs.placedWhy != "" && !slices.Contains(f.placed, fs.placedWhy) {
			f.placed = append(f.placed, fs.placedWhy)
		}
		if drift := p.residualDrift(desired, fs); drift != "" {
			f.residual = append(f.residual, drift)
		}
		if rule := p.grant(pd.role, fs); !slices.Contains(f.rules, rule) {
			f.rules = append(f.rules, rule)
		}
		if !slices.Contains(f.files, written) {
			f.files = append(f.files, written)
		}
	}
	slices.Sort(f.files)
	return f
}

// writtenField is the change of fs, a field of object, as the receipt's
// bounds state it, with the desired state it is read back from after the
// write-back and the file it is written in. By default that is the values
// file at fs's value path, read back from after; a kustomize unit's field
// is written where kustomize says the value comes from and read back from
// the object as built with it; a manifest's field is written as itself in
// the object's document and read back from that file's tree in trees.
func writtenField(
	object string,
	uv *unitValues,
	fs *fieldState,
	after map[string]any,
	trees []map[string]any,
) (receipt.ChangedField, map[string]any, string) {
	cf := receipt.ChangedField{
		Object: object, Field: fs.f.Path, ValuePath: fs.valuePath,
		From: receipt.ValueOf(fs.from()), To: receipt.ValueOf(fs.live), DesiredValueAfter: receipt.ValueOf(fs.live),
		ValuesFile: uv.files[fs.file].path,
	}
	desired := after
	written := uv.files[fs.file].path
	switch {
	case fs.writtenFile != "":
		// A kustomize unit: written where kustomize says the value
		// comes from; desired after is the object as built with it.
		cf.ValuePath, cf.ValuesFile = "", ""
		cf.WrittenFile, cf.WrittenPath = fs.writtenFile, fs.writtenPath
		desired, written = fs.after, fs.writtenFile
	case fs.self:
		// A manifest has no values path: the receipt names the file
		// and the path written in the object's document.
		cf.ValuePath, cf.ValuesFile = "", ""
		cf.WrittenFile, cf.WrittenPath = uv.files[fs.file].path, fs.valuePath
		desired = trees[fs.file]
	}
	return cf, desired, written
}

// residualDrift is the round trip's residual drift of fs: how desired,
// the desired state after the write-back, differs from the live value at
// fs's value path. Empty when desired holds the live value.
func (p *planner) residualDrift(desired map[string]any, fs *fieldState) string {
	got, ok := p.lookup(desired, fs.valuePath)
	switch {
	case !ok:
		return fmt.Sprintf("%s: absent from desired after the write-back, observed %s", fs.valuePath, values.Format(fs.live))
	case !values.Equal(got, fs.live):
		return fmt.Sprintf(
			"%s: desired after the write-back is %s, observed %s",
			fs.valuePath,
			values.Format(got),
			values.Format(fs.live),
		)
	}
	return ""
}

// proposedReceipt is the receipt proposing pd's write-back on branch to
// store, as newRevision, for the fields f accepts; rendered is its render
// section, nil when nothing is rendered. It is not yet verified, and says
// nothing of what it carries.
func (p *planner) proposedReceipt(
	u *repoconfig.Unit,
	pd *pending,
	store Store,
	newRevision, branch string,
	rendered *receipt.Render,
	f acceptedFields,
) *receipt.Receipt {
	o, ch, first := pd.obs, pd.obs.Change, pd.fields[0]
	trigger := authorizedTrigger(pd)
	closed := len(f.residual) == 0
	result := receipt.ResultClosed
	if !closed {
		result = "open"
	}
	r := &receipt.Receipt{
		APIVersion: receipt.APIVersion,
		Kind:       receipt.Kind,
		Metadata:   receipt.Metadata{Name: receiptName(u, o.Object)},
		Spec: receipt.Spec{
			Status:      receipt.StatusProposed,
			Environment: u.Environment,
			Unit:        receipt.Unit{Space: u.Name, DesiredRender: strings.Join(f.files, ", ")},
			Trigger:     trigger,
			Observation: authorizedObservation(pd),
			Authority: receipt.Authority{
				PolicyRef: p.snap.PolicyPath, Decision: receipt.DecisionAllow, MatchedRule: strings.Join(f.rules, "; "),
			},
			Bounds: authorizedBounds(f.changed),
			WriteBack: receipt.WriteBack{
				Method:            store.Method(),
				DesiredValueAfter: receipt.ValueOf(first.live),
				NewRevision:       newRevision,
				Provenance: receipt.Provenance{
					Who: ch.Actor, When: p.now.Format(time.RFC3339), Operation: Operation,
					Authority: p.snap.PolicyPath, Intent: trigger.Intent,
				},
			},
			RoundTrip:  receipt.RoundTrip{DesiredAfterMatchesObserved: &closed, ResidualDrift: f.residual, Result: result},
			NotClaimed: append(p.notClaimed(u, o, branch, rendered), f.placed...),
		},
	}
	if x := p.expiryOf(pd, trigger.Intent); x != nil {
		r.Spec.Expiry = x
		r.Spec.NotClaimed = append(r.Spec.NotClaimed, expiryClaim(x))
	}
	if rendered != nil {
		r.Spec.Render = rendered
		r.Spec.RoundTrip.RenderedAfterMatchesObserved = &closed
	}
	if u.Chart != nil {
		r.Spec.Chart = u.Chart.Name
		r.Spec.Version = u.Chart.Version
	}
	return r
}

// authorizedTrigger is the trigger of pd's receipt: the change's actor
// under the role that authorizes it, with the change's intent and time.
// A change that states no intent is named by who changed it and when it
// was observed; one with no time takes the observation's.
func authorizedTrigger(pd *pending) receipt.Trigger {
	o := pd.obs
	ch := o.Change
	intent := ch.Intent
	if strings.TrimSpace(intent) == "" {
		intent = fmt.Sprintf("unstated: live change by %s observed %s", ch.Actor, o.ObservedAt.UTC().Format(time.RFC3339))
	}
	at := ch.At
	if at.IsZero() {
		at = o.ObservedAt
	}
	return receipt.Trigger{
		Class: receipt.ClassAuthorized, Actor: ch.Actor, Role: pd.role, Intent: intent,
		At: at.UTC().Format(time.RFC3339),
	}
}

// authorizedObservation is the observation pd's receipt rests on: its
// first field's live value and the value desired before, with what the
// observer reported beyond the values.
func authorizedObservation(pd *pending) receipt.Observation {
	o, first := pd.obs, pd.fields[0]
	return receipt.Observation{
		Source:     sourceName(o),
		Predicate:  Predicate,
		ReceiptRef: observationRef(o),
		Object:     pd.object, Field: first.f.Path, ValuePath: first.policyPath(),
		LiveValue: receipt.ValueOf(first.live), DesiredValueBefore: receipt.ValueOf(first.from()),
		UID: o.UID, Evidence: observerEvidence(o, pd.fields),
	}
}

// grant is the matchedRule text of the entry that authorizes fs for role:
// an entry matches only its own value path and field, so the text is the
// entry's, made once per plan.
func (p *planner) grant(role string, fs *fieldState) string {
	m := fs.match(role)
	if m.Rule < len(p.grants) && m.Accept < len(p.grants[m.Rule]) {
		return p.grants[m.Rule][m.Accept]
	}
	return grant(role, fs.policyPath(), fs.f.Path, m)
}

func grant(role, valuePath, field string, m *policy.Match) string {
	if valuePath == "" {
		return role + " may accept " + field + " by " + m.Path()
	}
	return role + " may accept " + valuePath + " (" + field + ") by " + m.Path()
}

func (p *planner) modeWord() string {
	if p.cfg.Paused {
		return "paused"
	}
	return "observe-only"
}

// notClaimed are the receipt's honesty markers: what the planner did not
// establish.
func (p *planner) notClaimed(
	u *repoconfig.Unit,
	o *observe.Observation,
	branch string,
	rendered *receipt.Render,
) []string {
	ch := o.Change
	var out []string
	store := "the values files"
	switch u.Source() {
	case repoconfig.SourceManifests:
		store = "the manifests"
	case repoconfig.SourceKustomize:
		store = "kustomize's build of " + u.Kustomization
	case repoconfig.SourceStore:
		store = "the document of " + u.StoreRef().String()
	}
	if p.cfg.WritesBack() {
		out = append(out, fmt.Sprintf(
			"Proposed, not proven: the round trip is closed at the level of desired state ("+store+
				" on %s read back as the observed values); that the change stuck in the live system after the merge "+
				"and the next forward apply is not claimed until a follow-up re-observes it and the receipt is proven.",
			branch,
		))
	} else {
		out = append(out, fmt.Sprintf(
			"Report only: the repository is %s, so no branch, commit or pull request was made; "+
				"the round trip was computed on the edited bytes in memory.",
			p.modeWord(),
		))
	}
	claimed := ""
	if ch.Claimed != "" && ch.Claimed != ch.Attribution {
		claimed = fmt.Sprintf(", lowered from the claimed %s to its source's trust ceiling", ch.Claimed)
	}
	evidence := ""
	if ch.Evidence != "" {
		evidence = " (evidence: " + ch.Evidence + ")"
	}
	out = append(
		out,
		fmt.Sprintf(
			"Attribution: %s is attributed at level %s%s by the %s observation from cluster %s%s; backflow did not "+
				"authenticate the actor itself.",
			ch.Actor,
			ch.Attribution,
			claimed,
			sourceName(o),
			o.Cluster,
			evidence,
		),
	)
	where := "the working tree the repository was read from"
	if p.snap.Commit != "" {
		where = "commit " + p.snap.Commit
	}
	if rendered != nil && u.Source() == repoconfig.SourceKustomize {
		out = append(
			out,
			fmt.Sprintf(
				"Desired state is the kustomization %s at %s, built by %s from the %d files listed under render.files, before and "+
					"after the edit, with the inline spec.postBuild.substitute variables of the repository's Flux Kustomization "+
					"applying it, if one is among those files, substituted as Flux does: the builds differ exactly in the "+
					"accepted fields; what the GitOps controller adds on apply (variables from substituteFrom, a target "+
					"namespace, its own kustomize version) is not claimed.",
				u.Kustomization,
				where,
				rendered.Renderer,
				len(rendered.Files),
			),
		)
		return out
	}
	if rendered != nil {
		out = append(
			out,
			fmt.Sprintf(
				"Desired state is the values files at %s, rendered with chart %s %s (%s) by %s for Kubernetes %s as release %s in "+
					"namespace %s; what the GitOps controller renders with its own Helm version, post-renderers or lookups of live "+
					"objects is not claimed.",
				where,
				rendered.Chart,
				rendered.Version,
				rendered.Digest,
				rendered.Renderer,
				rendered.KubeVersion,
				rendered.ReleaseName,
				rendered.Namespace,
			),
		)
		return out
	}
	if ref := u.StoreRef(); ref != nil {
		out = append(out, p.snap.Heads[*ref].Words.NotClaimed)
		return out
	}
	if u.Source() == repoconfig.SourceManifests {
		out = append(
			out,
			fmt.Sprintf(
				"Desired state is the plain manifests at %s; the field is written as itself in the document that applies the "+
					"object, and the documents themselves are the witness (the edited document reads back with the observed value, "+
					"every other document and field as it was); what the GitOps controller does to them on apply (a target "+
					"namespace, its own patches) is not claimed.",
				where,
			),
		)
		return out
	}
	out = append(
		out,
		fmt.Sprintf(
			"Desired state is the values files at %s; the chart was not rendered, so the field to value path mapping is the "+
				"policy's, not a rendering's.",
			where,
		),
	)
	return out
}

// observationRef names the observation the receipt rests on.
func observationRef(o *observe.Observation) string {
	s := fmt.Sprintf(
		"%s observation of %s on cluster %s at %s",
		sourceName(o),
		o.Object.String(),
		o.Cluster,
		o.ObservedAt.UTC().Format(time.RFC3339),
	)
	if o.ResourceVersion != "" {
		s += ", resourceVersion " + o.ResourceVersion
	}
	if o.Name != "" {
		s += " (" + o.Name + ")"
	}
	return s
}

// receiptName is metadata.name: <unit>-<environment>-<kind>-<name>, in
// lowercase with anything but letters, digits, `.` and `-` made `-`.
func receiptName(u *repoconfig.Unit, k observe.ObjectKey) string {
	s := strings.ToLower(u.Name + "-" + u.Environment + "-" + k.Kind + "-" + k.Name)
	return strings.Map(func(r rune) rune {
		if 'a' <= r && r <= 'z' || '0' <= r && r <= '9' || r == '.' || r == '-' {
			return r
		}
		return '-'
	}, s)
}

func marshalReceipt(d *Decision) ([]byte, error) {
	return receipt.Marshal(d.Receipt)
}

// observerEvidence states what the observer reported beyond the values, for
// the receipt's observation section: hints stay hints, never an identity.
func observerEvidence(o *observe.Observation, fields []*fieldState) []string {
	ev := o.Evidence
	var out []string
	if ev.Comparison != "" {
		out = append(out, "comparison: "+ev.Comparison)
	}
	if ev.RenderKind != "" || ev.RenderReference != "" {
		r := strings.TrimSpace(ev.RenderKind + " " + ev.RenderReference)
		if ev.RenderDigest != "" {
			r += " (sha256 " + ev.RenderDigest + ")"
		}
		out = append(out, "compared against render: "+r)
	}
	if ev.Receipt != "" {
		out = append(out, "read from cub-scout receipt: "+ev.Receipt)
	}
	if ev.Anchor != nil {
		out = append(out, "desired state anchored at: "+ev.Anchor.String())
	}
	if ev.Cause != "" || ev.ManagerHint != "" || len(ev.Managers) > 0 {
		out = append(out, fmt.Sprintf("attribution hints: cause %s, managerHint %s, managers [%s] (hints, not the writer)",
			orNone(ev.Cause), orNone(ev.ManagerHint), strings.Join(ev.Managers, ", ")))
	}
	for _, fs := range fields {
		if fs.f.Cause != "" || fs.f.ManagerHint != "" {
			out = append(out, fmt.Sprintf("%s: cause %s, managerHint %s (a representative manager, not the writer)",
				fs.f.Path, orNone(fs.f.Cause), orNone(fs.f.ManagerHint)))
		}
	}
	show := func(v any) any { return v }
	if o.Object.IsSecret() {
		show = func(any) any { return observe.Redacted }
	}
	return append(out, revertedEvidence(fields, show)...)
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// authorizedBounds are the bounds of a write-back the policy authorizes
// whole: every changed field, none unauthorized.
func authorizedBounds(changed []receipt.ChangedField) receipt.Bounds {
	within := true
	return receipt.Bounds{ChangedFields: changed, UnauthorizedFieldsChanged: []string{}, WithinAuthorizedScope: &within}
}
