package checkout

import (
	"errors"
	"fmt"
	"io"
	"path"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/backflow-dev/backflow/internal/diffbound"
	"github.com/backflow-dev/backflow/internal/policy"
	"github.com/backflow-dev/backflow/internal/repoconfig"
)

// MaxDiffFile bounds one changed file read from the checkout.
const MaxDiffFile = 4 << 20

// ErrTooLarge is a changed file over MaxDiffFile.
var ErrTooLarge = errors.New("larger than the check reads")

// Diff is a pull request's whole diff read from a git checkout: the input of
// diffbound.Check, and what the check cannot take as a file.
type Diff struct {
	// Input holds the repo config and policy at the base ref and the
	// changed files on both sides.
	Input diffbound.Input
	// Files is the number of files the diff changes.
	Files int
	// Special lists the changed entries that are not regular files, one
	// problem each: never a receipt or a values file.
	Special []string
	// PolicyErr is why the base branch's policy did not parse (Input.Policy
	// is then nil: it authorizes nothing).
	PolicyErr error
}

// ClaimsAny reports whether the diff touches the receipts folder.
func (d *Diff) ClaimsAny() bool {
	dir := repoconfig.DefaultReceiptsDir
	if d.Input.Config.Receipts.Dir != "" {
		dir = d.Input.Config.Receipts.Dir
	}
	for _, p := range d.Input.Changed {
		if rel, ok := cutDir(p, dir); ok && rel != "" {
			return true
		}
	}
	return false
}

// ReadDiff reads a pull request's whole diff in the git checkout at dir: the
// changes from the merge base of baseRef and headRef to headRef, with the
// repo config at configPath and the policy it names, both read at baseRef.
// Changed files over MaxDiffFile are an error. The Diff is returned with the
// error once the base policy was read, so its PolicyErr is not lost.
func ReadDiff(dir, baseRef, headRef, configPath string) (*Diff, error) {
	repo, err := git.PlainOpenWithOptions(dir, &git.PlainOpenOptions{DetectDotGit: true})
	if err != nil {
		return nil, fmt.Errorf("%s: not a git checkout: %w", dir, err)
	}
	base, err := commitAt(repo, baseRef)
	if err != nil {
		return nil, fmt.Errorf("--base %s: %w", baseRef, err)
	}
	head, err := commitAt(repo, headRef)
	if err != nil {
		return nil, fmt.Errorf("--head %s: %w", headRef, err)
	}
	from := base
	if mbs, err := base.MergeBase(head); err == nil && len(mbs) > 0 {
		from = mbs[0]
	}
	d := &Diff{Input: diffbound.Input{Base: map[string][]byte{}, Head: map[string][]byte{}}}
	in := &d.Input
	baseTree, err := base.Tree()
	if err != nil {
		return nil, fmt.Errorf("--base %s: %w", baseRef, err)
	}
	data, err := readBlob(baseTree, configPath)
	if err != nil {
		return nil, fmt.Errorf("%s at %s: %w", configPath, baseRef, err)
	}
	if in.Config, err = repoconfig.Parse(configPath, data); err != nil {
		return nil, fmt.Errorf("%s at %s: %w", configPath, baseRef, err)
	}
	in.PolicyPath = in.Config.Policy
	if data, err = readBlob(baseTree, in.Config.Policy); err != nil {
		return nil, fmt.Errorf("policy %s at %s: %w", in.Config.Policy, baseRef, err)
	}
	if in.Policy, err = policy.Parse(in.Config.Policy, data); err != nil {
		// An invalid base policy authorizes nothing: every receipt fails.
		in.Policy = nil
		d.PolicyErr = fmt.Errorf("%s: at %s: %w", in.Config.Policy, baseRef, err)
	}
	fromTree, err := from.Tree()
	if err != nil {
		return d, fmt.Errorf("merge base %s: %w", from.Hash, err)
	}
	headTree, err := head.Tree()
	if err != nil {
		return d, fmt.Errorf("--head %s: %w", headRef, err)
	}
	changes, err := object.DiffTree(fromTree, headTree)
	if err != nil {
		return d, fmt.Errorf("diffing %s...%s: %w", baseRef, headRef, err)
	}
	d.Files = len(changes)
	for _, c := range changes {
		for _, side := range []struct {
			entry object.ChangeEntry
			tree  *object.Tree
			into  map[string][]byte
		}{{c.From, fromTree, in.Base}, {c.To, headTree, in.Head}} {
			if side.entry.Name == "" {
				continue
			}
			in.Changed = append(in.Changed, side.entry.Name)
			if m := side.entry.TreeEntry.Mode; m != filemode.Regular && m != filemode.Executable {
				d.Special = append(
					d.Special,
					fmt.Sprintf("%s: changed, and not a regular file (mode %s): never a receipt or a values file", side.entry.Name, m),
				)
				continue
			}
			b, err := readBlob(side.tree, side.entry.Name)
			if err != nil {
				return d, fmt.Errorf("reading %s: %w", side.entry.Name, err)
			}
			side.into[side.entry.Name] = b
		}
	}
	return d, nil
}

func cutDir(p, dir string) (string, bool) {
	dir = path.Clean(dir) + "/"
	if len(p) > len(dir) && p[:len(dir)] == dir {
		return p[len(dir):], true
	}
	return "", false
}

func commitAt(repo *git.Repository, ref string) (*object.Commit, error) {
	h, err := repo.ResolveRevision(plumbing.Revision(ref))
	if err != nil {
		return nil, err
	}
	return repo.CommitObject(*h)
}

func readBlob(tree *object.Tree, p string) ([]byte, error) {
	f, err := tree.File(p)
	if err != nil {
		return nil, err
	}
	if f.Size > MaxDiffFile {
		return nil, fmt.Errorf("%s: %w (%d bytes)", p, ErrTooLarge, f.Size)
	}
	r, err := f.Reader()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return io.ReadAll(r)
}
