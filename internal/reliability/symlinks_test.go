package reliability

import (
	"fmt"
	"strings"
	"testing"

	gh "github.com/google/go-github/v62/github"

	"github.com/backflow-dev/backflow/internal/bot"
	"github.com/backflow-dev/backflow/internal/forge"
	ghforge "github.com/backflow-dev/backflow/internal/forge/github"
	"github.com/backflow-dev/backflow/internal/repoconfig"
)

// Case 23: symlinks are never followed. GitHub's Contents API answers a
// symlink to a regular file in the repository with that file's content,
// and a commit through the Git database API writes a tree entry under a
// symlinked folder beside the link. A values file that is a symlink to a
// file in the repository, and a receipts folder that is a symlink, with
// each commit method, through the adapter against the local hub: nothing
// is planned from a link's target, nothing is written, and the cycle's
// error names the link.
func TestCase23SymlinksNeverFollowed(t *testing.T) {
	files := gitopsFiles(t)
	e := newHubEnv(t, files)
	carol := e.person("carol")
	link := func(p, target string) *gh.TreeEntry {
		return &gh.TreeEntry{Path: gh.String(p), Mode: gh.String("120000"), Type: gh.String("blob"), Content: gh.String(target)}
	}
	regular := func(p, content string) *gh.TreeEntry {
		return &gh.TreeEntry{Path: gh.String(p), Mode: gh.String("100644"), Type: gh.String("blob"), Content: gh.String(content)}
	}
	receipts := repoconfig.DefaultReceiptsDir
	variants := []struct {
		name, link string
		entries    []*gh.TreeEntry
	}{
		// The values file links to a copy elsewhere in the repository,
		// which no unit names and no policy governs.
		{"values file links to a file in the repository", valuesEast, []*gh.TreeEntry{
			regular("unreviewed/values.yaml", files[valuesEast]),
			link(valuesEast, "../../../unreviewed/values.yaml"),
		}},
		// The receipts folder links elsewhere: a receipt written under it
		// would land beside the link, or through it.
		{"receipts folder is a symlink", receipts, []*gh.TreeEntry{
			regular("elsewhere/README.md", "not receipts\n"),
			link(receipts, "../elsewhere"),
		}},
	}
	readThrough, writes, named, runs := 0, 0, 0, 0
	for i, v := range variants {
		for _, method := range []forge.CommitMethod{forge.CommitGit, forge.CommitAPI} {
			name := fmt.Sprintf("links-%d-%s", i, method)
			r := e.createRepo(name, gitopsFiles(t))
			if err := e.hub.SetBranchProtection(owner+"/"+name, "main"); err != nil {
				t.Fatal(err)
			}
			e.pushTree(carol, r, "main", "main", v.entries, v.name+"\n")
			if err := e.hub.SetBranchProtection(owner+"/"+name, "main", bot.CheckName); err != nil {
				t.Fatal(err)
			}
			a := e.adapter(func(c *ghforge.Config) { c.Allowlist = []string{owner + "/" + name} })
			src := &staticSource{}
			src.set(replicas(usEastNode, 4, e.clock.Now()))
			b := e.newBot(a, src, method)
			e.hub.Requests().Reset()
			rep := e.cycle(b)
			runs++
			for _, req := range e.hub.Requests().All() {
				if isWrite(req) && strings.Contains(req.Path, "/"+name+"/") || isWrite(req) && strings.HasSuffix(req.Path, "/"+name+".git/git-receive-pack") {
					writes++
					t.Errorf("%s (%s): a write: %s %s", v.name, method, req.Method, req.Path)
				}
			}
			var errs []string
			for _, rr := range rep.Repos {
				for _, err := range rr.Errors {
					errs = append(errs, err.Error())
				}
				errs = append(errs, rr.PlanErrors...)
				if rr.Skipped != "" {
					errs = append(errs, rr.Skipped)
				}
				for _, d := range rr.Decisions {
					if v.link == valuesEast && d.Outcome == "allow" {
						readThrough++
						t.Errorf("%s (%s): planned from the link's target: %+v", v.name, method, d)
					}
				}
			}
			if all := strings.Join(errs, "\n"); strings.Contains(all, v.link+" is a symlink") {
				named++
			} else {
				t.Errorf("%s (%s): no error names %s as a symlink: %q", v.name, method, v.link, all)
			}
		}
	}
	report(t, "23", "symlinks-never-followed", "plans_from_a_link_target", readThrough, "writes_through_links", writes,
		"refusals_naming_the_link", fmt.Sprintf("%d/%d", named, runs))
}
