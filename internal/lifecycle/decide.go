package lifecycle

import (
	"cmp"
	"crypto/hmac"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/backflow-dev/backflow/internal/diffbound"
	"github.com/backflow-dev/backflow/internal/forge"
	"github.com/backflow-dev/backflow/internal/observe"
	"github.com/backflow-dev/backflow/internal/plan"
	"github.com/backflow-dev/backflow/internal/repoconfig"
	"github.com/backflow-dev/backflow/internal/values"
)

// maxRecordedCommits bounds the commit list a marker keeps.
const maxRecordedCommits = 20

// Input is what one repository's decisions are made from: the default
// branch at one commit, the plan made on it, and the observations.
type Input struct {
	// DefaultBranch is the branch pull requests target.
	DefaultBranch string
	// Head is the default-branch commit everything was read at.
	Head string
	// Snapshot is what the plan was made on: the repo config, the policy
	// and the values files at Head.
	Snapshot plan.Snapshot
	// PolicySum is the sha256 of the policy's bytes (hashBytes).
	PolicySum string
	// Result is the planner's result: its decisions and write-backs, and
	// the observations and desired values it decided from.
	Result plan.Result
	// GitOpsManagers are the field managers of GitOps controllers.
	GitOpsManagers []string
	// CommitKey keys the token that recognises the bot's own commits and
	// the markers' MAC; empty recognises none.
	CommitKey []byte
	// Now is backflow's clock at the cycle: a proof needs the grace
	// period over by it, not by an observation's date.
	Now time.Time
	// Repo is the repository, "owner/name", markers are sealed for.
	Repo string
	// Served are the repositories ("owner/name") this installation serves,
	// as its newest complete listing says (the forge's repositories the
	// allowlist lets in); nil until one was listed. A sealed hold naming a
	// repository outside them is released by the cycle of the first of
	// them (Holds), and by no other.
	Served []string
	// Recovered are markers the executor rebuilt (FromHeadCommit) for
	// closed pull requests whose marker was refused, by number.
	Recovered map[int]*Marker
	// ClosedByBot are the closed pull requests, by number, whose marker
	// says a person closed them but whose head carries the App's closedRun:
	// the marker is an older one pasted back (ErrMarkerReplayed).
	ClosedByBot map[int]bool
	// Previews are the revision store's previews of the write-backs that
	// write a revision (its dry run, as Markdown), by branch, for the pull
	// request's body; PreviewErrors why one could not be made, which
	// keeps its proposal from being written.
	Previews      map[string]string
	PreviewErrors map[string]error

	// held are the holds in place once this cycle's are placed and
	// released, by proposal (holdKey), as Holds decided them; nil until it
	// has. Every marker the cycle reads or writes after that lists them,
	// so whichever effect writes a body keeps its list of holds true.
	held map[string][]MarkerHold
	// heldNotes are the notes Holds decided to record on pull requests,
	// by number, which every later reading of their marker carries too.
	heldNotes map[int][]string
}

// Index pairs each write-back branch with its pull requests, sorted by
// branch. Only pull requests this App opened against the default branch
// and that carry a marker naming their own head branch count: a marker
// copied into someone else's pull request is ignored. problems lists
// pull requests whose marker is not authentic (ErrMarkerForged, wrapped)
// and branches that two open pull requests claim (the oldest is kept).
func (in *Input) Index(prs []forge.PullRequest) (units []*Unit, problems []error) {
	by := map[string]*Unit{}
	get := func(branch string) *Unit {
		if by[branch] == nil {
			by[branch] = &Unit{Branch: branch}
		}
		return by[branch]
	}
	for i := range in.Result.WriteBacks {
		wb := &in.Result.WriteBacks[i]
		get(wb.Branch).WriteBack = wb
	}
	prs = slices.Clone(prs)
	slices.SortFunc(prs, func(a, b forge.PullRequest) int { return a.Number - b.Number })
	for _, pr := range prs {
		if !pr.Mine || pr.BaseRef != in.DefaultBranch {
			continue
		}
		m, err := in.PullMarker(pr)
		if err != nil {
			problems = append(problems, fmt.Errorf("#%d: %w: ignored", pr.Number, err))
			m = in.Recovered[pr.Number]
		}
		if m == nil || m.Branch != pr.HeadRef {
			continue
		}
		u := get(m.Branch)
		st := &Pull{PR: pr, Marker: m}
		switch {
		case pr.State == forge.StateOpen && u.Open == nil:
			u.Open = st
		case pr.State == forge.StateOpen:
			// Two open pull requests for one branch cannot both be from
			// the same head on GitHub; keep the oldest and report.
			problems = append(
				problems,
				fmt.Errorf("%s: pull requests #%d and #%d both claim it", m.Branch, u.Open.PR.Number, pr.Number),
			)
		default:
			u.Closed = append(u.Closed, st)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(by)) {
		units = append(units, by[k])
	}
	return units, problems
}

// Cleanups are the branch deletions the unit's closed pull requests still
// need, one chain each.
func Cleanups(u *Unit) [][]Effect {
	var out [][]Effect
	for _, c := range u.Closed {
		if e, ok := cleanup(c); ok {
			out = append(out, []Effect{e})
		}
	}
	return out
}

func cleanup(p *Pull) (Effect, bool) {
	if p.Marker.BranchDeleted {
		return Effect{}, false
	}
	return Effect{
		Kind:   Cleanup,
		Branch: p.Marker.Branch,
		Pull:   p,
		Reason: "delete the branch of the closed pull request",
	}, true
}

// NeedsCommits reports whether deciding the unit needs the commits on its
// open pull request's head since the default branch: the head is not one
// the marker recorded, and a commit key could recognise the bot's own.
func (in *Input) NeedsCommits(u *Unit) bool {
	return u.Open != nil && !u.Open.Marker.OwnsHead(u.Open.PR.HeadSHA) && len(in.CommitKey) > 0
}

// Decide turns one write-back branch's plan and pull requests into the
// effects that bring them in line, in order. commits are the commits on the
// open pull request's head since the default branch, read when NeedsCommits
// says so (nil when they could not be read).
func (in *Input) Decide(u *Unit, commits []forge.Commit) []Effect {
	switch {
	case u.Open == nil && u.WriteBack == nil:
		return nil
	case u.Open == nil:
		p := in.propose(u.WriteBack)
		if c := in.closedByPerson(u, p.Fingerprint); c != nil {
			return []Effect{
				{
					Kind:   Skip,
					Branch: u.Branch,
					Pull:   c,
					Reason: "the same change was closed without merge; it is not proposed again",
				},
			}
		}
		return in.open(u.Branch, p)
	}
	st := u.Open.clone()
	var out []Effect
	if !st.Marker.OwnsHead(st.PR.HeadSHA) {
		adopted, ok := in.adopt(st, commits)
		if !ok {
			return in.humanCommit(st)
		}
		st.Marker.Commits = adopted
		out = append(
			out,
			Effect{
				Kind:    Record,
				Branch:  u.Branch,
				Pull:    st,
				Commits: adopted,
				Reason:  "the head is the bot's own commit; recorded",
			},
		)
	}
	if u.WriteBack == nil {
		return append(out, in.withoutProposal(st)...)
	}
	p := in.propose(u.WriteBack)
	if c := in.closedByPerson(u, p.Fingerprint); c != nil && p.Fingerprint != st.Marker.Fingerprint {
		// Live moved to a value a person already refused: that proposal is
		// not made again, and this one no longer matches live.
		text := fmt.Sprintf(
			"Live now matches #%d (%s), which was closed without merge; this proposal no longer matches live, "+
				"and that one is not made again.",
			c.PR.Number,
			p.Title(),
		)
		return append(out, in.close(st, ClosedSuperseded, text)...)
	}
	// A receipt check failed under an intermediate policy is replaced by
	// regenerating the branch, whose new head gets a fresh check.
	if p.Fingerprint == st.Marker.Fingerprint && in.baseUnchanged(st.Marker) && !st.Marker.receiptRefused() {
		return append(append(out, in.finish(st, p, st.PR.HeadSHA, st.PR.Labels, false)...), in.revertedNote(st)...)
	}
	for _, c := range st.Marker.Changes {
		// A new live value re-plans the pull request only when it is
		// believed as far as the receipt it replaces.
		i := slices.IndexFunc(p.Changes, func(n MarkerChange) bool { return n.Object == c.Object })
		if p.Fingerprint != st.Marker.Fingerprint && i >= 0 && !trustedToDecide(c, p.Changes[i].proofTrust()) {
			why := fmt.Sprintf(
				"the new live value of %s is believed only at %s, below %s, the attribution this pull request's receipt "+
					"was accepted on: not re-planned",
				c.Object,
				p.Changes[i].proofTrust(),
				c.proofTrust(),
			)
			return append(out, keep(st, why))
		}
	}
	why := "new live value"
	if p.Fingerprint == st.Marker.Fingerprint {
		why = "the default branch changed under the values file or the policy; regenerated from " + Short(in.Head)
	}
	if st.PR.AutoMergeEnabled {
		// GitHub keeps auto-merge armed across the bot's own push: it is
		// disarmed before the new head exists, and re-armed for that head
		// after its own check when the proposal still qualifies.
		out = append(
			out,
			Effect{Kind: Disarm, Branch: u.Branch, Pull: st, Reason: "auto-merge disarmed before the branch is rewritten"},
		)
	}
	return append(out, in.update(st, p, why)...)
}

// open is the effect that opens a pull request for p: the commit on the
// branch, which must not exist yet (what to do when it does is the
// Proposal's Recover), the receipt check on its head and the pull request
// carrying the marker. Its Pull is filled in as it is carried out; Chain
// adds what follows it.
func (in *Input) open(branch string, p *Proposal) []Effect {
	m := in.Marker(p, nil, nil)
	st := &Pull{
		PR:     forge.PullRequest{HeadRef: branch, BaseRef: in.DefaultBranch, Draft: in.Snapshot.Config.PullRequests.Draft},
		Marker: m,
	}
	return []Effect{
		{Kind: Open, Branch: branch, Pull: st, Proposal: p, Base: in.Head, Marker: m,
			Reason: p.Title() + p.MergeNote() + p.termNote()},
	}
}

// update is the effect that rewrites st's branch with p: one commit on the
// default branch's head replacing the head the pull request has now
// (compare-and-swap), its receipt check, the title and body. Chain adds
// what follows it.
func (in *Input) update(st *Pull, p *Proposal, why string) []Effect {
	m := in.Marker(p, slices.Clone(st.Marker.Commits), st.Marker)
	return []Effect{
		{Kind: Update, Branch: st.Marker.Branch, Pull: st, Proposal: p, Base: in.Head, Expected: st.PR.HeadSHA, Marker: m,
			Reason: why + ": " + p.Title() + p.MergeNote() + p.termNote()},
	}
}

// Chain is the whole chain of effects for the unit, in order, decided
// now: Decide's, and after an Open or an Update the reviewers, labels and
// auto-merge (finish) for the head that write makes, which the executor
// takes from the Pull it fills in. A rewrite leaves auto-merge disarmed
// (a Disarm comes before it when it was armed).
func (in *Input) Chain(u *Unit, commits []forge.Commit) []Effect {
	out, done := in.revisionChain(u)
	if done {
		return out
	}
	out = append(out, in.Decide(u, commits)...)
	if len(out) == 0 {
		return out
	}
	switch last := out[len(out)-1]; last.Kind {
	case Open:
		out = append(out, in.finish(last.Pull, last.Proposal, "", nil, true)...)
	case Update:
		st := last.Pull
		armed := st.PR.AutoMergeEnabled
		st.PR.AutoMergeEnabled = false
		out = append(out, in.finish(st, last.Proposal, "", st.PR.Labels, false)...)
		st.PR.AutoMergeEnabled = armed
	}
	return out
}

// adopt recognises an unrecorded head as the bot's own (a crash between the
// push and the pull request update) by the keyed token of every commit on
// the branch, and returns the marker's commits with them recorded.
func (in *Input) adopt(st *Pull, commits []forge.Commit) ([]string, bool) {
	if len(in.CommitKey) == 0 || len(commits) == 0 {
		return nil, false
	}
	for _, c := range commits {
		if !ours(in.CommitKey, c, st.Marker.Branch) {
			return nil, false
		}
	}
	out := slices.Clone(st.Marker.Commits)
	for _, c := range commits {
		if !slices.Contains(out, c.SHA) {
			out = append(out, c.SHA)
		}
	}
	return out, true
}

// humanCommit answers a branch that carries a commit the bot did not
// record. GitHub keeps auto-merge armed when someone with write access
// pushes, so it is disarmed; the backflow/receipt check for that head is
// red, with the whole-diff bound CI runs over the files the forge reports
// saying whether the diff stays within its receipts (Bound); the
// pull request is labelled person-commit (and loses pre-authorized) and
// commented once. The branch is never updated again: it is a person's pull
// request, reviewed as any other.
func (in *Input) humanCommit(st *Pull) []Effect {
	branch := st.Marker.Branch
	var out []Effect
	if st.PR.AutoMergeEnabled {
		out = append(
			out,
			Effect{Kind: Disarm, Branch: branch, Pull: st, Reason: "auto-merge disarmed: a person's commit is on the branch"},
		)
	}
	reason := fmt.Sprintf(
		"head %s carries commits backflow did not make: it is a person's pull request now, to be reviewed as any other; the "+
			"check is red and gives the whole-diff bound over its files",
		Short(st.PR.HeadSHA),
	)
	run := forge.CheckRun{
		Name:       CheckName,
		HeadSHA:    st.PR.HeadSHA,
		Status:     forge.CheckCompleted,
		Conclusion: forge.ConclusionFailure,
		Title:      "a commit backflow did not make",
		Summary:    reason,
	}
	out = append(
		out,
		Effect{
			Kind:        Check,
			Branch:      branch,
			Pull:        st,
			Run:         &run,
			IfUnchecked: true,
			Bound:       new(in.boundInput()),
			Reason:      reason,
		},
	)
	if !slices.Contains(st.PR.Labels, LabelPersonCommit) {
		out = append(
			out,
			Effect{
				Kind:   Label,
				Branch: branch,
				Pull:   st,
				Labels: []string{LabelPersonCommit},
				Reason: "label " + LabelPersonCommit,
			},
		)
	}
	if slices.Contains(st.PR.Labels, LabelPreAuthorized) {
		out = append(out, Effect{Kind: Unlabel, Branch: branch, Pull: st, Labels: []string{LabelPreAuthorized},
			Reason: "no longer pre-authorized: a person's commit is on the branch"})
	}
	text := fmt.Sprintf(
		"This branch has commits that backflow did not make (head %s). Auto-merge is disarmed, and the %s check for this "+
			"head is red: it is a person's pull request now. The check also gives the whole-diff bound `backflow verify "+
			"--repo` runs: whether every changed file and value is one the receipts claim, or which are not. backflow will not "+
			"update or rewrite the branch; it stays as you left it, for review.",
		Short(st.PR.HeadSHA),
		CheckName,
	)
	if e, ok := commentOnce(st, noteHumanCommit, text); ok {
		return append(out, e)
	}
	return append(out, keep(st, "a person's commit is on the branch; not updated"))
}

func keep(st *Pull, why string) Effect {
	return Effect{Kind: Keep, Branch: st.Marker.Branch, Pull: st, Reason: why}
}

// commentOnce is a comment the marker has no note of yet.
func commentOnce(st *Pull, note, text string) (Effect, bool) {
	if st.Marker.hasNote(note) {
		return Effect{}, false
	}
	return Effect{
		Kind:   Comment,
		Branch: st.Marker.Branch,
		Pull:   st,
		Note:   note,
		Tag:    commentTag(note),
		Text:   text,
		Reason: text,
	}, true
}

// close is the chain that closes the bot's open pull request: why goes
// into the marker, a comment, the App's ledger on its head (closedRun),
// the close, then the branch's deletion. Every close the lifecycle decides
// (superseded, converged, a value a person refused) is made here, so what
// a close requires is required in one place.
func (in *Input) close(st *Pull, reason, text string) []Effect {
	return []Effect{
		{
			Kind:   Close,
			Branch: st.Marker.Branch,
			Pull:   st,
			Closed: reason,
			Text:   text,
			Reason: text,
			Run:    new(closedRun(st, reason)),
		},
		{Kind: Cleanup, Branch: st.Marker.Branch, Pull: st, Reason: "delete the branch of the closed pull request"},
	}
}

// closedByPerson returns the pull request of the branch that proposed
// fingerprint and was closed without merge by someone other than the bot:
// its marker records no close of the bot's, and the App's own ledger on
// its head (ClosedByBot) does not say the bot closed it.
func (in *Input) closedByPerson(u *Unit, fingerprint string) *Pull {
	for _, c := range u.Closed {
		if c.Marker.Fingerprint == fingerprint && !c.PR.Merged && c.Marker.Closed == "" && !in.ClosedByBot[c.PR.Number] {
			return c
		}
	}
	return nil
}

// PersonClosed are the closed pull requests whose markers say a person
// closed them and that decide something this cycle: they proposed what
// the unit's write-back proposes now. Their markers are worth checking
// against the App's ledger (closedRun), because an older authentic
// marker, from before the bot closed the pull request, can be pasted back
// into its body to make the bot's close look like a person's.
func (in *Input) PersonClosed(u *Unit) []*Pull {
	if u.WriteBack == nil {
		return nil
	}
	fp := fingerprint(*u.WriteBack, in.Result.Decisions)
	if u.Open != nil && u.Open.Marker.Fingerprint == fp {
		return nil // the open pull request proposes it: no close decides
	}
	var out []*Pull
	for _, c := range u.Closed {
		if c.Marker.Fingerprint == fp && !c.PR.Merged && c.Marker.Closed == "" && c.PR.HeadSHA != "" {
			out = append(out, c)
		}
	}
	return out
}

// ClosedCheckName is the check run the bot writes on a pull request's head
// just before it closes the pull request itself: only the App can write or
// change its check runs, so no edit of the body undoes it. It is never
// the required backflow/receipt: a neutral conclusion there would pass.
const ClosedCheckName = "backflow/closed"

const closedLedger = "backflow:closed:"

// closedRun is that check run, for reason (ClosedSuperseded, ...).
func closedRun(st *Pull, reason string) forge.CheckRun {
	return forge.CheckRun{
		Name:       ClosedCheckName,
		HeadSHA:    st.PR.HeadSHA,
		Status:     forge.CheckCompleted,
		Conclusion: forge.ConclusionNeutral,
		Title:      "closed by backflow: " + reason,
		Summary:    fmt.Sprintf("backflow closed #%d itself (%s).", st.PR.Number, reason),
		ExternalID: closedLedger + reason,
	}
}

// ClosedByTheBot reports whether runs (the check runs on a closed pull
// request's head) hold the App's closedRun: the bot closed it, whatever
// its body's marker says now.
func ClosedByTheBot(runs []forge.CheckRun) bool {
	return slices.ContainsFunc(runs, func(r forge.CheckRun) bool {
		return r.Mine && r.Name == ClosedCheckName && strings.HasPrefix(r.ExternalID, closedLedger)
	})
}

// baseUnchanged reports that the values files and the policy the pull
// request was written against are what the default branch holds now.
func (in *Input) baseUnchanged(m *Marker) bool {
	if m.Policy != in.PolicySum {
		return false
	}
	for file, sum := range m.Files {
		data, ok := in.Snapshot.Files[file]
		if !ok || hashBytes(data) != sum {
			return false
		}
	}
	return true
}

// finish brings a pull request's reviewers, labels and auto-merge in line
// with the proposal, head being its head now (empty: the head the chain's
// Open or Update writes) and have its labels. Labels
// come last among the set-up steps, so a missing reverse-reconcile label
// tells the next cycle that set-up did not finish. fresh says the pull
// request was opened just now.
func (in *Input) finish(st *Pull, p *Proposal, head string, have []string, fresh bool) []Effect {
	var out []Effect
	cfg := in.Snapshot.Config.PullRequests
	branch := p.WriteBack.Branch
	if (fresh || !slices.Contains(have, LabelReverseReconcile)) && len(cfg.Reviewers)+len(cfg.TeamReviewers) > 0 {
		out = append(
			out,
			Effect{
				Kind:   Review,
				Branch: branch,
				Pull:   st,
				Users:  cfg.Reviewers,
				Teams:  cfg.TeamReviewers,
				Reason: "request the configured reviewers",
			},
		)
	}
	var missing []string
	for _, l := range wantedLabels(in.Snapshot.Config, p.WriteBack.Environment, p.AutoMerge) {
		if !slices.Contains(have, l) {
			missing = append(missing, l)
		}
	}
	if len(missing) > 0 {
		out = append(
			out,
			Effect{Kind: Label, Branch: branch, Pull: st, Labels: missing, Reason: "label " + strings.Join(missing, ", ")},
		)
	}
	if !p.AutoMerge && slices.Contains(have, LabelPreAuthorized) {
		out = append(out, Effect{Kind: Unlabel, Branch: branch, Pull: st, Labels: []string{LabelPreAuthorized},
			Reason: "no longer pre-authorized"})
	}
	if !p.AutoMerge && st.PR.AutoMergeEnabled {
		out = append(
			out,
			Effect{Kind: Disarm, Branch: branch, Pull: st, Reason: "auto-merge disarmed: the proposal no longer qualifies"},
		)
	}
	if p.AutoMerge && !st.PR.AutoMergeEnabled && !st.PR.Draft {
		method := forge.MergeMethod(in.Snapshot.Config.AutoMerge.Method)
		if method == "" {
			method = forge.MergeMethod(repoconfig.DefaultMergeMethod)
		}
		at := "the new head"
		if head != "" {
			at = Short(head)
		}
		var after []Effect
		if e, ok := cleanup(st); ok {
			after = append(after, e)
		}
		out = append(out, Effect{Kind: AutoMerge, Branch: branch, Pull: st, Head: head, Method: method, AfterMerge: after,
			Reason: "arm auto-merge at " + at +
				" (or, where GitHub cannot arm it, merge over REST pinned to it once mergeable and green)"})
	}
	return out
}

// autoMergeRefused is the comment, made once, on a pull request whose
// auto-merge GitHub refused with an error the adapter does not recognise:
// it quotes the error and says the bot merges over REST, pinned to the
// head, once the pull request is mergeable and green.
func autoMergeRefused(p *Pull, msg string) (Effect, bool) {
	text := fmt.Sprintf(
		"GitHub refused to arm auto-merge on this pull request:\n\n> %s\n\nbackflow will merge it over REST, pinned to head "+
			"%s, once it is mergeable and its required checks pass.",
		strings.ReplaceAll(msg, "\n", " "),
		Short(p.PR.HeadSHA),
	)
	return commentOnce(p, noteAutoMergeRefused, text)
}

// mergeNow decides, where auto-merge cannot be armed, whether to merge the
// pull request over REST now: only while its head is still the one checked
// and GitHub calls it mergeable and green. why says what it waits for.
func mergeNow(cur forge.PullRequest, head string) (ok bool, why string) {
	if cur.HeadSHA != head || cur.MergeableState != "clean" {
		return false, "waiting to be mergeable and green (" + orUnknown(cur.MergeableState) + ")"
	}
	return true, ""
}

// BaseMoved reports that the default branch is no longer at the commit the
// plan was made on, and not because of a merge this cycle made: the plan is
// made again next cycle rather than written now.
func (in *Input) BaseMoved(head string, merges []string) bool {
	return baseMoved(in.Head, head, merges)
}

func baseMoved(base, head string, merges []string) bool {
	return head != base && !slices.Contains(merges, head)
}

// Recovery is what to do with a write-back branch that exists without an
// open pull request.
type Recovery int

// Recoveries.
const (
	// LeaveAlone: the branch holds a commit the bot did not make.
	LeaveAlone Recovery = iota
	// Reuse: the branch is the bot's commit of this very proposal on the
	// current default branch.
	Reuse
	// Rewrite: the branch holds only the bot's commits, of another
	// proposal or base; it is rewritten.
	Rewrite
)

// Recover decides a write-back branch left by a crash after the push, by
// another backflow process, or by a person, found existing without an open
// pull request, from the commits on it since base (the default-branch
// commit the write-back is made on: the cycle's head, or its own merge of
// another unit): reuse the bot's commit of this very proposal on base,
// rewrite a branch of the bot's own commits, leave anything else alone.
func (p *Proposal) Recover(base string, commits []forge.Commit) Recovery {
	for _, c := range commits {
		if !ours(p.at.key, c, p.WriteBack.Branch) {
			return LeaveAlone
		}
	}
	if len(commits) == 1 && commits[0].Parents[0] == base &&
		trailer(commits[0].Message, trailerFingerprint) == p.Fingerprint {
		return Reuse
	}
	return Rewrite
}

// ProposedElsewhere finds, among the branch's pull requests listed just
// before opening one, an open or merged pull request of this App whose
// head is sha or that proposed the same change from the cycle's head or from base (the commit
// the write-back is made on, which this cycle's own merge of another unit
// may have moved it to): another process may have opened, merged and
// cleaned it up since the cycle listed the pull requests, and one pull
// request per unit means not opening a second one for it.
func (p *Proposal) ProposedElsewhere(prs []forge.PullRequest, sha, base string) (forge.PullRequest, bool) {
	branch := p.WriteBack.Branch
	for _, pr := range prs {
		if !pr.Mine || pr.HeadRef != branch || pr.BaseRef != p.at.defaultBranch ||
			(pr.State != forge.StateOpen && !pr.Merged) {
			// A pull request closed without merge proposes nothing: the
			// lifecycle decided whether its close holds the change back.
			continue
		}
		if sha != "" && pr.HeadSHA == sha {
			return pr, true
		}
		if m, ok := authenticMarker(p.at.key, p.at.repo, pr); ok && m.Fingerprint == p.Fingerprint &&
			(m.Base == p.at.head || m.Base == base) {
			return pr, true
		}
	}
	return forge.PullRequest{}, false
}

// boundInput is the whole-diff bound's input for a pull request against
// the default branch, its files yet to be added: the default branch's repo
// config and policy at the cycle's head, never the head's.
func (in *Input) boundInput() diffbound.Input {
	return diffbound.Input{Config: in.Snapshot.Config, Policy: in.Snapshot.Policy, PolicyPath: in.Snapshot.PolicyPath,
		Base: map[string][]byte{}, Head: map[string][]byte{}}
}

// boundRun is run (a Bound check on a head a person pushed) with the
// whole-diff bound's verdict. The check is red either way: backflow did not
// make the head, so no receipt of its speaks for it and a reviewer must
// (the receipts in it can be any writer's claims). Its text says whether
// the whole diff stays within the receipts, or names every violation and
// problem, so the reviewer reads the same verdict `backflow verify --repo`
// gives in CI.
func boundRun(run forge.CheckRun, res diffbound.Result, problems []string) forge.CheckRun {
	all := append(slices.Clone(problems), res.Violations...)
	head := Short(run.HeadSHA)
	run.Conclusion = forge.ConclusionFailure
	if len(all) == 0 {
		run.Title = "a commit backflow did not make; its diff stays within the receipts"
		run.Summary = fmt.Sprintf(
			"Head %s carries commits backflow did not make, so auto-merge is disarmed and the pull request is a person's, to "+
				"be reviewed as any other: this check stays red for it. Its whole diff stays within what its %d receipt(s) claim, "+
				"and each verifies against the base branch's policy (the bound `backflow verify --repo` checks in CI).",
			head,
			res.Receipts,
		)
		run.Text = ""
		return run
	}
	run.Title = "a commit backflow did not make; its diff is not bound by its receipts"
	run.Summary = fmt.Sprintf(
		"Head %s carries commits backflow did not make, so auto-merge is disarmed and the pull request is a person's, to be "+
			"reviewed as any other: this check stays red for it. Its whole diff also fails the bound `backflow verify --repo` "+
			"checks in CI (%d receipt(s) checked):",
		head,
		res.Receipts,
	)
	esc := make([]string, len(all))
	for i, v := range all {
		esc[i] = cell(v)
	}
	run.Text = fitBody("- "+strings.Join(esc, "\n- "), maxBody, "`backflow verify --repo` in CI lists every violation")
	return run
}

// Checked reports whether runs hold the bot's own check with run's
// conclusion already: a reused commit is not checked twice.
func Checked(runs []forge.CheckRun, run forge.CheckRun) bool {
	return slices.ContainsFunc(runs, func(r forge.CheckRun) bool { return r.Mine && r.Conclusion == run.Conclusion })
}

// ours reports whether a commit on branch carries the bot's keyed token.
func ours(key []byte, c forge.Commit, branch string) bool {
	if len(c.Parents) != 1 {
		return false
	}
	want := commitToken(key, branch, c.Parents[0], trailer(c.Message, trailerFingerprint))
	got := trailer(c.Message, trailerToken)
	return want != "" && hmac.Equal([]byte(want), []byte(got))
}

// Marker is the marker the proposal's pull request carries, commits being
// the bot's commits on the branch. A rewrite keeps the notes of the
// previous marker prev, except a refused receipt's: the new head gets a
// fresh check.
func (in *Input) Marker(p *Proposal, commits []string, prev *Marker) *Marker {
	m := &Marker{
		Version:     markerVersion,
		Unit:        p.WriteBack.Unit,
		Environment: p.WriteBack.Environment,
		Branch:      p.WriteBack.Branch,
		Fingerprint: p.Fingerprint,
		Changes:     p.Changes,
		Base:        in.Head,
		Files:       map[string]string{},
		Policy:      in.PolicySum,
		Commits:     commits,
		AutoMerge:   p.AutoMerge,
		Revision:    markerRevision(p.WriteBack),
	}
	if len(m.Commits) > maxRecordedCommits {
		m.Commits = m.Commits[len(m.Commits)-maxRecordedCommits:]
	}
	for _, c := range p.Changes {
		if data, ok := in.Snapshot.Files[c.ValuesFile]; ok {
			m.Files[c.ValuesFile] = hashBytes(data)
		}
	}
	for _, f := range p.WriteBack.Receipts {
		m.Receipts = append(m.Receipts, f.Path)
	}
	if prev != nil {
		for _, n := range prev.Notes {
			if !strings.HasPrefix(n, noteReceipt) {
				m.Notes = append(m.Notes, n)
			}
		}
	}
	m.Holds = slices.Clone(in.held[holdKey(m.Branch, m.Fingerprint)])
	return m
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
func (in *Input) withoutProposal(st *Pull) []Effect {
	m := st.Marker
	unit := in.unit(m.Environment, m.Unit)
	if unit == nil {
		return in.close(
			st,
			ClosedSuperseded,
			fmt.Sprintf(
				"The unit %s of %s is no longer in %s on %s; this change is superseded.",
				m.Unit,
				m.Environment,
				repoconfig.Path,
				in.DefaultBranch,
			),
		)
	}
	for _, c := range m.Changes {
		desired, ok := in.Result.DesiredOf(unit.Environment, unit.Name, c.ValuePath)
		switch {
		case !ok:
			return in.close(
				st,
				ClosedSuperseded,
				fmt.Sprintf(
					"%s is no longer set in %s's values on %s; this change is superseded.",
					code(c.ValuePath),
					cell(m.Unit),
					cell(in.DefaultBranch),
				),
			)
		case values.Equal(desired, c.To):
			return in.close(
				st,
				ClosedSuperseded,
				fmt.Sprintf(
					"%s already holds %s; this change is superseded.",
					cell(in.DefaultBranch),
					code(c.ValuePath+": "+values.Format(c.To)),
				),
			)
		case !values.Equal(desired, c.From):
			return in.close(
				st,
				ClosedSuperseded,
				fmt.Sprintf(
					"Desired %s changed to %s on %s; this change is superseded.",
					code(c.ValuePath),
					code(values.Format(desired)),
					cell(in.DefaultBranch),
				),
			)
		}
	}
	states := map[liveState]int{}
	for _, c := range m.Changes {
		states[in.liveState(m.Environment, c)]++
	}
	n := len(m.Changes)
	switch {
	case states[liveBack] == n:
		return in.close(
			st,
			ClosedConverged,
			"Live is back at desired: the newest observation shows no change on the proposed field(s), so there is nothing to "+
				"accept back.",
		)
	case states[liveBack]+states[liveReverted] == n:
		text := "The GitOps controller's forward apply reverted the live change. " +
			"This pull request stays open: merging it restores the fix."
		if e, ok := commentOnce(st, noteReverted, text); ok {
			return []Effect{e}
		}
		return []Effect{keep(st, "reverted by the forward apply; merging restores the fix")}
	}
	for _, d := range in.Result.Decisions {
		if d.Outcome != plan.Deny || d.Environment != m.Environment || d.Unit != m.Unit ||
			!slices.ContainsFunc(m.Changes, func(c MarkerChange) bool { return c.Object == d.Object }) {
			continue
		}
		if m.Policy != in.PolicySum {
			// The policy changed on the default branch since the receipt
			// was checked, and now denies the change.
			return in.refuseReceipt(st, d)
		}
		// The same policy denies a newer observation (another actor, a
		// weaker attribution): the proposal and its receipt stand as they
		// were checked; the denial is reported with the decision.
		return []Effect{keep(st, "the newest observation of "+d.Object.String()+" is denied; the proposal is unchanged")}
	}
	return []Effect{keep(st, "unchanged")}
}

// refuseReceipt marks an open pull request whose change the default
// branch's policy no longer authorizes: a failed backflow/receipt check on
// its head (which blocks the merge where the check is required), and a
// comment, once per policy version.
func (in *Input) refuseReceipt(st *Pull, d plan.Decision) []Effect {
	note := noteReceipt + ":" + in.PolicySum[:12]
	if st.Marker.hasNote(note) {
		return []Effect{keep(st, "no longer authorized; receipt check failed")}
	}
	summary := fmt.Sprintf(
		"The default branch's policy (%s at %s) no longer authorizes this change: %s",
		in.Snapshot.PolicyPath,
		Short(in.Head),
		strings.Join(d.Reasons, "; "),
	)
	run := forge.CheckRun{
		Name:       CheckName,
		HeadSHA:    st.PR.HeadSHA,
		Status:     forge.CheckCompleted,
		Conclusion: forge.ConclusionFailure,
		Title:      "receipt refused",
		Summary:    summary,
	}
	e, _ := commentOnce(st, note, summary)
	return []Effect{{Kind: Check, Branch: st.Marker.Branch, Pull: st, Run: &run, Reason: "failure: " + summary}, e}
}

func (in *Input) unit(env, name string) *repoconfig.Unit {
	for i := range in.Snapshot.Config.Units {
		if u := &in.Snapshot.Config.Units[i]; u.Environment == env && u.Name == name {
			return u
		}
	}
	return nil
}

// liveState reads the newest observation of a proposed field's object in
// the environment from a source trusted as far as the change's receipt
// (trustedToDecide). Only an observation of the object counts as evidence;
// its field being absent means the field matched desired. A field back at
// desired counts as the forward apply's doing when its manager is a GitOps
// controller's (or one the repository ignores), or the observer classified
// the change as the forward apply.
func (in *Input) liveState(env string, c MarkerChange) liveState {
	seen := in.Result.ObservedOf(env, c.Object)
	if seen == nil {
		return liveUnknown
	}
	newest := newestTrusted(seen, c)
	if newest == nil {
		return liveUnknown
	}
	i := slices.IndexFunc(newest.Fields, func(f observe.Field) bool { return f.Path == c.Field })
	if i < 0 {
		return liveBack
	}
	f := liveNow(newest.Fields[i])
	switch {
	case f.Ambiguous != "":
		return liveUnknown // the observer's text cannot say what the field holds
	case f.Removed:
		return liveOther
	}
	live := f.LiveLike(c.From)
	switch {
	case values.Equal(live, c.To):
		return liveStill
	case values.Equal(live, c.From):
		if slices.Contains(in.GitOpsManagers, f.Manager) || in.Snapshot.Config.IgnoresManager(f.Manager) ||
			f.Cause == "forward-apply" {
			return liveReverted
		}
		return liveBack
	}
	return liveOther
}

// Proposal is a write-back as the cycle is about to write it.
type Proposal struct {
	// WriteBack is the planner's write-back.
	WriteBack *plan.WriteBack
	// Fingerprint identifies what it proposes.
	Fingerprint string
	// Changes are its accepted fields, sorted.
	Changes []MarkerChange
	// AutoMerge says it merges without review.
	AutoMerge bool
	// Files are the commit's files, or FilesErr why one may not be written.
	Files    map[string][]byte
	FilesErr error
	doc      *writeBackDoc
	at       where
}

// where is what a proposal's rules need of the repository it is made
// for: the commit key that recognises the bot's commits and markers, the
// repository markers are sealed for, and the default branch at the head
// the plan was made on.
type where struct {
	key                       []byte
	repo, head, defaultBranch string
}

// Propose prepares a write-back: its marker changes, the verification of
// its receipts against the default branch's policy, whether it merges
// automatically, and the files its commit writes.
func (in *Input) propose(wb *plan.WriteBack) *Proposal {
	changes := markerChanges(*wb, in.Result.Decisions)
	doc := &writeBackDoc{
		wb:        *wb,
		decisions: in.Result.Decisions,
		changes:   changes,
		cfg:       in.Snapshot.Config,
		snap:      in.Snapshot,
		observed:  map[observe.ObjectKey][]string{},
		newest:    map[observe.ObjectKey]observe.Observation{},
	}
	if env, ok := in.Snapshot.Config.Environments[wb.Environment]; ok {
		doc.clusters = env.Clusters
	}
	for _, key := range wb.Objects {
		seen := in.Result.ObservedOf(wb.Environment, key)
		if seen == nil {
			continue
		}
		for _, o := range seen.Observations {
			if !slices.Contains(doc.observed[key], o.Cluster) {
				doc.observed[key] = append(doc.observed[key], o.Cluster)
			}
		}
		slices.Sort(doc.observed[key])
		doc.newest[key] = *seen.Newest
	}
	doc.check = in.verify(wb)
	// Auto-merge needs every field pre-authorized with an audit-log actor
	// (the planner's verdict), the repository's consent, and a receipt that
	// verifies: never when the check failed.
	doc.autoMerge = wb.AutoMerge && in.Snapshot.Config.AutoMerge.Enabled && doc.check.ok()
	p := &Proposal{
		WriteBack:   wb,
		Fingerprint: fingerprintOf(wb.Environment, wb.Unit, changes),
		Changes:     changes,
		AutoMerge:   doc.autoMerge,
		doc:         doc,
		at:          where{key: in.CommitKey, repo: in.Repo, head: in.Head, defaultBranch: in.DefaultBranch},
	}
	p.Files, p.FilesErr = in.files(wb)
	doc.preview = in.Previews[wb.Branch]
	if err := cmp.Or(revisionRefused(wb), in.PreviewErrors[wb.Branch]); err != nil && p.FilesErr == nil {
		p.FilesErr = err
	}
	return p
}

// verify checks the write-back's whole diff as the backflow/receipt check
// and `backflow verify --repo` do: every file a receipt or a values file
// its receipts name, every changed value path claimed, every receipt
// verified against the default branch's policy.
func (in *Input) verify(wb *plan.WriteBack) checkResult {
	d := diffbound.Input{Config: in.Snapshot.Config, Policy: in.Snapshot.Policy, PolicyPath: in.Snapshot.PolicyPath,
		Base: map[string][]byte{}, Head: map[string][]byte{}}
	for _, f := range append(slices.Clone(wb.Files), wb.Receipts...) {
		d.Changed = append(d.Changed, f.Path)
		d.Head[f.Path] = f.Data
		if data, ok := in.Snapshot.Files[f.Path]; ok {
			d.Base[f.Path] = data
		}
	}
	res := diffbound.Check(d)
	return checkResult{checked: res.Receipts, violations: res.Violations}
}

// files are the commit's files: the edited values files and the receipts,
// each checked to be a file the bot may write.
func (in *Input) files(wb *plan.WriteBack) (map[string][]byte, error) {
	out := map[string][]byte{}
	for _, f := range wb.Files {
		if err := in.Snapshot.Config.Writable(f.Path); err != nil {
			return nil, fmt.Errorf("refusing to write %s: %w", f.Path, err)
		}
		out[f.Path] = f.Data
	}
	for _, f := range wb.Receipts {
		if err := in.Snapshot.Config.ReceiptWritable(f.Path); err != nil {
			return nil, fmt.Errorf("refusing to write receipt %s: %w", f.Path, err)
		}
		if _, dup := out[f.Path]; dup {
			return nil, fmt.Errorf("refusing to write receipt %s: it is also a values file of the write-back", f.Path)
		}
		out[f.Path] = f.Data
	}
	return out, nil
}

// Title is the pull request's title.
func (p *Proposal) Title() string { return Title(p.WriteBack.Environment, p.Changes) }

// Body is the pull request's description carrying m.
func (p *Proposal) Body(m *Marker) string { return p.doc.body(m) }

// CheckRun is the receipt check on head.
func (p *Proposal) CheckRun(head string) forge.CheckRun { return p.doc.check.run(head) }

// CommitOn is the commit of the proposal on base by author, replacing
// expected (empty: the branch must not exist).
func (p *Proposal) CommitOn(
	base string,
	repo forge.Repo,
	author forge.Author,
	method forge.CommitMethod,
	expected string,
	force bool,
) forge.CommitRequest {
	token := commitToken(p.at.key, p.WriteBack.Branch, base, p.Fingerprint)
	return forge.CommitRequest{Repo: repo, Branch: p.WriteBack.Branch, BaseSHA: base, ExpectedHead: expected, Force: force,
		Files: p.Files, Message: p.doc.commitMessage(p.Fingerprint, token), Author: author, Method: method}
}

// MergeNote says in the report how the proposal merges.
func (p *Proposal) MergeNote() string {
	switch {
	case p.AutoMerge:
		return " [pre-authorized: auto-merge]"
	case !p.doc.check.ok():
		return " [receipt check failed: " + p.doc.check.summary() + "]"
	default:
		return " [needs review]"
	}
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

// Short is a commit SHA's first twelve characters.
func Short(sha string) string {
	if len(sha) > 12 {
		return sha[:12]
	}
	return sha
}
