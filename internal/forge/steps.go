package forge

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// Steps are the operations a writer makes as one, each composed once over
// the fine-grained calls of a Forge: a branch read with its commits, a
// change proposed (commit, check, pull request opened or updated), a pull
// request annotated (a comment made once, reviewers and labels, its body)
// or closed (body, comment, ledger check, close), its merge set (auto-merge
// armed or disarmed, or merged now), a check posted unless it is there, a
// tracking issue opened or edited. An adapter offers them as its own
// methods through Steps over itself, and so does a wrapper that records or
// fails calls: every fine call still passes through the Forge that Steps
// wraps, so a failure scripted at one of them is seen where it was.
type Steps struct{ Forge }

// StepsOn gives the Forge embedding it Steps' operations over its own
// calls: set Self to that Forge when it is made.
type StepsOn struct{ Self Forge }

// ReadBranch is Steps.ReadBranch over Self.
func (o StepsOn) ReadBranch(ctx context.Context, repo Repo, branch, since string) (Branch, error) {
	return Steps{Forge: o.Self}.ReadBranch(ctx, repo, branch, since)
}

// Propose is Steps.Propose over Self.
func (o StepsOn) Propose(ctx context.Context, repo Repo, p Proposal) (Proposed, error) {
	return Steps{Forge: o.Self}.Propose(ctx, repo, p)
}

// Annotate is Steps.Annotate over Self.
func (o StepsOn) Annotate(ctx context.Context, repo Repo, number int, a Annotation) error {
	return Steps{Forge: o.Self}.Annotate(ctx, repo, number, a)
}

// CloseProposal is Steps.CloseProposal over Self.
func (o StepsOn) CloseProposal(ctx context.Context, repo Repo, number int, c Closing) error {
	return Steps{Forge: o.Self}.CloseProposal(ctx, repo, number, c)
}

// SetMerge is Steps.SetMerge over Self.
func (o StepsOn) SetMerge(ctx context.Context, repo Repo, pr PullRequest, m MergeMode) (Merging, error) {
	return Steps{Forge: o.Self}.SetMerge(ctx, repo, pr, m)
}

// TrackIssue is Steps.TrackIssue over Self.
func (o StepsOn) TrackIssue(ctx context.Context, repo Repo, number int, issue NewIssue, state *PRState) (Issue, error) {
	return Steps{Forge: o.Self}.TrackIssue(ctx, repo, number, issue, state)
}

// PostCheck is Steps.PostCheck over Self.
func (o StepsOn) PostCheck(ctx context.Context, repo Repo, run CheckRun, once Once,
	complete func(CheckRun) CheckRun) (CheckRun, bool, error) {
	return Steps{Forge: o.Self}.PostCheck(ctx, repo, run, once, complete)
}

// Setup is what a pull request is set up with: reviewers to request and
// labels to add or remove.
type Setup struct {
	// Users and Teams (slugs) are asked to review.
	Users, Teams []string
	// Labels are added; Unlabel are removed (an absent one is no error).
	Labels, Unlabel []string
}

// OpenPullRequest opens pr and then replaces its body with seal of its
// number, which is known only once it is open. When a pull request from the
// same head into the same base is already open (another process opened it
// first) it returns that one with opened false, and seals nothing.
func (s Steps) OpenPullRequest(ctx context.Context, repo Repo, pr NewPullRequest,
	seal func(number int) string) (PullRequest, bool, error) {
	got, err := s.CreatePullRequest(ctx, repo, pr)
	if errors.Is(err, ErrConflict) {
		open, ferr := s.FindOpenPullRequest(ctx, repo, pr.Head)
		if ferr != nil {
			return PullRequest{}, false, fmt.Errorf("%w; finding the open one: %w", err, ferr)
		}
		return open, false, nil
	}
	if err != nil {
		return PullRequest{}, false, err
	}
	body := seal(got.Number)
	if _, err := s.UpdatePullRequest(ctx, repo, got.Number, PullRequestUpdate{Body: &body}); err != nil {
		return got, true, fmt.Errorf("sealing the body of #%d: %w", got.Number, err)
	}
	got.Body = body
	return got, true, nil
}

// SetUpPullRequest requests the reviewers, then adds and removes the
// labels, stopping at the first call that fails.
func (s Steps) SetUpPullRequest(ctx context.Context, repo Repo, number int, set Setup) error {
	if len(set.Users)+len(set.Teams) > 0 {
		if err := s.RequestReviewers(ctx, repo, number, set.Users, set.Teams); err != nil {
			return fmt.Errorf("requesting reviewers: %w", err)
		}
	}
	if len(set.Labels) > 0 {
		if err := s.AddLabels(ctx, repo, number, set.Labels...); err != nil {
			return fmt.Errorf("labelling: %w", err)
		}
	}
	for _, l := range set.Unlabel {
		if err := s.RemoveLabel(ctx, repo, number, l); err != nil {
			return fmt.Errorf("unlabelling %s: %w", l, err)
		}
	}
	return nil
}

// CommentOnce adds text to a pull request or issue. With a tag, the tag
// goes under the text and nothing is added when one of the App's own
// comments carries it already: a crash after the comment does not repeat it.
func (s Steps) CommentOnce(ctx context.Context, repo Repo, number int, text, tag string) error {
	if tag == "" {
		_, err := s.CreateComment(ctx, repo, number, text)
		return err
	}
	comments, err := s.ListComments(ctx, repo, number)
	if err != nil {
		return fmt.Errorf("listing comments: %w", err)
	}
	for _, c := range comments {
		if c.Mine && strings.Contains(c.Body, tag) {
			return nil
		}
	}
	_, err = s.CreateComment(ctx, repo, number, text+"\n\n"+tag)
	return err
}

// TrackIssue opens issue when number is 0, and otherwise replaces issue
// number's body and sets its state (when state is not nil).
func (s Steps) TrackIssue(ctx context.Context, repo Repo, number int, issue NewIssue, state *PRState) (Issue, error) {
	if number == 0 {
		return s.CreateIssue(ctx, repo, issue)
	}
	return s.UpdateIssue(ctx, repo, number, IssueUpdate{Body: &issue.Body, State: state})
}

// Once says when PostCheck posts nothing: a check a crash left posted is
// not posted twice.
type Once int

const (
	// Always posts the run.
	Always Once = iota
	// UnlessSame posts nothing when one of the App's runs of the name on
	// the head has the run's conclusion.
	UnlessSame
	// UnlessAny posts nothing when the App has any run of the name on the
	// head, whatever its conclusion.
	UnlessAny
)

// PostCheck posts run on run.HeadSHA, unless once finds it there already
// (posted false). complete, when not nil, makes the run posted from run
// only once it is to be posted: a verdict that costs reads is not computed
// for a head that has it.
func (s Steps) PostCheck(ctx context.Context, repo Repo, run CheckRun, once Once,
	complete func(CheckRun) CheckRun) (CheckRun, bool, error) {
	if once != Always {
		runs, err := s.ListCheckRuns(ctx, repo, run.HeadSHA, run.Name)
		if err != nil {
			return CheckRun{}, false, fmt.Errorf("listing the %s checks on %s: %w", run.Name, run.HeadSHA, err)
		}
		for _, r := range runs {
			if r.Mine && (once == UnlessAny || r.Conclusion == run.Conclusion) {
				return r, false, nil
			}
		}
	}
	if complete != nil {
		run = complete(run)
	}
	if _, err := s.CreateCheckRun(ctx, repo, run); err != nil {
		return CheckRun{}, false, fmt.Errorf("creating the %s check on %s: %w", run.Name, run.HeadSHA, err)
	}
	return run, true, nil
}
