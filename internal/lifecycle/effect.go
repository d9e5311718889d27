package lifecycle

import (
	"github.com/backflow-dev/backflow/internal/diffbound"
	"github.com/backflow-dev/backflow/internal/forge"
	"github.com/backflow-dev/backflow/internal/plan"
)

// Kind names what an effect does to the forge.
type Kind string

// Effect kinds. The first group is reported to the user, one line each; the
// second is bookkeeping a reported effect brings with it.
const (
	Open       Kind = "open"        // commit the proposal to its branch and open its pull request
	Update     Kind = "update"      // rewrite the branch with a new proposal and update the pull request
	Keep       Kind = "keep"        // leave the pull request as it is, with the reason
	Close      Kind = "close"       // record why in the marker, comment, close the pull request
	Comment    Kind = "comment"     // a comment made once, remembered by a note in the marker
	AutoMerge  Kind = "auto-merge"  // arm auto-merge pinned to the head, or merge where it cannot be armed
	Merge      Kind = "merge"       // merged over REST pinned to the head (the outcome of AutoMerge)
	Skip       Kind = "skip"        // a proposal not written (closed before by a person, a foreign branch)
	Cleanup    Kind = "cleanup"     // delete a closed pull request's branch, once
	Check      Kind = "check"       // a failed receipt check on an open pull request's head
	Disarm     Kind = "disarm"      // disable auto-merge (GitHub keeps it armed across a push with write access)
	Proven     Kind = "proven"      // publish the proven receipts of a merged write-back
	Reverted   Kind = "reverted"    // say that a merged write-back did not stick
	FollowUp   Kind = "follow-up"   // a merged write-back waits for evidence
	DriftIssue Kind = "drift-issue" // open, update, reopen or close the drift tracking issue
	Hold       Kind = "hold"        // place the forward controller's mark and the sealed hold on a live object
	Release    Kind = "release"     // remove a sealed hold, then ask the applier to reconcile

	Record  Kind = "record"  // record commits recognised as the bot's own in the marker
	Review  Kind = "review"  // request the configured reviewers
	Label   Kind = "label"   // add the missing labels
	Unlabel Kind = "unlabel" // remove a label the proposal no longer earns
	// ListHolds writes the pull request's body with the holds its marker
	// lists (the holds in place after the cycle's holds are decided).
	ListHolds Kind = "list-holds"
)

// Reported says whether the effect is a line of the cycle's report;
// bookkeeping effects are applied silently.
func (k Kind) Reported() bool {
	switch k {
	case Record, Review, Label, Unlabel, ListHolds:
		return false
	}
	return true
}

// Effect is one thing the lifecycle decided to do, with its reason. The
// executor applies a unit's effects in order and stops at the first that
// fails; a dry run reports them and applies none.
type Effect struct {
	// Kind is what to do.
	Kind Kind
	// Branch is the write-back branch the effect belongs to ("" for the
	// drift issue).
	Branch string
	// Pull is the pull request acted on, when there is one. The executor
	// keeps its body and marker current as it applies effects.
	Pull *Pull
	// Reason says what and why, in a line: the report's line in a dry run,
	// and for effects whose outcome only the forge knows (Cleanup,
	// AutoMerge, DriftIssue) what was decided rather than what happened.
	Reason string

	// Proposal is what Open and Update write; Base is the default-branch
	// commit the plan was made on, Expected the branch head an Update
	// replaces (compare-and-swap), and Marker the marker the pull request
	// carries once written, its new head still to be recorded
	// (Marker.Written). What to do when the branch already exists, or when
	// another process proposed the same change first, is the Proposal's
	// (Recover, ProposedElsewhere), decided from the forge's answer alone.
	Proposal *Proposal
	Base     string
	Expected string
	Marker   *Marker
	// Closed is the reason Close records in the marker (ClosedSuperseded,
	// ClosedConverged).
	Closed string
	// Note is the marker note a Comment records; Text is the text of a
	// Comment or of the comment a Close leaves.
	Note, Text string
	// Labels are what Label adds or Unlabel removes.
	Labels []string
	// Users and Teams are the reviewers Review requests.
	Users, Teams []string
	// Head is the commit AutoMerge pins the merge to; empty after an
	// Open or Update of the same chain, whose new head (Pull's) it is.
	Head string
	// AfterMerge are the effects that follow AutoMerge's merge over
	// REST (the branch's cleanup).
	AfterMerge []Effect
	// Method is the merge method of AutoMerge.
	Method forge.MergeMethod
	// Run is the check run Check posts, or the App's ledger run a Close
	// writes on the head before closing (closedRun).
	Run *forge.CheckRun
	// Tag is the hidden tag a Comment carries (commentTag of Note).
	Tag string
	// IfUnchecked makes a Check post only when the head carries no run of
	// the bot's with the same conclusion yet (see Checked): the forge
	// alone knows.
	IfUnchecked bool
	// Bound makes a Check run the whole-diff bound (diffbound.Check, as
	// `backflow verify --repo` does in CI) over the head's files as the
	// forge reports them, against the default branch's repo config and
	// policy it holds, and post Run with its verdict (Bounded); with
	// IfUnchecked, a head that carries any run of the bot's is left alone.
	Bound *diffbound.Input
	// Commits are the bot's commits Record writes into the marker.
	Commits []string
	// Evidence is what Proven, Reverted and Replan rest on.
	Evidence *Evidence
	// Revision is what Revise writes (Tag and Text the comment it leaves
	// once when the store refuses it as conflicting).
	Revision *plan.Revision
	// Issue is the drift tracking issue's wanted state.
	Issue *TrackingIssue
	// Hold is what a Hold or Release applies to the live object.
	Hold *HoldAction
}

// BaseMoved says that the default branch, now at head, is no longer at
// the Base an Open was decided on, and not because of one of merges, this
// cycle's own: the unit is planned again next cycle rather than written.
func (e Effect) BaseMoved(head string, merges []string) bool { return baseMoved(e.Base, head, merges) }

// Mergeable says whether AutoMerge, where auto-merge cannot be armed,
// merges cur over REST now (mergeNow), pinned to head.
func (e Effect) Mergeable(cur forge.PullRequest, head string) (bool, string) {
	return mergeNow(cur, head)
}

// RefusedComment is the comment AutoMerge makes once when GitHub
// refuses to arm auto-merge with an error the adapter does not recognise,
// quoting it (msg), and whether it is still to be made.
func (e Effect) RefusedComment(msg string) (Effect, bool) { return autoMergeRefused(e.Pull, msg) }

// Bounded is the Bound check's run given the whole-diff bound's verdict
// and the problems reading the diff (boundRun).
func (e Effect) Bounded(res diffbound.Result, problems []string) forge.CheckRun {
	return boundRun(*e.Run, res, problems)
}

// Pull is one of the App's pull requests with the marker it carries.
type Pull struct {
	// PR is the pull request as the forge listed it.
	PR forge.PullRequest
	// Marker is the bot's memory of the write-back, read from PR's body.
	Marker *Marker
}

func (p *Pull) clone() *Pull {
	c := *p
	m := *p.Marker
	m.Commits = append([]string(nil), m.Commits...)
	m.Notes = append([]string(nil), m.Notes...)
	c.Marker = &m
	return &c
}

// Unit is one write-back branch: this cycle's plan for it, if any, and its
// pull requests.
type Unit struct {
	// Branch is <branchPrefix><environment>/<unit>.
	Branch string
	// WriteBack is the planner's write-back, nil when the unit has no
	// allowed change this cycle.
	WriteBack *plan.WriteBack
	// Open is the branch's open pull request; Closed are the closed ones,
	// oldest first.
	Open   *Pull
	Closed []*Pull
}
