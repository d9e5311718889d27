package forge

import (
	"context"
	"time"
)

// Forge lists every operation the adapters implement. Consumers should
// declare the smaller interface they use, in their own package; this one
// exists so that an adapter can be checked against the contract as one
// whole (forgetest.RunContract) and passed around as one value.
type Forge interface {
	// App returns the identity the forge acts as.
	App(ctx context.Context) (App, error)
	// Repositories lists the repositories the App may act on.
	Repositories(ctx context.Context) ([]Repo, error)
	// GetRepo returns one repository, with its default branch.
	GetRepo(ctx context.Context, owner, name string) (Repo, error)

	// ReadFile returns a regular file's bytes at a commit SHA
	// (ErrNotFound, ErrNotRegularFile).
	ReadFile(ctx context.Context, repo Repo, sha, path string) ([]byte, error)
	// ListFiles returns the regular files under dir at a commit SHA,
	// recursively, as slash-separated paths from the repository root; an
	// empty dir means the whole tree. A missing dir is ErrNotFound.
	ListFiles(ctx context.Context, repo Repo, sha, dir string) ([]string, error)

	// BranchHead returns the commit a branch points at (ErrNotFound).
	BranchHead(ctx context.Context, repo Repo, branch string) (string, error)
	// CreateBranch creates branch at sha; ErrConflict when it exists.
	CreateBranch(ctx context.Context, repo Repo, branch, sha string) error
	// UpdateBranch moves branch from expectedOld to newSHA; ErrConflict when
	// the head is not expectedOld, or when newSHA does not descend from it
	// and force is false.
	UpdateBranch(ctx context.Context, repo Repo, branch, expectedOld, newSHA string, force bool) error
	// DeleteBranch deletes branch; with expectedSHA set, only while it still
	// points there (ErrConflict otherwise). A missing branch is ErrNotFound.
	DeleteBranch(ctx context.Context, repo Repo, branch, expectedSHA string) error

	// Commit writes one commit as CommitRequest describes and returns its SHA.
	Commit(ctx context.Context, req CommitRequest) (string, error)
	// CommitsSince lists the commits reachable from head (a branch or SHA)
	// and not from base, oldest first.
	CommitsSince(ctx context.Context, repo Repo, base, head string) ([]Commit, error)
	// ChangedFiles lists the files head changes from its merge base with
	// base, as the forge reports a pull request's diff; a diff larger than
	// the forge lists whole is ErrInvalid.
	ChangedFiles(ctx context.Context, repo Repo, base, head string) (Diff, error)
	// Contains reports whether head (a branch or SHA) is commit or one of
	// its descendants, as the forge compares commit...head (ahead or
	// identical; behind or diverged is false). A commit the forge does not
	// know is ErrNotFound.
	Contains(ctx context.Context, repo Repo, commit, head string) (bool, error)

	// GetPullRequest reads one pull request, mergeability included.
	GetPullRequest(ctx context.Context, repo Repo, number int) (PullRequest, error)
	// ListPullRequests lists pull requests whose head branch is in repo.
	ListPullRequests(ctx context.Context, repo Repo, filter PullRequestFilter) ([]PullRequest, error)
	// FindOpenPullRequest returns the open pull request from head, or
	// ErrNotFound.
	FindOpenPullRequest(ctx context.Context, repo Repo, head string) (PullRequest, error)
	// CreatePullRequest opens a pull request; ErrConflict when one is
	// already open from the same head into the same base.
	CreatePullRequest(ctx context.Context, repo Repo, pr NewPullRequest) (PullRequest, error)
	// UpdatePullRequest changes the title and/or body.
	UpdatePullRequest(ctx context.Context, repo Repo, number int, upd PullRequestUpdate) (PullRequest, error)
	// ClosePullRequest closes without merging.
	ClosePullRequest(ctx context.Context, repo Repo, number int) error

	// ListComments lists the comments of a pull request or issue, oldest first.
	ListComments(ctx context.Context, repo Repo, number int) ([]Comment, error)
	// CreateComment adds a comment to a pull request or issue.
	CreateComment(ctx context.Context, repo Repo, number int, body string) (Comment, error)
	// UpdateComment replaces a comment's body.
	UpdateComment(ctx context.Context, repo Repo, id int64, body string) (Comment, error)

	// AddLabels adds labels to a pull request or issue (creating missing
	// repository labels as GitHub does).
	AddLabels(ctx context.Context, repo Repo, number int, labels ...string) error
	// RemoveLabel removes one label; removing an absent label is not an error.
	RemoveLabel(ctx context.Context, repo Repo, number int, label string) error
	// RequestReviewers asks users and teams (slugs) to review.
	RequestReviewers(ctx context.Context, repo Repo, number int, users, teams []string) error

	// CreateCheckRun creates a check run on run.HeadSHA.
	CreateCheckRun(ctx context.Context, repo Repo, run CheckRun) (CheckRun, error)
	// UpdateCheckRun replaces a check run's status, conclusion and output.
	UpdateCheckRun(ctx context.Context, repo Repo, id int64, run CheckRun) (CheckRun, error)
	// ListCheckRuns lists the check runs named name (all when empty) on sha.
	ListCheckRuns(ctx context.Context, repo Repo, sha, name string) ([]CheckRun, error)

	// EnableAutoMerge arms auto-merge on pr, only while its head is
	// expectedHead. ErrAlreadyMergeable: merge it with Merge instead;
	// ErrConflict: the head moved; ErrAutoMergeNotAllowed: the repository
	// forbids it.
	EnableAutoMerge(ctx context.Context, repo Repo, pr PullRequest, expectedHead string, method MergeMethod) error
	// DisableAutoMerge disarms auto-merge on pr; disarming a pull request
	// that is not armed is not an error.
	DisableAutoMerge(ctx context.Context, repo Repo, pr PullRequest) error
	// Merge merges a pull request only while its head is headSHA and returns
	// the merge commit's SHA. ErrConflict: the head moved; ErrNotMergeable:
	// checks or conflicts prevent it.
	Merge(ctx context.Context, repo Repo, number int, headSHA string, method MergeMethod) (string, error)

	// ListIssues lists issues (never pull requests) carrying label.
	ListIssues(ctx context.Context, repo Repo, label string, state PRState) ([]Issue, error)
	// CreateIssue opens an issue.
	CreateIssue(ctx context.Context, repo Repo, issue NewIssue) (Issue, error)
	// UpdateIssue changes an issue's title, body or state.
	UpdateIssue(ctx context.Context, repo Repo, number int, upd IssueUpdate) (Issue, error)
}

// RequestKind classifies a request for rate accounting.
type RequestKind string

const (
	// KindRead is a request that changes nothing.
	KindRead RequestKind = "read"
	// KindWrite is a request that creates or changes content; GitHub limits
	// these to 80 a minute.
	KindWrite RequestKind = "write"
)

// RequestEvent describes one request an adapter sent, for metrics and
// reports. It never carries credentials.
type RequestEvent struct {
	// Kind is KindRead or KindWrite.
	Kind RequestKind
	// Method is the HTTP method, or "GIT" for a clone or push.
	Method string
	// Route is the path with ids replaced by placeholders,
	// e.g. "/repos/{owner}/{repo}/pulls".
	Route string
	// Status is the HTTP status, or 0 when no response arrived.
	Status int
	// NotModified reports a conditional request answered 304.
	NotModified bool
	// Attempt counts from 1; above 1 it is a retry.
	Attempt int
	// Duration is how long the request took.
	Duration time.Duration
}

// Observer receives every RequestEvent; it must be fast and safe for
// concurrent use.
type Observer func(RequestEvent)
