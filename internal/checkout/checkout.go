package checkout

import (
	"context"
	"os"
	"path/filepath"

	git "github.com/go-git/go-git/v5"

	"github.com/backflow-dev/backflow/internal/kustomize/builder"
	"github.com/backflow-dev/backflow/internal/plan"
	"github.com/backflow-dev/backflow/internal/render"
	"github.com/backflow-dev/backflow/internal/repoconfig"
)

// Options tune reading a checkout.
type Options struct {
	// Revisions reads the documents of units whose desired state is in a
	// revision store (a ConfigHub Unit: internal/hubstore's Reader);
	// without it those units' decisions fail closed.
	Revisions plan.RevisionReader
}

// readCheckout reads what the planner needs from the working tree of a
// checkout at dir, through the one snapshot reader every command shares
// (plan.ReadSnapshot): files are read as repoconfig.ReadRepoFile reads them
// (no path leaving the checkout, no symlink, size-capped), and the snapshot
// names the commit checked out when dir is the top of a git checkout. Its
// renderer reads units' charts from the working tree, and fetches remote
// ones into render's default cache.
func readCheckout(dir string, opts Options) (plan.Read, error) {
	read := func(p string, limit int64) ([]byte, error) { return repoconfig.ReadRepoFile(dir, p, limit) }
	list := func(p string) ([]string, error) { return repoconfig.ListRepoDir(dir, p) }
	got, err := plan.ReadSnapshot(
		read,
		plan.ReadOptions{Commit: HeadCommit(dir), List: list, Kustomizer: &builder.Builder{}, Revisions: opts.Revisions},
	)
	// Charts are read from the same working tree, when a write-back needs
	// the render witness.
	fetch := render.NewFetcher(render.FetchOptions{})
	got.Snapshot.Renderer = render.NewUnits(context.Background(), render.DirSource{Root: dir}, fetch, render.Bounds{})
	return got, err
}

// HeadCommit returns the commit checked out at dir when dir is the top of a
// git checkout (its .git folder), or "" when that cannot be told (no
// repository, no commit yet): the plan then says it read a working tree.
// Parent folders are not searched, so a folder inside another repository is
// never taken for a commit of that repository.
func HeadCommit(dir string) string {
	if info, err := os.Lstat(filepath.Join(dir, ".git")); err != nil || !info.IsDir() {
		return ""
	}
	repo, err := git.PlainOpenWithOptions(dir, &git.PlainOpenOptions{DetectDotGit: false})
	if err != nil {
		return ""
	}
	head, err := repo.Head()
	if err != nil {
		return ""
	}
	return head.Hash().String()
}
