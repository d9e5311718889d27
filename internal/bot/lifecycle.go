package bot

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/backflow-dev/backflow/internal/diffbound"
	"github.com/backflow-dev/backflow/internal/forge"
	"github.com/backflow-dev/backflow/internal/lifecycle"
	"github.com/backflow-dev/backflow/internal/plan"
)

// act reports one effect: done, or in a dry run only described.
func (rc *repoCycle) act(e lifecycle.Effect, detail string) {
	a := Action{Kind: string(e.Kind), Branch: e.Branch, Detail: detail, DryRun: rc.b.opts.DryRun}
	if e.Pull != nil {
		a.PR, a.URL = e.Pull.PR.Number, e.Pull.PR.URL
	}
	if e.Issue != nil {
		a.PR, a.URL = e.Issue.Number, e.Issue.URL
	}
	rc.actAction(a)
}

func (rc *repoCycle) actAction(a Action) {
	rc.rep.Actions = append(rc.rep.Actions, a)
	verb := a.Kind
	if a.DryRun {
		verb = "would " + a.Kind
	}
	rc.log.Info(verb, "unit", a.Branch, "pr", a.PR, "detail", a.Detail)
}

// apply applies a chain of effects in order and stops at the first that
// fails or once the forge rate-limits the cycle. This is the one place a
// dry run is decided: it reports every effect and applies none.
func (rc *repoCycle) apply(chain []lifecycle.Effect) {
	for _, e := range chain {
		if rc.rateLimit != nil {
			return
		}
		if rc.b.opts.DryRun {
			if e.Kind.Reported() {
				rc.act(e, e.Reason)
			}
			continue
		}
		if !rc.do(e) {
			return
		}
	}
}

// do applies one effect through the forge and reports whether the chain
// goes on.
func (rc *repoCycle) do(e lifecycle.Effect) bool {
	switch e.Kind {
	case lifecycle.Open:
		return rc.open(e)
	case lifecycle.Update:
		return rc.update(e)
	case lifecycle.Keep, lifecycle.Skip, lifecycle.Wait:
		rc.act(e, e.Reason)
		return true
	case lifecycle.Close:
		return rc.close(e)
	case lifecycle.Comment:
		return rc.commentOnce(e)
	case lifecycle.Cleanup:
		return rc.cleanup(e)
	case lifecycle.Disarm:
		if err := rc.b.opts.Forge.DisableAutoMerge(rc.ctx, rc.repo, e.Pull.PR); err != nil {
			return rc.fail(e.Branch, fmt.Errorf("error disabling auto-merge on #%d: %w", e.Pull.PR.Number, err))
		}
		e.Pull.PR.AutoMergeEnabled = false
		rc.act(e, e.Reason)
		return true
	case lifecycle.Check:
		if e.IfUnchecked {
			runs, err := rc.b.opts.Forge.ListCheckRuns(rc.ctx, rc.repo, e.Run.HeadSHA, e.Run.Name)
			if err != nil {
				return rc.fail(e.Branch, fmt.Errorf("error listing the %s checks on %s: %w", e.Run.Name, e.Run.HeadSHA, err))
			}
			if lifecycle.Checked(runs, *e.Run) || e.Bound && slices.ContainsFunc(runs, func(r forge.CheckRun) bool { return r.Mine }) {
				return true
			}
		}
		run, detail := *e.Run, e.Reason
		if e.Bound {
			run = rc.bound(run)
			detail = run.Conclusion + ": " + run.Title
		}
		if _, err := rc.b.opts.Forge.CreateCheckRun(rc.ctx, rc.repo, run); err != nil {
			return rc.fail(e.Branch, fmt.Errorf("error creating the %s check on %s: %w", run.Name, run.HeadSHA, err))
		}
		rc.act(e, detail)
		return true
	case lifecycle.Record:
		e.Pull.Marker.Commits = e.Commits
		return rc.saveMarker(e, "error recording commits on #%d: %w")
	case lifecycle.Review:
		if err := rc.b.opts.Forge.RequestReviewers(rc.ctx, rc.repo, e.Pull.PR.Number, e.Users, e.Teams); err != nil {
			// Reviewers are a courtesy: a refused request (say, the
			// author cannot review) does not stop the write-back.
			rc.rep.Errors = append(rc.rep.Errors, unitError(e.Branch, fmt.Errorf("requesting reviewers on #%d: %w", e.Pull.PR.Number, err)))
		}
		return true
	case lifecycle.Label:
		if err := rc.b.opts.Forge.AddLabels(rc.ctx, rc.repo, e.Pull.PR.Number, e.Labels...); err != nil {
			return rc.fail(e.Branch, fmt.Errorf("error labelling #%d: %w", e.Pull.PR.Number, err))
		}
		return true
	case lifecycle.Unlabel:
		for _, l := range e.Labels {
			if err := rc.b.opts.Forge.RemoveLabel(rc.ctx, rc.repo, e.Pull.PR.Number, l); err != nil {
				return rc.fail(e.Branch, fmt.Errorf("error unlabelling #%d: %w", e.Pull.PR.Number, err))
			}
		}
		return true
	case lifecycle.ArmAutoMerge:
		return rc.autoMerge(e)
	case lifecycle.Prove:
		return rc.proven(e)
	case lifecycle.Revert:
		return rc.reverted(e)
	case lifecycle.Drift:
		return rc.drift(e)
	}
	return rc.fail(e.Branch, fmt.Errorf("no way to apply a %q effect", e.Kind))
}

// open commits a proposal to its new branch and opens its pull request.
// What the forge says mid-way is read and decided by the lifecycle: the
// default branch moved, the branch exists already, another process opened
// the pull request first.
func (rc *repoCycle) open(e lifecycle.Effect) bool {
	p := e.Proposal
	if p.FilesErr != nil {
		return rc.fail(e.Branch, p.FilesErr)
	}
	f := rc.b.opts.Forge
	base, ok := rc.writeBase(e)
	if !ok {
		return false
	}
	sha, err := f.Commit(rc.ctx, rc.in.CommitRequestOn(base, rc.repo, p, rc.author, rc.b.opts.CommitMethod, "", false))
	recovered := errors.Is(err, forge.ErrConflict)
	if recovered {
		// The branch exists without an open pull request: left by a crash
		// after the push, by another backflow process, or by a person. Or
		// the default branch moved off base since it was read.
		sha, err = rc.recoverBranch(e, base)
	}
	if err != nil {
		return rc.fail(e.Branch, fmt.Errorf("error committing to %s: %w", e.Branch, err))
	}
	if sha == "" {
		return false
	}
	// Another process may have opened this proposal's pull request, and
	// even merged it and deleted its branch, since the cycle listed the
	// pull requests: it is not opened twice. A pull request, once opened,
	// stays listed, so looking after the push closes the race.
	prs, err := f.ListPullRequests(rc.ctx, rc.repo, forge.PullRequestFilter{Head: e.Branch, State: forge.StateAll})
	if err != nil {
		return rc.fail(e.Branch, fmt.Errorf("error listing pull requests of %s: %w", e.Branch, err))
	}
	if pr, done := rc.in.ProposedElsewhere(prs, p, sha, base); done {
		if !recovered && pr.HeadSHA != sha {
			// The branch this cycle just created holds a duplicate: it
			// goes, unless something moved it since.
			if err := f.DeleteBranch(rc.ctx, rc.repo, e.Branch, sha); err != nil && !errors.Is(err, forge.ErrConflict) && !errors.Is(err, forge.ErrNotFound) {
				return rc.fail(e.Branch, fmt.Errorf("error deleting branch %s: %w", e.Branch, err))
			}
		}
		rc.keep(e.Branch, pr, "already proposed by another process")
		return false
	}
	run := p.CheckRun(sha)
	checked := false
	if recovered {
		// A reused commit may carry this check already, from the cycle
		// that pushed it and then failed: it is not written twice.
		runs, err := f.ListCheckRuns(rc.ctx, rc.repo, sha, CheckName)
		if err != nil {
			return rc.fail(e.Branch, fmt.Errorf("error listing the %s checks on %s: %w", CheckName, sha, err))
		}
		checked = lifecycle.Checked(runs, run)
	}
	if !checked {
		if _, err := f.CreateCheckRun(rc.ctx, rc.repo, run); err != nil {
			return rc.fail(e.Branch, fmt.Errorf("error creating the %s check on %s: %w", CheckName, sha, err))
		}
	}
	m := rc.in.Marker(p, []string{sha}, nil)
	m.Base = base
	// The number is known once opened: the marker is sealed for none, then
	// for the pull request's number.
	pr, err := f.CreatePullRequest(rc.ctx, rc.repo, forge.NewPullRequest{Title: p.Title(),
		Body: p.Body(rc.sealed(m, 0)), Head: e.Branch, Base: rc.repo.DefaultBranch, Draft: rc.cfg.PullRequests.Draft})
	if errors.Is(err, forge.ErrConflict) {
		// Another process opened it first; the next cycle follows it.
		pr, err = f.FindOpenPullRequest(rc.ctx, rc.repo, e.Branch)
		if err != nil {
			return rc.fail(e.Branch, fmt.Errorf("error opening pull request for %s: %w", e.Branch, err))
		}
		rc.keep(e.Branch, pr, "already opened by another process")
		return false
	}
	if err != nil {
		return rc.fail(e.Branch, fmt.Errorf("error opening pull request for %s: %w", e.Branch, err))
	}
	body := p.Body(rc.sealed(m, pr.Number))
	if _, err := f.UpdatePullRequest(rc.ctx, rc.repo, pr.Number, forge.PullRequestUpdate{Body: &body}); err != nil {
		return rc.fail(e.Branch, fmt.Errorf("error sealing the marker of #%d: %w", pr.Number, err))
	}
	pr.Body = body
	rc.log.Info("opened", "unit", p.WriteBack.Unit, "pr", pr.Number)
	st := &lifecycle.Pull{PR: pr, Marker: m}
	rc.act(lifecycle.Effect{Kind: lifecycle.Open, Branch: e.Branch, Pull: st}, pr.Title+p.MergeNote())
	rc.apply(rc.in.Finish(st, p, sha, nil, true))
	return true
}

// writeBase is the default-branch commit a new write-back is made on: the
// cycle's head while the default branch is still there, or this cycle's
// own merge of another unit when that merge left every file the write-back
// commits as it read at the cycle's head (the git method can only clone
// the branch's head). Any other move, by another backflow process or a
// person, and a merge that changed those files, plan the unit again next
// cycle (ok false).
func (rc *repoCycle) writeBase(e lifecycle.Effect) (string, bool) {
	f := rc.b.opts.Forge
	head, err := f.BranchHead(rc.ctx, rc.repo, rc.repo.DefaultBranch)
	switch {
	case err != nil:
		return "", rc.fail(e.Branch, fmt.Errorf("error reading the head of %s: %w", rc.repo.DefaultBranch, err))
	case rc.in.BaseMoved(head, rc.merges):
		rc.actAction(Action{Kind: string(lifecycle.Keep), Branch: e.Branch, Detail: rc.repo.DefaultBranch + " moved during the cycle; planned again next cycle"})
		return "", false
	case head == rc.head:
		return head, true
	}
	same, err := rc.sameFiles(head, e.Proposal.Files)
	if err != nil {
		return "", rc.fail(e.Branch, err)
	}
	if !same {
		rc.actAction(Action{Kind: string(lifecycle.Keep), Branch: e.Branch, Detail: "this cycle's merge of another unit changed this write-back's files; planned again next cycle"})
		return "", false
	}
	return head, true
}

// sameFiles reports whether every path a write-back commits reads the same
// at head as at the cycle's head (absent at both counts as the same).
func (rc *repoCycle) sameFiles(head string, files map[string][]byte) (bool, error) {
	for _, p := range slices.Sorted(maps.Keys(files)) {
		var got [2][]byte
		var missing [2]bool
		for i, sha := range []string{rc.head, head} {
			data, err := rc.b.opts.Forge.ReadFile(rc.ctx, rc.repo, sha, p)
			switch {
			case errors.Is(err, forge.ErrNotFound):
				missing[i] = true
			case err != nil:
				return false, fmt.Errorf("error reading %s at %s: %w", p, lifecycle.Short(sha), err)
			}
			got[i] = data
		}
		if missing[0] != missing[1] || !bytes.Equal(got[0], got[1]) {
			return false, nil
		}
	}
	return true, nil
}

// bound is run with the verdict of the whole-diff bound (diffbound.Check,
// the function `backflow verify --repo` runs in CI) over the files GitHub
// reports the head changes from its merge base with the default branch,
// each read at both ends by its tree entry, against the default branch's
// repo config and policy. A changed entry that is not a regular file, or
// a diff that cannot be read whole, fails it.
func (rc *repoCycle) bound(run forge.CheckRun) forge.CheckRun {
	f := rc.b.opts.Forge
	in := rc.in.BoundInput()
	d, err := f.ChangedFiles(rc.ctx, rc.repo, rc.head, run.HeadSHA)
	if err != nil {
		return lifecycle.BoundRun(run, diffbound.Result{}, []string{"the pull request's diff could not be read: " + err.Error()})
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
	}{{d.MergeBase, in.Base}, {run.HeadSHA, in.Head}} {
		for _, p := range in.Changed {
			data, err := f.ReadFile(rc.ctx, rc.repo, side.sha, p)
			switch {
			case err == nil:
				side.into[p] = data
			case errors.Is(err, forge.ErrNotFound):
			case errors.Is(err, forge.ErrNotRegularFile):
				problems = append(problems, fmt.Sprintf("%s: changed, and not a regular file at %s: never a receipt or a values file", p, lifecycle.Short(side.sha)))
			default:
				problems = append(problems, fmt.Sprintf("%s: could not be read at %s: %v", p, lifecycle.Short(side.sha), err))
			}
		}
	}
	return lifecycle.BoundRun(run, diffbound.Check(in), problems)
}

func (rc *repoCycle) keep(branch string, pr forge.PullRequest, why string) {
	rc.actAction(Action{Kind: string(lifecycle.Keep), Branch: branch, PR: pr.Number, URL: pr.URL, Detail: why})
}

// recoverBranch reads a write-back branch that exists with no open pull
// request and lets the lifecycle decide: a commit of the bot for this very
// proposal on the current head is reused; a branch of the bot's own commits
// is rewritten; anything else holds a person's work and is left alone (sha
// "").
func (rc *repoCycle) recoverBranch(e lifecycle.Effect, base string) (string, error) {
	f := rc.b.opts.Forge
	cur, err := f.BranchHead(rc.ctx, rc.repo, e.Branch)
	if errors.Is(err, forge.ErrNotFound) {
		// No branch: the conflict was the default branch moving off base
		// (the git method clones its head), by another process or a person.
		rc.actAction(Action{Kind: string(lifecycle.Keep), Branch: e.Branch, Detail: rc.repo.DefaultBranch + " moved during the cycle; planned again next cycle"})
		return "", nil
	}
	if err != nil {
		return "", err
	}
	commits, err := f.CommitsSince(rc.ctx, rc.repo, base, cur)
	if err != nil {
		return "", err
	}
	switch rc.in.Recover(e.Proposal, base, commits) {
	case lifecycle.LeaveAlone:
		rc.actAction(Action{Kind: string(lifecycle.Skip), Branch: e.Branch, Detail: "the branch exists with commits backflow did not make; it is left alone"})
		return "", nil
	case lifecycle.Reuse:
		return cur, nil
	}
	return f.Commit(rc.ctx, rc.in.CommitRequestOn(base, rc.repo, e.Proposal, rc.author, rc.b.opts.CommitMethod, cur, true))
}

// update replaces the branch with one commit of the new proposal on the
// current default branch and updates the pull request.
func (rc *repoCycle) update(e lifecycle.Effect) bool {
	p, st := e.Proposal, e.Pull
	if p.FilesErr != nil {
		return rc.fail(e.Branch, p.FilesErr)
	}
	f := rc.b.opts.Forge
	sha, err := f.Commit(rc.ctx, rc.in.CommitRequest(rc.repo, p, rc.author, rc.b.opts.CommitMethod, st.PR.HeadSHA, true))
	if errors.Is(err, forge.ErrConflict) {
		rc.act(lifecycle.Effect{Kind: lifecycle.Keep, Branch: e.Branch, Pull: st}, "the branch moved while updating; looked at again next cycle")
		return false
	}
	if err != nil {
		return rc.fail(e.Branch, fmt.Errorf("error committing to %s: %w", e.Branch, err))
	}
	if _, err := f.CreateCheckRun(rc.ctx, rc.repo, p.CheckRun(sha)); err != nil {
		return rc.fail(e.Branch, fmt.Errorf("error creating the %s check on %s: %w", CheckName, sha, err))
	}
	m := rc.in.Marker(p, append(st.Marker.Commits[:len(st.Marker.Commits):len(st.Marker.Commits)], sha), st.Marker)
	title, body := p.Title(), p.Body(rc.sealed(m, st.PR.Number))
	pr, err := f.UpdatePullRequest(rc.ctx, rc.repo, st.PR.Number, forge.PullRequestUpdate{Title: &title, Body: &body})
	if err != nil {
		return rc.fail(e.Branch, fmt.Errorf("error updating #%d: %w", st.PR.Number, err))
	}
	rc.act(e, e.Reason)
	pr.HeadSHA = sha
	pr.AutoMergeEnabled = false // disarmed before the rewrite (the Disarm effect)
	next := &lifecycle.Pull{PR: pr, Marker: m}
	rc.apply(rc.in.Finish(next, p, sha, st.PR.Labels, false))
	return true
}

// autoMerge arms GitHub's auto-merge pinned to the head or, where it cannot
// be armed because the pull request is already mergeable (or the
// repository does not allow auto-merge), merges it over REST pinned to the
// head once the lifecycle finds it mergeable and green. A merge cleans the
// branch up in the same cycle.
func (rc *repoCycle) autoMerge(e lifecycle.Effect) bool {
	f := rc.b.opts.Forge
	pr, head := e.Pull.PR, e.Head
	err := f.EnableAutoMerge(rc.ctx, rc.repo, pr, head, e.Method)
	switch {
	case err == nil:
		rc.act(e, "auto-merge armed at "+lifecycle.Short(head))
		return true
	case errors.Is(err, forge.ErrAlreadyMergeable):
	case errors.Is(err, forge.ErrAutoMergeNotAllowed):
		cur, err := f.GetPullRequest(rc.ctx, rc.repo, pr.Number)
		if err != nil {
			return rc.fail(pr.HeadRef, fmt.Errorf("error reading #%d: %w", pr.Number, err))
		}
		if ok, why := lifecycle.MergeNow(cur, head); !ok {
			rc.keep(pr.HeadRef, pr, why)
			return true
		}
	case errors.Is(err, forge.ErrConflict):
		rc.keep(pr.HeadRef, pr, "the head moved; not merged")
		return true
	case errors.Is(err, forge.ErrInvalid):
		// An answer the adapter does not recognise: rather than fail the
		// same way every cycle, merge over REST pinned to the head once
		// GitHub calls it mergeable and green, and until then say once on
		// the pull request why it waits, quoting the error.
		cur, gerr := f.GetPullRequest(rc.ctx, rc.repo, pr.Number)
		if gerr != nil {
			return rc.fail(pr.HeadRef, fmt.Errorf("error reading #%d: %w", pr.Number, gerr))
		}
		if ok, why := lifecycle.MergeNow(cur, head); !ok {
			if c, once := lifecycle.AutoMergeRefused(e.Pull, err.Error()); once {
				return rc.commentOnce(c)
			}
			rc.keep(pr.HeadRef, pr, "auto-merge refused ("+err.Error()+"); "+why)
			return true
		}
	default:
		return rc.fail(pr.HeadRef, fmt.Errorf("error enabling auto-merge on #%d: %w", pr.Number, err))
	}
	sha, err := f.Merge(rc.ctx, rc.repo, pr.Number, head, e.Method)
	switch {
	case err == nil:
		rc.merges = append(rc.merges, sha)
		rc.actAction(Action{Kind: string(lifecycle.Merge), Branch: pr.HeadRef, PR: pr.Number, URL: pr.URL, Detail: fmt.Sprintf("merged %s as %s", lifecycle.Short(head), lifecycle.Short(sha))})
		rc.apply(lifecycle.AfterMerge(e.Pull))
	case errors.Is(err, forge.ErrNotMergeable), errors.Is(err, forge.ErrConflict):
		rc.keep(pr.HeadRef, pr, "not merged yet: "+err.Error())
	default:
		return rc.fail(pr.HeadRef, fmt.Errorf("error merging #%d: %w", pr.Number, err))
	}
	return true
}

// saveMarker writes the pull request's marker into its body.
func (rc *repoCycle) saveMarker(e lifecycle.Effect, format string) bool {
	st := e.Pull
	body := lifecycle.ReplaceMarker(st.PR.Body, rc.sealed(st.Marker, st.PR.Number))
	if _, err := rc.b.opts.Forge.UpdatePullRequest(rc.ctx, rc.repo, st.PR.Number, forge.PullRequestUpdate{Body: &body}); err != nil {
		return rc.fail(e.Branch, fmt.Errorf(format, st.PR.Number, err))
	}
	st.PR.Body = body
	return true
}

// commentOnce adds a comment the marker has no note of, and records the
// note. The comment carries the note hidden, so a crash between the comment
// and the marker update does not repeat it.
func (rc *repoCycle) commentOnce(e lifecycle.Effect) bool {
	st := e.Pull
	f := rc.b.opts.Forge
	tag := lifecycle.CommentTag(e.Note)
	comments, err := f.ListComments(rc.ctx, rc.repo, st.PR.Number)
	if err != nil {
		return rc.fail(e.Branch, fmt.Errorf("error listing comments of #%d: %w", st.PR.Number, err))
	}
	found := false
	for _, c := range comments {
		if c.Mine && strings.Contains(c.Body, tag) {
			found = true
		}
	}
	if !found {
		if _, err := f.CreateComment(rc.ctx, rc.repo, st.PR.Number, e.Text+"\n\n"+tag); err != nil {
			return rc.fail(e.Branch, fmt.Errorf("error commenting on #%d: %w", st.PR.Number, err))
		}
	}
	st.Marker.Notes = append(st.Marker.Notes, e.Note)
	if !rc.saveMarker(e, "error recording a note on #%d: %w") {
		return false
	}
	rc.act(e, e.Text)
	return true
}

// close records why in the marker, comments and closes the pull request.
// The reason goes into the marker first: a pull request closed without it
// was closed by a person, and its proposal is never reopened.
func (rc *repoCycle) close(e lifecycle.Effect) bool {
	st := e.Pull
	f := rc.b.opts.Forge
	st.Marker.Closed = e.Closed
	if !rc.saveMarker(e, "error updating #%d: %w") {
		return false
	}
	if _, err := f.CreateComment(rc.ctx, rc.repo, st.PR.Number, e.Text); err != nil {
		return rc.fail(e.Branch, fmt.Errorf("error commenting on #%d: %w", st.PR.Number, err))
	}
	// The close goes into the App's ledger too, where no edit of the body
	// reaches: an older marker pasted back cannot make it a person's.
	if _, err := f.CreateCheckRun(rc.ctx, rc.repo, lifecycle.ClosedRun(st, e.Closed)); err != nil {
		return rc.fail(e.Branch, fmt.Errorf("error recording the close of #%d: %w", st.PR.Number, err))
	}
	if err := f.ClosePullRequest(rc.ctx, rc.repo, st.PR.Number); err != nil {
		return rc.fail(e.Branch, fmt.Errorf("error closing #%d: %w", st.PR.Number, err))
	}
	rc.act(e, e.Text)
	st.PR.State = forge.StateClosed
	return true
}

// cleanup deletes the branch of a closed pull request (only while it still
// points at the pull request's head: a person's later commit is never
// deleted) and records that in the marker, so it is done once.
func (rc *repoCycle) cleanup(e lifecycle.Effect) bool {
	st := e.Pull
	detail := "branch deleted"
	err := rc.b.opts.Forge.DeleteBranch(rc.ctx, rc.repo, st.Marker.Branch, st.PR.HeadSHA)
	switch {
	case err == nil:
	case errors.Is(err, forge.ErrNotFound):
		detail = "branch already gone"
	case errors.Is(err, forge.ErrConflict):
		detail = "branch moved since the pull request closed; left alone"
	default:
		return rc.fail(e.Branch, fmt.Errorf("error deleting branch %s: %w", st.Marker.Branch, err))
	}
	st.Marker.BranchDeleted = true
	if !rc.saveMarker(e, "error recording the cleanup on #%d: %w") {
		return false
	}
	rc.act(e, detail)
	return true
}

// proven publishes a merged write-back's receipts, as the default branch
// holds them, with status proven and the merge commit: a check run on the
// merge commit, a comment, then the label, which marks the follow-up done.
func (rc *repoCycle) proven(e lifecycle.Effect) bool {
	st := e.Pull
	pr, m := st.PR, st.Marker
	f := rc.b.opts.Forge
	var docs []plan.File
	for _, p := range m.Receipts {
		// The receipt as the default branch holds it now, read at the
		// cycle's head like everything else the bot reads.
		data, err := rc.b.readFile(rc.ctx, rc.repo, rc.head, p)
		if err != nil {
			return rc.fail(e.Branch, fmt.Errorf("error reading receipt %s on %s: %w", p, rc.repo.DefaultBranch, err))
		}
		docs = append(docs, plan.File{Path: p, Data: data})
	}
	run, comment, err := rc.in.Proven(st, e.FollowUp, docs)
	if err != nil {
		return rc.fail(e.Branch, err)
	}
	runs, err := f.ListCheckRuns(rc.ctx, rc.repo, pr.MergeCommitSHA, ProvenCheckName)
	if err != nil {
		return rc.fail(e.Branch, fmt.Errorf("error listing the %s checks of %s: %w", ProvenCheckName, lifecycle.Short(pr.MergeCommitSHA), err))
	}
	if !lifecycle.Checked(runs, run) {
		if _, err := f.CreateCheckRun(rc.ctx, rc.repo, run); err != nil {
			return rc.fail(e.Branch, fmt.Errorf("error creating the %s check on %s: %w", ProvenCheckName, lifecycle.Short(pr.MergeCommitSHA), err))
		}
	}
	if !rc.commentTagged(e, e.FollowUp.Tag, comment) || !rc.labelDone(e) {
		return false
	}
	rc.log.Info("proven", "unit", m.Unit, "environment", m.Environment, "pr", pr.Number, "merge", pr.MergeCommitSHA)
	rc.act(e, e.Reason)
	return true
}

// reverted says on the pull request that the fix did not stick and labels
// it, so it is not looked at again.
func (rc *repoCycle) reverted(e lifecycle.Effect) bool {
	if !rc.commentTagged(e, e.FollowUp.Tag, e.FollowUp.Text) || !rc.labelDone(e) {
		return false
	}
	m, v := e.Pull.Marker, e.FollowUp.Reverted
	rc.log.Warn("reverted after merge", "unit", m.Unit, "environment", m.Environment, "pr", e.Pull.PR.Number, "object", v.Change.Object, "field", v.Change.Field)
	rc.act(e, e.Reason)
	return true
}

func (rc *repoCycle) labelDone(e lifecycle.Effect) bool {
	if err := rc.b.opts.Forge.AddLabels(rc.ctx, rc.repo, e.Pull.PR.Number, e.FollowUp.Label); err != nil {
		return rc.fail(e.Branch, fmt.Errorf("error labelling #%d: %w", e.Pull.PR.Number, err))
	}
	return true
}

// commentTagged adds a comment carrying tag unless one of the bot's
// comments already does.
func (rc *repoCycle) commentTagged(e lifecycle.Effect, tag, text string) bool {
	f := rc.b.opts.Forge
	n := e.Pull.PR.Number
	comments, err := f.ListComments(rc.ctx, rc.repo, n)
	if err != nil {
		return rc.fail(e.Branch, fmt.Errorf("error listing comments of #%d: %w", n, err))
	}
	for _, c := range comments {
		if c.Mine && strings.Contains(c.Body, tag) {
			return true
		}
	}
	if _, err := f.CreateComment(rc.ctx, rc.repo, n, text+"\n\n"+tag); err != nil {
		return rc.fail(e.Branch, fmt.Errorf("error commenting on #%d: %w", n, err))
	}
	return true
}

// drift opens or edits the drift tracking issue.
func (rc *repoCycle) drift(e lifecycle.Effect) bool {
	f := rc.b.opts.Forge
	is := e.Issue
	if is.Number == 0 {
		got, err := f.CreateIssue(rc.ctx, rc.repo, forge.NewIssue{Title: lifecycle.DriftIssueTitle, Body: is.Body, Labels: []string{LabelDrift}})
		if err != nil {
			return rc.fail("", fmt.Errorf("error opening the drift tracking issue: %w", err))
		}
		is.Number, is.URL = got.Number, got.URL
	} else if _, err := f.UpdateIssue(rc.ctx, rc.repo, is.Number, forge.IssueUpdate{Body: &is.Body, State: is.State}); err != nil {
		return rc.fail("", fmt.Errorf("error updating the drift tracking issue #%d: %w", is.Number, err))
	}
	rc.act(e, is.Done)
	return true
}
