package main

import (
	"errors"
	"fmt"
	"io"
	"path"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/backflow-dev/backflow/internal/diffbound"
	"github.com/backflow-dev/backflow/internal/policy"
	"github.com/backflow-dev/backflow/internal/repoconfig"
)

// maxDiffFile bounds one changed file read from the checkout.
const maxDiffFile = 4 << 20

// runVerifyDiff checks a pull request's whole diff in the git checkout at
// dir: the changes from the merge base of baseRef and headRef to headRef,
// against the repo config and policy at baseRef.
func runVerifyDiff(stdout io.Writer, dir, baseRef, headRef, configPath string) error {
	repo, err := git.PlainOpenWithOptions(dir, &git.PlainOpenOptions{DetectDotGit: true})
	if err != nil {
		return usageError("%s: not a git checkout: %v", dir, err)
	}
	base, err := commitAt(repo, baseRef)
	if err != nil {
		return usageError("--base %s: %v", baseRef, err)
	}
	head, err := commitAt(repo, headRef)
	if err != nil {
		return usageError("--head %s: %v", headRef, err)
	}
	from := base
	if mbs, err := base.MergeBase(head); err == nil && len(mbs) > 0 {
		from = mbs[0]
	}
	in := diffbound.Input{Base: map[string][]byte{}, Head: map[string][]byte{}}
	baseTree, err := base.Tree()
	if err != nil {
		return usageError("--base %s: %v", baseRef, err)
	}
	data, err := readBlob(baseTree, configPath)
	if err != nil {
		return usageError("%s at %s: %v", configPath, baseRef, err)
	}
	if in.Config, err = repoconfig.Parse(configPath, data); err != nil {
		return usageError("%s at %s: %v", configPath, baseRef, err)
	}
	in.PolicyPath = in.Config.Policy
	if data, err = readBlob(baseTree, in.Config.Policy); err != nil {
		return usageError("policy %s at %s: %v", in.Config.Policy, baseRef, err)
	}
	if in.Policy, err = policy.Parse(in.Config.Policy, data); err != nil {
		// An invalid base policy authorizes nothing: every receipt fails.
		in.Policy = nil
		fmt.Fprintln(stdout, escapeLineBreaks(fmt.Sprintf("%s: at %s: %v", in.Config.Policy, baseRef, err)))
	}
	fromTree, err := from.Tree()
	if err != nil {
		return usageError("merge base %s: %v", from.Hash, err)
	}
	headTree, err := head.Tree()
	if err != nil {
		return usageError("--head %s: %v", headRef, err)
	}
	changes, err := object.DiffTree(fromTree, headTree)
	if err != nil {
		return usageError("diffing %s...%s: %v", baseRef, headRef, err)
	}
	var special []string
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
				special = append(special, fmt.Sprintf("%s: changed, and not a regular file (mode %s): never a receipt or a values file", side.entry.Name, m))
				continue
			}
			b, err := readBlob(side.tree, side.entry.Name)
			if err != nil {
				return usageError("reading %s: %v", side.entry.Name, err)
			}
			side.into[side.entry.Name] = b
		}
	}
	if !claimsAny(in) && len(special) == 0 {
		fmt.Fprintf(stdout, "no receipt is added or changed: the pull request claims no authority, so it is reviewed as any other (%d file(s) changed)\n", len(changes))
		return nil
	}
	res := diffbound.Check(in)
	violations := append(special, res.Violations...)
	if in.Policy == nil {
		violations = append(violations, in.Config.Policy+": the base branch's policy is invalid: it authorizes nothing")
	}
	for _, v := range violations {
		fmt.Fprintln(stdout, escapeLineBreaks(v))
	}
	if len(violations) > 0 {
		return silentExit(1)
	}
	fmt.Fprintf(stdout, "the whole diff is within its receipts: %d receipt(s), %d changed value path(s), %d file(s)\n", res.Receipts, res.ValuePaths, len(changes))
	return nil
}

// claimsAny reports whether the diff touches the receipts folder.
func claimsAny(in diffbound.Input) bool {
	dir := repoconfig.DefaultReceiptsDir
	if in.Config.Receipts.Dir != "" {
		dir = in.Config.Receipts.Dir
	}
	for _, p := range in.Changed {
		if rel, ok := cutDir(p, dir); ok && rel != "" {
			return true
		}
	}
	return false
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

// errTooLarge is a changed file over maxDiffFile.
var errTooLarge = errors.New("larger than the check reads")

func readBlob(tree *object.Tree, p string) ([]byte, error) {
	f, err := tree.File(p)
	if err != nil {
		return nil, err
	}
	if f.Size > maxDiffFile {
		return nil, fmt.Errorf("%s: %w (%d bytes)", p, errTooLarge, f.Size)
	}
	r, err := f.Reader()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return io.ReadAll(r)
}
