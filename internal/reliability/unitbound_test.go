package reliability

import (
	"bytes"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/backflow-dev/backflow/internal/bot"
	"github.com/backflow-dev/backflow/internal/cli"
	"github.com/backflow-dev/backflow/internal/forge"
	"github.com/backflow-dev/backflow/internal/forge/forgetest"
	"github.com/backflow-dev/backflow/internal/repoconfig"
)

const (
	valuesWest  = "envs/prod-eu-west/redis/values.yaml"
	chartValues = "charts/redis/values.yaml"
)

// Case 34: a receipt authorizes only its own unit's files. The bot's
// genuine prod-us-east write-back (3 -> 4) is rewritten so that its receipt
// names prod-eu-west's values file, where the policy authorizes nothing,
// or the chart's own values.yaml, and that file's replicaCount is 4: both
// are refused by `backflow verify --repo` (exit 1, naming the receipt and
// the file) and by the App's whole-diff check of a person's commit on the
// local hub (the check's text names them); the genuine write-back passes
// both.
func TestCase34ReceiptAuthorizesOnlyItsUnit(t *testing.T) {
	files := gitopsFiles(t)
	reviewOnly(files)
	files[policyPath] = strings.Replace(files[policyPath], "            - prod-us-east\n            - prod-eu-west\n", "            - prod-us-east\n", 1)
	if strings.Contains(files[policyPath], "- prod-eu-west") {
		t.Fatal("the policy still authorizes prod-eu-west")
	}
	files[chartValues] = "# the chart's defaults\nreplica:\n  replicaCount: 3\n"
	e := newHubEnv(t, files)
	a := e.adapter(nil)
	src := &staticSource{}
	b := e.newBot(a, src, forge.CommitGit)
	src.set(replicas(usEastNode, 4, e.clock.Now()))
	e.cycle(b)
	prs := e.pulls(a, e.repo)
	if len(prs) != 1 || prs[0].State != forge.StateOpen {
		t.Fatalf("want one open pull request for review, got %+v", prs)
	}
	// The genuine write-back, as the bot committed it.
	diff, err := a.ChangedFiles(e.ctx, e.repo, "main", prs[0].HeadSHA)
	if err != nil {
		t.Fatal(err)
	}
	genuine := map[string]string{}
	receiptFile := ""
	for _, f := range diff.Files {
		data, err := a.ReadFile(e.ctx, e.repo, prs[0].HeadSHA, f.Path)
		if err != nil {
			t.Fatal(err)
		}
		genuine[f.Path] = string(data)
		if strings.HasPrefix(f.Path, repoconfig.DefaultReceiptsDir+"/") {
			receiptFile = f.Path
		}
	}
	if receiptFile == "" || !strings.Contains(genuine[receiptFile], "valuesFile: "+valuesEast) || !strings.Contains(genuine[valuesEast], "replicaCount: 4") {
		t.Fatalf("the write-back is not the expected one: %v", sortedKeys(genuine))
	}
	// forged points the receipt at target and edits target instead.
	// The other files are as on main, so that each of the person's commits
	// on the hub leaves only its own forgery in the pull request's diff.
	forged := func(target string) map[string]string {
		out := map[string]string{
			receiptFile: strings.ReplaceAll(genuine[receiptFile], valuesEast, target),
			valuesEast:  files[valuesEast], valuesWest: files[valuesWest], chartValues: files[chartValues],
		}
		out[target] = strings.Replace(files[target], "replicaCount: 3", "replicaCount: 4", 1)
		return out
	}
	variants := []struct {
		name, target string
		files        map[string]string
	}{
		{"genuine", "", genuine},
		{"other-environment", valuesWest, forged(valuesWest)},
		{"chart-values", chartValues, forged(chartValues)},
	}

	// `backflow verify --repo` over a checkout of main and each head.
	dir := t.TempDir()
	git(t, dir, "init", "-q", "-b", "main")
	forgetest.WriteFiles(t, dir, files)
	git(t, dir, "add", "-A")
	git(t, dir, "commit", "-q", "-m", "main")
	cliRefused, cliPassed := 0, 0
	for _, v := range variants {
		git(t, dir, "checkout", "-q", "-b", v.name, "main")
		forgetest.WriteFiles(t, dir, v.files)
		git(t, dir, "add", "-A")
		git(t, dir, "commit", "-q", "--allow-empty", "-m", v.name)
		var out, errOut bytes.Buffer
		code := cli.Run([]string{"verify", "--repo", dir, "--base", "main", "--head", v.name}, &out, &errOut)
		t.Logf("verify --repo, %s: exit %d\n%s%s", v.name, code, out.String(), errOut.String())
		switch {
		case v.name == "genuine" && code == 0:
			cliPassed++
		case v.name != "genuine" && code == 1 && namesTheForgery(out.String(), receiptFile, v.target):
			cliRefused++
		default:
			t.Errorf("verify --repo, %s: exit %d\n%s%s", v.name, code, out.String(), errOut.String())
		}
	}

	// The App's check of a person's commit on the branch: the genuine diff
	// again (a person's commit all the same), then each forgery.
	carol := e.person("carol")
	hubRefused, hubPassed := 0, 0
	for _, v := range variants {
		head := e.pushAs(carol, e.repo, branchEast, "main", v.files, "A person's commit: "+v.name+"\n")
		e.cycle(b)
		runs, err := a.ListCheckRuns(e.ctx, e.repo, head, bot.CheckName)
		if err != nil || len(runs) == 0 {
			t.Fatalf("no %s check on %s (%s): %v", bot.CheckName, head, v.name, err)
		}
		run := runs[len(runs)-1]
		t.Logf("hub check, %s: %s\n%s", v.name, run.Title, run.Text)
		switch {
		case v.name == "genuine" && strings.Contains(run.Title, "its diff stays within the receipts"):
			hubPassed++
		case v.name != "genuine" && strings.Contains(run.Title, "not bound by its receipts") && namesTheForgery(run.Text, receiptFile, v.target):
			hubRefused++
		default:
			t.Errorf("hub check, %s: %s\n%s", v.name, run.Title, run.Text)
		}
	}
	if cliRefused != 2 || hubRefused != 2 || cliPassed != 1 || hubPassed != 1 {
		t.Errorf("refused %d of 2 forgeries by verify --repo and %d of 2 by the App's check; the genuine receipt passed %d and %d times, want 1 each",
			cliRefused, hubRefused, cliPassed, hubPassed)
	}
	report(t, "34", "receipt-authorizes-only-its-unit", "forgeries_refused_by_verify_repo", cliRefused, "forgeries_refused_by_app_check", hubRefused,
		"forgeries", len(variants)-1, "genuine_passed_verify_repo", cliPassed, "genuine_passed_app_check", hubPassed)
}

// namesTheForgery reports whether text names the receipt and the file it
// was pointed at, saying it is not its unit's.
func namesTheForgery(text, receiptFile, target string) bool {
	return strings.Contains(text, receiptFile) && strings.Contains(text, "names "+target+", which is not a values file of unit redis in prod-us-east")
}

// git runs git in dir with a fixed identity and no user or system config.
func git(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-c", "user.name=carol", "-c", "user.email=carol@example.com", "-c", "commit.gpgsign=false"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}
