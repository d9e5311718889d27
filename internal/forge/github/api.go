package github

import (
	"context"

	gh "github.com/google/go-github/v62/github"
)

// appAPI lists the go-github calls made as the App itself (JWT).
type appAPI interface {
	GetApp(ctx context.Context) (*gh.App, *gh.Response, error)
	ListInstallations(ctx context.Context, opts *gh.ListOptions) ([]*gh.Installation, *gh.Response, error)
	FindRepositoryInstallation(ctx context.Context, owner, repo string) (*gh.Installation, *gh.Response, error)
}

// installationAPI lists the only go-github calls the adapter makes with an
// installation token; nothing else of the client is used.
type installationAPI interface {
	ListInstallationRepos(ctx context.Context, opts *gh.ListOptions) (*gh.ListRepositories, *gh.Response, error)
	GetRepo(ctx context.Context, owner, repo string) (*gh.Repository, *gh.Response, error)
	ListRepositoryEvents(ctx context.Context, owner, repo string, opts *gh.ListOptions) ([]*gh.Event, *gh.Response, error)
	GetContents(
		ctx context.Context,
		owner, repo, path string,
		opts *gh.RepositoryContentGetOptions,
	) (*gh.RepositoryContent, []*gh.RepositoryContent, *gh.Response, error)
	GetBlobRaw(ctx context.Context, owner, repo, sha string) ([]byte, *gh.Response, error)
	GetTree(ctx context.Context, owner, repo, sha string, recursive bool) (*gh.Tree, *gh.Response, error)
	CompareCommits(
		ctx context.Context,
		owner, repo, base, head string,
		opts *gh.ListOptions,
	) (*gh.CommitsComparison, *gh.Response, error)

	GetRef(ctx context.Context, owner, repo, ref string) (*gh.Reference, *gh.Response, error)
	CreateRef(ctx context.Context, owner, repo string, ref *gh.Reference) (*gh.Reference, *gh.Response, error)
	UpdateRef(ctx context.Context, owner, repo string, ref *gh.Reference, force bool) (*gh.Reference, *gh.Response, error)
	DeleteRef(ctx context.Context, owner, repo, ref string) (*gh.Response, error)
	GetGitCommit(ctx context.Context, owner, repo, sha string) (*gh.Commit, *gh.Response, error)
	CreateTree(ctx context.Context, owner, repo, baseTree string, entries []*gh.TreeEntry) (*gh.Tree, *gh.Response, error)
	CreateGitCommit(
		ctx context.Context,
		owner, repo string,
		commit *gh.Commit,
		opts *gh.CreateCommitOptions,
	) (*gh.Commit, *gh.Response, error)

	GetPull(ctx context.Context, owner, repo string, number int) (*gh.PullRequest, *gh.Response, error)
	ListPulls(
		ctx context.Context,
		owner, repo string,
		opts *gh.PullRequestListOptions,
	) ([]*gh.PullRequest, *gh.Response, error)
	CreatePull(ctx context.Context, owner, repo string, pull *gh.NewPullRequest) (*gh.PullRequest, *gh.Response, error)
	EditPull(
		ctx context.Context,
		owner, repo string,
		number int,
		pull *gh.PullRequest,
	) (*gh.PullRequest, *gh.Response, error)
	MergePull(
		ctx context.Context,
		owner, repo string,
		number int,
		message string,
		opts *gh.PullRequestOptions,
	) (*gh.PullRequestMergeResult, *gh.Response, error)
	RequestReviewers(
		ctx context.Context,
		owner, repo string,
		number int,
		reviewers gh.ReviewersRequest,
	) (*gh.PullRequest, *gh.Response, error)

	ListComments(
		ctx context.Context,
		owner, repo string,
		number int,
		opts *gh.IssueListCommentsOptions,
	) ([]*gh.IssueComment, *gh.Response, error)
	CreateComment(
		ctx context.Context,
		owner, repo string,
		number int,
		comment *gh.IssueComment,
	) (*gh.IssueComment, *gh.Response, error)
	EditComment(
		ctx context.Context,
		owner, repo string,
		id int64,
		comment *gh.IssueComment,
	) (*gh.IssueComment, *gh.Response, error)
	AddLabels(ctx context.Context, owner, repo string, number int, labels []string) ([]*gh.Label, *gh.Response, error)
	RemoveLabel(ctx context.Context, owner, repo string, number int, label string) (*gh.Response, error)
	ListIssues(ctx context.Context, owner, repo string, opts *gh.IssueListByRepoOptions) ([]*gh.Issue, *gh.Response, error)
	CreateIssue(ctx context.Context, owner, repo string, issue *gh.IssueRequest) (*gh.Issue, *gh.Response, error)
	EditIssue(ctx context.Context, owner, repo string, number int, issue *gh.IssueRequest) (*gh.Issue, *gh.Response, error)

	CreateCheckRun(
		ctx context.Context,
		owner, repo string,
		opts gh.CreateCheckRunOptions,
	) (*gh.CheckRun, *gh.Response, error)
	UpdateCheckRun(
		ctx context.Context,
		owner, repo string,
		id int64,
		opts gh.UpdateCheckRunOptions,
	) (*gh.CheckRun, *gh.Response, error)
	ListCheckRunsForRef(
		ctx context.Context,
		owner, repo, ref string,
		opts *gh.ListCheckRunsOptions,
	) (*gh.ListCheckRunsResults, *gh.Response, error)

	// GraphQL posts a query to url and decodes the response into out.
	GraphQL(ctx context.Context, url string, body, out any) (*gh.Response, error)
}

// client adapts *gh.Client to appAPI and installationAPI.
type client struct{ c *gh.Client }

func (c client) GetApp(ctx context.Context) (*gh.App, *gh.Response, error) {
	return c.c.Apps.Get(ctx, "")
}
func (c client) ListInstallations(ctx context.Context, opts *gh.ListOptions) ([]*gh.Installation, *gh.Response, error) {
	return c.c.Apps.ListInstallations(ctx, opts)
}

func (c client) FindRepositoryInstallation(ctx context.Context,
	owner, repo string) (*gh.Installation, *gh.Response, error) {
	return c.c.Apps.FindRepositoryInstallation(ctx, owner, repo)
}

func (c client) ListInstallationRepos(ctx context.Context,
	opts *gh.ListOptions) (*gh.ListRepositories, *gh.Response, error) {
	return c.c.Apps.ListRepos(ctx, opts)
}
func (c client) GetRepo(ctx context.Context, owner, repo string) (*gh.Repository, *gh.Response, error) {
	return c.c.Repositories.Get(ctx, owner, repo)
}

func (c client) ListRepositoryEvents(ctx context.Context, owner, repo string,
	opts *gh.ListOptions) ([]*gh.Event, *gh.Response, error) {
	return c.c.Activity.ListRepositoryEvents(ctx, owner, repo, opts)
}

func (c client) GetContents(ctx context.Context, owner, repo, path string,
	opts *gh.RepositoryContentGetOptions) (*gh.RepositoryContent, []*gh.RepositoryContent, *gh.Response, error) {
	return c.c.Repositories.GetContents(ctx, owner, repo, path, opts)
}
func (c client) GetBlobRaw(ctx context.Context, owner, repo, sha string) ([]byte, *gh.Response, error) {
	return c.c.Git.GetBlobRaw(ctx, owner, repo, sha)
}
func (c client) GetTree(ctx context.Context, owner, repo, sha string, recursive bool) (*gh.Tree, *gh.Response, error) {
	return c.c.Git.GetTree(ctx, owner, repo, sha, recursive)
}

func (c client) CompareCommits(ctx context.Context, owner, repo, base, head string,
	opts *gh.ListOptions) (*gh.CommitsComparison, *gh.Response, error) {
	return c.c.Repositories.CompareCommits(ctx, owner, repo, base, head, opts)
}
func (c client) GetRef(ctx context.Context, owner, repo, ref string) (*gh.Reference, *gh.Response, error) {
	return c.c.Git.GetRef(ctx, owner, repo, ref)
}

func (c client) CreateRef(ctx context.Context, owner, repo string,
	ref *gh.Reference) (*gh.Reference, *gh.Response, error) {
	return c.c.Git.CreateRef(ctx, owner, repo, ref)
}

func (c client) UpdateRef(ctx context.Context, owner, repo string, ref *gh.Reference,
	force bool) (*gh.Reference, *gh.Response, error) {
	return c.c.Git.UpdateRef(ctx, owner, repo, ref, force)
}
func (c client) DeleteRef(ctx context.Context, owner, repo, ref string) (*gh.Response, error) {
	return c.c.Git.DeleteRef(ctx, owner, repo, ref)
}
func (c client) GetGitCommit(ctx context.Context, owner, repo, sha string) (*gh.Commit, *gh.Response, error) {
	return c.c.Git.GetCommit(ctx, owner, repo, sha)
}

func (c client) CreateTree(ctx context.Context, owner, repo, baseTree string,
	entries []*gh.TreeEntry) (*gh.Tree, *gh.Response, error) {
	return c.c.Git.CreateTree(ctx, owner, repo, baseTree, entries)
}

func (c client) CreateGitCommit(ctx context.Context, owner, repo string, commit *gh.Commit,
	opts *gh.CreateCommitOptions) (*gh.Commit, *gh.Response, error) {
	return c.c.Git.CreateCommit(ctx, owner, repo, commit, opts)
}
func (c client) GetPull(ctx context.Context, owner, repo string, number int) (*gh.PullRequest, *gh.Response, error) {
	return c.c.PullRequests.Get(ctx, owner, repo, number)
}

func (c client) ListPulls(ctx context.Context, owner, repo string,
	opts *gh.PullRequestListOptions) ([]*gh.PullRequest, *gh.Response, error) {
	return c.c.PullRequests.List(ctx, owner, repo, opts)
}

func (c client) CreatePull(ctx context.Context, owner, repo string,
	pull *gh.NewPullRequest) (*gh.PullRequest, *gh.Response, error) {
	return c.c.PullRequests.Create(ctx, owner, repo, pull)
}

func (c client) EditPull(ctx context.Context, owner, repo string, number int,
	pull *gh.PullRequest) (*gh.PullRequest, *gh.Response, error) {
	return c.c.PullRequests.Edit(ctx, owner, repo, number, pull)
}

func (c client) MergePull(ctx context.Context, owner, repo string, number int, message string,
	opts *gh.PullRequestOptions) (*gh.PullRequestMergeResult, *gh.Response, error) {
	return c.c.PullRequests.Merge(ctx, owner, repo, number, message, opts)
}

func (c client) RequestReviewers(ctx context.Context, owner, repo string, number int,
	reviewers gh.ReviewersRequest) (*gh.PullRequest, *gh.Response, error) {
	return c.c.PullRequests.RequestReviewers(ctx, owner, repo, number, reviewers)
}

func (c client) ListComments(ctx context.Context, owner, repo string, number int,
	opts *gh.IssueListCommentsOptions) ([]*gh.IssueComment, *gh.Response, error) {
	return c.c.Issues.ListComments(ctx, owner, repo, number, opts)
}

func (c client) CreateComment(ctx context.Context, owner, repo string, number int,
	comment *gh.IssueComment) (*gh.IssueComment, *gh.Response, error) {
	return c.c.Issues.CreateComment(ctx, owner, repo, number, comment)
}

func (c client) EditComment(ctx context.Context, owner, repo string, id int64,
	comment *gh.IssueComment) (*gh.IssueComment, *gh.Response, error) {
	return c.c.Issues.EditComment(ctx, owner, repo, id, comment)
}

func (c client) AddLabels(ctx context.Context, owner, repo string, number int,
	labels []string) ([]*gh.Label, *gh.Response, error) {
	return c.c.Issues.AddLabelsToIssue(ctx, owner, repo, number, labels)
}
func (c client) RemoveLabel(ctx context.Context, owner, repo string, number int, label string) (*gh.Response, error) {
	return c.c.Issues.RemoveLabelForIssue(ctx, owner, repo, number, label)
}

func (c client) ListIssues(ctx context.Context, owner, repo string,
	opts *gh.IssueListByRepoOptions) ([]*gh.Issue, *gh.Response, error) {
	return c.c.Issues.ListByRepo(ctx, owner, repo, opts)
}

func (c client) CreateIssue(ctx context.Context, owner, repo string,
	issue *gh.IssueRequest) (*gh.Issue, *gh.Response, error) {
	return c.c.Issues.Create(ctx, owner, repo, issue)
}

func (c client) EditIssue(ctx context.Context, owner, repo string, number int,
	issue *gh.IssueRequest) (*gh.Issue, *gh.Response, error) {
	return c.c.Issues.Edit(ctx, owner, repo, number, issue)
}

func (c client) CreateCheckRun(ctx context.Context, owner, repo string,
	opts gh.CreateCheckRunOptions) (*gh.CheckRun, *gh.Response, error) {
	return c.c.Checks.CreateCheckRun(ctx, owner, repo, opts)
}

func (c client) UpdateCheckRun(ctx context.Context, owner, repo string, id int64,
	opts gh.UpdateCheckRunOptions) (*gh.CheckRun, *gh.Response, error) {
	return c.c.Checks.UpdateCheckRun(ctx, owner, repo, id, opts)
}

func (c client) ListCheckRunsForRef(ctx context.Context, owner, repo, ref string,
	opts *gh.ListCheckRunsOptions) (*gh.ListCheckRunsResults, *gh.Response, error) {
	return c.c.Checks.ListCheckRunsForRef(ctx, owner, repo, ref, opts)
}
func (c client) GraphQL(ctx context.Context, url string, body, out any) (*gh.Response, error) {
	req, err := c.c.NewRequest("POST", url, body)
	if err != nil {
		return nil, err
	}
	return c.c.Do(ctx, req, out)
}
