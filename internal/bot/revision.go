package bot

import (
	"context"
	"errors"
	"fmt"

	"github.com/backflow-dev/backflow/internal/forge"
	"github.com/backflow-dev/backflow/internal/lifecycle"
	"github.com/backflow-dev/backflow/internal/plan"
	"github.com/backflow-dev/backflow/internal/policy"
	"github.com/backflow-dev/backflow/internal/repoconfig"
)

// Revisions is the port of the desired stores whose accepted proposals are
// written as revisions once their pull request merges (a ConfigHub Unit;
// internal/app wires internal/hubstore behind it). The pull request
// carries the receipt; the store holds the desired state. A store is
// known by its repoconfig.StoreRef, and what is said of it is its own
// (plan.Words): a new store is a new implementation, wired in app.
type Revisions interface {
	// Read reads a document for the snapshot: its bytes and head. A
	// reference to a store it does not serve is an error naming it.
	Read(ctx context.Context, ref repoconfig.StoreRef) ([]byte, plan.Head, error)
	// Preview is the store's dry run of rv as Markdown, for the pull
	// request's body; a dry run that does not change exactly the accepted
	// fields is an error (ErrRevisionRefused).
	Preview(ctx context.Context, rv *plan.Revision) (string, error)
	// Write writes rv for the receipt at path (its bytes as merged), once:
	// when a revision of the document was already written for that
	// receipt, nothing is written and Revised says which (Already). A
	// document changed since the plan is ErrChangedSincePlan, a dry run
	// refused ErrRevisionRefused; either way nothing was written.
	Write(ctx context.Context, rv *plan.Revision, path string, receipt []byte) (Revised, error)
	// Prove is the proven form of a merged receipt once the revision it
	// names was written for it and applied, and live holds the accepted
	// values; ErrNotProven until then.
	Prove(ctx context.Context, p RevisionProof) ([]byte, error)
}

// Revised is a revision written, or found written already.
type Revised struct {
	Number  int64
	Already bool
}

// RevisionProof is what proving a revision's receipt rests on.
type RevisionProof struct {
	// Ref is the document the revision was written to.
	Ref repoconfig.StoreRef
	// Receipt is the receipt's bytes as the default branch holds them;
	// Path names it.
	Receipt []byte
	Path    string
	// MergeCommit is the merge that authorized the revision.
	MergeCommit string
	// Live is the re-observed value of an object's field.
	Live func(object, field string) (any, bool)
	// Policy and PolicyPath verify the proven receipt.
	Policy     *policy.Policy
	PolicyPath string
}

// Sentinels a Revisions store wraps its errors in, so the executor tells
// the outcomes apart without knowing the store.
var (
	// ErrChangedSincePlan: the document changed since the plan
	// (ConfigHub's 409): nothing written, the next cycle plans again.
	ErrChangedSincePlan = errors.New("the document changed since the plan")
	// ErrRevisionRefused: the store's dry run does not change exactly the
	// accepted fields: nothing written.
	ErrRevisionRefused = errors.New("the revision was refused")
	// ErrNotProven: the revision is not applied yet, or live does not
	// hold the value: the follow-up waits.
	ErrNotProven = errors.New("not proven yet")
)

// revisionReader is the snapshot's reader of revision stores, nil without
// one (the planner then fails those units closed).
func (rc *repoCycle) revisionReader() plan.RevisionReader {
	s := rc.b.opts.Revisions
	if s == nil {
		return nil
	}
	return func(ref repoconfig.StoreRef) ([]byte, plan.Head, error) { return s.Read(rc.ctx, ref) }
}

// previews asks the store for the preview of every write-back that
// writes a revision, for its pull request's body; one it refuses keeps
// its proposal from being written (the witness fails before anything
// merges).
func (rc *repoCycle) previews() (map[string]string, map[string]error) {
	s := rc.b.opts.Revisions
	out, errs := map[string]string{}, map[string]error{}
	for _, wb := range rc.res.WriteBacks {
		if wb.Revision == nil || s == nil {
			continue
		}
		md, err := s.Preview(rc.ctx, wb.Revision)
		if err != nil {
			errs[wb.Branch] = fmt.Errorf("error previewing revision %d of %s: %w",
				wb.Revision.Number(), wb.Revision.Head.Words.Document, err)
			continue
		}
		out[wb.Branch] = md
	}
	return out, errs
}

// revise writes the revision a merged pull request authorized, once.
// What the store answers is carried out as the effect says: a document
// changed since the plan is said once on the pull request (the next cycle
// plans again), a refused dry run too, with why; anything else is an
// error the next cycle retries.
func (x *executor) revise(e lifecycle.Effect) bool {
	st := e.Pull
	m, rv := st.Marker, e.Revision
	doc := rv.Head.Words.Document
	if x.revisions == nil {
		return x.fail(e.Branch, fmt.Errorf("revision %d of %s not written: no revision store is configured",
			rv.Number(), doc))
	}
	if len(m.Receipts) != 1 {
		// The revision's change description names one receipt, by digest,
		// which is what the proof checks.
		return x.fail(e.Branch, fmt.Errorf("revision of %s not written: #%d records %d receipts, "+
			"a revision is written for one", doc, st.PR.Number, len(m.Receipts)))
	}
	path := m.Receipts[0]
	data, err := x.read(path)
	if err != nil {
		return x.fail(e.Branch, fmt.Errorf("error reading receipt %s on %s: %w", path, x.repo.DefaultBranch, err))
	}
	got, err := x.revisions.Write(x.ctx, rv, path, data)
	switch {
	case errors.Is(err, ErrChangedSincePlan):
		if !x.annotate(e, forge.Annotation{Comment: e.Text, Tag: e.Tag}, "error commenting on #%d: %w") {
			return false
		}
		x.act(e, fmt.Sprintf("nothing written: %v; planned again next cycle", err))
		return false
	case errors.Is(err, ErrRevisionRefused):
		text, tag := e.WitnessComment(err.Error())
		if !x.annotate(e, forge.Annotation{Comment: text, Tag: tag}, "error commenting on #%d: %w") {
			return false
		}
		return x.fail(e.Branch, fmt.Errorf("revision of %s for #%d not written: %w", doc, st.PR.Number, err))
	case err != nil:
		return x.fail(e.Branch, fmt.Errorf("error writing revision %d of %s for #%d: %w",
			rv.Number(), doc, st.PR.Number, err))
	}
	detail := fmt.Sprintf("wrote revision %d of %s, conditional on %s", got.Number, doc, rv.Head.Words.Condition)
	if got.Already {
		detail = fmt.Sprintf("revision %d of %s was already written for %s: not written again", got.Number, doc, path)
	}
	x.act(e, detail, "revision", got.Number)
	return true
}

// replan says on a merged pull request that its revision was not written
// and labels it done; the chain goes on to propose the change again.
func (x *executor) replan(e lifecycle.Effect) bool {
	if !x.labelDone(e, e.Evidence.Text) {
		return false
	}
	x.act(e, e.Reason)
	return true
}

// provenRevision proves a merged revision's receipts through the store
// (the revision written for each, applied, live holding the accepted
// values) and publishes them as proven; until the store can, the
// follow-up waits.
func (x *executor) provenRevision(e lifecycle.Effect, ref repoconfig.StoreRef, docs []plan.File) bool {
	st := e.Pull
	if x.revisions == nil {
		return x.fail(e.Branch, fmt.Errorf("the receipt of a revision of %s cannot be proven: no revision store is "+
			"configured", ref))
	}
	pol, polPath := e.Evidence.Policy()
	live := liveOf(e.Evidence.Verdicts)
	proven := make([]plan.File, 0, len(docs))
	for _, d := range docs {
		out, err := x.revisions.Prove(x.ctx, RevisionProof{Ref: ref, Receipt: d.Data, Path: d.Path,
			MergeCommit: st.PR.MergeCommitSHA, Live: live, Policy: pol, PolicyPath: polPath})
		if errors.Is(err, ErrNotProven) {
			a := x.action(e, fmt.Sprintf("merged %s; %v", short(st.PR.MergeCommitSHA), err))
			a.Kind = string(lifecycle.FollowUp)
			x.report(a)
			return true
		}
		if err != nil {
			return x.fail(e.Branch, err)
		}
		proven = append(proven, plan.File{Path: d.Path, Data: out})
	}
	run, comment, err := e.Evidence.Published(st, proven)
	if err != nil {
		return x.fail(e.Branch, err)
	}
	return x.publishProven(e, run, comment)
}

// liveOf reads a field's live value off the follow-up's verdicts.
func liveOf(vs []lifecycle.Verdict) func(object, field string) (any, bool) {
	return func(object, field string) (any, bool) {
		for _, v := range vs {
			if v.Change.Object.String() == object && v.Change.Field == field && !v.Gone {
				return v.Live, true
			}
		}
		return nil, false
	}
}
