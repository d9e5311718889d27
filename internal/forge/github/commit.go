package github

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"sort"
	"strings"
	"time"

	"github.com/go-git/go-billy/v5"
	"github.com/go-git/go-billy/v5/memfs"
	"github.com/go-git/go-billy/v5/util"
	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/transport"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	"github.com/go-git/go-git/v5/storage/memory"
	gh "github.com/google/go-github/v62/github"

	"github.com/backflow-dev/backflow/internal/forge"
)

// Commit implements forge.Forge by the request's method.
func (a *Adapter) Commit(ctx context.Context, req forge.CommitRequest) (string, error) {
	where := fmt.Sprintf("committing to %s in %s", req.Branch, req.Repo)
	if err := checkCommitRequest(req); err != nil {
		return "", fmt.Errorf("error %s: %w", where, err)
	}
	in, err := a.forRepo(ctx, req.Repo.Owner, req.Repo.Name)
	if err != nil {
		return "", err
	}
	switch req.Method {
	case forge.CommitAPI:
		return a.commitAPI(ctx, in, req)
	case forge.CommitGit, "":
		return a.commitGit(ctx, in, req)
	}
	return "", fmt.Errorf("error %s: unknown method %q: %w", where, req.Method, forge.ErrInvalid)
}

func checkCommitRequest(req forge.CommitRequest) error {
	switch {
	case req.Branch == "" || req.BaseSHA == "":
		return fmt.Errorf("branch and base SHA are required: %w", forge.ErrInvalid)
	case len(req.Files) == 0:
		return fmt.Errorf("no files: %w", forge.ErrInvalid)
	case req.Author.Name == "" || req.Author.Email == "":
		return fmt.Errorf("author name and email are required: %w", forge.ErrInvalid)
	case req.ExpectedHead != "" && req.BaseSHA != req.ExpectedHead && !req.Force:
		// Not a fast-forward of the head it replaces.
		return fmt.Errorf(
			"base %s is not the head %s and force is off: %w",
			short(req.BaseSHA),
			short(req.ExpectedHead),
			forge.ErrConflict,
		)
	}
	for p := range req.Files {
		if p == "" || path.IsAbs(p) || path.Clean(p) != p || p == ".." || strings.HasPrefix(p, "../") ||
			strings.HasPrefix(p, ".git/") {
			return fmt.Errorf("file path %q is not a clean relative path: %w", p, forge.ErrInvalid)
		}
	}
	return nil
}

func sortedPaths(files map[string][]byte) []string {
	paths := make([]string, 0, len(files))
	for p := range files {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	return paths
}

// commitAPI makes the commit with the Git database API: one read of the base
// commit, one tree (contents inline, so no request per blob), one commit
// without a committer (GitHub then signs it for the App), and one ref write.
func (a *Adapter) commitAPI(ctx context.Context, in *installation, req forge.CommitRequest) (string, error) {
	r := req.Repo
	where := fmt.Sprintf("committing to %s in %s", req.Branch, r)
	base, _, err := in.api.GetGitCommit(ctx, r.Owner, r.Name, req.BaseSHA)
	if err != nil {
		return "", mapErr(err, "%s: reading base %s", where, short(req.BaseSHA))
	}
	// As the git method, never through a symlink: a tree entry under a
	// symlinked folder would sit beside the link, and a file over a link
	// would write where it points.
	for _, p := range sortedPaths(req.Files) {
		if err := a.writable(ctx, in, r, req.BaseSHA, p); err != nil {
			return "", fmt.Errorf("error %s: %w", where, err)
		}
	}
	var entries []*gh.TreeEntry
	for _, p := range sortedPaths(req.Files) {
		entries = append(
			entries,
			&gh.TreeEntry{
				Path:    gh.String(p),
				Mode:    gh.String("100644"),
				Type:    gh.String("blob"),
				Content: gh.String(string(req.Files[p])),
			},
		)
	}
	// Blobs, trees and commits are content-addressed: repeating them after a
	// lost response creates nothing new, so they are retried blindly.
	tree, _, err := in.api.CreateTree(idempotent(ctx), r.Owner, r.Name, base.GetTree().GetSHA(), entries)
	if err != nil {
		return "", mapErr(err, "%s: creating the tree", where)
	}
	if tree.GetSHA() == base.GetTree().GetSHA() {
		return "", fmt.Errorf("error %s: nothing changed: %w", where, forge.ErrInvalid)
	}
	when := a.cfg.Clock.Now().UTC().Truncate(time.Second)
	commit, _, err := in.api.CreateGitCommit(idempotent(ctx), r.Owner, r.Name, &gh.Commit{
		Message: gh.String(req.Message), Tree: &gh.Tree{SHA: tree.SHA}, Parents: []*gh.Commit{{SHA: gh.String(req.BaseSHA)}},
		Author: &gh.CommitAuthor{
			Name:  gh.String(req.Author.Name),
			Email: gh.String(req.Author.Email),
			Date:  &gh.Timestamp{Time: when},
		},
	}, nil)
	if err != nil {
		return "", mapErr(err, "%s: creating the commit", where)
	}
	sha := commit.GetSHA()
	if req.ExpectedHead == "" {
		err = a.createRef(ctx, in, r, req.Branch, sha)
	} else {
		err = a.updateRef(ctx, in, r, req.Branch, req.ExpectedHead, sha, req.BaseSHA != req.ExpectedHead)
	}
	if err != nil {
		return "", err
	}
	return sha, nil
}

// localBranch is the clone's working branch; its remote-tracking ref is set
// by hand to carry the push's lease.
const localBranch = "backflow-commit"

// commitGit clones the base (depth 1, one branch, no tags) into memory,
// writes the files, commits and pushes.
//
// The push is a true compare-and-swap. go-git checks a lease: the remote
// ref it is advertised must equal the expected head (the zero id when the
// branch must not exist yet), and sends that id as the update's old value;
// git receive-pack then moves the ref only if it still holds that value,
// under its lock. A lost race is re-read and reported as forge.ErrConflict.
func (a *Adapter) commitGit(ctx context.Context, in *installation, req forge.CommitRequest) (string, error) {
	r := req.Repo
	where := fmt.Sprintf("committing to %s in %s", req.Branch, r)
	token, err := in.tr.Token(ctx)
	if err != nil {
		return "", mapErr(err, "%s: getting an installation token", where)
	}
	auth := &githttp.BasicAuth{Username: "x-access-token", Password: token}
	remote := a.cfg.GitURL + r.Owner + "/" + r.Name + ".git"

	// Clone the branch whose head is the base: the bot's branch when adding
	// to it, else the default branch.
	from := r.DefaultBranch
	if req.ExpectedHead != "" && req.BaseSHA == req.ExpectedHead {
		from = req.Branch
	}
	if from == "" {
		return "", fmt.Errorf("error %s: the repository's default branch is unknown: %w", where, forge.ErrInvalid)
	}
	if err := in.gate.wait(ctx, false); err != nil {
		return "", fmt.Errorf("error %s: %w", where, err)
	}
	a.count.reads.Add(1)
	start := a.cfg.Clock.Now()
	fs := memfs.New()
	repo, err := git.CloneContext(ctx, memory.NewStorage(), fs, &git.CloneOptions{
		URL: remote, Auth: auth, RemoteName: "origin", ReferenceName: plumbing.NewBranchReferenceName(from),
		SingleBranch: true, Depth: 1, Tags: git.NoTags,
	})
	a.observeGit(forge.KindRead, "clone", start, err)
	if err != nil {
		return "", a.gitErr(err, "%s: cloning %s", where, from)
	}
	head, err := repo.Head()
	if err != nil {
		return "", fmt.Errorf("error %s: %w", where, err)
	}
	if head.Hash().String() != req.BaseSHA {
		// The base is no longer that branch's head: the caller's view is
		// stale and must be re-read before writing.
		return "", fmt.Errorf(
			"error %s: %s is at %s, not the base %s: %w",
			where,
			from,
			short(head.Hash().String()),
			short(req.BaseSHA),
			forge.ErrConflict,
		)
	}
	wt, err := repo.Worktree()
	if err != nil {
		return "", fmt.Errorf("error %s: %w", where, err)
	}
	checkout := &git.CheckoutOptions{Branch: plumbing.NewBranchReferenceName(localBranch), Create: true, Hash: head.Hash()}
	if err := wt.Checkout(checkout); err != nil {
		return "", fmt.Errorf("error %s: %w", where, err)
	}
	for _, p := range sortedPaths(req.Files) {
		if err := writeFile(fs, p, req.Files[p]); err != nil {
			return "", fmt.Errorf("error %s: writing %s: %w", where, p, err)
		}
		if _, err := wt.Add(p); err != nil {
			return "", fmt.Errorf("error %s: staging %s: %w", where, p, err)
		}
	}
	sig := &object.Signature{
		Name:  req.Author.Name,
		Email: req.Author.Email,
		When:  a.cfg.Clock.Now().UTC().Truncate(time.Second),
	}
	hash, err := wt.Commit(req.Message, &git.CommitOptions{Author: sig, Committer: sig})
	if errors.Is(err, git.ErrEmptyCommit) {
		return "", fmt.Errorf("error %s: nothing changed: %w", where, forge.ErrInvalid)
	}
	if err != nil {
		return "", fmt.Errorf("error %s: %w", where, err)
	}
	lease := plumbing.ZeroHash
	if req.ExpectedHead != "" {
		lease = plumbing.NewHash(req.ExpectedHead)
	}
	tracking := plumbing.NewRemoteReferenceName("origin", localBranch)
	if err := repo.Storer.SetReference(plumbing.NewHashReference(tracking, lease)); err != nil {
		return "", fmt.Errorf("error %s: %w", where, err)
	}
	if err := in.gate.wait(ctx, true); err != nil {
		return "", fmt.Errorf("error %s: %w", where, err)
	}
	a.count.writes.Add(1)
	start = a.cfg.Clock.Now()
	spec := config.RefSpec("+refs/heads/" + localBranch + ":refs/heads/" + req.Branch)
	err = repo.PushContext(ctx, &git.PushOptions{RemoteName: "origin", Auth: auth, RefSpecs: []config.RefSpec{spec},
		ForceWithLease: &git.ForceWithLease{}})
	a.observeGit(forge.KindWrite, "push", start, err)
	if errors.Is(err, git.NoErrAlreadyUpToDate) {
		// The identical commit (same tree, parent, author and second) was
		// already there before this push: the branch was not as expected.
		return "", fmt.Errorf("error %s: the branch already holds %s: %w", where, short(hash.String()), forge.ErrConflict)
	}
	if err != nil {
		// Whatever the error, the remote head says whether the push landed.
		cur, herr := a.head(ctx, in, r, req.Branch)
		switch {
		case herr == nil && cur == hash.String():
			return cur, nil
		case herr == nil && cur != req.ExpectedHead, errors.Is(herr, forge.ErrNotFound) && req.ExpectedHead != "":
			return "", fmt.Errorf(
				"error %s: the branch is at %q, expected %q: %w",
				where,
				short(cur),
				short(req.ExpectedHead),
				forge.ErrConflict,
			)
		}
		return "", a.gitErr(err, "%s: pushing", where)
	}
	return hash.String(), nil
}

// writeFile writes one file in the clone, refusing to write through a
// symlink anywhere on its path.
func writeFile(fs billy.Filesystem, p string, data []byte) error {
	parts := strings.Split(p, "/")
	for i := range parts {
		fi, err := fs.Lstat(strings.Join(parts[:i+1], "/"))
		if err != nil {
			break // missing from here on: created below
		}
		if fi.Mode()&os.ModeSymlink != 0 {
			return fmt.Errorf("%s is a symlink: %w", strings.Join(parts[:i+1], "/"), forge.ErrInvalid)
		}
		if i == len(parts)-1 && fi.IsDir() {
			return fmt.Errorf("%s is a directory: %w", p, forge.ErrInvalid)
		}
		if i < len(parts)-1 && !fi.IsDir() {
			return fmt.Errorf("%s is a file, not a folder: %w", strings.Join(parts[:i+1], "/"), forge.ErrInvalid)
		}
	}
	if dir := path.Dir(p); dir != "." {
		if err := fs.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}
	return util.WriteFile(fs, p, data, 0o644)
}

// observeGit reports a clone or push as one request.
func (a *Adapter) observeGit(kind forge.RequestKind, op string, start time.Time, err error) {
	if a.cfg.Observer == nil {
		return
	}
	status := 200
	if err != nil {
		status = 0
	}
	a.cfg.Observer(
		forge.RequestEvent{
			Kind:     kind,
			Method:   "GIT",
			Route:    op,
			Status:   status,
			Attempt:  1,
			Duration: a.cfg.Clock.Now().Sub(start),
		},
	)
}

// gitErr maps go-git's errors to the forge vocabulary.
func (a *Adapter) gitErr(err error, format string, args ...any) error {
	what := fmt.Sprintf(format, args...)
	var sentinel error
	switch {
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("error %s: %w", what, err)
	case errors.Is(err, transport.ErrAuthenticationRequired), errors.Is(err, transport.ErrAuthorizationFailed):
		sentinel = forge.ErrUnauthorized
	case errors.Is(err, transport.ErrRepositoryNotFound), strings.Contains(err.Error(), "couldn't find remote ref"):
		sentinel = forge.ErrNotFound
	default:
		sentinel = forge.ErrUnavailable
	}
	return fmt.Errorf("error %s: %v: %w", what, err, sentinel)
}
