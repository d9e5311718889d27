package github

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"

	"github.com/backflow-dev/backflow/internal/forge"
)

// Files are read and written by their tree entries, never through the
// Contents API: GitHub answers a contents read of a symlink to a regular
// file in the repository with the target's content, so a symlinked values
// file would be read through. Every path is looked up entry by entry, and a
// symlink (mode 120000) or submodule (160000) anywhere on it is refused,
// named, never followed.

// treeItem is one entry of a commit's tree.
type treeItem struct{ mode, sha string }

// treeIndex is a commit's whole tree by path, from one recursive read.
type treeIndex struct {
	repo, sha string
	entries   map[string]treeItem
	truncated bool
}

// treeCache keeps the trees of the last maxTrees commits read, of any
// repositories: a commit's tree never changes, and a cycle reads a
// repository's files at one commit (two for a pull request's diff), so a
// few suffice, and a fleet of repositories does not hold one each.
type treeCache struct {
	mu    sync.Mutex
	trees []*treeIndex // oldest first
}

const maxTrees = 8

var commitSHA = regexp.MustCompile(`^[0-9a-f]{40}$`)

// commitTree returns the recursive tree of commit sha.
func (a *Adapter) commitTree(ctx context.Context, in *installation, repo forge.Repo, sha string) (*treeIndex, error) {
	key := strings.ToLower(repo.FullName())
	if idx := a.trees.get(key, sha); idx != nil {
		return idx, nil
	}
	tree, _, err := in.api.GetTree(ctx, repo.Owner, repo.Name, sha, true)
	if err != nil {
		return nil, mapErr(err, "reading the tree at %s in %s", short(sha), repo)
	}
	idx := &treeIndex{
		repo:      key,
		sha:       sha,
		entries:   make(map[string]treeItem, len(tree.Entries)),
		truncated: tree.GetTruncated(),
	}
	for _, e := range tree.Entries {
		idx.entries[e.GetPath()] = treeItem{mode: e.GetMode(), sha: e.GetSHA()}
	}
	if commitSHA.MatchString(sha) {
		a.trees.put(idx)
	}
	return idx, nil
}

func (c *treeCache) get(repo, sha string) *treeIndex {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, t := range c.trees {
		if t.repo == repo && t.sha == sha {
			return t
		}
	}
	return nil
}

func (c *treeCache) put(idx *treeIndex) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.trees) == maxTrees {
		c.trees = c.trees[1:]
	}
	c.trees = append(c.trees, idx)
}

// pathError says what one path is that a read or write refuses.
type pathError struct {
	path string
	what string // "missing", "is a symlink (mode 120000), never followed", ...
	kind error  // forge.ErrNotFound or forge.ErrNotRegularFile
}

func (e *pathError) Error() string {
	if e.what == "" {
		return e.path + ": " + e.kind.Error()
	}
	return e.path + " " + e.what + ": " + e.kind.Error()
}

func (e *pathError) Unwrap() error { return e.kind }

// lookup finds p's entry at commit sha, checking every folder on the way:
// each is a folder (040000), never a symlink or a submodule. A path
// through a regular file, or missing, is ErrNotFound. A tree too large
// for one read is walked one folder at a time.
func (a *Adapter) lookup(ctx context.Context, in *installation, repo forge.Repo, sha, p string) (treeItem, error) {
	idx, err := a.commitTree(ctx, in, repo, sha)
	if err != nil {
		return treeItem{}, err
	}
	parts := strings.Split(p, "/")
	treeish := sha
	for i := range parts {
		q := strings.Join(parts[:i+1], "/")
		var it treeItem
		var ok bool
		if idx.truncated {
			if it, ok, err = a.child(ctx, in, repo, treeish, parts[i]); err != nil {
				return treeItem{}, err
			}
		} else {
			it, ok = idx.entries[q]
		}
		switch {
		case !ok:
			return treeItem{}, &pathError{path: q, kind: forge.ErrNotFound}
		case it.mode == "120000":
			return treeItem{}, &pathError{
				path: q,
				what: "is a symlink (mode 120000), never followed",
				kind: forge.ErrNotRegularFile,
			}
		case it.mode == "160000":
			return treeItem{}, &pathError{path: q, what: "is a submodule (mode 160000)", kind: forge.ErrNotRegularFile}
		case i == len(parts)-1 && it.mode == "040000":
			return treeItem{}, &pathError{path: q, what: "is a folder", kind: forge.ErrNotRegularFile}
		case i == len(parts)-1:
			return it, nil
		case it.mode != "040000":
			return treeItem{}, &pathError{path: q, what: "is a file, not a folder", kind: forge.ErrNotFound}
		}
		treeish = it.sha
	}
	return treeItem{}, &pathError{path: p, kind: forge.ErrNotFound}
}

// child reads one entry of a tree, for trees too large to read whole.
func (a *Adapter) child(ctx context.Context, in *installation, repo forge.Repo,
	treeish, name string) (treeItem, bool, error) {
	tree, _, err := in.api.GetTree(ctx, repo.Owner, repo.Name, treeish, false)
	if err != nil {
		return treeItem{}, false, mapErr(err, "reading the tree %s in %s", short(treeish), repo)
	}
	for _, e := range tree.Entries {
		if e.GetPath() == name {
			return treeItem{mode: e.GetMode(), sha: e.GetSHA()}, true, nil
		}
	}
	return treeItem{}, false, nil
}

// writable refuses a path a commit on base would write through a symlink,
// a submodule or a file, or over a folder: each folder on it is a folder
// or absent, and the file itself a regular file or absent.
func (a *Adapter) writable(ctx context.Context, in *installation, repo forge.Repo, base, p string) error {
	_, err := a.lookup(ctx, in, repo, base, p)
	var pe *pathError
	switch {
	case err == nil:
		return nil
	case !errors.As(err, &pe):
		return err
	case pe.what == "":
		return nil // created
	}
	return fmt.Errorf("%s %s: nothing is written through it: %w", pe.path, pe.what, forge.ErrInvalid)
}
