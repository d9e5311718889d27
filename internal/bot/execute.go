package bot

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"

	"github.com/backflow-dev/backflow/internal/diffbound"
	"github.com/backflow-dev/backflow/internal/forge"
	"github.com/backflow-dev/backflow/internal/lifecycle"
	"github.com/backflow-dev/backflow/internal/plan"
)

// Writer is the executor's port: what it reads of a repository while it
// carries out a chain of effects, and the writes the effects make, each in
// the words of the effect that makes it. Where an effect always makes
// several forge calls together (opening a pull request and sealing its
// body, reviewers and labels, a comment made once, a check posted unless
// it is there), the port takes them
// as one operation, composed once in forge.Steps.
type Writer interface {
	// The repository as the chain reads it.
	ReadFile(ctx context.Context, repo forge.Repo, sha, path string) ([]byte, error)
	BranchHead(ctx context.Context, repo forge.Repo, branch string) (string, error)
	CommitsSince(ctx context.Context, repo forge.Repo, base, head string) ([]forge.Commit, error)
	ChangedFiles(ctx context.Context, repo forge.Repo, base, head string) (forge.Diff, error)
	GetPullRequest(ctx context.Context, repo forge.Repo, number int) (forge.PullRequest, error)
	ListPullRequests(ctx context.Context, repo forge.Repo, filter forge.PullRequestFilter) ([]forge.PullRequest, error)

	// The writes.
	Commit(ctx context.Context, req forge.CommitRequest) (string, error)
	DeleteBranch(ctx context.Context, repo forge.Repo, branch, expectedSHA string) error
	OpenPullRequest(ctx context.Context, repo forge.Repo, pr forge.NewPullRequest, seal func(number int) string) (forge.PullRequest, bool, error)
	UpdatePullRequest(ctx context.Context, repo forge.Repo, number int, upd forge.PullRequestUpdate) (forge.PullRequest, error)
	SetUpPullRequest(ctx context.Context, repo forge.Repo, number int, set forge.Setup) error
	CommentOnce(ctx context.Context, repo forge.Repo, number int, text, tag string) error
	PostCheck(ctx context.Context, repo forge.Repo, run forge.CheckRun, once forge.Once,
		complete func(forge.CheckRun) forge.CheckRun) (forge.CheckRun, bool, error)
	ClosePullRequest(ctx context.Context, repo forge.Repo, number int) error
	EnableAutoMerge(ctx context.Context, repo forge.Repo, pr forge.PullRequest, expectedHead string, method forge.MergeMethod) error
	DisableAutoMerge(ctx context.Context, repo forge.Repo, pr forge.PullRequest) error
	Merge(ctx context.Context, repo forge.Repo, number int, headSHA string, method forge.MergeMethod) (string, error)
	TrackIssue(ctx context.Context, repo forge.Repo, number int, issue forge.NewIssue, state *forge.PRState) (forge.Issue, error)
}

// executor carries out one repository's chains of effects, as the
// lifecycle decided them, through the forge. It decides nothing: what the
// forge may answer on the way (the branch exists, another process opened
// the pull request, auto-merge cannot be armed) is answered by the
// effect's own data. It stops a chain at the first effect that fails and
// reports it; the next cycle decides again. It reaches internal/lifecycle
// only through the effect types (held by TestExecutorReachesTheLifecycleOnlyThroughEffects).
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
	// read reads a file at the cycle's head through the bot's cache.
	read func(path string) ([]byte, error)
	rep  *RepoReport
	log  *slog.Logger

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

// act reports one effect done.
func (x *executor) act(e lifecycle.Effect, detail string) { x.report(x.action(e, detail)) }

func (x *executor) report(a Action) {
	x.rep.Actions = append(x.rep.Actions, a)
	verb := a.Kind
	if a.DryRun {
		verb = "would " + a.Kind
	}
	x.log.Info(verb, "unit", a.Branch, "pr", a.PR, "detail", a.Detail)
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
		if err := x.f.DisableAutoMerge(x.ctx, x.repo, e.Pull.PR); err != nil {
			return x.fail(e.Branch, fmt.Errorf("error disabling auto-merge on #%d: %w", e.Pull.PR.Number, err))
		}
		e.Pull.PR.AutoMergeEnabled = false
		x.act(e, e.Reason)
		return true
	case lifecycle.Check:
		return x.check(e)
	case lifecycle.Record:
		e.Pull.Marker.Commits = e.Commits
		return x.saveMarker(e, "error recording commits on #%d: %w")
	case lifecycle.Review:
		if err := x.f.SetUpPullRequest(x.ctx, x.repo, e.Pull.PR.Number, forge.Setup{Users: e.Users, Teams: e.Teams}); err != nil {
			// Reviewers are a courtesy: a refused request (say, the
			// author cannot review) does not stop the write-back.
			x.rep.Errors = append(x.rep.Errors, unitError(e.Branch, fmt.Errorf("requesting reviewers on #%d: %w", e.Pull.PR.Number, err)))
		}
		return true
	case lifecycle.Label:
		return x.setUp(e, forge.Setup{Labels: e.Labels})
	case lifecycle.Unlabel:
		return x.setUp(e, forge.Setup{Unlabel: e.Labels})
	case lifecycle.AutoMerge:
		return x.autoMerge(e)
	case lifecycle.Proven:
		return x.proven(e)
	case lifecycle.Reverted:
		return x.reverted(e)
	case lifecycle.DriftIssue:
		return x.drift(e)
	case lifecycle.Hold, lifecycle.Release:
		return x.hold(e)
	}
	return x.fail(e.Branch, fmt.Errorf("no way to apply a %q effect", e.Kind))
}

// postCheck posts run, unless once finds it posted already (a reused
// commit is not checked twice), and reports whether it was posted.
func (x *executor) postCheck(e lifecycle.Effect, run forge.CheckRun, once forge.Once, complete func(forge.CheckRun) forge.CheckRun) (forge.CheckRun, bool, bool) {
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

// open commits a proposal to its new branch and opens its pull request,
// filling in the chain's Pull. What the forge says mid-way is answered by
// the effect: the default branch moved, the branch exists already, another
// process opened the pull request first.
func (x *executor) open(e lifecycle.Effect) bool {
	p := e.Proposal
	if p.FilesErr != nil {
		return x.fail(e.Branch, p.FilesErr)
	}
	base, ok := x.writeBase(e)
	if !ok {
		return false
	}
	sha, err := x.f.Commit(x.ctx, p.CommitOn(base, x.repo, x.author, x.method, "", false))
	recovered := errors.Is(err, forge.ErrConflict)
	if recovered {
		// The branch exists without an open pull request: left by a crash
		// after the push, by another backflow process, or by a person. Or
		// the default branch moved off base since it was read.
		sha, err = x.recoverBranch(e, base)
	}
	if err != nil {
		return x.fail(e.Branch, fmt.Errorf("error committing to %s: %w", e.Branch, err))
	}
	if sha == "" {
		return false
	}
	// Another process may have opened this proposal's pull request, and
	// even merged it and deleted its branch, since the cycle listed the
	// pull requests: it is not opened twice. A pull request, once opened,
	// stays listed, so looking after the push closes the race.
	prs, err := x.f.ListPullRequests(x.ctx, x.repo, forge.PullRequestFilter{Head: e.Branch, State: forge.StateAll})
	if err != nil {
		return x.fail(e.Branch, fmt.Errorf("error listing pull requests of %s: %w", e.Branch, err))
	}
	if pr, done := p.ProposedElsewhere(prs, sha, base); done {
		if !recovered && pr.HeadSHA != sha {
			// The branch this cycle just created holds a duplicate: it
			// goes, unless something moved it since.
			if err := x.f.DeleteBranch(x.ctx, x.repo, e.Branch, sha); err != nil && !errors.Is(err, forge.ErrConflict) && !errors.Is(err, forge.ErrNotFound) {
				return x.fail(e.Branch, fmt.Errorf("error deleting branch %s: %w", e.Branch, err))
			}
		}
		x.keep(e.Branch, pr, "already proposed by another process")
		return false
	}
	return x.openPull(e, sha, base, recovered)
}

// openPull checks the commit the open made (sha, on base) and opens its
// pull request, sealing the marker for its number once it has one.
func (x *executor) openPull(e lifecycle.Effect, sha, base string, recovered bool) bool {
	p := e.Proposal
	once := forge.Always
	if recovered {
		// A reused commit may carry this check already, from the cycle
		// that pushed it and then failed: it is not written twice.
		once = forge.UnlessSame
	}
	if _, _, ok := x.postCheck(e, p.CheckRun(sha), once, nil); !ok {
		return false
	}
	m := e.Marker.Written(sha, base)
	// The number is known once opened: the marker is sealed for none, then
	// for the pull request's number.
	seal := func(n int) string { return p.Body(m.Sealed(x.key, x.repo.FullName(), n)) }
	pr, opened, err := x.f.OpenPullRequest(x.ctx, x.repo, forge.NewPullRequest{Title: p.Title(),
		Body: seal(0), Head: e.Branch, Base: x.repo.DefaultBranch, Draft: e.Pull.PR.Draft}, seal)
	if err != nil {
		return x.fail(e.Branch, fmt.Errorf("error opening pull request for %s: %w", e.Branch, err))
	}
	if !opened {
		// Another process opened it first; the next cycle follows it.
		x.keep(e.Branch, pr, "already opened by another process")
		return false
	}
	x.log.Info("opened", "unit", p.WriteBack.Unit, "pr", pr.Number)
	pr.HeadSHA = sha
	e.Pull.PR, e.Pull.Marker = pr, m
	x.act(e, pr.Title+p.MergeNote())
	return true
}

// writeBase is the default-branch commit a new write-back is made on: the
// cycle's head while the default branch is still there, or this cycle's
// own merge of another unit when that merge left every file the write-back
// commits as it read at the cycle's head (the git method can only clone
// the branch's head). Any other move, by another backflow process or a
// person, and a merge that changed those files, plan the unit again next
// cycle (ok false).
func (x *executor) writeBase(e lifecycle.Effect) (string, bool) {
	head, err := x.f.BranchHead(x.ctx, x.repo, x.repo.DefaultBranch)
	switch {
	case err != nil:
		return "", x.fail(e.Branch, fmt.Errorf("error reading the head of %s: %w", x.repo.DefaultBranch, err))
	case head == e.Base:
		return head, true
	case e.BaseMoved(head, x.merges):
		x.report(Action{Kind: string(lifecycle.Keep), Branch: e.Branch, Detail: x.repo.DefaultBranch + " moved during the cycle; planned again next cycle"})
		return "", false
	}
	same, err := x.sameFiles(e.Base, head, e.Proposal.Files)
	if err != nil {
		return "", x.fail(e.Branch, err)
	}
	if !same {
		x.report(Action{Kind: string(lifecycle.Keep), Branch: e.Branch, Detail: "this cycle's merge of another unit changed this write-back's files; planned again next cycle"})
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
				problems = append(problems, fmt.Sprintf("%s: changed, and not a regular file at %s: never a receipt or a values file", p, short(side.sha)))
			default:
				problems = append(problems, fmt.Sprintf("%s: could not be read at %s: %v", p, short(side.sha), err))
			}
		}
	}
	return e.Bounded(diffbound.Check(in), problems)
}

// recoverBranch reads a write-back branch that exists with no open pull
// request and answers it as the proposal says: a commit of the bot for
// this very proposal on base is reused; a branch of the bot's own commits
// is rewritten; anything else holds a person's work and is left alone (sha
// "").
func (x *executor) recoverBranch(e lifecycle.Effect, base string) (string, error) {
	cur, err := x.f.BranchHead(x.ctx, x.repo, e.Branch)
	if errors.Is(err, forge.ErrNotFound) {
		// No branch: the conflict was the default branch moving off base
		// (the git method clones its head), by another process or a person.
		x.report(Action{Kind: string(lifecycle.Keep), Branch: e.Branch, Detail: x.repo.DefaultBranch + " moved during the cycle; planned again next cycle"})
		return "", nil
	}
	if err != nil {
		return "", err
	}
	commits, err := x.f.CommitsSince(x.ctx, x.repo, base, cur)
	if err != nil {
		return "", err
	}
	switch e.Proposal.Recover(base, commits) {
	case lifecycle.LeaveAlone:
		x.report(Action{Kind: string(lifecycle.Skip), Branch: e.Branch, Detail: "the branch exists with commits backflow did not make; it is left alone"})
		return "", nil
	case lifecycle.Reuse:
		return cur, nil
	}
	return x.f.Commit(x.ctx, e.Proposal.CommitOn(base, x.repo, x.author, x.method, cur, true))
}

// update replaces the branch with one commit of the new proposal on the
// default branch's head, compare-and-swapping on the head the pull request
// had, and updates the pull request.
func (x *executor) update(e lifecycle.Effect) bool {
	p, st := e.Proposal, e.Pull
	if p.FilesErr != nil {
		return x.fail(e.Branch, p.FilesErr)
	}
	sha, err := x.f.Commit(x.ctx, p.CommitOn(e.Base, x.repo, x.author, x.method, e.Expected, true))
	if errors.Is(err, forge.ErrConflict) {
		x.act(lifecycle.Effect{Kind: lifecycle.Keep, Branch: e.Branch, Pull: st}, "the branch moved while updating; looked at again next cycle")
		return false
	}
	if err != nil {
		return x.fail(e.Branch, fmt.Errorf("error committing to %s: %w", e.Branch, err))
	}
	if _, _, ok := x.postCheck(e, p.CheckRun(sha), forge.Always, nil); !ok {
		return false
	}
	m := e.Marker.Written(sha, e.Base)
	title, body := p.Title(), p.Body(m.Sealed(x.key, x.repo.FullName(), st.PR.Number))
	pr, err := x.f.UpdatePullRequest(x.ctx, x.repo, st.PR.Number, forge.PullRequestUpdate{Title: &title, Body: &body})
	if err != nil {
		return x.fail(e.Branch, fmt.Errorf("error updating #%d: %w", st.PR.Number, err))
	}
	x.act(e, e.Reason)
	pr.HeadSHA = sha
	pr.AutoMergeEnabled = false // disarmed before the rewrite (the Disarm effect)
	st.PR, st.Marker = pr, m
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
	err := x.f.EnableAutoMerge(x.ctx, x.repo, pr, head, e.Method)
	switch {
	case err == nil:
		x.act(e, "auto-merge armed at "+short(head))
		return true
	case errors.Is(err, forge.ErrAlreadyMergeable):
	case errors.Is(err, forge.ErrAutoMergeNotAllowed):
		cur, err := x.f.GetPullRequest(x.ctx, x.repo, pr.Number)
		if err != nil {
			return x.fail(pr.HeadRef, fmt.Errorf("error reading #%d: %w", pr.Number, err))
		}
		if ok, why := e.Mergeable(cur, head); !ok {
			x.keep(pr.HeadRef, pr, why)
			return true
		}
	case errors.Is(err, forge.ErrConflict):
		x.keep(pr.HeadRef, pr, "the head moved; not merged")
		return true
	case errors.Is(err, forge.ErrInvalid):
		// An answer the adapter does not recognise: rather than fail the
		// same way every cycle, merge over REST pinned to the head once
		// GitHub calls it mergeable and green, and until then say once on
		// the pull request why it waits, quoting the error.
		cur, gerr := x.f.GetPullRequest(x.ctx, x.repo, pr.Number)
		if gerr != nil {
			return x.fail(pr.HeadRef, fmt.Errorf("error reading #%d: %w", pr.Number, gerr))
		}
		if ok, why := e.Mergeable(cur, head); !ok {
			if c, once := e.RefusedComment(err.Error()); once {
				return x.commentOnce(c)
			}
			x.keep(pr.HeadRef, pr, "auto-merge refused ("+err.Error()+"); "+why)
			return true
		}
	default:
		return x.fail(pr.HeadRef, fmt.Errorf("error enabling auto-merge on #%d: %w", pr.Number, err))
	}
	sha, err := x.f.Merge(x.ctx, x.repo, pr.Number, head, e.Method)
	switch {
	case err == nil:
		x.merges = append(x.merges, sha)
		x.report(Action{Kind: string(lifecycle.Merge), Branch: pr.HeadRef, PR: pr.Number, URL: pr.URL, Detail: fmt.Sprintf("merged %s as %s", short(head), short(sha))})
		e.Pull.PR.State, e.Pull.PR.Merged = forge.StateClosed, true
		x.apply(e.AfterMerge)
	case errors.Is(err, forge.ErrNotMergeable), errors.Is(err, forge.ErrConflict):
		x.keep(pr.HeadRef, pr, "not merged yet: "+err.Error())
	default:
		return x.fail(pr.HeadRef, fmt.Errorf("error merging #%d: %w", pr.Number, err))
	}
	return true
}

// saveMarker writes the pull request's marker into its body.
func (x *executor) saveMarker(e lifecycle.Effect, format string) bool {
	st := e.Pull
	body := st.Marker.Sealed(x.key, x.repo.FullName(), st.PR.Number).Into(st.PR.Body)
	if _, err := x.f.UpdatePullRequest(x.ctx, x.repo, st.PR.Number, forge.PullRequestUpdate{Body: &body}); err != nil {
		return x.fail(e.Branch, fmt.Errorf(format, st.PR.Number, err))
	}
	st.PR.Body = body
	return true
}

// commentOnce adds a comment the marker has no note of, and records the
// note. The comment carries the note hidden (the effect's Tag), so a crash
// between the comment and the marker update does not repeat it.
func (x *executor) commentOnce(e lifecycle.Effect) bool {
	st := e.Pull
	if !x.commentTagged(e, e.Tag, e.Text) {
		return false
	}
	st.Marker.Notes = append(st.Marker.Notes, e.Note)
	if !x.saveMarker(e, "error recording a note on #%d: %w") {
		return false
	}
	x.act(e, e.Text)
	return true
}

// close records why in the marker, comments and closes the pull request.
// The reason goes into the marker first: a pull request closed without it
// was closed by a person, and its proposal is never reopened.
func (x *executor) close(e lifecycle.Effect) bool {
	st := e.Pull
	st.Marker.Closed = e.Closed
	if !x.saveMarker(e, "error updating #%d: %w") {
		return false
	}
	if err := x.f.CommentOnce(x.ctx, x.repo, st.PR.Number, e.Text, ""); err != nil {
		return x.fail(e.Branch, fmt.Errorf("error commenting on #%d: %w", st.PR.Number, err))
	}
	// The close goes into the App's ledger too, where no edit of the body
	// reaches: an older marker pasted back cannot make it a person's.
	if _, _, ok := x.postCheck(e, *e.Run, forge.Always, nil); !ok {
		return false
	}
	if err := x.f.ClosePullRequest(x.ctx, x.repo, st.PR.Number); err != nil {
		return x.fail(e.Branch, fmt.Errorf("error closing #%d: %w", st.PR.Number, err))
	}
	x.act(e, e.Text)
	st.PR.State = forge.StateClosed
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
	if !x.saveMarker(e, "error recording the cleanup on #%d: %w") {
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
	pr, m := st.PR, st.Marker
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
	run, comment, err := e.Evidence.Proven(st, docs)
	if err != nil {
		return x.fail(e.Branch, err)
	}
	if _, _, ok := x.postCheck(e, run, forge.UnlessSame, nil); !ok {
		return false
	}
	if !x.commentTagged(e, e.Evidence.Tag, comment) || !x.labelDone(e) {
		return false
	}
	x.log.Info("proven", "unit", m.Unit, "environment", m.Environment, "pr", pr.Number, "merge", pr.MergeCommitSHA)
	x.act(e, e.Reason)
	return true
}

// reverted says on the pull request that the fix did not stick and labels
// it, so it is not looked at again.
func (x *executor) reverted(e lifecycle.Effect) bool {
	if !x.commentTagged(e, e.Evidence.Tag, e.Evidence.Text) || !x.labelDone(e) {
		return false
	}
	m, v := e.Pull.Marker, e.Evidence.Reverted
	x.log.Warn("reverted after merge", "unit", m.Unit, "environment", m.Environment, "pr", e.Pull.PR.Number, "object", v.Change.Object, "field", v.Change.Field)
	x.act(e, e.Reason)
	return true
}

func (x *executor) labelDone(e lifecycle.Effect) bool {
	return x.setUp(e, forge.Setup{Labels: []string{e.Evidence.Label}})
}

// setUp adds or removes the pull request's labels.
func (x *executor) setUp(e lifecycle.Effect, set forge.Setup) bool {
	if err := x.f.SetUpPullRequest(x.ctx, x.repo, e.Pull.PR.Number, set); err != nil {
		return x.fail(e.Branch, fmt.Errorf("error setting up #%d: %w", e.Pull.PR.Number, err))
	}
	return true
}

// commentTagged adds a comment carrying tag unless one of the bot's
// comments already does.
func (x *executor) commentTagged(e lifecycle.Effect, tag, text string) bool {
	if err := x.f.CommentOnce(x.ctx, x.repo, e.Pull.PR.Number, text, tag); err != nil {
		return x.fail(e.Branch, fmt.Errorf("error commenting on #%d: %w", e.Pull.PR.Number, err))
	}
	return true
}

// drift opens or edits the drift tracking issue.
func (x *executor) drift(e lifecycle.Effect) bool {
	is := e.Issue
	got, err := x.f.TrackIssue(x.ctx, x.repo, is.Number, forge.NewIssue{Title: is.Title, Body: is.Body, Labels: is.Labels}, is.State)
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
