package github

import (
	"context"
	"errors"
	"fmt"

	gh "github.com/google/go-github/v62/github"

	"github.com/backflow-dev/backflow/internal/forge"
)

// BranchHead implements forge.Forge. The read is conditional after the
// first (ETag), so polling an unchanged branch costs a free 304.
func (a *Adapter) BranchHead(ctx context.Context, repo forge.Repo, branch string) (string, error) {
	in, err := a.forRepo(ctx, repo.Owner, repo.Name)
	if err != nil {
		return "", err
	}
	return a.head(ctx, in, repo, branch)
}

func (a *Adapter) head(ctx context.Context, in *installation, repo forge.Repo, branch string) (string, error) {
	ref, _, err := in.api.GetRef(ctx, repo.Owner, repo.Name, "heads/"+branch)
	if err != nil {
		return "", mapErr(err, "reading branch %s in %s", branch, repo)
	}
	// GetRef answers with a prefix match when the exact ref is missing.
	if ref.GetRef() != "refs/heads/"+branch {
		return "", fmt.Errorf("error reading branch %s in %s: %w", branch, repo, forge.ErrNotFound)
	}
	return ref.GetObject().GetSHA(), nil
}

// CreateBranch implements forge.Forge. GitHub refuses to create an existing
// ref, which makes the creation a compare-and-swap against "absent".
func (a *Adapter) CreateBranch(ctx context.Context, repo forge.Repo, branch, sha string) error {
	in, err := a.forRepo(ctx, repo.Owner, repo.Name)
	if err != nil {
		return err
	}
	return a.createRef(ctx, in, repo, branch, sha)
}

func (a *Adapter) createRef(ctx context.Context, in *installation, repo forge.Repo, branch, sha string) error {
	ref := "refs/heads/" + branch
	return a.create(ctx, func(ctx context.Context) error {
		_, _, err := in.api.CreateRef(ctx, repo.Owner, repo.Name, &gh.Reference{Ref: &ref, Object: &gh.GitObject{SHA: &sha}})
		return mapErr(err, "creating branch %s in %s", branch, repo)
	}, func(ctx context.Context) (bool, error) {
		cur, err := a.head(ctx, in, repo, branch)
		return cur == sha, err
	})
}

// UpdateBranch implements forge.Forge. The REST API has no expected-old
// field: the head is read and compared first, and without force GitHub's
// own fast-forward rule refuses a head that moved on in between. With force,
// a move between the read and the update (milliseconds) goes unnoticed; the
// go-git commit method has no such window.
func (a *Adapter) UpdateBranch(ctx context.Context, repo forge.Repo, branch, expectedOld, newSHA string,
	force bool) error {
	in, err := a.forRepo(ctx, repo.Owner, repo.Name)
	if err != nil {
		return err
	}
	return a.updateRef(ctx, in, repo, branch, expectedOld, newSHA, force)
}

func (a *Adapter) updateRef(ctx context.Context, in *installation, repo forge.Repo, branch, expectedOld, newSHA string,
	force bool) error {
	cur, err := a.head(ctx, in, repo, branch)
	if err != nil {
		return err
	}
	if cur != expectedOld {
		return fmt.Errorf(
			"error updating branch %s in %s: head is %s, expected %s: %w",
			branch,
			repo,
			short(cur),
			short(expectedOld),
			forge.ErrConflict,
		)
	}
	ref := "refs/heads/" + branch
	return a.create(ctx, func(ctx context.Context) error {
		_, _, err := in.api.UpdateRef(
			ctx,
			repo.Owner,
			repo.Name,
			&gh.Reference{Ref: &ref, Object: &gh.GitObject{SHA: &newSHA}},
			force,
		)
		return mapErr(err, "updating branch %s in %s", branch, repo)
	}, func(ctx context.Context) (bool, error) {
		cur, err := a.head(ctx, in, repo, branch)
		return cur == newSHA, err
	})
}

// DeleteBranch implements forge.Forge.
func (a *Adapter) DeleteBranch(ctx context.Context, repo forge.Repo, branch, expectedSHA string) error {
	in, err := a.forRepo(ctx, repo.Owner, repo.Name)
	if err != nil {
		return err
	}
	if expectedSHA != "" {
		cur, err := a.head(ctx, in, repo, branch)
		if err != nil {
			return err
		}
		if cur != expectedSHA {
			return fmt.Errorf(
				"error deleting branch %s in %s: head is %s, expected %s: %w",
				branch,
				repo,
				short(cur),
				short(expectedSHA),
				forge.ErrConflict,
			)
		}
	}
	return a.create(ctx, func(ctx context.Context) error {
		_, err := in.api.DeleteRef(ctx, repo.Owner, repo.Name, "heads/"+branch)
		return mapErr(err, "deleting branch %s in %s", branch, repo)
	}, func(ctx context.Context) (bool, error) {
		_, err := a.head(ctx, in, repo, branch)
		return errors.Is(err, forge.ErrNotFound), nil
	})
}
