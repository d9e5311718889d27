package reliability

import (
	"fmt"
	"strings"
	"testing"
	"time"

	gh "github.com/google/go-github/v62/github"

	"github.com/backflow-dev/backflow/internal/forge"
	"github.com/backflow-dev/backflow/internal/repoconfig"
)

// receiptAt is where the receipt of redis-replicas in prod-us-east goes
// under receipts folder dir.
func receiptAt(dir string) string {
	return dir + "/prod-us-east/redis/redis_StatefulSet.apps.v1_redis-replicas.yaml"
}

// hostileReceipts are repositories whose receipts folder is, holds or lies
// under a file backflow never writes. Each names its repo config change
// and the files a write-back must leave alone.
var hostileReceipts = []struct {
	name string
	edit func(files map[string]string)
}{
	{"the policy is where a receipt goes", func(f map[string]string) {
		moved := receiptAt(repoconfig.DefaultReceiptsDir)
		f[moved] = f[policyPath]
		delete(f, policyPath)
		f[configPath] = strings.Replace(f[configPath], "policy: "+policyPath, "policy: "+moved, 1)
	}},
	{"receipts in the workflows folder", func(f map[string]string) {
		f[configPath] += "receipts:\n  dir: .github/workflows\n"
		f[".github/workflows/ci.yaml"] = "on: push\n"
	}},
	{"receipts in .github, which holds the config and the policy", func(f map[string]string) {
		f[configPath] += "receipts:\n  dir: .github\n"
	}},
	{"receipts in docs, which holds CODEOWNERS", func(f map[string]string) {
		f[configPath] += "receipts:\n  dir: docs\n"
		f["docs/CODEOWNERS"] = "* @acme/platform\n"
	}},
	{"receipts under a values file", func(f map[string]string) {
		f[configPath] += "receipts:\n  dir: " + valuesEast + "\n"
	}},
}

// Case 17: a receipts folder that is, holds or lies under the repo config,
// the policy, a values file, the workflows or CODEOWNERS is refused by the
// config check (which names receipts.dir), and a cycle with an authorized,
// auto-merged change over such a repository writes nothing: every file
// backflow never writes is what it was.
func TestCase17ReceiptsStayInTheirFolder(t *testing.T) {
	e := newHubEnv(t, nil)
	refusedByCheck, overwritten, writes := 0, 0, 0
	var repos []forge.Repo
	originals := map[string]map[string]string{}
	for i, h := range hostileReceipts {
		files := gitopsFiles(t)
		h.edit(files)
		if _, err := repoconfig.Parse(repoconfig.Path, []byte(files[configPath])); err != nil && strings.Contains(err.Error(), "receipts.dir") {
			refusedByCheck++
		} else {
			t.Errorf("%s: the config check says %v, want a refusal naming receipts.dir", h.name, err)
		}
		name := fmt.Sprintf("receipts-%02d", i)
		repos = append(repos, e.createRepo(name, files))
		originals[name] = files
	}
	a := e.adapter(nil)
	src := &staticSource{}
	src.set(replicas(usEastNode, 4, e.clock.Now()))
	b := e.newBot(a, src, forge.CommitGit)
	e.hub.Requests().Reset()
	for range 2 {
		e.cycle(b)
		e.clock.Advance(time.Minute)
	}
	for _, r := range e.hub.Requests().All() {
		if isWrite(r) && strings.Contains(r.Path, "/receipts-") {
			writes++
			t.Errorf("a write to a refused repository: %s %s", r.Method, r.Path)
		}
	}
	auditor := e.person("auditor")
	for _, r := range repos {
		for p, want := range originals[r.Name] {
			if strings.HasPrefix(p, "envs/prod-eu-west") {
				continue
			}
			fc, _, _, err := auditor.Repositories.GetContents(e.ctx, owner, r.Name, p, &gh.RepositoryContentGetOptions{Ref: "main"})
			if err != nil {
				overwritten++
				t.Errorf("%s: %s: %v", r.Name, p, err)
				continue
			}
			if got, _ := fc.GetContent(); got != want {
				overwritten++
				t.Errorf("%s: %s was overwritten", r.Name, p)
			}
		}
	}
	report(t, "17", "receipts-stay-in-their-folder", "guarded_files_overwritten", overwritten, "writes_to_hostile_repositories", writes,
		"configs_refused_by_check", fmt.Sprintf("%d/%d", refusedByCheck, len(hostileReceipts)))
}
