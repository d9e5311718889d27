package github

import (
	"context"
	"fmt"

	gh "github.com/google/go-github/v62/github"

	"github.com/backflow-dev/backflow/internal/forge"
)

// maxCompareFiles is how many changed files GitHub's compare API lists:
// the whole comparison's files come on its first page, up to 300.
const maxCompareFiles = 300

// ChangedFiles implements forge.Forge with the compare API (base...head:
// from the merge base, as a pull request's diff), the files as GitHub
// reports them. A comparison listing maxCompareFiles files may hold more
// than GitHub shows: ErrInvalid, never a partial diff.
func (a *Adapter) ChangedFiles(ctx context.Context, repo forge.Repo, base, head string) (forge.Diff, error) {
	in, err := a.forRepo(ctx, repo.Owner, repo.Name)
	if err != nil {
		return forge.Diff{}, err
	}
	cmp, _, err := in.api.CompareCommits(ctx, repo.Owner, repo.Name, base, head, &gh.ListOptions{PerPage: 1})
	if err != nil {
		return forge.Diff{}, mapErr(err, "comparing %s...%s in %s", short(base), short(head), repo)
	}
	if len(cmp.Files) >= maxCompareFiles {
		return forge.Diff{}, fmt.Errorf(
			"error comparing %s...%s in %s: %d or more changed files, more than GitHub lists: %w",
			short(base),
			short(head),
			repo,
			maxCompareFiles,
			forge.ErrInvalid,
		)
	}
	d := forge.Diff{MergeBase: cmp.GetMergeBaseCommit().GetSHA()}
	for _, f := range cmp.Files {
		d.Files = append(
			d.Files,
			forge.ChangedFile{Path: f.GetFilename(), PreviousPath: f.GetPreviousFilename(), Status: f.GetStatus()},
		)
	}
	return d, nil
}

// Contains implements forge.Forge with the compare API: the comparison's
// status says how head stands to commit, whatever the files (one page is
// asked for; the status does not depend on it).
func (a *Adapter) Contains(ctx context.Context, repo forge.Repo, commit, head string) (bool, error) {
	in, err := a.forRepo(ctx, repo.Owner, repo.Name)
	if err != nil {
		return false, err
	}
	cmp, _, err := in.api.CompareCommits(ctx, repo.Owner, repo.Name, commit, head, &gh.ListOptions{PerPage: 1})
	if err != nil {
		return false, mapErr(err, "comparing %s...%s in %s", short(commit), short(head), repo)
	}
	switch st := cmp.GetStatus(); st {
	case "ahead", "identical":
		return true, nil
	case "behind", "diverged":
		return false, nil
	default:
		return false, fmt.Errorf("error comparing %s...%s in %s: status %q is none of ahead, identical, behind, "+
			"diverged: %w", short(commit), short(head), repo, st, forge.ErrInvalid)
	}
}
