package forge

import "time"

// Repo names a repository and its default branch.
type Repo struct {
	// Owner is the account (user or organisation) that owns the repository.
	Owner string
	// Name is the repository's name without its owner.
	Name string
	// DefaultBranch is the branch configuration is read from (e.g. "main").
	DefaultBranch string
}

// FullName is "owner/name".
func (r Repo) FullName() string { return r.Owner + "/" + r.Name }

// String is the full name, so a Repo reads well in messages.
func (r Repo) String() string { return r.FullName() }

// App is the identity the forge acts as.
type App struct {
	// ID is the App's numeric id.
	ID int64
	// Slug is the App's URL name, e.g. "backflow".
	Slug string
	// Login is the account that the App's comments, pull requests and
	// API-made commits show as, e.g. "backflow[bot]".
	Login string
}

// Author is a commit's author or committer.
type Author struct {
	// Name is the display name, e.g. "backflow[bot]".
	Name string
	// Email is the address, e.g. "123+backflow[bot]@users.noreply.github.com".
	Email string
}

// CommitMethod selects how a commit reaches the forge.
type CommitMethod string

const (
	// CommitGit clones the branch (depth 1), commits locally and pushes.
	// The default: one clone and one push whatever the number of files.
	CommitGit CommitMethod = "git"
	// CommitAPI creates blobs, a tree and a commit through the REST API and
	// moves the ref. GitHub signs such commits for Apps, which repositories
	// that require signed commits need.
	CommitAPI CommitMethod = "api"
)

// CommitRequest asks for one commit with Files written on top of BaseSHA's
// tree, published as Branch.
//
// The ref update is a compare-and-swap: with ExpectedHead empty the branch
// must not exist (it is created); otherwise its head must still be
// ExpectedHead. A commit whose parent is not ExpectedHead rewrites the branch
// and needs Force. Any mismatch fails with ErrConflict and changes nothing.
type CommitRequest struct {
	// Repo is the repository to commit to.
	Repo Repo
	// Branch is the short branch name, e.g. "backflow/prod/redis".
	Branch string
	// BaseSHA is the new commit's parent.
	BaseSHA string
	// ExpectedHead is the branch's current head, or empty to create it.
	ExpectedHead string
	// Force allows replacing ExpectedHead with a commit that does not descend
	// from it (rewriting the branch from a new base).
	Force bool
	// Files are created or replaced, by slash-separated path from the
	// repository root. Nothing else in the tree changes.
	Files map[string][]byte
	// Message is the full commit message, trailers included.
	Message string
	// Author is the commit's author and committer.
	Author Author
	// Method chooses git push or the REST API; empty means CommitGit.
	Method CommitMethod
}

// ChangedFile is one file a comparison of two commits changes, as the forge
// reports it.
type ChangedFile struct {
	// Path is the file's path at the head; PreviousPath its path at the
	// merge base when the forge reports a rename.
	Path, PreviousPath string
	// Status is added, removed, modified, renamed, copied, changed or
	// unchanged.
	Status string
}

// Diff is what a pull request changes: its files from the merge base of
// the base and the head to the head.
type Diff struct {
	// MergeBase is the commit the comparison starts from.
	MergeBase string
	// Files are the changed files.
	Files []ChangedFile
}

// Commit is a commit as listed on a branch.
type Commit struct {
	// SHA is the commit's id.
	SHA string
	// Parents are the parent commits' ids.
	Parents []string
	// Message is the full message.
	Message string
	// Author is the recorded author.
	Author Author
	// Committer is the recorded committer.
	Committer Author
	// Verified reports whether the forge verified the commit's signature.
	Verified bool
}

// PRState is the state of a pull request or issue.
type PRState string

const (
	// StateOpen is an open pull request or issue.
	StateOpen PRState = "open"
	// StateClosed is a closed (possibly merged) pull request or issue.
	StateClosed PRState = "closed"
	// StateAll selects both when listing.
	StateAll PRState = "all"
)

// PullRequest is a pull request as the write-back sees it.
type PullRequest struct {
	// Number is the repository-scoped number.
	Number int
	// NodeID is the global id GraphQL mutations take.
	NodeID string
	// URL is the page a person opens.
	URL string
	// Title is the one-line title.
	Title string
	// Body is the description (Markdown).
	Body string
	// State is StateOpen or StateClosed.
	State PRState
	// Merged reports whether it was merged (then State is StateClosed).
	Merged bool
	// MergeCommitSHA is the commit the merge produced, when Merged.
	MergeCommitSHA string
	// HeadRef is the head branch's short name.
	HeadRef string
	// HeadSHA is the head branch's commit.
	HeadSHA string
	// BaseRef is the base branch's short name.
	BaseRef string
	// BaseSHA is the base commit the pull request was computed against.
	BaseSHA string
	// Labels are the label names, sorted.
	Labels []string
	// Draft reports a draft pull request.
	Draft bool
	// Mergeable is nil while the forge is still computing it; it is only
	// known when the pull request was read alone (GetPullRequest).
	Mergeable *bool
	// MergeableState is GitHub's finer state ("clean", "blocked",
	// "unstable", "dirty", "unknown"), when known.
	MergeableState string
	// AutoMergeEnabled reports whether auto-merge is armed.
	AutoMergeEnabled bool
	// Author is the login that opened it.
	Author string
	// Mine reports whether this App opened it.
	Mine bool
	// RequestedReviewers are the logins asked to review.
	RequestedReviewers []string
	// RequestedTeams are the team slugs asked to review.
	RequestedTeams []string
	// CreatedAt is when it was opened.
	CreatedAt time.Time
	// ClosedAt is when it was closed, or zero.
	ClosedAt time.Time
	// MergedAt is when it was merged, or zero.
	MergedAt time.Time
}

// NewPullRequest asks for a pull request from Head into Base.
type NewPullRequest struct {
	// Title is the one-line title.
	Title string
	// Body is the description.
	Body string
	// Head is the head branch's short name (same repository).
	Head string
	// Base is the base branch's short name.
	Base string
	// Draft opens it as a draft.
	Draft bool
}

// PullRequestUpdate changes the fields that are not nil.
type PullRequestUpdate struct {
	// Title replaces the title when not nil.
	Title *string
	// Body replaces the body when not nil.
	Body *string
}

// PullRequestFilter selects pull requests of one repository.
type PullRequestFilter struct {
	// Head is the head branch's short name; empty means any.
	Head string
	// Base is the base branch's short name; empty means any.
	Base string
	// State is StateOpen, StateClosed or StateAll; empty means StateOpen.
	State PRState
}

// MergeMethod is how a pull request is merged, in GitHub's words: merge,
// squash or rebase (replaying the head's commits onto the base). The repo
// config's autoMerge.method spells them the same and is converted as it is.
type MergeMethod string

const (
	// MergeCommit creates a merge commit.
	MergeCommit MergeMethod = "merge"
	// MergeSquash squashes the head's commits into one.
	MergeSquash MergeMethod = "squash"
)

// Comment is a comment on a pull request or issue.
type Comment struct {
	// ID identifies the comment within the repository.
	ID int64
	// Body is the Markdown text.
	Body string
	// Author is the login that wrote it.
	Author string
	// Mine reports whether this App wrote it.
	Mine bool
	// URL is the comment's page.
	URL string
	// CreatedAt is when it was written.
	CreatedAt time.Time
	// UpdatedAt is when it was last edited.
	UpdatedAt time.Time
}

// Check run statuses and conclusions, as GitHub names them.
const (
	CheckInProgress = "in_progress"
	CheckCompleted  = "completed"

	ConclusionSuccess = "success"
	ConclusionFailure = "failure"
	ConclusionNeutral = "neutral"
)

// CheckRun is a named check on a commit, such as "backflow/receipt".
type CheckRun struct {
	// ID identifies the check run; zero when creating.
	ID int64
	// Name is the check's name, the key required checks match on.
	Name string
	// HeadSHA is the commit checked.
	HeadSHA string
	// Status is CheckInProgress or CheckCompleted; empty means
	// CheckCompleted when Conclusion is set.
	Status string
	// Conclusion is set when completed (ConclusionSuccess, ...).
	Conclusion string
	// Title is the output's one-line title.
	Title string
	// Summary is the output's Markdown summary.
	Summary string
	// Text is the output's longer Markdown details, optional.
	Text string
	// DetailsURL links to more detail, optional.
	DetailsURL string
	// ExternalID is the caller's own reference, optional.
	ExternalID string
	// Mine reports whether this App created it.
	Mine bool
}

// Issue is an issue (never a pull request).
type Issue struct {
	// Number is the repository-scoped number.
	Number int
	// URL is the issue's page.
	URL string
	// Title is the one-line title.
	Title string
	// Body is the description.
	Body string
	// State is StateOpen or StateClosed.
	State PRState
	// Labels are the label names, sorted.
	Labels []string
	// Author is the login that opened it.
	Author string
	// Mine reports whether this App opened it.
	Mine bool
}

// NewIssue asks for an issue.
type NewIssue struct {
	// Title is the one-line title.
	Title string
	// Body is the description.
	Body string
	// Labels are added on creation.
	Labels []string
}

// IssueUpdate changes the fields that are not nil.
type IssueUpdate struct {
	// Title replaces the title when not nil.
	Title *string
	// Body replaces the body when not nil.
	Body *string
	// State opens or closes the issue when not nil.
	State *PRState
}
