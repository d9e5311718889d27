package reliability

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	gh "github.com/google/go-github/v62/github"

	"github.com/backflow-dev/backflow/internal/bot"
	"github.com/backflow-dev/backflow/internal/forge"
	"github.com/backflow-dev/backflow/internal/repoconfig"
)

const valuesLine = "valuesFiles: [envs/prod-us-east/redis/values.yaml]"

// badPaths are repo configs that name a file backflow must never write,
// as the first unit's values file or as the receipts folder.
var badPaths = []struct{ name, valuesFile, receiptsDir string }{
	{"parent directory", "../outside/values.yaml", ""},
	{"parent directory inside", "envs/../../outside/values.yaml", ""},
	{"absolute path", "/etc/backflow/values.yaml", ""},
	{"drive letter", "C:/values.yaml", ""},
	{"backslashes", `'envs\prod-us-east\redis\values.yaml'`, ""},
	{"NUL byte", `"envs/prod-us-east/redis/values.yaml\0.txt"`, ""},
	{"inside .git", ".git/config", ""},
	{"not clean", "envs/./prod-us-east/redis/values.yaml", ""},
	{"the repo config", ".github/backflow.yaml", ""},
	{"the repo config, other case", ".GitHub/Backflow.yaml", ""},
	{"the policy", ".github/reverse-reconcile-policy.yaml", ""},
	{"CODEOWNERS", "CODEOWNERS", ""},
	{".github/CODEOWNERS", ".github/CODEOWNERS", ""},
	{"docs/CODEOWNERS", "docs/CODEOWNERS", ""},
	{"a workflow", ".github/workflows/ci.yaml", ""},
	{"a workflow, other case", ".github/Workflows/ci.yaml", ""},
	{"receipts: parent directory", "", "../receipts"},
	{"receipts: absolute", "", "/var/receipts"},
	{"receipts: backslashes", "", `'receipts\backflow'`},
	{"receipts: the values folder", "", "envs/prod-us-east"},
	{"receipts: NUL byte", "", `"receipts\0x"`},
}

func badConfig(base, valuesFile, receiptsDir string) string {
	out := base
	if valuesFile != "" {
		out = strings.Replace(out, valuesLine, "valuesFiles: ["+valuesFile+"]", 1)
	}
	if receiptsDir != "" {
		out += "receipts:\n  dir: " + receiptsDir + "\n"
	}
	return out
}

// Case 7: values files or receipt folders with "..", absolute paths,
// backslashes, NUL, targets that are the repo config, the policy,
// CODEOWNERS or a workflow, and values files that are a symlink (tree mode
// 120000), under a symlinked folder or a submodule (160000) are refused
// before any write: the config check names the key, and a cycle over such
// repositories sends no write at all. The one allowed write-back touches
// only its values file and its receipt.
func TestCase07Paths(t *testing.T) {
	files := gitopsFiles(t)
	e := newHubEnv(t, files)
	base := files[configPath]

	// The config check names what it refuses and why.
	for _, bp := range badPaths {
		_, err := repoconfig.Parse(repoconfig.Path, []byte(badConfig(base, bp.valuesFile, bp.receiptsDir)))
		key := "units[0].valuesFiles[0]"
		if bp.receiptsDir != "" {
			key = "receipts.dir"
		}
		if err == nil {
			t.Errorf("%s: the repo config was accepted", bp.name)
			continue
		}
		if !strings.Contains(err.Error(), key) && !strings.Contains(err.Error(), "unparseable") {
			t.Errorf("%s: the refusal does not name %s: %v", bp.name, key, err)
		}
	}

	// The same configs, and files that are not regular, in repositories a
	// cycle goes through.
	var repos []forge.Repo
	for i, bp := range badPaths {
		if !*fullRun && i%3 != 0 {
			continue // the short form cycles through a third of them
		}
		f := gitopsFiles(t)
		f[configPath] = badConfig(base, bp.valuesFile, bp.receiptsDir)
		repos = append(repos, e.createRepo(fmt.Sprintf("paths-%02d", i), f))
	}
	carol := e.person("carol")
	target := "../../../.github/backflow.yaml"
	for _, tc := range []struct {
		name    string
		entries []*gh.TreeEntry
	}{
		{"values file is a symlink to the repo config", []*gh.TreeEntry{{Path: gh.String(valuesEast), Mode: gh.String("120000"), Type: gh.String("blob"), Content: gh.String(target)}}},
		{"values file is a symlink out of the repository", []*gh.TreeEntry{{Path: gh.String(valuesEast), Mode: gh.String("120000"), Type: gh.String("blob"), Content: gh.String("/etc/passwd")}}},
		{"values folder is a symlink", nil},
		{"values file is a submodule", nil},
	} {
		name := fmt.Sprintf("paths-tree-%d", len(repos))
		r := e.createRepo(name, gitopsFiles(t))
		entries := tc.entries
		switch tc.name {
		case "values folder is a symlink":
			// Move the folder's file away and make the folder a link to it.
			entries = []*gh.TreeEntry{
				{Path: gh.String(valuesEast), Mode: gh.String("100644"), Type: gh.String("blob"), SHA: nil},
				{Path: gh.String("real/redis/values.yaml"), Mode: gh.String("100644"), Type: gh.String("blob"), Content: gh.String(files[valuesEast])},
				{Path: gh.String("envs/prod-us-east"), Mode: gh.String("120000"), Type: gh.String("blob"), Content: gh.String("../real")},
			}
		case "values file is a submodule":
			head, _, err := carol.Git.GetRef(e.ctx, owner, name, "heads/main")
			if err != nil {
				t.Fatal(err)
			}
			entries = []*gh.TreeEntry{{Path: gh.String(valuesEast), Mode: gh.String("160000"), Type: gh.String("commit"), SHA: head.Object.SHA}}
		}
		// A person's commit to main, made while the receipt check is not
		// required there.
		if err := e.hub.SetBranchProtection(owner+"/"+name, "main"); err != nil {
			t.Fatal(err)
		}
		e.pushTree(carol, r, "main", "main", entries, tc.name+"\n")
		if err := e.hub.SetBranchProtection(owner+"/"+name, "main", bot.CheckName); err != nil {
			t.Fatal(err)
		}
		repos = append(repos, r)
	}

	a := e.adapter(nil)
	src := &staticSource{}
	src.set(replicas(usEastNode, 4, e.clock.Now()))
	fx := &effects{Forge: a, allowed: -1}
	b := e.newBot(forge.Steps{Forge: fx}, src, forge.CommitGit)
	e.hub.Requests().Reset()
	rep := e.cycle(b)
	// Writes are counted twice: as the bot's effects (git pushes included)
	// and as the hub's REST requests.
	outside := fx.count("/paths-")
	for _, r := range e.hub.Requests().All() {
		if isWrite(r) && strings.Contains(r.Path, "/paths-") {
			outside++
			t.Errorf("a write to a refused repository: %s %s", r.Method, r.Path)
		}
	}
	if outside > 0 {
		t.Errorf("%d effects on refused repositories", outside)
	}
	refused := 0
	for _, rr := range rep.Repos {
		if !strings.Contains(rr.Repo, "/paths-") {
			continue
		}
		if len(rr.Errors) == 0 && rr.Skipped == "" {
			t.Errorf("%s: neither skipped nor failed: %+v", rr.Repo, rr)
			continue
		}
		refused++
	}
	// The allowed write-back: its branch differs from main in the values
	// file and the receipt only.
	prs := e.pulls(a, e.repo)
	if len(prs) != 1 {
		t.Fatalf("the valid repository: %d pull requests, want 1", len(prs))
	}
	m, _ := bot.ParseMarker(prs[0].Body)
	changed := e.changedFiles(carol, e.repo, m.Base, m.Commits[len(m.Commits)-1])
	for _, f := range changed {
		if f != valuesEast && !strings.HasPrefix(f, repoconfig.DefaultReceiptsDir) {
			outside++
			t.Errorf("the write-back changed %s", f)
		}
	}
	if !slices.Contains(changed, valuesEast) {
		t.Errorf("the write-back did not change the values file: %v", changed)
	}
	report(t, "7", "paths", "writes_outside_allowed_files", outside, "refused_repositories", refused, "hostile_repositories", len(repos),
		"configs_refused_by_check", len(badPaths))
}
