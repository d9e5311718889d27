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
	ch := o.Change
	first := pd.fields[0]
	intent := ch.Intent
	if strings.TrimSpace(intent) == "" {
		intent = fmt.Sprintf("unstated: live change by %s observed %s", ch.Actor, o.ObservedAt.UTC().Format(time.RFC3339))
	}
	at := ch.At
	if at.IsZero() {
		at = o.ObservedAt
	}
	store := p.storeOf(u)
	newRevision := store.NewRevision(branch)
	if !p.cfg.WritesBack() {
		newRevision = "(report only: nothing is written back while the repository is " + p.modeWord() + ")"
	}
	var (
		changed  = make([]receipt.ChangedField, 0, len(pd.fields))
		residual = []any{}
		rules    = make([]string, 0, 1)
		files    = make([]string, 0, 1)
		placed   []string
	)
	for _, fs := range pd.fields {
		cf := receipt.ChangedField{
			Object: pd.object, Field: fs.f.Path, ValuePath: fs.valuePath,
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
		changed = append(changed, cf)
		if fs.placedWhy != "" && !slices.Contains(placed, fs.placedWhy) {
			placed = append(placed, fs.placedWhy)
		}
		got, ok := p.lookup(desired, fs.valuePath)
		switch {
		case !ok:
			residual = append(
				residual,
				fmt.Sprintf("%s: absent from desired after the write-back, observed %s", fs.valuePath, values.Format(fs.live)),
			)
		case !values.Equal(got, fs.live):
			residual = append(
				residual,
				fmt.Sprintf(
					"%s: desired after the write-back is %s, observed %s",
					fs.valuePath,
					values.Format(got),
					values.Format(fs.live),
				),
			)
		}
		rule := p.grant(pd.role, fs)
		if !slices.Contains(rules, rule) {
			rules = append(rules, rule)
		}
		if f := written; !slices.Contains(files, f) {
			files = append(files, f)
		}
	}
	slices.Sort(files)
	closed := len(residual) == 0
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
			Unit:        receipt.Unit{Space: u.Name, DesiredRender: strings.Join(files, ", ")},
			Trigger: receipt.Trigger{
				Class: receipt.ClassAuthorized, Actor: ch.Actor, Role: pd.role, Intent: intent,
				At: at.UTC().Format(time.RFC3339),
			},
			Observation: receipt.Observation{
				Source:     sourceName(o),
				Predicate:  Predicate,
				ReceiptRef: observationRef(o),
				Object:     pd.object, Field: first.f.Path, ValuePath: first.policyPath(),
				LiveValue: receipt.ValueOf(first.live), DesiredValueBefore: receipt.ValueOf(first.from()),
				UID: o.UID, Evidence: observerEvidence(o, pd.fields),
			},
			Authority: receipt.Authority{
				PolicyRef: p.snap.PolicyPath, Decision: receipt.DecisionAllow, MatchedRule: strings.Join(rules, "; "),
			},
			Bounds: authorizedBounds(changed),
			WriteBack: receipt.WriteBack{
				Method:            store.Method(),
				DesiredValueAfter: receipt.ValueOf(first.live),
				NewRevision:       newRevision,
				Provenance: receipt.Provenance{
					Who: ch.Actor, When: p.now.Format(time.RFC3339), Operation: Operation,
					Authority: p.snap.PolicyPath, Intent: intent,
				},
			},
			RoundTrip:  receipt.RoundTrip{DesiredAfterMatchesObserved: &closed, ResidualDrift: residual, Result: result},
			NotClaimed: append(p.notClaimed(u, o, branch, rendered), placed...),
		},
	}
	if x := p.expiryOf(pd, intent); x != nil {
		r.Spec.Expiry = x
		r.Spec.NotClaimed = append(r.Spec.NotClaimed, expiryClaim(x))
	}
	path := p.receiptPath(u, o.Object.APIVersion, o.Object.Kind, o.Object.Namespace, o.Object.Name)
	// Receipts are one per object: an earlier temporary acceptance of
	// other fields would end, silently, with the receipt this one
	// replaces. Carried, it still lasts its term and is restored.
	if r.Spec.Carried = p.carry(path, nil, changed); len(r.Spec.Carried) > 0 {
		d.Reasons = append(d.Reasons, carryNote(r.Spec.Carried)...)
	}
	if rendered != nil {
		r.Spec.Render = rendered
		r.Spec.RoundTrip.RenderedAfterMatchesObserved = &closed
	}
	if u.Chart != nil {
		r.Spec.Chart = u.Chart.Name
		r.Spec.Version = u.Chart.Version
	}
	if vs := receipt.Verify(r, p.snap.Policy, p.snap.PolicyPath); len(vs) > 0 {
		return fmt.Errorf("the receipt fails verification: %s", receipt.JoinViolations(vs))
	}
	d.Receipt = r
	d.ReceiptPath = path
	return nil
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
