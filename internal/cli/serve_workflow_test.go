package cli

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// workflowStep returns the run script of the step named name.
func workflowStep(t *testing.T, file, name string) string {
	t.Helper()
	wf := readYAML(t, file)
	for _, job := range dig(t, wf, "jobs").(map[string]any) {
		for _, step := range dig(t, job, "steps").([]any) {
			s := step.(map[string]any)
			if s["name"] == name {
				return s["run"].(string)
			}
		}
	}
	t.Fatalf("%s: no step %q", file, name)
	return ""
}

// planReceipt plans obs against the checkout at repo with backflow plan and
// returns the receipt of its one allow decision, as JSON (which is YAML).
func planReceipt(t *testing.T, repo, obs string) []byte {
	t.Helper()
	code, out, errOut := runCLI(t, "plan", "--repo", repo, "--observations", obs, "--format", "json", "--now", "2026-06-18T12:05:00Z")
	if code != 0 {
		t.Fatalf("plan: exit %d: %s", code, errOut)
	}
	var res struct {
		Decisions []struct {
			Outcome string          `json:"outcome"`
			Receipt json.RawMessage `json:"receipt"`
		} `json:"decisions"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil || len(res.Decisions) != 1 || res.Decisions[0].Outcome != "allow" {
		t.Fatalf("plan: want one allow decision, got %s (%v)", out, err)
	}
	return res.Decisions[0].Receipt
}

func serveCopyTree(t *testing.T, from, to string) {
	t.Helper()
	err := filepath.WalkDir(from, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(to, rel), 0o755)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(to, rel), data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

func serveGit(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-c", "user.name=test", "-c", "user.email=test@example.com", "-c", "init.defaultBranch=main", "-c", "commit.gpgsign=false"}, args...)...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// redisObservation is alice's scale of redis-replicas from 3 to 4 in
// prod-us-east-1 (testdata/serve/redis-replicas.yaml), observed at observedAt.
func redisObservation(t *testing.T, observedAt string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "serve", "redis-replicas.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return strings.Replace(string(data), "OBSERVED_AT", observedAt, 1)
}

// workflowVerifyStep is the receipts workflow's step that runs the check.
const workflowVerifyStep = "Verify the pull request's whole diff against its receipts and the base branch's policy"

// TestReceiptsWorkflowUsesTheBasePolicy runs the receipts workflow's verify
// script on a repository with two pull requests: one adding a receipt the
// default branch's policy authorizes (passes), and one that edits the policy
// to authorize its own change and adds the matching receipt (fails, although
// the receipt verifies against the pull request's own policy).
func TestReceiptsWorkflowUsesTheBasePolicy(t *testing.T) {
	script := workflowStep(t, ".github/workflows/receipts.yml", workflowVerifyStep)
	for _, tool := range []string{"git"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed (GitHub's runners have it)", tool)
		}
	}
	tmp := t.TempDir()
	repo := filepath.Join(tmp, "repo")
	serveCopyTree(t, "testdata/serve/gitops", repo)
	const policy = ".github/reverse-reconcile-policy.yaml"

	// The receipt the base policy authorizes: alice scales replicas in prod-us-east.
	obsGood := writeFile(t, tmp, "good.yaml", redisObservation(t, "2026-06-18T12:00:00Z"))
	good := planReceipt(t, repo, obsGood)

	// The self-authorizing one: podManagementPolicy in prod-eu-west, which
	// only a policy edited on the pull request's branch allows.
	evilRepo := filepath.Join(tmp, "evil")
	serveCopyTree(t, repo, evilRepo)
	pdata, err := os.ReadFile(filepath.Join(repo, policy))
	if err != nil {
		t.Fatal(err)
	}
	last := strings.LastIndex(string(pdata), "            - prod-us-east\n")
	if last < 0 {
		t.Fatal("the test policy changed shape")
	}
	edited := string(pdata[:last]) + "            - prod-us-east\n            - prod-eu-west\n" + string(pdata[last+len("            - prod-us-east\n"):])
	writeFile(t, evilRepo, policy, edited)
	obsEvil := writeFile(t, tmp, "evil.yaml", strings.NewReplacer(
		"cluster: prod-us-east-1", "cluster: prod-eu-west-1",
		"{field: spec.replicas, live: 4, desired: 3}", "{field: spec.podManagementPolicy, live: Parallel, desired: OrderedReady}",
	).Replace(redisObservation(t, "2026-06-18T12:00:00Z")))
	evil := planReceipt(t, evilRepo, obsEvil)

	serveGit(t, repo, "init", "-q")
	serveGit(t, repo, "add", "-A")
	serveGit(t, repo, "commit", "-q", "-m", "base")
	serveGit(t, repo, "update-ref", "refs/remotes/origin/main", "HEAD")
	receiptPath := ".backflow/receipts/prod/redis.yaml"
	commitBranch := func(branch string, files map[string]string) string {
		serveGit(t, repo, "checkout", "-q", "-b", branch, "main")
		for p, data := range files {
			if err := os.MkdirAll(filepath.Dir(filepath.Join(repo, p)), 0o755); err != nil {
				t.Fatal(err)
			}
			writeFile(t, repo, p, data)
		}
		serveGit(t, repo, "add", "-A")
		serveGit(t, repo, "commit", "-q", "-m", branch)
		return serveGit(t, repo, "rev-parse", "HEAD")
	}
	goodSHA := commitBranch("good", map[string]string{receiptPath: string(good)})
	evilSHA := commitBranch("evil", map[string]string{receiptPath: string(evil), policy: edited})
	noneSHA := commitBranch("none", map[string]string{"envs/prod-us-east/redis/notes.txt": "no receipt here\n"})
	// The write-back as backflow makes it: the values edit and its receipt.
	const valuesPath = "envs/prod-us-east/redis/values.yaml"
	vdata, err := os.ReadFile(filepath.Join(repo, valuesPath))
	if err != nil {
		t.Fatal(err)
	}
	scaled := strings.Replace(string(vdata), "replicaCount: 3", "replicaCount: 4", 1)
	if scaled == string(vdata) {
		t.Fatal("the test values changed shape")
	}
	writeBackSHA := commitBranch("write-back", map[string]string{receiptPath: string(good), valuesPath: scaled})
	// A person's extra commit on it: a value no receipt claims.
	unclaimed := strings.Replace(scaled, "size: 8Gi", "size: 800Gi", 1)
	if unclaimed == scaled {
		t.Fatal("the test values changed shape")
	}
	unclaimedSHA := commitBranch("unclaimed", map[string]string{receiptPath: string(good), valuesPath: unclaimed})

	// The runner's bin/backflow is this test binary acting as the command.
	runnerTemp := filepath.Join(tmp, "runner")
	if err := os.MkdirAll(filepath.Join(runnerTemp, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	wrapper := "#!/bin/sh\n" + runAsCLI + "=1 exec '" + os.Args[0] + "' \"$@\"\n"
	if err := os.WriteFile(filepath.Join(runnerTemp, "bin", "backflow"), []byte(wrapper), 0o755); err != nil {
		t.Fatal(err)
	}
	run := func(headSHA string) (string, error) {
		work := filepath.Join(runnerTemp, "verify")
		os.RemoveAll(work)
		cmd := exec.Command("bash", "-c", script)
		cmd.Dir = repo
		cmd.Env = append(os.Environ(), "BASE_REF=main", "HEAD_SHA="+headSHA, "REPO_CONFIG=.github/backflow.yaml", "RUNNER_TEMP="+runnerTemp)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}

	for _, tc := range []struct {
		name, sha, want string
		pass            bool
	}{
		{"receipt authorized by the base policy", goodSHA, "the whole diff is within its receipts: 1 receipt(s), 0 changed value path(s)", true},
		{"a write-back: the values edit its receipt claims", writeBackSHA, "the whole diff is within its receipts: 1 receipt(s), 1 changed value path(s), 2 file(s)", true},
		{"an unclaimed value change beside the receipt", unclaimedSHA, valuesPath + ": master.persistence.size is set to 800Gi, but no receipt of this pull request claims that value there", false},
		{"pull request authorizing itself", evilSHA, `environment "prod-eu-west" is not listed`, false}, // the edited policy is never consulted
		{"pull request changing the policy", evilSHA, ".github/reverse-reconcile-policy.yaml: changed, but it is neither a receipt", false},
		{"no receipt changed", noneSHA, "no receipt is added or changed: the pull request claims no authority", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := run(tc.sha)
			if (err == nil) != tc.pass {
				t.Fatalf("passed %v, want %v:\n%s", err == nil, tc.pass, out)
			}
			if !strings.Contains(out, tc.want) {
				t.Errorf("output lacks %q:\n%s", tc.want, out)
			}
		})
	}

	// The self-authorizing receipt does verify against its own branch's
	// policy: only reading the base branch's policy refuses it.
	serveGit(t, repo, "checkout", "-q", "evil")
	writeFile(t, repo, "evil-receipt.yaml", string(evil))
	t.Chdir(repo)
	if code, out, errOut := runCLI(t, "verify", "--policy", policy, "evil-receipt.yaml"); code != 0 {
		t.Errorf("the evil receipt does not verify even against its own policy (%d): %s%s", code, out, errOut)
	}
}
