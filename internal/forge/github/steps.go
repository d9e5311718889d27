package github

import (
	"context"

	"github.com/backflow-dev/backflow/internal/forge"
)

// The operations a writer makes as one (forge.Steps), over the adapter's
// own calls.

// OpenPullRequest implements forge.Steps.OpenPullRequest.
func (a *Adapter) OpenPullRequest(ctx context.Context, repo forge.Repo, pr forge.NewPullRequest, seal func(int) string) (forge.PullRequest, bool, error) {
	return forge.Steps{Forge: a}.OpenPullRequest(ctx, repo, pr, seal)
}

// SetUpPullRequest implements forge.Steps.SetUpPullRequest.
func (a *Adapter) SetUpPullRequest(ctx context.Context, repo forge.Repo, number int, set forge.Setup) error {
	return forge.Steps{Forge: a}.SetUpPullRequest(ctx, repo, number, set)
}

// CommentOnce implements forge.Steps.CommentOnce.
func (a *Adapter) CommentOnce(ctx context.Context, repo forge.Repo, number int, text, tag string) error {
	return forge.Steps{Forge: a}.CommentOnce(ctx, repo, number, text, tag)
}

// TrackIssue implements forge.Steps.TrackIssue.
func (a *Adapter) TrackIssue(ctx context.Context, repo forge.Repo, number int, issue forge.NewIssue, state *forge.PRState) (forge.Issue, error) {
	return forge.Steps{Forge: a}.TrackIssue(ctx, repo, number, issue, state)
}

// PostCheck implements forge.Steps.PostCheck.
func (a *Adapter) PostCheck(ctx context.Context, repo forge.Repo, run forge.CheckRun, once forge.Once,
	complete func(forge.CheckRun) forge.CheckRun) (forge.CheckRun, bool, error) {
	return forge.Steps{Forge: a}.PostCheck(ctx, repo, run, once, complete)
}
