package forge

import (
	"context"
	"errors"
	"fmt"
)

// Branch is a branch as a writer reads it before it writes: its head and,
// when read since a commit, the commits on it since, oldest first.
type Branch struct {
	Head    string
	Commits []Commit
}

// ReadBranch reads branch's head (ErrNotFound when there is none) and,
// when since is not empty, the commits reachable from it and not from
// since.
func (s Steps) ReadBranch(ctx context.Context, repo Repo, branch, since string) (Branch, error) {
	head, err := s.BranchHead(ctx, repo, branch)
	if err != nil {
		return Branch{}, err
	}
	if since == "" {
		return Branch{Head: head}, nil
	}
	commits, err := s.CommitsSince(ctx, repo, since, head)
	if err != nil {
		return Branch{Head: head}, fmt.Errorf("listing the commits of %s since %s: %w", branch, since, err)
	}
	return Branch{Head: head, Commits: commits}, nil
}

// Proposal is a change proposed as a pull request: one commit on its
// branch, compare-and-swapped on the branch's expected head, a check run
// on that commit, then the pull request opened (Number 0) or updated.
type Proposal struct {
	// Commit is the commit written. Its ExpectedHead is the
	// compare-and-swap: empty creates the branch, which must not exist.
	Commit CommitRequest
	// Reuse, when set, is a commit already on the branch that is this
	// very proposal: it is proposed as it is, not committed again.
	Reuse string
	// Recovered says the branch was there before this proposal (left by a
	// crash after the push, or by another process): a check its commit
	// already carries is not posted twice, and the branch is not deleted
	// when another process proposed the change first.
	Recovered bool
	// Check is the check run posted on the proposal's commit.
	Check func(sha string) CheckRun
	// Number is the pull request updated; 0 opens one from the branch
	// into the repository's default branch.
	Number int
	// Title is the pull request's title; Draft opens it as a draft.
	Title string
	Draft bool
	// Body is the pull request's body for the commit and its number (0
	// until it is open, when the body is sealed again for its number).
	Body func(sha string, number int) string
	// Elsewhere finds, before a pull request is opened, among the branch's
	// pull requests listed after the commit (a pull request, once opened,
	// stays listed), one that already proposes this change: another
	// process opened it first, and none is opened.
	Elsewhere func(prs []PullRequest, sha string) (PullRequest, bool)
}

// Proposed is what Propose did.
type Proposed struct {
	// SHA is the proposal's commit.
	SHA string
	// PR is the pull request opened or updated, or the one another
	// process opened first (Elsewhere).
	PR PullRequest
	// Moved is the commit's compare-and-swap failing (an ErrConflict): the
	// branch is not at the expected head (or exists when it was to be
	// created), or the default branch moved off the commit's base.
	// Nothing was written.
	Moved error
	// Elsewhere says that another process proposed the change first:
	// listed after the commit (Listed) or opening the pull request first.
	Elsewhere bool
	Listed    bool
}

// Propose writes p: the commit (unless reused), then, for an open, the
// branch's pull requests are listed to find p proposed elsewhere (a
// branch this call created for a duplicate is deleted while it is still at
// the commit), the check run is posted, and the pull request is opened
// with its body sealed for its number or updated with its title and body.
// It stops at the first call that fails.
func (s Steps) Propose(ctx context.Context, repo Repo, p Proposal) (Proposed, error) {
	sha := p.Reuse
	if sha == "" {
		var err error
		sha, err = s.Commit(ctx, p.Commit)
		if errors.Is(err, ErrConflict) {
			return Proposed{Moved: err}, nil
		}
		if err != nil {
			return Proposed{}, fmt.Errorf("committing to %s: %w", p.Commit.Branch, err)
		}
	}
	branch := p.Commit.Branch
	if p.Number == 0 && p.Elsewhere != nil {
		prs, err := s.ListPullRequests(ctx, repo, PullRequestFilter{Head: branch, State: StateAll})
		if err != nil {
			return Proposed{SHA: sha}, fmt.Errorf("listing the pull requests of %s: %w", branch, err)
		}
		if pr, done := p.Elsewhere(prs, sha); done {
			if !p.Recovered && pr.HeadSHA != sha {
				// The branch this call just created holds a duplicate: it
				// goes, unless something moved it since.
				err := s.DeleteBranch(ctx, repo, branch, sha)
				if err != nil && !errors.Is(err, ErrConflict) && !errors.Is(err, ErrNotFound) {
					return Proposed{SHA: sha}, fmt.Errorf("deleting the duplicate branch %s: %w", branch, err)
				}
			}
			return Proposed{SHA: sha, PR: pr, Elsewhere: true, Listed: true}, nil
		}
	}
	once := Always
	if p.Recovered {
		once = UnlessSame
	}
	if _, _, err := s.PostCheck(ctx, repo, p.Check(sha), once, nil); err != nil {
		return Proposed{SHA: sha}, err
	}
	if p.Number != 0 {
		body := p.Body(sha, p.Number)
		pr, err := s.UpdatePullRequest(ctx, repo, p.Number, PullRequestUpdate{Title: &p.Title, Body: &body})
		if err != nil {
			return Proposed{SHA: sha}, fmt.Errorf("updating #%d: %w", p.Number, err)
		}
		pr.HeadSHA = sha
		return Proposed{SHA: sha, PR: pr}, nil
	}
	seal := func(n int) string { return p.Body(sha, n) }
	pr, opened, err := s.OpenPullRequest(ctx, repo,
		NewPullRequest{Title: p.Title, Body: seal(0), Head: branch, Base: repo.DefaultBranch, Draft: p.Draft}, seal)
	if err != nil {
		return Proposed{SHA: sha}, fmt.Errorf("opening the pull request of %s: %w", branch, err)
	}
	if opened {
		pr.HeadSHA = sha
	}
	return Proposed{SHA: sha, PR: pr, Elsewhere: !opened}, nil
}

// Annotation is what is added to a pull request at once, each part
// optional: a comment (made once when it has a Tag, see CommentOnce), then
// its set-up (reviewers and labels), then its body replaced.
type Annotation struct {
	Comment, Tag string
	Setup        Setup
	Body         *string
}

// Annotate makes a's parts in order, stopping at the first that fails.
func (s Steps) Annotate(ctx context.Context, repo Repo, number int, a Annotation) error {
	if a.Comment != "" {
		if err := s.CommentOnce(ctx, repo, number, a.Comment, a.Tag); err != nil {
			return fmt.Errorf("commenting: %w", err)
		}
	}
	if err := s.SetUpPullRequest(ctx, repo, number, a.Setup); err != nil {
		return err
	}
	if a.Body != nil {
		if _, err := s.UpdatePullRequest(ctx, repo, number, PullRequestUpdate{Body: a.Body}); err != nil {
			return fmt.Errorf("updating the body: %w", err)
		}
	}
	return nil
}

// Closing is how a pull request is closed: its body replaced first, so
// the reason is on record before anything else; a comment; a check run on
// its head (the App's own ledger, which no edit of the body reaches); then
// the close.
type Closing struct {
	Body    string
	Comment string
	Ledger  CheckRun
}

// CloseProposal closes pull request number as c says, stopping at the first call
// that fails.
func (s Steps) CloseProposal(ctx context.Context, repo Repo, number int, c Closing) error {
	if _, err := s.UpdatePullRequest(ctx, repo, number, PullRequestUpdate{Body: &c.Body}); err != nil {
		return fmt.Errorf("updating the body: %w", err)
	}
	if err := s.CommentOnce(ctx, repo, number, c.Comment, ""); err != nil {
		return fmt.Errorf("commenting: %w", err)
	}
	if _, _, err := s.PostCheck(ctx, repo, c.Ledger, Always, nil); err != nil {
		return err
	}
	if err := s.ClosePullRequest(ctx, repo, number); err != nil {
		return fmt.Errorf("closing: %w", err)
	}
	return nil
}

// MergeMode is how a pull request is to be merged. Disarm disables
// auto-merge. Otherwise auto-merge is armed pinned to Head; where it
// cannot be, because the pull request is already mergeable, the
// repository does not allow auto-merge or the forge answers what the
// adapter does not recognise, the pull request is merged now pinned to
// Head, in the last two cases once Ready finds it, read again, mergeable.
type MergeMode struct {
	Disarm bool
	Head   string
	Method MergeMethod
	Ready  func(cur PullRequest) (bool, string)
}

// Merging is what SetMerge did: auto-merge Armed, or the pull request
// Merged as that commit, or neither and Waiting says why. Refused is the
// forge's unrecognised answer to arming, when it left the pull request
// waiting.
type Merging struct {
	Armed   bool
	Merged  string
	Waiting string
	Refused error
}

// SetMerge sets pr's merge as m says.
func (s Steps) SetMerge(ctx context.Context, repo Repo, pr PullRequest, m MergeMode) (Merging, error) {
	if m.Disarm {
		if err := s.DisableAutoMerge(ctx, repo, pr); err != nil {
			return Merging{}, fmt.Errorf("disabling auto-merge: %w", err)
		}
		return Merging{}, nil
	}
	err := s.EnableAutoMerge(ctx, repo, pr, m.Head, m.Method)
	switch {
	case err == nil:
		return Merging{Armed: true}, nil
	case errors.Is(err, ErrAlreadyMergeable):
	case errors.Is(err, ErrConflict):
		return Merging{Waiting: "the head moved; not merged"}, nil
	case errors.Is(err, ErrAutoMergeNotAllowed), errors.Is(err, ErrInvalid):
		cur, gerr := s.GetPullRequest(ctx, repo, pr.Number)
		if gerr != nil {
			return Merging{}, fmt.Errorf("reading #%d: %w", pr.Number, gerr)
		}
		if ok, why := m.Ready(cur); !ok {
			w := Merging{Waiting: why}
			if errors.Is(err, ErrInvalid) {
				w.Refused = err
			}
			return w, nil
		}
	default:
		return Merging{}, fmt.Errorf("enabling auto-merge: %w", err)
	}
	sha, err := s.Merge(ctx, repo, pr.Number, m.Head, m.Method)
	switch {
	case err == nil:
		return Merging{Merged: sha}, nil
	case errors.Is(err, ErrNotMergeable), errors.Is(err, ErrConflict):
		return Merging{Waiting: "not merged yet: " + err.Error()}, nil
	}
	return Merging{}, fmt.Errorf("merging: %w", err)
}
