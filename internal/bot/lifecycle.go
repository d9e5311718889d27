package bot

import (
	"crypto/hmac"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/backflow-dev/backflow/internal/forge"
	"github.com/backflow-dev/backflow/internal/observe"
	"github.com/backflow-dev/backflow/internal/plan"
	"github.com/backflow-dev/backflow/internal/receipt"
	"github.com/backflow-dev/backflow/internal/repoconfig"
	"github.com/backflow-dev/backflow/internal/values"
)

// maxRecordedCommits bounds the commit list a marker keeps.
const maxRecordedCommits = 20

func (rc *repoCycle) act(a Action) {
	a.DryRun = rc.b.opts.DryRun
	rc.rep.Actions = append(rc.rep.Actions, a)
	verb := a.Kind
	if a.DryRun {
		verb = "would " + a.Kind
	}
	rc.log.Info(verb, "unit", a.Branch, "pr", a.PR, "detail", a.Detail)
}

// reconcile applies the lifecycle rules to one write-back branch.
func (rc *repoCycle) reconcile(u *unitState) {
	switch {
	case u.open == nil && u.wb == nil:
		return
	case u.open == nil:
		rc.openNew(u)
	default:
		rc.followOpen(u)
	}
}

// proposal is a write-back as the cycle is about to write it.
type proposal struct {
	wb          *plan.WriteBack
	fingerprint string
	changes     []MarkerChange
	doc         *writeBackDoc
	autoMerge   bool
}

func (rc *repoCycle) propose(wb *plan.WriteBack) *proposal {
	changes := markerChanges(*wb, rc.res.Decisions)
	doc := &writeBackDoc{wb: *wb, decisions: rc.res.Decisions, changes: changes, cfg: rc.cfg, snap: rc.snap,
		observed: map[string][]string{}, newest: map[string]observe.Observation{}}
	if env, ok := rc.cfg.Environments[wb.Environment]; ok {
		doc.clusters = env.Clusters
	}
	for _, o := range rc.obs.Observations {
		if rc.envOf(o) != wb.Environment || !slices.Contains(wb.Objects, o.Object.String()) {
			continue
		}
		key := o.Object.String()
		if !slices.Contains(doc.observed[key], o.Cluster) {
			doc.observed[key] = append(doc.observed[key], o.Cluster)
			slices.Sort(doc.observed[key])
		}
		if cur, ok := doc.newest[key]; !ok || o.ObservedAt.After(cur.ObservedAt) {
			doc.newest[key] = o
		}
	}
	doc.check = rc.verify(wb)
	// Auto-merge needs every field pre-authorized with an audit-log actor
	// (the planner's verdict), the repository's consent, and a receipt that
	// verifies: never when the check failed.
	doc.autoMerge = wb.AutoMerge && rc.cfg.AutoMerge.Enabled && doc.check.ok()
	return &proposal{wb: wb, fingerprint: fingerprintOf(wb.Environment, wb.Unit, changes), changes: changes, doc: doc, autoMerge: doc.autoMerge}
}

func (rc *repoCycle) envOf(o observe.Observation) string {
	if o.Environment != "" {
		return o.Environment
	}
	env, _ := rc.cfg.EnvironmentOf(o.Cluster)
	return env
}

// verify checks the write-back's receipts against the default branch's
// policy, as `backflow verify` does.
func (rc *repoCycle) verify(wb *plan.WriteBack) checkResult {
	var res checkResult
	for _, f := range wb.Receipts {
		res.checked++
		r, vs, err := receipt.Parse(f.Path, f.Data)
		if err != nil {
			res.violations = append(res.violations, fmt.Sprintf("%s: %v", f.Path, err))
			continue
		}
		vs = append(vs, receipt.Verify(r, rc.snap.Policy, rc.snap.PolicyPath)...)
		for _, v := range vs {
			res.violations = append(res.violations, f.Path+": "+v.String())
		}
	}
	return res
}

// files are the commit's files: the edited values files and the receipts,
// each checked to be a file the bot may write.
func (rc *repoCycle) files(wb *plan.WriteBack) (map[string][]byte, error) {
	out := map[string][]byte{}
	for _, f := range wb.Files {
		if err := rc.cfg.Writable(f.Path); err != nil {
			return nil, fmt.Errorf("refusing to write %s: %w", f.Path, err)
		}
		out[f.Path] = f.Data
	}
	dir := rc.cfg.Receipts.Dir
	if dir == "" {
		dir = repoconfig.DefaultReceiptsDir
	}
	dir = strings.TrimSuffix(dir, "/") + "/"
	for _, f := range wb.Receipts {
		if !strings.HasPrefix(f.Path, dir) || strings.Contains(f.Path, "..") || strings.Contains(f.Path, "\\") {
			return nil, fmt.Errorf("refusing to write receipt %s outside %s", f.Path, dir)
		}
		out[f.Path] = f.Data
	}
	return out, nil
}

func (rc *repoCycle) marker(p *proposal, commits []string) *Marker {
	m := &Marker{Version: MarkerVersion, Unit: p.wb.Unit, Environment: p.wb.Environment, Branch: p.wb.Branch,
		Fingerprint: p.fingerprint, Changes: p.changes, Base: rc.head, Files: map[string]string{}, Policy: rc.policySum,
		Commits: commits, AutoMerge: p.autoMerge}
	if len(m.Commits) > maxRecordedCommits {
		m.Commits = m.Commits[len(m.Commits)-maxRecordedCommits:]
	}
	for _, c := range p.changes {
		if data, ok := rc.snap.Files[c.ValuesFile]; ok {
			m.Files[c.ValuesFile] = hashBytes(data)
		}
	}
	for _, f := range p.wb.Receipts {
		m.Receipts = append(m.Receipts, f.Path)
	}
	return m
}

// openNew opens the pull request of a write-back that has none, unless a
// person closed the same proposal before.
func (rc *repoCycle) openNew(u *unitState) {
	p := rc.propose(u.wb)
	if c := closedByPerson(u, p.fingerprint); c != nil {
		rc.act(Action{Kind: ActSkip, Branch: u.branch, PR: c.pr.Number, URL: c.pr.URL,
			Detail: "the same change was closed without merge; it is not proposed again"})
		return
	}
	if rc.b.opts.DryRun {
		rc.act(Action{Kind: ActOpen, Branch: u.branch, Detail: Title(p.wb.Environment, p.changes) + rc.mergeNote(p)})
		return
	}
	files, err := rc.files(p.wb)
	if err != nil {
		rc.fail(u.branch, err)
		return
	}
	f := rc.b.opts.Forge
	// A plan made on a default branch that someone else (another backflow
	// process merging the same proposal, a person) has moved since is made
	// again next cycle rather than written now.
	if head, err := f.BranchHead(rc.ctx, rc.repo, rc.repo.DefaultBranch); err != nil {
		rc.fail(u.branch, fmt.Errorf("error reading the head of %s: %w", rc.repo.DefaultBranch, err))
		return
	} else if head != rc.head && !slices.Contains(rc.merges, head) {
		rc.act(Action{Kind: ActKeep, Branch: u.branch, Detail: rc.repo.DefaultBranch + " moved during the cycle; planned again next cycle"})
		return
	}
	sha, err := f.Commit(rc.ctx, rc.commitRequest(p, files, "", false))
	recovered := errors.Is(err, forge.ErrConflict)
	if recovered {
		// The branch exists without an open pull request: left by a crash
		// after the push, by another backflow process, or by a person.
		sha, err = rc.recoverBranch(p, files)
	}
	if err != nil {
		rc.fail(u.branch, fmt.Errorf("error committing to %s: %w", u.branch, err))
		return
	}
	if sha == "" {
		return
	}
	if recovered {
		// The branch was there already: its pull request may have been
		// opened, and even merged, by another process since the look above.
		if pr, done, err := rc.proposedElsewhere(u.branch, p.fingerprint, sha); err != nil {
			rc.fail(u.branch, err)
			return
		} else if done {
			rc.act(Action{Kind: ActKeep, Branch: u.branch, PR: pr.Number, URL: pr.URL, Detail: "already proposed at this commit by another process"})
			return
		}
	}
	run := p.doc.check.run(sha)
	checked := false
	if recovered {
		// A reused commit may carry this check already, from the cycle
		// that pushed it and then failed: it is not written twice.
		runs, err := f.ListCheckRuns(rc.ctx, rc.repo, sha, CheckName)
		if err != nil {
			rc.fail(u.branch, fmt.Errorf("error listing the %s checks on %s: %w", CheckName, sha, err))
			return
		}
		checked = slices.ContainsFunc(runs, func(r forge.CheckRun) bool { return r.Mine && r.Conclusion == run.Conclusion })
	}
	if !checked {
		if _, err := f.CreateCheckRun(rc.ctx, rc.repo, run); err != nil {
			rc.fail(u.branch, fmt.Errorf("error creating the %s check on %s: %w", CheckName, sha, err))
			return
		}
	}
	m := rc.marker(p, []string{sha})
	pr, err := f.CreatePullRequest(rc.ctx, rc.repo, forge.NewPullRequest{Title: Title(p.wb.Environment, p.changes),
		Body: p.doc.body(m), Head: u.branch, Base: rc.repo.DefaultBranch, Draft: rc.cfg.PullRequests.Draft})
	if errors.Is(err, forge.ErrConflict) {
		// Another process opened it first; the next cycle follows it.
		pr, err = f.FindOpenPullRequest(rc.ctx, rc.repo, u.branch)
		if err == nil {
			rc.act(Action{Kind: ActKeep, Branch: u.branch, PR: pr.Number, URL: pr.URL, Detail: "already opened by another process"})
		} else {
			rc.fail(u.branch, fmt.Errorf("error opening pull request for %s: %w", u.branch, err))
		}
		return
	}
	if err != nil {
		rc.fail(u.branch, fmt.Errorf("error opening pull request for %s: %w", u.branch, err))
		return
	}
	rc.log.Info("opened", "unit", p.wb.Unit, "pr", pr.Number)
	rc.act(Action{Kind: ActOpen, Branch: u.branch, PR: pr.Number, URL: pr.URL, Detail: pr.Title + rc.mergeNote(p)})
	rc.finish(pr, m, p, sha, nil, true)
}

// proposedElsewhere looks again, just before opening a pull request from a
// branch that was already there, for a pull request of this App whose head
// is sha or that proposed the same change from the same default-branch
// head: another process may have opened, merged and cleaned it up since
// this cycle listed the pull requests, and one pull request per unit means
// not opening a second one for it.
func (rc *repoCycle) proposedElsewhere(branch, fingerprint, sha string) (forge.PullRequest, bool, error) {
	prs, err := rc.b.opts.Forge.ListPullRequests(rc.ctx, rc.repo, forge.PullRequestFilter{Head: branch, State: forge.StateAll})
	if err != nil {
		return forge.PullRequest{}, false, fmt.Errorf("error listing pull requests of %s: %w", branch, err)
	}
	for _, pr := range prs {
		if !pr.Mine || pr.HeadRef != branch || pr.BaseRef != rc.repo.DefaultBranch {
			continue
		}
		if sha != "" && pr.HeadSHA == sha {
			return pr, true, nil
		}
		if m, ok := ParseMarker(pr.Body); ok && m.Fingerprint == fingerprint && m.Base == rc.head {
			return pr, true, nil
		}
	}
	return forge.PullRequest{}, false, nil
}

// closedByPerson returns the pull request of the branch that proposed
// fingerprint and was closed without merge by someone other than the bot.
func closedByPerson(u *unitState, fingerprint string) *prState {
	for _, c := range u.closed {
		if c.m.Fingerprint == fingerprint && !c.pr.Merged && c.m.Closed == "" {
			return c
		}
	}
	return nil
}

func (rc *repoCycle) mergeNote(p *proposal) string {
	switch {
	case p.autoMerge:
		return " [pre-authorized: auto-merge]"
	case !p.doc.check.ok():
		return " [receipt check failed: " + p.doc.check.summary() + "]"
	default:
		return " [needs review]"
	}
}

func (rc *repoCycle) commitRequest(p *proposal, files map[string][]byte, expected string, force bool) forge.CommitRequest {
	token := commitToken(rc.b.opts.CommitKey, p.wb.Branch, rc.head, p.fingerprint)
	return forge.CommitRequest{Repo: rc.repo, Branch: p.wb.Branch, BaseSHA: rc.head, ExpectedHead: expected, Force: force,
		Files: files, Message: p.doc.commitMessage(p.fingerprint, token), Author: rc.author, Method: rc.b.opts.CommitMethod}
}

// ours reports whether a commit on branch carries the bot's keyed token.
func (rc *repoCycle) ours(c forge.Commit, branch string) bool {
	if len(c.Parents) != 1 {
		return false
	}
	want := commitToken(rc.b.opts.CommitKey, branch, c.Parents[0], trailer(c.Message, trailerFingerprint))
	got := trailer(c.Message, trailerToken)
	return want != "" && hmac.Equal([]byte(want), []byte(got))
}

// recoverBranch handles a write-back branch that exists with no open pull
// request. A commit of the bot for this very proposal on the current head
// is reused; a branch of the bot's own commits is rewritten; anything else
// holds a person's work and is left alone (sha "").
func (rc *repoCycle) recoverBranch(p *proposal, files map[string][]byte) (string, error) {
	f := rc.b.opts.Forge
	cur, err := f.BranchHead(rc.ctx, rc.repo, p.wb.Branch)
	if err != nil {
		return "", err
	}
	commits, err := f.CommitsSince(rc.ctx, rc.repo, rc.head, cur)
	if err != nil {
		return "", err
	}
	for _, c := range commits {
		if !rc.ours(c, p.wb.Branch) {
			rc.act(Action{Kind: ActSkip, Branch: p.wb.Branch, Detail: "the branch exists with commits backflow did not make; it is left alone"})
			return "", nil
		}
	}
	if len(commits) == 1 && commits[0].Parents[0] == rc.head && trailer(commits[0].Message, trailerFingerprint) == p.fingerprint {
		return cur, nil
	}
	return f.Commit(rc.ctx, rc.commitRequest(p, files, cur, true))
}

// finish brings a pull request's reviewers, labels and auto-merge in line
// with the proposal. Labels come last among the set-up steps, so a missing
// reverse-reconcile label tells the next cycle that set-up did not finish.
func (rc *repoCycle) finish(pr forge.PullRequest, m *Marker, p *proposal, head string, have []string, fresh bool) {
	f := rc.b.opts.Forge
	cfg := rc.cfg.PullRequests
	if fresh || !slices.Contains(have, LabelReverseReconcile) {
		if len(cfg.Reviewers)+len(cfg.TeamReviewers) > 0 {
			if err := f.RequestReviewers(rc.ctx, rc.repo, pr.Number, cfg.Reviewers, cfg.TeamReviewers); err != nil {
				// Reviewers are a courtesy: a refused request (say, the
				// author cannot review) does not stop the write-back.
				rc.rep.Errors = append(rc.rep.Errors, fmt.Sprintf("%s: requesting reviewers on #%d: %v", p.wb.Branch, pr.Number, err))
			}
		}
	}
	want := wantedLabels(rc.cfg, p.wb.Environment, p.autoMerge)
	var missing []string
	for _, l := range want {
		if !slices.Contains(have, l) {
			missing = append(missing, l)
		}
	}
	if len(missing) > 0 {
		if err := f.AddLabels(rc.ctx, rc.repo, pr.Number, missing...); err != nil {
			rc.fail(p.wb.Branch, fmt.Errorf("error labelling #%d: %w", pr.Number, err))
			return
		}
	}
	if !p.autoMerge && slices.Contains(have, LabelPreAuthorized) {
		if err := f.RemoveLabel(rc.ctx, rc.repo, pr.Number, LabelPreAuthorized); err != nil {
			rc.fail(p.wb.Branch, fmt.Errorf("error unlabelling #%d: %w", pr.Number, err))
			return
		}
	}
	if p.autoMerge && !pr.AutoMergeEnabled && !pr.Draft {
		if rc.autoMerge(pr, head) {
			// Merged now: clean the branch up in the same cycle, so the
			// next one has nothing to do.
			pr.State, pr.Merged = forge.StateClosed, true
			rc.cleanup(&prState{pr: pr, m: m})
		}
	}
}

// autoMerge arms GitHub's auto-merge pinned to head or, where it cannot be
// armed because the pull request is already mergeable (or the repository
// does not allow auto-merge), merges it over REST pinned to head once it is
// mergeable and green. It reports whether it merged.
func (rc *repoCycle) autoMerge(pr forge.PullRequest, head string) bool {
	f := rc.b.opts.Forge
	method := forge.MergeMethod(rc.cfg.AutoMerge.Method)
	if method == "" {
		method = forge.MergeMethod(repoconfig.DefaultMergeMethod)
	}
	err := f.EnableAutoMerge(rc.ctx, rc.repo, pr, head, method)
	switch {
	case err == nil:
		rc.act(Action{Kind: ActAutoMerge, Branch: pr.HeadRef, PR: pr.Number, URL: pr.URL, Detail: "auto-merge armed at " + short(head)})
		return false
	case errors.Is(err, forge.ErrAlreadyMergeable):
	case errors.Is(err, forge.ErrAutoMergeNotAllowed):
		cur, err := f.GetPullRequest(rc.ctx, rc.repo, pr.Number)
		if err != nil {
			rc.fail(pr.HeadRef, fmt.Errorf("error reading #%d: %w", pr.Number, err))
			return false
		}
		if cur.HeadSHA != head || cur.MergeableState != "clean" {
			rc.act(Action{Kind: ActKeep, Branch: pr.HeadRef, PR: pr.Number, URL: pr.URL, Detail: "waiting to be mergeable and green (" + orUnknown(cur.MergeableState) + ")"})
			return false
		}
	case errors.Is(err, forge.ErrConflict):
		rc.act(Action{Kind: ActKeep, Branch: pr.HeadRef, PR: pr.Number, URL: pr.URL, Detail: "the head moved; not merged"})
		return false
	default:
		rc.fail(pr.HeadRef, fmt.Errorf("error enabling auto-merge on #%d: %w", pr.Number, err))
		return false
	}
	sha, err := f.Merge(rc.ctx, rc.repo, pr.Number, head, method)
	switch {
	case err == nil:
		rc.merges = append(rc.merges, sha)
		rc.act(Action{Kind: ActMerge, Branch: pr.HeadRef, PR: pr.Number, URL: pr.URL, Detail: fmt.Sprintf("merged %s as %s", short(head), short(sha))})
		return true
	case errors.Is(err, forge.ErrNotMergeable), errors.Is(err, forge.ErrConflict):
		rc.act(Action{Kind: ActKeep, Branch: pr.HeadRef, PR: pr.Number, URL: pr.URL, Detail: "not merged yet: " + err.Error()})
	default:
		rc.fail(pr.HeadRef, fmt.Errorf("error merging #%d: %w", pr.Number, err))
	}
	return false
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

func short(sha string) string {
	if len(sha) > 12 {
		return sha[:12]
	}
	return sha
}

// followOpen applies the lifecycle rules to a branch with an open pull request.
func (rc *repoCycle) followOpen(u *unitState) {
	st := u.open
	if !st.m.ownsHead(st.pr.HeadSHA) && !rc.adopt(st) {
		rc.humanCommit(st)
		return
	}
	if u.wb == nil {
		rc.withoutProposal(u)
		return
	}
	p := rc.propose(u.wb)
	if c := closedByPerson(u, p.fingerprint); c != nil && p.fingerprint != st.m.Fingerprint {
		// Live moved to a value a person already refused: that proposal is
		// not made again, and this one no longer matches live.
		rc.close(st, ClosedSuperseded, fmt.Sprintf("Live now matches #%d (%s), which was closed without merge; this proposal no longer matches live, and that one is not made again.", c.pr.Number, Title(p.wb.Environment, p.changes)))
		return
	}
	// A receipt check failed under an intermediate policy is replaced by
	// regenerating the branch, whose new head gets a fresh check.
	if p.fingerprint == st.m.Fingerprint && rc.baseUnchanged(st.m) && !st.m.receiptRefused() {
		rc.finish(st.pr, st.m, p, st.pr.HeadSHA, st.pr.Labels, false)
		return
	}
	rc.rewrite(st, p)
}

// adopt recognises an unrecorded head as the bot's own (a crash between the
// push and the pull request update) by the keyed token of every commit on
// the branch, and records it.
func (rc *repoCycle) adopt(st *prState) bool {
	if len(rc.b.opts.CommitKey) == 0 {
		return false
	}
	commits, err := rc.b.opts.Forge.CommitsSince(rc.ctx, rc.repo, rc.repo.DefaultBranch, st.pr.HeadSHA)
	if err != nil || len(commits) == 0 {
		return false
	}
	for _, c := range commits {
		if !rc.ours(c, st.m.Branch) {
			return false
		}
	}
	for _, c := range commits {
		if !slices.Contains(st.m.Commits, c.SHA) {
			st.m.Commits = append(st.m.Commits, c.SHA)
		}
	}
	if !rc.b.opts.DryRun {
		body := replaceMarker(st.pr.Body, st.m)
		if _, err := rc.b.opts.Forge.UpdatePullRequest(rc.ctx, rc.repo, st.pr.Number, forge.PullRequestUpdate{Body: &body}); err != nil {
			rc.fail(st.m.Branch, fmt.Errorf("error recording commits on #%d: %w", st.pr.Number, err))
			return false
		}
		st.pr.Body = body
	}
	return true
}

// baseUnchanged reports that the values files and the policy the pull
// request was written against are what the default branch holds now.
func (rc *repoCycle) baseUnchanged(m *Marker) bool {
	if m.Policy != rc.policySum {
		return false
	}
	for file, sum := range m.Files {
		data, ok := rc.snap.Files[file]
		if !ok || hashBytes(data) != sum {
			return false
		}
	}
	return true
}

// rewrite replaces the branch with one commit of the new proposal on the
// current default branch (a new live value, or the default branch moved
// under the values file or the policy).
func (rc *repoCycle) rewrite(st *prState, p *proposal) {
	why := "new live value"
	if p.fingerprint == st.m.Fingerprint {
		why = "the default branch changed under the values file or the policy; regenerated from " + short(rc.head)
	}
	if rc.b.opts.DryRun {
		rc.act(Action{Kind: ActUpdate, Branch: st.m.Branch, PR: st.pr.Number, URL: st.pr.URL, Detail: why + ": " + Title(p.wb.Environment, p.changes)})
		return
	}
	files, err := rc.files(p.wb)
	if err != nil {
		rc.fail(st.m.Branch, err)
		return
	}
	f := rc.b.opts.Forge
	sha, err := f.Commit(rc.ctx, rc.commitRequest(p, files, st.pr.HeadSHA, true))
	if errors.Is(err, forge.ErrConflict) {
		rc.act(Action{Kind: ActKeep, Branch: st.m.Branch, PR: st.pr.Number, URL: st.pr.URL, Detail: "the branch moved while updating; looked at again next cycle"})
		return
	}
	if err != nil {
		rc.fail(st.m.Branch, fmt.Errorf("error committing to %s: %w", st.m.Branch, err))
		return
	}
	if _, err := f.CreateCheckRun(rc.ctx, rc.repo, p.doc.check.run(sha)); err != nil {
		rc.fail(st.m.Branch, fmt.Errorf("error creating the %s check on %s: %w", CheckName, sha, err))
		return
	}
	m := rc.marker(p, append(slices.Clone(st.m.Commits), sha))
	for _, n := range st.m.Notes {
		if !strings.HasPrefix(n, noteReceipt) {
			m.Notes = append(m.Notes, n)
		}
	}
	title, body := Title(p.wb.Environment, p.changes), p.doc.body(m)
	pr, err := f.UpdatePullRequest(rc.ctx, rc.repo, st.pr.Number, forge.PullRequestUpdate{Title: &title, Body: &body})
	if err != nil {
		rc.fail(st.m.Branch, fmt.Errorf("error updating #%d: %w", st.pr.Number, err))
		return
	}
	rc.act(Action{Kind: ActUpdate, Branch: st.m.Branch, PR: st.pr.Number, URL: st.pr.URL, Detail: why + ": " + title + rc.mergeNote(p)})
	pr.HeadSHA = sha
	pr.AutoMergeEnabled = false // a new head cancels auto-merge
	rc.finish(pr, m, p, sha, st.pr.Labels, false)
}

// humanCommit handles a branch that carries a commit the bot did not
// record: it says so once and never updates the branch again.
func (rc *repoCycle) humanCommit(st *prState) {
	note := noteHumanCommit
	text := fmt.Sprintf("This branch has commits that backflow did not make (head %s). backflow will not update or rewrite it; it stays as you left it, for review.", short(st.pr.HeadSHA))
	if rc.commentOnce(st, note, text) {
		return
	}
	rc.act(Action{Kind: ActKeep, Branch: st.m.Branch, PR: st.pr.Number, URL: st.pr.URL, Detail: "a person's commit is on the branch; not updated"})
}

// commentOnce adds a comment the marker has no note of, and records the
// note. The comment carries the note hidden, so a crash between the comment
// and the marker update does not repeat it. It reports whether it acted.
func (rc *repoCycle) commentOnce(st *prState, note, text string) bool {
	if st.m.hasNote(note) {
		return false
	}
	if rc.b.opts.DryRun {
		rc.act(Action{Kind: ActComment, Branch: st.m.Branch, PR: st.pr.Number, URL: st.pr.URL, Detail: text})
		return true
	}
	f := rc.b.opts.Forge
	tag := "<!-- backflow:note " + note + " -->"
	comments, err := f.ListComments(rc.ctx, rc.repo, st.pr.Number)
	if err != nil {
		rc.fail(st.m.Branch, fmt.Errorf("error listing comments of #%d: %w", st.pr.Number, err))
		return true
	}
	found := false
	for _, c := range comments {
		if c.Mine && strings.Contains(c.Body, tag) {
			found = true
		}
	}
	if !found {
		if _, err := f.CreateComment(rc.ctx, rc.repo, st.pr.Number, text+"\n\n"+tag); err != nil {
			rc.fail(st.m.Branch, fmt.Errorf("error commenting on #%d: %w", st.pr.Number, err))
			return true
		}
	}
	st.m.Notes = append(st.m.Notes, note)
	body := replaceMarker(st.pr.Body, st.m)
	if _, err := f.UpdatePullRequest(rc.ctx, rc.repo, st.pr.Number, forge.PullRequestUpdate{Body: &body}); err != nil {
		rc.fail(st.m.Branch, fmt.Errorf("error recording a note on #%d: %w", st.pr.Number, err))
		return true
	}
	st.pr.Body = body
	rc.act(Action{Kind: ActComment, Branch: st.m.Branch, PR: st.pr.Number, URL: st.pr.URL, Detail: text})
	return true
}

// liveState is what the newest observation says of one proposed field.
type liveState int

const (
	liveUnknown  liveState = iota // no observation of the object: absence proves nothing
	liveStill                     // still at the proposed value
	liveBack                      // back at desired, by something other than the GitOps controller
	liveReverted                  // back at desired by the GitOps controller's forward apply
	liveOther                     // at yet another value
)

// withoutProposal decides an open pull request whose unit has no allowed
// change this cycle: superseded by the default branch, converged live,
// reverted by the forward apply, no longer authorized, or unchanged.
func (rc *repoCycle) withoutProposal(u *unitState) {
	st := u.open
	m := st.m
	unit := rc.unit(m.Environment, m.Unit)
	if unit == nil {
		rc.close(st, ClosedSuperseded, fmt.Sprintf("The unit %s of %s is no longer in %s on %s; this change is superseded.", m.Unit, m.Environment, repoconfig.Path, rc.repo.DefaultBranch))
		return
	}
	for _, c := range m.Changes {
		desired, ok := rc.desired(unit, c.ValuePath)
		switch {
		case !ok:
			rc.close(st, ClosedSuperseded, fmt.Sprintf("`%s` is no longer set in %s's values on %s; this change is superseded.", c.ValuePath, m.Unit, rc.repo.DefaultBranch))
			return
		case values.Equal(desired, c.To):
			rc.close(st, ClosedSuperseded, fmt.Sprintf("%s already holds `%s: %s`; this change is superseded.", rc.repo.DefaultBranch, c.ValuePath, values.Format(c.To)))
			return
		case !values.Equal(desired, c.From):
			rc.close(st, ClosedSuperseded, fmt.Sprintf("Desired `%s` changed to `%s` on %s; this change is superseded.", c.ValuePath, values.Format(desired), rc.repo.DefaultBranch))
			return
		}
	}
	states := map[liveState]int{}
	for _, c := range m.Changes {
		states[rc.liveState(m.Environment, c)]++
	}
	n := len(m.Changes)
	switch {
	case states[liveBack] == n:
		rc.close(st, ClosedConverged, "Live is back at desired: the newest observation shows no change on the proposed field(s), so there is nothing to accept back.")
		return
	case states[liveBack]+states[liveReverted] == n:
		if !rc.commentOnce(st, noteReverted, "The GitOps controller's forward apply reverted the live change. This pull request stays open: merging it restores the fix.") {
			rc.act(Action{Kind: ActKeep, Branch: m.Branch, PR: st.pr.Number, URL: st.pr.URL, Detail: "reverted by the forward apply; merging restores the fix"})
		}
		return
	}
	for _, d := range rc.res.Decisions {
		if d.Outcome != plan.Deny || d.Environment != m.Environment || d.Unit != m.Unit || !slices.ContainsFunc(m.Changes, func(c MarkerChange) bool { return c.Object == d.Object }) {
			continue
		}
		if m.Policy != rc.policySum {
			// The policy changed on the default branch since the receipt
			// was checked, and now denies the change.
			rc.refuseReceipt(st, d)
			return
		}
		// The same policy denies a newer observation (another actor, a
		// weaker attribution): the proposal and its receipt stand as they
		// were checked; the denial is reported with the decision.
		rc.act(Action{Kind: ActKeep, Branch: m.Branch, PR: st.pr.Number, URL: st.pr.URL, Detail: "the newest observation of " + d.Object + " is denied; the proposal is unchanged"})
		return
	}
	rc.act(Action{Kind: ActKeep, Branch: m.Branch, PR: st.pr.Number, URL: st.pr.URL, Detail: "unchanged"})
}

// refuseReceipt marks an open pull request whose change the default
// branch's policy no longer authorizes: a failed backflow/receipt check on
// its head (which blocks the merge where the check is required), once per
// policy version.
func (rc *repoCycle) refuseReceipt(st *prState, d plan.Decision) {
	note := noteReceipt + ":" + rc.policySum[:12]
	if st.m.hasNote(note) {
		rc.act(Action{Kind: ActKeep, Branch: st.m.Branch, PR: st.pr.Number, URL: st.pr.URL, Detail: "no longer authorized; receipt check failed"})
		return
	}
	summary := fmt.Sprintf("The default branch's policy (%s at %s) no longer authorizes this change: %s", rc.snap.PolicyPath, short(rc.head), strings.Join(d.Reasons, "; "))
	if rc.b.opts.DryRun {
		rc.act(Action{Kind: ActCheck, Branch: st.m.Branch, PR: st.pr.Number, Detail: "failure: " + summary})
		return
	}
	run := forge.CheckRun{Name: CheckName, HeadSHA: st.pr.HeadSHA, Status: forge.CheckCompleted, Conclusion: forge.ConclusionFailure,
		Title: "receipt refused", Summary: summary}
	if _, err := rc.b.opts.Forge.CreateCheckRun(rc.ctx, rc.repo, run); err != nil {
		rc.fail(st.m.Branch, fmt.Errorf("error creating the %s check on %s: %w", CheckName, st.pr.HeadSHA, err))
		return
	}
	rc.act(Action{Kind: ActCheck, Branch: st.m.Branch, PR: st.pr.Number, URL: st.pr.URL, Detail: "failure: " + summary})
	rc.commentOnce(st, note, summary)
}

func (rc *repoCycle) unit(env, name string) *repoconfig.Unit {
	for i := range rc.cfg.Units {
		if u := &rc.cfg.Units[i]; u.Environment == env && u.Name == name {
			return u
		}
	}
	return nil
}

// desired is the unit's merged value at path on the default branch (later
// values files override earlier ones, as Helm reads them).
func (rc *repoCycle) desired(u *repoconfig.Unit, valuePath string) (any, bool) {
	var v any
	found := false
	for _, file := range u.ValuesFiles {
		data, ok := rc.snap.Files[file]
		if !ok {
			continue
		}
		tree, err := repoconfig.Values(file, data, u.ValuesRoot)
		if err != nil {
			continue
		}
		if x, ok := repoconfig.Lookup(tree, valuePath); ok {
			v, found = x, true
		}
	}
	return v, found
}

// liveState reads the newest observation of a proposed field's object in
// the environment. Only an observation of the object counts as evidence;
// its field being absent means the field matched desired. A field back at
// desired counts as the forward apply's doing when its manager is a GitOps
// controller's (or one the repository ignores), or the observer classified
// the change as the forward apply.
func (rc *repoCycle) liveState(env string, c MarkerChange) liveState {
	var newest *observe.Observation
	for i := range rc.obs.Observations {
		o := &rc.obs.Observations[i]
		if o.Object.String() != c.Object || rc.envOf(*o) != env {
			continue
		}
		if newest == nil || o.ObservedAt.After(newest.ObservedAt) {
			newest = o
		}
	}
	if newest == nil {
		return liveUnknown
	}
	i := slices.IndexFunc(newest.Fields, func(f observe.Field) bool { return f.Path == c.Field })
	if i < 0 {
		return liveBack
	}
	f := newest.Fields[i]
	if f.Removed {
		return liveOther
	}
	live := f.LiveLike(c.From)
	switch {
	case values.Equal(live, c.To):
		return liveStill
	case values.Equal(live, c.From):
		if slices.Contains(rc.b.opts.GitOpsManagers, f.Manager) || rc.cfg.IgnoresManager(f.Manager) || f.Cause == "forward-apply" {
			return liveReverted
		}
		return liveBack
	}
	return liveOther
}

// close records why in the marker, comments, closes the pull request and
// deletes its branch.
func (rc *repoCycle) close(st *prState, reason, text string) {
	if rc.b.opts.DryRun {
		rc.act(Action{Kind: ActClose, Branch: st.m.Branch, PR: st.pr.Number, URL: st.pr.URL, Detail: text})
		return
	}
	f := rc.b.opts.Forge
	// The reason goes into the marker first: a pull request closed without
	// it was closed by a person, and its proposal is never reopened.
	st.m.Closed = reason
	body := replaceMarker(st.pr.Body, st.m)
	if _, err := f.UpdatePullRequest(rc.ctx, rc.repo, st.pr.Number, forge.PullRequestUpdate{Body: &body}); err != nil {
		rc.fail(st.m.Branch, fmt.Errorf("error updating #%d: %w", st.pr.Number, err))
		return
	}
	st.pr.Body = body
	if _, err := f.CreateComment(rc.ctx, rc.repo, st.pr.Number, text); err != nil {
		rc.fail(st.m.Branch, fmt.Errorf("error commenting on #%d: %w", st.pr.Number, err))
		return
	}
	if err := f.ClosePullRequest(rc.ctx, rc.repo, st.pr.Number); err != nil {
		rc.fail(st.m.Branch, fmt.Errorf("error closing #%d: %w", st.pr.Number, err))
		return
	}
	rc.act(Action{Kind: ActClose, Branch: st.m.Branch, PR: st.pr.Number, URL: st.pr.URL, Detail: text})
	st.pr.State = forge.StateClosed
	rc.cleanup(st)
}

// cleanup deletes the branch of a closed pull request (only while it still
// points at the pull request's head: a person's later commit is never
// deleted) and records that in the marker, so it is done once.
func (rc *repoCycle) cleanup(st *prState) {
	if st.m.BranchDeleted {
		return
	}
	if rc.b.opts.DryRun {
		rc.act(Action{Kind: ActCleanup, Branch: st.m.Branch, PR: st.pr.Number, Detail: "delete the branch of the closed pull request"})
		return
	}
	f := rc.b.opts.Forge
	detail := "branch deleted"
	err := f.DeleteBranch(rc.ctx, rc.repo, st.m.Branch, st.pr.HeadSHA)
	switch {
	case err == nil:
	case errors.Is(err, forge.ErrNotFound):
		detail = "branch already gone"
	case errors.Is(err, forge.ErrConflict):
		detail = "branch moved since the pull request closed; left alone"
	default:
		rc.fail(st.m.Branch, fmt.Errorf("error deleting branch %s: %w", st.m.Branch, err))
		return
	}
	st.m.BranchDeleted = true
	body := replaceMarker(st.pr.Body, st.m)
	if _, err := f.UpdatePullRequest(rc.ctx, rc.repo, st.pr.Number, forge.PullRequestUpdate{Body: &body}); err != nil {
		rc.fail(st.m.Branch, fmt.Errorf("error recording the cleanup on #%d: %w", st.pr.Number, err))
		return
	}
	st.pr.Body = body
	rc.act(Action{Kind: ActCleanup, Branch: st.m.Branch, PR: st.pr.Number, URL: st.pr.URL, Detail: detail})
}
