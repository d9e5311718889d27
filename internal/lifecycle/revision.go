package lifecycle

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/backflow-dev/backflow/internal/forge"
	"github.com/backflow-dev/backflow/internal/plan"
	"github.com/backflow-dev/backflow/internal/policy"
	"github.com/backflow-dev/backflow/internal/receipt"
	"github.com/backflow-dev/backflow/internal/repoconfig"
)

// Effect kinds of a write-back whose desired store writes revisions (a
// ConfigHub Unit, plan.Revision): the pull request carries the receipt,
// and its merge authorizes the revision. The rules are the same for every
// such store; what they say of it is the store's (plan.Words).
const (
	// Revise writes the revision a merged pull request authorized,
	// conditional on what it was planned against, once: a revision
	// already written for its receipt is not written again.
	Revise Kind = "revise"
	// Replan says on a merged pull request that its revision cannot be
	// written (the document changed since the plan, or live moved on) and
	// labels it done; the unit is proposed again from this cycle's plan.
	Replan Kind = "replan"
)

// LabelReplanned marks a merged pull request whose revision was not
// written because the document or live moved on: the follow-up never
// looks at it again.
const LabelReplanned = "reverse-reconcile:replanned"

// Hidden tags of the comments a revision leaves, so each is made once.
const (
	tagReplanned = "<!-- backflow:note replanned -->"
	tagConflict  = "<!-- backflow:note revision-conflict -->"
	tagWitness   = "<!-- backflow:note revision-witness -->"
)

// MarkerRevision is what a write-back into a revision store was planned
// against: the document (its store and the store's name of it), what the
// write is conditional on and the revision number the receipt names.
type MarkerRevision struct {
	Store     string `json:"store"`
	Name      string `json:"name"`
	Condition string `json:"condition"`
	Number    int64  `json:"number"`
}

// UnmarshalJSON reads a marker's revision, also in the form markers of
// ConfigHub Units had before revisions named their store (space, unit and
// dataHash), so a pull request merged under it still has its revision
// written.
func (r *MarkerRevision) UnmarshalJSON(data []byte) error {
	var v struct {
		Store     string      `json:"store"`
		Name      string      `json:"name"`
		Condition string      `json:"condition"`
		Number    json.Number `json:"number"`
		Space     string      `json:"space"`
		Unit      string      `json:"unit"`
		DataHash  string      `json:"dataHash"`
	}
	if err := json.Unmarshal(data, &v); err != nil {
		return err
	}
	n, err := v.Number.Int64()
	if err != nil {
		return fmt.Errorf("revision number %q: %w", v.Number, err)
	}
	*r = MarkerRevision{Store: v.Store, Name: v.Name, Condition: v.Condition, Number: n}
	if v.Store == "" && v.Name == "" && v.Space != "" && v.Unit != "" {
		*r = MarkerRevision{Store: repoconfig.StoreConfigHub, Name: v.Space + "/" + v.Unit, Condition: v.DataHash, Number: n}
	}
	return nil
}

// Ref is the document the revision is of.
func (r *MarkerRevision) Ref() repoconfig.StoreRef {
	return repoconfig.StoreRef{Store: r.Store, Name: r.Name}
}

// proveAt is the revision store a merged write-back's receipts are
// proven through: the store of the revision its marker names, nil for a
// write-back into the repository, whose receipts the default branch holds.
func proveAt(m *Marker) *repoconfig.StoreRef {
	if m.Revision == nil {
		return nil
	}
	ref := m.Revision.Ref()
	return &ref
}

// markerRevision is the marker's record of wb's revision, nil for a
// write-back into the repository.
func markerRevision(wb *plan.WriteBack) *MarkerRevision {
	rv := wb.Revision
	if rv == nil {
		return nil
	}
	return &MarkerRevision{Store: rv.Ref.Store, Name: rv.Ref.Name, Condition: rv.Head.Condition, Number: rv.Number()}
}

// revisionRefused is why wb's revision may not be proposed: a revision is
// written for one receipt (its change description names that receipt's
// digest, which is what the proof checks), so a write-back of several
// objects into one document is refused before anything merges.
func revisionRefused(wb *plan.WriteBack) error {
	if wb.Revision == nil || len(wb.Receipts) == 1 {
		return nil
	}
	return fmt.Errorf("refusing to propose revision %d of %s: it carries %d receipts, "+
		"and a revision is written for one (change the objects one at a time)",
		wb.Revision.Number(), wb.Revision.Head.Words.Document, len(wb.Receipts))
}

func (r *MarkerRevision) name() string { return fmt.Sprintf("%s@%d", r.Name, r.Number) }

// awaitsRevision says whether pr, merged, carries a revision write-back
// whose outcome is not recorded yet.
func awaitsRevision(p *Pull) bool {
	return p.PR.Merged && p.Marker.Revision != nil && !slices.ContainsFunc(p.PR.Labels, func(l string) bool {
		return l == LabelProven || l == LabelReverted || l == LabelReplanned
	})
}

// revisionChain decides a unit with a merged pull request whose revision
// is not written yet, before Decide: while the plan still proposes what
// merged, on the Unit's data it was planned against, the revision is
// written (and no second pull request opened); when the plan proposes
// something else (the Unit changed, live moved on), the merged pull
// request is said to be replanned and the unit goes on to Decide. done
// says the chain is complete; a unit without such a pull request, or
// without a write-back (the Unit holds the value: the follow-up proves
// it), goes to Decide unchanged.
func (in *Input) revisionChain(u *Unit) (out []Effect, done bool) {
	if u.Open != nil || u.WriteBack == nil {
		return nil, false
	}
	i := slices.IndexFunc(u.Closed, awaitsRevision)
	if i < 0 {
		return nil, false
	}
	st := u.Closed[i]
	m, wb := st.Marker, u.WriteBack
	planned := markerRevision(wb)
	if planned != nil && *planned == *m.Revision && fingerprint(*wb, in.Result.Decisions) == m.Fingerprint {
		w := wb.Revision.Head.Words
		text := fmt.Sprintf("**Not written yet.** %s changed since this pull request was planned "+
			"(the write was conditional on %s and %s refused it): nothing was written. "+
			"backflow plans the change again next cycle, on the document as it is then.",
			w.Document, code(w.Condition), w.Store)
		return []Effect{{Kind: Revise, Branch: m.Branch, Pull: st, Revision: wb.Revision, Tag: tagConflict, Text: text,
			Reason: fmt.Sprintf("merged %s: write revision %s, conditional on %s",
				Short(st.PR.MergeCommitSHA), m.Revision.name(), w.Condition)}}, true
	}
	why := "live moved on since"
	switch {
	case planned == nil || planned.Ref() != m.Revision.Ref():
		why = "the unit's desired state moved since"
	case planned.Condition != m.Revision.Condition:
		why = wb.Revision.Head.Words.Document + " changed since"
	}
	text := fmt.Sprintf("**Planned again.** Revision %s was not written: %s this pull request was planned "+
		"(on %s). backflow proposes the change again in a new pull request, on the document as it is now.",
		code(m.Revision.name()), why, code(m.Revision.Condition))
	return []Effect{{Kind: Replan, Branch: m.Branch, Pull: st,
		Evidence: &Evidence{Tag: tagReplanned, Label: LabelReplanned, Text: text},
		Reason:   fmt.Sprintf("revision %s not written: %s the plan; proposed again", m.Revision.name(), why)}}, false
}

// revisionFollowedByChain says the follow-up leaves a merged pull request
// to its unit's chain (revisionChain): its revision is still to be
// written, or it is to be said replanned.
func (in *Input) revisionFollowedByChain(pr forge.PullRequest, m *Marker) bool {
	if m.Revision == nil {
		return false
	}
	if slices.Contains(pr.Labels, LabelReplanned) {
		return true
	}
	return slices.ContainsFunc(in.Result.WriteBacks, func(wb plan.WriteBack) bool { return wb.Branch == m.Branch })
}

// WitnessComment is the comment a Revise leaves once when the store's dry
// run refuses the revision (it does not change exactly the accepted
// fields), quoting why (msg); its tag.
func (e Effect) WitnessComment(msg string) (text, tag string) {
	return fmt.Sprintf("**Not written.** %s's dry run of revision %s does not change exactly the "+
		"accepted fields, so nothing was written: %s", e.Revision.Head.Words.Store, code(e.Pull.Marker.Revision.name()),
		cell(msg)), tagWitness
}

// Policy is the default branch's policy a proven receipt verifies
// against, and its path.
func (f *Evidence) Policy() (*policy.Policy, string) { return f.against.policy, f.against.policyPath }

// Published is the check run and comment carrying receipts a store proved
// itself (a revision store reads the revision and the Unit), each verified
// again against the default branch's policy.
func (f *Evidence) Published(st *Pull, proven []plan.File) (forge.CheckRun, string, error) {
	for _, r := range proven {
		got, _, err := receipt.Parse(r.Path, r.Data)
		if err != nil {
			return forge.CheckRun{}, "", fmt.Errorf("error reading the proven receipt %s: %w", r.Path, err)
		}
		if vs := receipt.Verify(got, f.against.policy, f.against.policyPath); len(vs) > 0 {
			return forge.CheckRun{}, "", fmt.Errorf("the proven receipt %s fails verification against %s: %s",
				r.Path, f.against.policyPath, receipt.JoinViolations(vs))
		}
	}
	return f.publish(st, proven)
}

// previewSection is the pull request body's section showing the store's
// preview of the revision (its dry run, already escaped by the store),
// headed by the store's name.
func (d *writeBackDoc) previewSection() string {
	if d.wb.Revision == nil {
		return ""
	}
	head := "### " + d.wb.Revision.Head.Words.Store + "\n\n"
	if d.preview == "" {
		return head + "No preview of the revision could be made.\n\n"
	}
	return head + strings.TrimRight(d.preview, "\n") + "\n\n"
}
