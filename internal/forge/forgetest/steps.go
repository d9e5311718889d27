package forgetest

import (
	"context"

	"github.com/backflow-dev/backflow/internal/forge"
)

// The operations a writer makes as one (forge.Steps), over the recorder's
// own calls, so each fine call is recorded and can be failed with Fail.

// OpenPullRequest implements forge.Steps.OpenPullRequest.
func (r *Recorder) OpenPullRequest(ctx context.Context, repo forge.Repo, pr forge.NewPullRequest, seal func(int) string) (forge.PullRequest, bool, error) {
	return forge.Steps{Forge: r}.OpenPullRequest(ctx, repo, pr, seal)
}

// SetUpPullRequest implements forge.Steps.SetUpPullRequest.
func (r *Recorder) SetUpPullRequest(ctx context.Context, repo forge.Repo, number int, set forge.Setup) error {
	return forge.Steps{Forge: r}.SetUpPullRequest(ctx, repo, number, set)
}

// CommentOnce implements forge.Steps.CommentOnce.
func (r *Recorder) CommentOnce(ctx context.Context, repo forge.Repo, number int, text, tag string) error {
	return forge.Steps{Forge: r}.CommentOnce(ctx, repo, number, text, tag)
}

// TrackIssue implements forge.Steps.TrackIssue.
func (r *Recorder) TrackIssue(ctx context.Context, repo forge.Repo, number int, issue forge.NewIssue, state *forge.PRState) (forge.Issue, error) {
	return forge.Steps{Forge: r}.TrackIssue(ctx, repo, number, issue, state)
}

// PostCheck implements forge.Steps.PostCheck.
func (r *Recorder) PostCheck(ctx context.Context, repo forge.Repo, run forge.CheckRun, once forge.Once,
	complete func(forge.CheckRun) forge.CheckRun) (forge.CheckRun, bool, error) {
	return forge.Steps{Forge: r}.PostCheck(ctx, repo, run, once, complete)
}
