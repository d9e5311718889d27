package repoconfig

import (
	"fmt"
	"strings"
)

// workflowsDir is where GitHub reads workflows from.
const workflowsDir = ".github/workflows"

// guarded is one place backflow never writes: a file, or a folder and
// everything below it.
type guarded struct {
	path, what string
	folder     bool
}

// guardedPaths are the files and folders backflow never writes: the repo
// config, the policy, the units' values files (written only as edits, never
// as receipts), CODEOWNERS and the workflows.
func (c *Config) guardedPaths() []guarded {
	out := []guarded{
		{path: Path, what: "the repo config"},
		{path: workflowsDir, what: "the GitHub workflows folder", folder: true},
	}
	if c.Policy != "" {
		out = append(out, guarded{path: c.Policy, what: "the policy"})
	}
	for _, co := range codeOwners {
		out = append(out, guarded{path: co, what: "a CODEOWNERS file"})
	}
	for _, u := range c.Units {
		for _, f := range u.ValuesFiles {
			out = append(out, guarded{path: f, what: "a values file of unit " + u.Name})
		}
	}
	return out
}

// checkReceiptsDir says why dir cannot hold receipts: it is, holds, or
// lies under a file or folder backflow never writes as a receipt. Paths
// compare case-insensitively, as a case-insensitive checkout would.
func (c *Config) checkReceiptsDir(dir string) error {
	ld := strings.ToLower(strings.TrimSuffix(dir, "/"))
	if ld == "" || ld == "." {
		return fmt.Errorf("%q: the repository's root holds every file: receipts need a folder of their own", dir)
	}
	for _, g := range c.guardedPaths() {
		lp := strings.ToLower(g.path)
		switch {
		case lp == ld:
			return fmt.Errorf("%q is %s (%s): receipts need a folder of their own", dir, g.what, g.path)
		case under(lp, ld):
			return fmt.Errorf("%q holds %s (%s): a receipt could replace it", dir, g.what, g.path)
		case under(ld, lp):
			return fmt.Errorf("%q is under %s (%s)", dir, g.what, g.path)
		}
	}
	return nil
}

// ReceiptWritable says why backflow must not write a receipt at p: a path
// outside the repository or outside receipts.dir, or one that is exactly
// a file backflow never writes (the repo config, the policy, a values
// file, CODEOWNERS) or under the workflows folder; nil when it may.
func (c *Config) ReceiptWritable(p string) error {
	if err := checkRepoPath(p); err != nil {
		return err
	}
	dir := c.Receipts.Dir
	if dir == "" {
		dir = DefaultReceiptsDir
	}
	lp := strings.ToLower(p)
	if !under(lp, strings.ToLower(dir)) {
		return fmt.Errorf("%s is outside receipts.dir (%s)", p, dir)
	}
	for _, g := range c.guardedPaths() {
		gp := strings.ToLower(g.path)
		if lp == gp || (g.folder && under(lp, gp)) {
			return fmt.Errorf("%s is %s, which backflow never writes", p, g.what)
		}
	}
	return nil
}
