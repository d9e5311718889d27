package bot

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"time"

	"github.com/backflow-dev/backflow/internal/diffbound"
	"github.com/backflow-dev/backflow/internal/forge"
	"github.com/backflow-dev/backflow/internal/lifecycle"
	"github.com/backflow-dev/backflow/internal/plan"
)

// Writer is the executor's port: what it reads of a repository while it
// carries out a chain of effects, and one operation per thing an effect
// does, in the words of the effect. Each write is composed once, over the
// forge's fine calls, in forge.Steps: a proposal is its commit, compared
// and swapped on the branch's expected head, its check and its pull
// request opened or updated; a close is the marker's reason, the comment,
// the ledger check and the close; setting the merge arms or disarms
// auto-merge or merges now.
type Writer interface {
	// The repository as the chain reads it.
	ReadFile(ctx context.Context, repo forge.Repo, sha, path string) ([]byte, error)
	ReadBranch(ctx context.Context, repo forge.Repo, branch, since string) (forge.Branch, error)
	ChangedFiles(ctx context.Context, repo forge.Repo, base, head string) (forge.Diff, error)

	// The writes.
	Propose(ctx context.Context, repo forge.Repo, p forge.Proposal) (forge.Proposed, error)
	PostCheck(ctx context.Context, repo forge.Repo, run forge.CheckRun, once forge.Once,
		complete func(forge.CheckRun) forge.CheckRun) (forge.CheckRun, bool, error)
	Annotate(ctx context.Context, repo forge.Repo, number int, a forge.Annotation) error
	CloseProposal(ctx context.Context, repo forge.Repo, number int, c forge.Closing) error
	DeleteBranch(ctx context.Context, repo forge.Repo, branch, expectedSHA string) error
	SetMerge(ctx context.Context, repo forge.Repo, pr forge.PullRequest, m forge.MergeMode) (forge.Merging, error)
	TrackIssue(ctx context.Context, repo forge.Repo, number int, issue forge.NewIssue,
		state *forge.PRState) (forge.Issue, error)
}

// executor carries out one repository's chains of effects, as the
// lifecycle decided them, through the forge. It decides nothing: what the
// forge may answer on the way (the branch exists, another process opened
// the pull request, auto-merge cannot be armed) is answered by the
// effect's own data. It stops a chain at the first effect that fails and
// reports it; the next cycle decides again. It reaches internal/lifecycle
// only through the effect types and the few methods on them that read the
// forge's answer and return data (an allow-list held by
// TestExecutorReachesTheLifecycleOnlyThroughEffects).
type executor struct {
	ctx    context.Context
	f      Writer
	repo   forge.Repo
	head   string // the default-branch commit the cycle read
	author forge.Author
	method forge.CommitMethod
	key    []byte
	dryRun bool
	// holds applies Hold and Release effects; nil when holding is off.
	holds HoldPort
	// now is the bot's clock, for the at-risk window a hold closes.
	now func() time.Time
	// read reads a file at the cycle's head through the bot's cache.
	read func(path string) ([]byte, error)
	rep  *RepoReport
	log  *slog.Logger
	// revisions writes and proves the revisions of units whose desired
	// state is in a revision store; nil without one.
	revisions Revisions

	rateLimit error
	// merges are the default branch's heads this cycle's own merges made.
	merges []string
}

// run carries out each chain in order, stopping at a rate limit.
func (x *executor) run(chains [][]lifecycle.Effect) {
	for _, c := range chains {
		x.apply(c)
	}
}

// apply carries out a chain of effects in order and stops at the first
// that fails, or once the forge rate-limits the cycle. This is the one
// place a dry run is decided: it reports the chain's first reported effect
// with every later step (auto-merge included) and applies none.
func (x *executor) apply(chain []lifecycle.Effect) {
	if x.dryRun {
		x.describe(chain)
		return
	}
	for _, e := range chain {
		if x.rateLimit != nil || !x.do(e) {
			return
		}
	}
}

// describe reports a chain in a dry run: each effect the report lists
// (open, update, close, ...) with the bookkeeping and the conditional
// steps after it (reviewers, labels, auto-merge) as its Then.
func (x *executor) describe(chain []lifecycle.Effect) {
	var lead *Action
	for _, e := range chain {
		a := x.action(e, e.Reason)
		switch {
		case e.Kind == lifecycle.AutoMerge || !e.Kind.Reported():
			if lead != nil {
				lead.Then = append(lead.Then, a)
				continue
			}
			if !e.Kind.Reported() {
				continue
			}
		}
		x.report(a)
		lead = &x.rep.Actions[len(x.rep.Actions)-1]
	}
	if lead != nil && len(lead.Then) > 0 {
		for _, t := range lead.Then {
			x.log.Info("then would "+t.Kind, "unit", t.Branch, "pr", t.PR, "detail", t.Detail)
		}
	}
}

// action is the report's line for one effect.
func (x *executor) action(e lifecycle.Effect, detail string) Action {
	a := Action{Kind: string(e.Kind), Branch: e.Branch, Detail: detail, DryRun: x.dryRun}
	if e.Pull != nil {
		a.PR, a.URL = e.Pull.PR.Number, e.Pull.PR.URL
	}
	if e.Issue != nil {
		a.PR, a.URL = e.Issue.Number, e.Issue.URL
	}
	return a
}

// act reports one effect done, logged with attrs besides the report's.
func (x *executor) act(e lifecycle.Effect, detail string, attrs ...any) {
	x.report(x.action(e, detail), attrs...)
}

// report adds a to the report and logs it under its kind, the effect's
// name, with attrs besides its own.
func (x *executor) report(a Action, attrs ...any) {
	x.rep.Actions = append(x.rep.Actions, a)
	verb := a.Kind
	if a.DryRun {
		verb = "would " + a.Kind
	}
	x.log.Info(verb, append([]any{"unit", a.Branch, "pr", a.PR, "detail", a.Detail}, attrs...)...)
}

// say reports what became of a unit's chain where no effect says it.
func (x *executor) say(kind lifecycle.Kind, branch, detail string) {
	x.report(Action{Kind: string(kind), Branch: branch, Detail: detail})
}

// baseMoved reports a unit left for the next cycle because the default
// branch moved off the commit its plan was made on.
func (x *executor) baseMoved(branch string) {
	x.say(lifecycle.Keep, branch, x.repo.DefaultBranch+" moved during the cycle; planned again next cycle")
}

func (x *executor) keep(branch string, pr forge.PullRequest, why string) {
	x.report(Action{Kind: string(lifecycle.Keep), Branch: branch, PR: pr.Number, URL: pr.URL, Detail: why})
}

// fail records an error of the repository (or of one unit) and keeps a
// rate limit so the cycle stops. It returns false, so an effect that
// failed says so in one line.
func (x *executor) fail(unit string, err error) bool {
	if _, ok := forge.IsRateLimited(err); ok {
		x.rateLimit = err
	}
	x.rep.Errors = append(x.rep.Errors, unitError(unit, err))
	x.log.Error("reconcile failed", "unit", unit, "class", ErrorClass(err), "error", err)
	return false
}

// do carries out one effect through the forge and reports whether the
// chain goes on.
func (x *executor) do(e lifecycle.Effect) bool {
	switch e.Kind {
	case lifecycle.Open:
		return x.open(e)
	case lifecycle.Update:
		return x.update(e)
	case lifecycle.Keep, lifecycle.Skip, lifecycle.FollowUp:
		x.act(e, e.Reason)
		return true
	case lifecycle.Close:
		return x.close(e)
	case lifecycle.Comment:
		return x.commentOnce(e)
	case lifecycle.Cleanup:
		return x.cleanup(e)
	case lifecycle.Disarm:
		if _, err := x.f.SetMerge(x.ctx, x.repo, e.Pull.PR, forge.MergeMode{Disarm: true}); err != nil {
			return x.fail(e.Branch, fmt.Errorf("error disabling auto-merge on #%d: %w", e.Pull.PR.Number, err))
		}
		e.Pull.PR.AutoMergeEnabled = false
		x.act(e, e.Reason)
		return true
	case lifecycle.Check:
		return x.check(e)
	case lifecycle.Record:
		e.Pull.Marker.Commits = e.Commits
		return x.record(e, forge.Annotation{}, "error recording commits on #%d: %w")
	case lifecycle.Review:
		set := forge.Annotation{Setup: forge.Setup{Users: e.Users, Teams: e.Teams}}
		if err := x.f.Annotate(x.ctx, x.repo, e.Pull.PR.Number, set); err != nil {
			// Reviewers are a courtesy: a refused request (say, the
			// author cannot review) does not stop the write-back.
			err = fmt.Errorf("requesting reviewers on #%d: %w", e.Pull.PR.Number, err)
			x.rep.Errors = append(x.rep.Errors, unitError(e.Branch, err))
		}
		return true
	case lifecycle.Label:
		return x.annotate(e, forge.Annotation{Setup: forge.Setup{Labels: e.Labels}}, "error labelling #%d: %w")
	case lifecycle.Unlabel:
		return x.annotate(e, forge.Annotation{Setup: forge.Setup{Unlabel: e.Labels}}, "error unlabelling #%d: %w")
	case lifecycle.AutoMerge:
		return x.autoMerge(e)
	case lifecycle.Proven:
		return x.proven(e)
	case lifecycle.Revise:
		return x.revise(e)
	case lifecycle.Replan:
		return x.replan(e)
	case lifecycle.Reverted:
		return x.reverted(e)
	case lifecycle.DriftIssue:
		return x.drift(e)
	case lifecycle.Hold, lifecycle.Release:
		return x.hold(e)
	case lifecycle.ListHolds:
		return x.record(e, forge.Annotation{}, "error listing the holds in place on #%d: %w")
	}
	return x.fail(e.Branch, fmt.Errorf("no way to apply a %q effect", e.Kind))
}

// postCheck posts run, unless once finds it posted already (a reused
// commit is not checked twice), and reports whether it was posted.
func (x *executor) postCheck(e lifecycle.Effect, run forge.CheckRun, once forge.Once,
	complete func(forge.CheckRun) forge.CheckRun) (forge.CheckRun, bool, bool) {
	run, posted, err := x.f.PostCheck(x.ctx, x.repo, run, once, complete)
	if err != nil {
		return run, false, x.fail(e.Branch, fmt.Errorf("error checking %s: %w", short(run.HeadSHA), err))
	}
	return run, posted, true
}

// check posts the effect's check run, or the whole-diff bound's verdict
// (computed only when the head has none of the bot's).
func (x *executor) check(e lifecycle.Effect) bool {
	once, complete := forge.Always, func(r forge.CheckRun) forge.CheckRun { return r }
	if e.IfUnchecked {
		once = forge.UnlessSame
	}
	if e.Bound != nil {
		once, complete = forge.Always, func(forge.CheckRun) forge.CheckRun { return x.bound(e) }
		if e.IfUnchecked {
			once = forge.UnlessAny
		}
	}
	run, posted, ok := x.postCheck(e, *e.Run, once, complete)
	if !posted {
		return ok
	}
	detail := e.Reason
	if e.Bound != nil {
		detail = run.Conclusion + ": " + run.Title
	}
	x.act(e, detail)
	return true
}

// open proposes a change on its new branch: the commit, its check and
// the pull request, filling in the chain's Pull. What the forge says
// mid-way is answered by the effect: the default branch moved, the branch
// exists already, another process proposed the change first.
func (x *executor) open(e lifecycle.Effect) bool {
	p := e.Proposal
	if p.FilesErr != nil {
		return x.fail(e.Branch, p.FilesErr)
	}
	base, ok := x.writeBase(e)
	if !ok {
		return false
	}
	req := x.proposal(e, base, 0)
	req.Commit = p.CommitOn(base, x.repo, x.author, x.method, "", false)
	// Another process may have opened this proposal's pull request, and
	// even merged it and deleted its branch, since the cycle listed the
	// pull requests: it is not opened twice.
	req.Elsewhere = func(prs []forge.PullRequest, sha string) (forge.PullRequest, bool) {
		return p.ProposedElsewhere(prs, sha, base)
	}
	got, err := x.f.Propose(x.ctx, x.repo, req)
	if err == nil && got.Moved != nil {
		// The branch exists without an open pull request: left by a crash
		// after the push, by another backflow process, or by a person. Or
		// the default branch moved off base since it was read.
		if req, ok = x.recoverBranch(e, req); !ok {
			return false
		}
		got, err = x.f.Propose(x.ctx, x.repo, req)
		if err == nil && got.Moved != nil {
			err = got.Moved
		}
	}
	switch {
	case err != nil:
		return x.fail(e.Branch, fmt.Errorf("error opening pull request for %s: %w", e.Branch, err))
	case got.Listed:
		x.keep(e.Branch, got.PR, "already proposed by another process")
		return false
	case got.Elsewhere:
		// Another process opened it first; the next cycle follows it.
		x.keep(e.Branch, got.PR, "already opened by another process")
		return false
	}
	e.Pull.PR, e.Pull.Marker = got.PR, e.Marker.Written(got.SHA, base)
	x.act(e, got.PR.Title+p.MergeNote())
	return true
}

// proposal is what an Open or Update proposes on base, to pull request
// number (0 opens one), its commit still to be said: the proposal's
// check on the commit and its body with the marker the write records,
// sealed for the pull request's number.
func (x *executor) proposal(e lifecycle.Effect, base string, number int) forge.Proposal {
	p := e.Proposal
	return forge.Proposal{Check: p.CheckRun, Number: number, Title: p.Title(), Draft: e.Pull.PR.Draft,
		Body: func(sha string, n int) string {
			return p.Body(e.Marker.Written(sha, base).Sealed(x.key, x.repo.FullName(), n))
		}}
}

// writeBase is the default-branch commit a new write-back is made on: the
// cycle's head while the default branch is still there, or this cycle's
// own merge of another unit when that merge left every file the write-back
// commits as it read at the cycle's head (the git method can only clone
// the branch's head). Any other move, by another backflow process or a
// person, and a merge that changed those files, plan the unit again next
// cycle (ok false).
func (x *executor) writeBase(e lifecycle.Effect) (string, bool) {
	b, err := x.f.ReadBranch(x.ctx, x.repo, x.repo.DefaultBranch, "")
	head := b.Head
	switch {
	case err != nil:
		return "", x.fail(e.Branch, fmt.Errorf("error reading the head of %s: %w", x.repo.DefaultBranch, err))
	case head == e.Base:
		return head, true
	case e.BaseMoved(head, x.merges):
		x.baseMoved(e.Branch)
		return "", false
	}
	same, err := x.sameFiles(e.Base, head, e.Proposal.Files)
	if err != nil {
		return "", x.fail(e.Branch, err)
	}
	if !same {
		x.say(lifecycle.Keep, e.Branch,
			"this cycle's merge of another unit changed this write-back's files; planned again next cycle")
		return "", false
	}
	return head, true
}

// sameFiles reports whether every path a write-back commits reads the same
// at head as at base (absent at both counts as the same).
func (x *executor) sameFiles(base, head string, files map[string][]byte) (bool, error) {
	for _, p := range slices.Sorted(maps.Keys(files)) {
		var got [2][]byte
		var missing [2]bool
		for i, sha := range []string{base, head} {
			data, err := x.f.ReadFile(x.ctx, x.repo, sha, p)
			switch {
			case errors.Is(err, forge.ErrNotFound):
				missing[i] = true
			case err != nil:
				return false, fmt.Errorf("error reading %s at %s: %w", p, short(sha), err)
			}
			got[i] = data
		}
		if missing[0] != missing[1] || !bytes.Equal(got[0], got[1]) {
			return false, nil
		}
	}
	return true, nil
}

// short is a commit SHA's first twelve characters.
func short(sha string) string {
	if len(sha) > 12 {
		return sha[:12]
	}
	return sha
}

// bound is the Bound check's run with the verdict of the whole-diff bound
// (diffbound.Check, the function `backflow verify --repo` runs in CI) over
// the files GitHub reports the head changes from its merge base with the
// default branch, each read at both ends by its tree entry, against the
// default branch's repo config and policy the effect carries. A changed
// entry that is not a regular file, or a diff that cannot be read whole,
// fails it.
func (x *executor) bound(e lifecycle.Effect) forge.CheckRun {
	in, head := *e.Bound, e.Run.HeadSHA
	in.Base, in.Head, in.Changed = map[string][]byte{}, map[string][]byte{}, nil
	d, err := x.f.ChangedFiles(x.ctx, x.repo, x.head, head)
	if err != nil {
		return e.Bounded(diffbound.Result{}, []string{"the pull request's diff could not be read: " + err.Error()})
	}
	var problems []string
	for _, c := range d.Files {
		in.Changed = append(in.Changed, c.Path)
		if c.PreviousPath != "" && c.PreviousPath != c.Path {
			in.Changed = append(in.Changed, c.PreviousPath)
		}
	}
	// One side at a time: the adapter reads a commit's tree once.
	for _, side := range []struct {
		sha  string
		into map[string][]byte
	}{{d.MergeBase, in.Base}, {head, in.Head}} {
		for _, p := range in.Changed {
			data, err := x.f.ReadFile(x.ctx, x.repo, side.sha, p)
			switch {
			case err == nil:
				side.into[p] = data
			case errors.Is(err, forge.ErrNotFound):
			case errors.Is(err, forge.ErrNotRegularFile):
				why := "changed, and not a regular file at %s: never a receipt or a values file"
				problems = append(problems, p+": "+fmt.Sprintf(why, short(side.sha)))
			default:
				problems = append(problems, fmt.Sprintf("%s: could not be read at %s: %v", p, short(side.sha), err))
			}
		}
	}
	return e.Bounded(diffbound.Check(in), problems)
}

// recoverBranch reads a write-back branch that exists with no open pull
// request and answers it as the proposal says, returning req to propose
// again: a commit of the bot for this very proposal on base is reused; a
// branch of the bot's own commits is rewritten; anything else holds a
// person's work and is left alone (ok false).
func (x *executor) recoverBranch(e lifecycle.Effect, req forge.Proposal) (forge.Proposal, bool) {
	base := req.Commit.BaseSHA
	cur, err := x.f.ReadBranch(x.ctx, x.repo, e.Branch, base)
	if errors.Is(err, forge.ErrNotFound) {
		// No branch: the conflict was the default branch moving off base
		// (the git method clones its head), by another process or a person.
		x.baseMoved(e.Branch)
		return req, false
	}
	if err != nil {
		return req, x.fail(e.Branch, fmt.Errorf("error committing to %s: %w", e.Branch, err))
	}
	req.Recovered = true
	switch e.Proposal.Recover(base, cur.Commits) {
	case lifecycle.LeaveAlone:
		x.say(lifecycle.Skip, e.Branch, "the branch exists with commits backflow did not make; it is left alone")
		return req, false
	case lifecycle.Reuse:
		req.Reuse = cur.Head
	default:
		req.Commit = e.Proposal.CommitOn(base, x.repo, x.author, x.method, cur.Head, true)
	}
	return req, true
}

// update replaces the branch with one commit of the new proposal on the
// default branch's head, compare-and-swapping on the head the pull request
// had, and updates the pull request.
func (x *executor) update(e lifecycle.Effect) bool {
	p, st := e.Proposal, e.Pull
	if p.FilesErr != nil {
		return x.fail(e.Branch, p.FilesErr)
	}
	req := x.proposal(e, e.Base, st.PR.Number)
	req.Commit = p.CommitOn(e.Base, x.repo, x.author, x.method, e.Expected, true)
	got, err := x.f.Propose(x.ctx, x.repo, req)
	switch {
	case err != nil:
		return x.fail(e.Branch, fmt.Errorf("error updating #%d: %w", st.PR.Number, err))
	case got.Moved != nil:
		x.keep(e.Branch, st.PR, "the branch moved while updating; looked at again next cycle")
		return false
	}
	x.act(e, e.Reason)
	got.PR.AutoMergeEnabled = false // disarmed before the rewrite (the Disarm effect)
	st.PR, st.Marker = got.PR, e.Marker.Written(got.SHA, e.Base)
	return true
}

// autoMerge arms GitHub's auto-merge pinned to the head or, where it cannot
// be armed because the pull request is already mergeable (or the
// repository does not allow auto-merge), merges it over REST pinned to the
// head once the effect finds it mergeable and green. A merge carries out
// the effect's AfterMerge (the branch's cleanup) in the same cycle.
func (x *executor) autoMerge(e lifecycle.Effect) bool {
	pr, head := e.Pull.PR, e.Head
	if head == "" {
		head = pr.HeadSHA // the head this chain's write made
	}
	ready := func(cur forge.PullRequest) (bool, string) { return e.Mergeable(cur, head) }
	got, err := x.f.SetMerge(x.ctx, x.repo, pr, forge.MergeMode{Head: head, Method: e.Method, Ready: ready})
	switch {
	case err != nil:
		return x.fail(pr.HeadRef, fmt.Errorf("error merging #%d: %w", pr.Number, err))
	case got.Armed:
		x.act(e, "auto-merge armed at "+short(head))
	case got.Merged != "":
		x.merges = append(x.merges, got.Merged)
		x.report(Action{Kind: string(lifecycle.Merge), Branch: pr.HeadRef, PR: pr.Number, URL: pr.URL,
			Detail: fmt.Sprintf("merged %s as %s", short(head), short(got.Merged))})
		e.Pull.PR.State, e.Pull.PR.Merged = forge.StateClosed, true
		x.apply(e.AfterMerge)
	case got.Refused != nil:
		// An answer the adapter does not recognise: rather than fail the
		// same way every cycle, merge over REST pinned to the head once
		// GitHub calls it mergeable and green, and until then say once on
		// the pull request why it waits, quoting the error.
		if c, once := e.RefusedComment(got.Refused.Error()); once {
			return x.commentOnce(c)
		}
		x.keep(pr.HeadRef, pr, "auto-merge refused ("+got.Refused.Error()+"); "+got.Waiting)
	default:
		x.keep(pr.HeadRef, pr, got.Waiting)
	}
	return true
}

// annotate adds a to the pull request.
func (x *executor) annotate(e lifecycle.Effect, a forge.Annotation, format string) bool {
	if err := x.f.Annotate(x.ctx, x.repo, e.Pull.PR.Number, a); err != nil {
		return x.fail(e.Branch, fmt.Errorf(format, e.Pull.PR.Number, err))
	}
	return true
}

// record adds a to the pull request and then writes its marker, as the
// effect changed it, into its body.
func (x *executor) record(e lifecycle.Effect, a forge.Annotation, format string) bool {
	st := e.Pull
	body := st.Marker.Sealed(x.key, x.repo.FullName(), st.PR.Number).Into(st.PR.Body)
	a.Body = &body
	if !x.annotate(e, a, format) {
		return false
	}
	st.PR.Body = body
	return true
}

// commentOnce adds a comment the marker has no note of, and records the
// note. The comment carries the note hidden (the effect's Tag), so a crash
// between the comment and the marker update does not repeat it.
func (x *executor) commentOnce(e lifecycle.Effect) bool {
	m := e.Pull.Marker
	notes := m.Notes
	m.Notes = append(slices.Clone(notes), e.Note)
	if !x.record(e, forge.Annotation{Comment: e.Text, Tag: e.Tag}, "error commenting on #%d: %w") {
		m.Notes = notes // not recorded: the note is not the marker's
		return false
	}
	x.act(e, e.Text)
	return true
}

// close records why in the marker, comments and closes the pull request.
// The reason goes into the marker first: a pull request closed without it
// was closed by a person, and its proposal is never reopened. The close
// goes into the App's ledger too (the effect's Run), where no edit of the
// body reaches: an older marker pasted back cannot make it a person's.
func (x *executor) close(e lifecycle.Effect) bool {
	st := e.Pull
	st.Marker.Closed = e.Closed
	body := st.Marker.Sealed(x.key, x.repo.FullName(), st.PR.Number).Into(st.PR.Body)
	closing := forge.Closing{Body: body, Comment: e.Text, Ledger: *e.Run}
	if err := x.f.CloseProposal(x.ctx, x.repo, st.PR.Number, closing); err != nil {
		return x.fail(e.Branch, fmt.Errorf("error closing #%d: %w", st.PR.Number, err))
	}
	x.act(e, e.Text)
	st.PR.Body, st.PR.State = body, forge.StateClosed
	return true
}

// cleanup deletes the branch of a closed pull request (only while it still
// points at the pull request's head: a person's later commit is never
// deleted) and records that in the marker, so it is done once.
func (x *executor) cleanup(e lifecycle.Effect) bool {
	st := e.Pull
	detail := "branch deleted"
	err := x.f.DeleteBranch(x.ctx, x.repo, st.Marker.Branch, st.PR.HeadSHA)
	switch {
	case err == nil:
	case errors.Is(err, forge.ErrNotFound):
		detail = "branch already gone"
	case errors.Is(err, forge.ErrConflict):
		detail = "branch moved since the pull request closed; left alone"
	default:
		return x.fail(e.Branch, fmt.Errorf("error deleting branch %s: %w", st.Marker.Branch, err))
	}
	st.Marker.BranchDeleted = true
	if !x.record(e, forge.Annotation{}, "error recording the cleanup on #%d: %w") {
		return false
	}
	x.act(e, detail)
	return true
}

// proven publishes a merged write-back's receipts, as the default branch
// holds them, with status proven and the merge commit: a check run on the
// merge commit, a comment, then the label, which marks the follow-up done.
func (x *executor) proven(e lifecycle.Effect) bool {
	st := e.Pull
	m := st.Marker
	var docs []plan.File
	for _, p := range m.Receipts {
		// The receipt as the default branch holds it now, read at the
		// cycle's head like everything else the bot reads.
		data, err := x.read(p)
		if err != nil {
			return x.fail(e.Branch, fmt.Errorf("error reading receipt %s on %s: %w", p, x.repo.DefaultBranch, err))
		}
		docs = append(docs, plan.File{Path: p, Data: data})
	}
	if e.Evidence.Store != nil {
		return x.provenRevision(e, *e.Evidence.Store, docs)
	}
	run, comment, err := e.Evidence.Proven(st, docs)
	if err != nil {
		return x.fail(e.Branch, err)
	}
	return x.publishProven(e, run, comment)
}

// publishProven posts the proven check run on the merge commit, comments
// and labels the pull request done.
func (x *executor) publishProven(e lifecycle.Effect, run forge.CheckRun, comment string) bool {
	pr, m := e.Pull.PR, e.Pull.Marker
	if _, _, ok := x.postCheck(e, run, forge.UnlessSame, nil); !ok {
		return false
	}
	if !x.labelDone(e, comment) {
		return false
	}
	x.act(e, e.Reason, "environment", m.Environment, "merge", pr.MergeCommitSHA)
	return true
}

// reverted says on the pull request that the fix did not stick and labels
// it, so it is not looked at again.
func (x *executor) reverted(e lifecycle.Effect) bool {
	if !x.labelDone(e, e.Evidence.Text) {
		return false
	}
	m, v := e.Pull.Marker, e.Evidence.Reverted
	x.act(e, e.Reason, "environment", m.Environment, "object", v.Change.Object, "field", v.Change.Field)
	return true
}

// labelDone comments the follow-up's outcome once (the evidence's tag)
// and adds its label, which marks the follow-up done.
func (x *executor) labelDone(e lifecycle.Effect, comment string) bool {
	a := forge.Annotation{Comment: comment, Tag: e.Evidence.Tag, Setup: forge.Setup{Labels: []string{e.Evidence.Label}}}
	return x.annotate(e, a, "error commenting on #%d: %w")
}

// drift opens or edits the drift tracking issue.
func (x *executor) drift(e lifecycle.Effect) bool {
	is := e.Issue
	want := forge.NewIssue{Title: is.Title, Body: is.Body, Labels: is.Labels}
	got, err := x.f.TrackIssue(x.ctx, x.repo, is.Number, want, is.State)
	switch {
	case err != nil && is.Number == 0:
		return x.fail("", fmt.Errorf("error opening the drift tracking issue: %w", err))
	case err != nil:
		return x.fail("", fmt.Errorf("error updating the drift tracking issue #%d: %w", is.Number, err))
	case is.Number == 0:
		is.Number, is.URL = got.Number, got.URL
	}
	x.act(e, is.Done)
	return true
}
