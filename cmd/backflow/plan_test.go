package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/backflow-dev/backflow/internal/observe"
	"github.com/backflow-dev/backflow/internal/observe/source"
	"github.com/backflow-dev/backflow/internal/plan"
	"github.com/backflow-dev/backflow/internal/receipt"
)

var updatePlan = flag.Bool("update", false, "rewrite testdata/plan/*/expected.json and writebacks.txt from the planner's output")

// planNow is the time every scenario is planned at.
const planNow = "2026-06-18T12:05:00Z"

// planScenarios lists testdata/plan/<scenario> folders: repo/ (a GitOps
// checkout), observations/, an optional args file (extra command-line
// arguments, one per line), and the goldens expected.json (the JSON
// contract) and writebacks.txt (each write-back's branch, files as a line
// diff, and receipt paths).
func planScenarios(t *testing.T) []string {
	t.Helper()
	dirs, err := filepath.Glob(filepath.Join("..", "..", "testdata", "plan", "*", "repo"))
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no scenarios under testdata/plan: %v", err)
	}
	for i, d := range dirs {
		dirs[i] = filepath.Dir(d)
	}
	return dirs
}

func scenarioArgs(t *testing.T, dir string) []string {
	t.Helper()
	args := []string{"plan", "--repo", filepath.Join(dir, "repo"), "--observations", filepath.Join(dir, "observations"),
		"--now", planNow, "--format", "json"}
	extra, err := os.ReadFile(filepath.Join(dir, "args"))
	if err == nil {
		for _, l := range strings.Split(string(extra), "\n") {
			if l = strings.TrimSpace(l); l != "" {
				args = append(args, l)
			}
		}
	}
	return args
}

func compareOrUpdate(t *testing.T, path string, got []byte) {
	t.Helper()
	if *updatePlan || os.Getenv("UPDATE_GOLDEN") == "1" {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -run TestPlanScenarios -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs:\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

// TestPlanScenarios runs `backflow plan --format json` on each scenario and
// compares the output and the write-backs with the goldens; every allow's
// receipt must pass `backflow verify`.
func TestPlanScenarios(t *testing.T) {
	for _, dir := range planScenarios(t) {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			code, stdout, stderr := runCLI(t, scenarioArgs(t, dir)...)
			if code != 0 {
				t.Fatalf("exit %d, stderr %s", code, stderr)
			}
			compareOrUpdate(t, filepath.Join(dir, "expected.json"), []byte(stdout))

			if markdownScenarios[filepath.Base(dir)] {
				args := append(scenarioArgs(t, dir), "--format", "markdown")
				code, stdout, stderr := runCLI(t, args...)
				if code != 0 {
					t.Fatalf("markdown: exit %d, stderr %s", code, stderr)
				}
				compareOrUpdate(t, filepath.Join(dir, "expected.md"), []byte(stdout))
			}

			res := planScenario(t, dir)
			compareOrUpdate(t, filepath.Join(dir, "writebacks.txt"), []byte(describeWriteBacks(t, dir, res)))
			verifyReceipts(t, dir, res)
		})
	}
}

// markdownScenarios also have a golden of the Markdown report, expected.md.
var markdownScenarios = map[string]bool{"seed-incident": true, "deny-reasons": true, "grouping": true}

// planScenario plans a scenario through the command's own loading, for the
// parts of the result the JSON contract does not carry.
func planScenario(t *testing.T, dir string) plan.Result {
	t.Helper()
	snap, readErrs, err := loadSnapshot(filepath.Join(dir, "repo"))
	if err != nil {
		t.Fatal(err)
	}
	trust := observe.AttributionAuditLog
	args := scenarioArgs(t, dir)
	if i := slices.Index(args, "--trust"); i >= 0 {
		trust = observe.Attribution(args[i+1])
	}
	obs := source.LoadPath(filepath.Join(dir, "observations"), observe.Options{Ceiling: trust})
	now, _ := time.Parse(time.RFC3339, planNow)
	res := plan.Plan(obs.Observations, obs.Triggers, snap, now)
	res.Errors = append(readErrs, res.Errors...)
	return res
}

// describeWriteBacks writes each write-back as a reviewer sees it: branch,
// auto-merge, each edited file as a line diff against the repository, and
// the receipt files.
func describeWriteBacks(t *testing.T, dir string, res plan.Result) string {
	t.Helper()
	var b strings.Builder
	if len(res.WriteBacks) == 0 {
		b.WriteString("no write-back\n")
	}
	for _, wb := range res.WriteBacks {
		fmt.Fprintf(&b, "branch %s (unit %s, %s) auto-merge %t\n", wb.Branch, wb.Unit, wb.Environment, wb.AutoMerge)
		for _, f := range wb.Files {
			old, err := os.ReadFile(filepath.Join(dir, "repo", filepath.FromSlash(f.Path)))
			if err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(&b, "--- %s\n%s", f.Path, lineDiff(string(old), string(f.Data)))
		}
		for _, r := range wb.Receipts {
			fmt.Fprintf(&b, "receipt %s\n", r.Path)
		}
	}
	return b.String()
}

// lineDiff lists the lines only in a ("-") and only in b ("+"), with their
// line numbers, by a longest common subsequence of lines.
func lineDiff(a, b string) string {
	x, y := strings.SplitAfter(a, "\n"), strings.SplitAfter(b, "\n")
	lcs := make([][]int, len(x)+1)
	for i := range lcs {
		lcs[i] = make([]int, len(y)+1)
	}
	for i := len(x) - 1; i >= 0; i-- {
		for j := len(y) - 1; j >= 0; j-- {
			if x[i] == y[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var out strings.Builder
	i, j := 0, 0
	for i < len(x) || j < len(y) {
		switch {
		case i < len(x) && j < len(y) && x[i] == y[j]:
			i++
			j++
		case i < len(x) && (j == len(y) || lcs[i+1][j] >= lcs[i][j+1]):
			fmt.Fprintf(&out, "-%d: %s\n", i+1, strings.TrimRight(x[i], "\r\n"))
			i++
		default:
			fmt.Fprintf(&out, "+%d: %s\n", j+1, strings.TrimRight(y[j], "\r\n"))
			j++
		}
	}
	return out.String()
}

// verifyReceipts writes every allow's receipt to a temporary folder and runs
// `backflow verify` on them from the repository's root, where the policy's
// path is the policyRef the receipts name; it also checks them in process.
func verifyReceipts(t *testing.T, dir string, res plan.Result) {
	t.Helper()
	var files []string
	tmp := t.TempDir()
	snap, _, err := loadSnapshot(filepath.Join(dir, "repo"))
	if err != nil {
		t.Fatal(err)
	}
	for i, d := range res.Decisions {
		if d.Outcome != plan.Allow {
			if d.Receipt != nil {
				t.Errorf("%s: a %s decision carries a receipt", d.Object, d.Outcome)
			}
			continue
		}
		if vs := receipt.Verify(d.Receipt, snap.Policy, snap.PolicyPath); len(vs) > 0 {
			t.Errorf("%s: receipt does not verify: %v", d.Object, vs)
		}
		data, err := receipt.Marshal(d.Receipt)
		if err != nil {
			t.Fatal(err)
		}
		f := filepath.Join(tmp, fmt.Sprintf("receipt-%d.yaml", i))
		if err := os.WriteFile(f, data, 0o644); err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	if len(files) == 0 {
		return
	}
	repo, err := filepath.Abs(filepath.Join(dir, "repo"))
	if err != nil {
		t.Fatal(err)
	}
	t.Chdir(repo)
	code, stdout, stderr := runCLI(t, append([]string{"verify", "--policy", snap.PolicyPath}, files...)...)
	if code != 0 || stdout != fmt.Sprintf("verified %d receipt(s)\n", len(files)) {
		t.Errorf("backflow verify: exit %d\n%s%s", code, stdout, stderr)
	}
}

// TestPlanSeedIncident is the seed's story end to end: alice (group sre,
// role platform-sre, attribution audit-log) scaled redis-replicas from 3 to
// 4 in prod-us-east; the plan allows it with a one-line values diff and a
// receipt that backflow verify accepts.
func TestPlanSeedIncident(t *testing.T) {
	dir := filepath.Join("..", "..", "testdata", "plan", "seed-incident")
	res := planScenario(t, dir)
	if len(res.Decisions) != 1 || res.Decisions[0].Outcome != plan.Allow {
		t.Fatalf("decisions: %+v", res.Decisions)
	}
	d := res.Decisions[0]
	if d.Actor != "alice" || d.Role != "platform-sre" || d.WriteBack != "backflow/prod-us-east/redis" {
		t.Errorf("actor %q role %q write-back %q", d.Actor, d.Role, d.WriteBack)
	}
	if len(res.WriteBacks) != 1 || len(res.WriteBacks[0].Files) != 1 {
		t.Fatalf("write-backs: %+v", res.WriteBacks)
	}
	f := res.WriteBacks[0].Files[0]
	old, err := os.ReadFile(filepath.Join(dir, "repo", f.Path))
	if err != nil {
		t.Fatal(err)
	}
	diff := lineDiff(string(old), string(f.Data))
	if got := strings.Count(diff, "\n"); got != 2 || !strings.Contains(diff, "replicaCount: 4 # absorbs read load") {
		t.Errorf("want a one-line diff (one line out, one in) keeping the comment, got:\n%s", diff)
	}
	var out map[string]any
	_, stdout, _ := runCLI(t, scenarioArgs(t, dir)...)
	if err := json.Unmarshal([]byte(stdout), &out); err != nil {
		t.Fatal(err)
	}
	ch := out["decisions"].([]any)[0].(map[string]any)["changes"].([]any)[0].(map[string]any)
	if ch["from"] != float64(3) || ch["to"] != float64(4) {
		t.Errorf("JSON change from %#v to %#v, want the numbers 3 and 4", ch["from"], ch["to"])
	}
	verifyReceipts(t, dir, res)
}

// copyTree copies the scenario folder src to a temporary folder, so a test
// can break one file of it.
func copyTree(t *testing.T, src string) string {
	t.Helper()
	dst := t.TempDir()
	err := filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

func TestPlanExitCodes(t *testing.T) {
	seed := filepath.Join("..", "..", "testdata", "plan", "seed-incident")
	write := func(dir, rel, text string) {
		if err := os.WriteFile(filepath.Join(dir, filepath.FromSlash(rel)), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		name, why string
		// prepare returns the repo and observations folders to plan.
		prepare func(t *testing.T) (repo, obs string)
		extra   []string
		code    int
		// stdout, when set, must appear in the JSON output.
		stdout string
	}{
		{"valid", "the seed's incident plans", func(t *testing.T) (string, string) {
			return filepath.Join(seed, "repo"), filepath.Join(seed, "observations")
		}, nil, 0, `"outcome": "allow"`},
		{"bad format", "an unknown --format is a usage error", func(t *testing.T) (string, string) {
			return filepath.Join(seed, "repo"), filepath.Join(seed, "observations")
		}, []string{"--format", "yaml"}, 2, ""},
		{"bad trust", "--trust takes an attribution level", func(t *testing.T) (string, string) {
			return filepath.Join(seed, "repo"), filepath.Join(seed, "observations")
		}, []string{"--trust", "total"}, 2, ""},
		{"missing observations", "a PATH that does not exist cannot be read", func(t *testing.T) (string, string) {
			return filepath.Join(seed, "repo"), filepath.Join(seed, "no-such-folder")
		}, nil, 2, ""},
		{"no config", "a checkout without .github/backflow.yaml is unreadable", func(t *testing.T) (string, string) {
			return t.TempDir(), filepath.Join(seed, "observations")
		}, nil, 2, ""},
		{"invalid config", "an unknown key in the repo config", func(t *testing.T) (string, string) {
			dir := copyTree(t, seed)
			write(dir, "repo/.github/backflow.yaml", "version: 1\npolicy: .github/reverse-reconcile-policy.yaml\nbogus: true\n")
			return filepath.Join(dir, "repo"), filepath.Join(dir, "observations")
		}, nil, 2, ""},
		{"invalid policy", "a policy whose default is not deny", func(t *testing.T) (string, string) {
			dir := copyTree(t, seed)
			write(dir, "repo/.github/reverse-reconcile-policy.yaml", "apiVersion: backflow.dev/v1alpha1\nkind: ReverseReconcilePolicy\nmetadata: {name: p}\nspec:\n  default: allow\n  rules: []\n")
			return filepath.Join(dir, "repo"), filepath.Join(dir, "observations")
		}, nil, 2, ""},
		{"missing policy", "the policy the config names does not exist", func(t *testing.T) (string, string) {
			dir := copyTree(t, seed)
			if err := os.Remove(filepath.Join(dir, "repo", ".github", "reverse-reconcile-policy.yaml")); err != nil {
				t.Fatal(err)
			}
			return filepath.Join(dir, "repo"), filepath.Join(dir, "observations")
		}, nil, 2, ""},
		{"malformed observation", "a document that does not parse is an error in the output, the others still plan", func(t *testing.T) (string, string) {
			dir := copyTree(t, seed)
			write(dir, "observations/broken.yaml", "apiVersion: backflow.dev/v1alpha1\nkind: ObjectStateObserved\nspec: {cluster: x}\n")
			return filepath.Join(dir, "repo"), filepath.Join(dir, "observations")
		}, nil, 0, `broken.yaml:`},
		{"missing values file", "the unit's values cannot be read: its decision fails closed", func(t *testing.T) (string, string) {
			dir := copyTree(t, seed)
			if err := os.Remove(filepath.Join(dir, "repo", "envs", "prod-us-east", "redis", "values.yaml")); err != nil {
				t.Fatal(err)
			}
			return filepath.Join(dir, "repo"), filepath.Join(dir, "observations")
		}, nil, 0, `"outcome": "deny"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			repo, obs := c.prepare(t)
			args := append([]string{"plan", "--repo", repo, "--observations", obs, "--format", "json"}, c.extra...)
			code, stdout, stderr := runCLI(t, args...)
			if code != c.code || !strings.Contains(stdout, c.stdout) {
				t.Errorf("%s: exit %d (want %d)\nstdout %s\nstderr %s", c.why, code, c.code, stdout, stderr)
			}
			if code == 2 && stderr == "" {
				t.Errorf("%s: exit 2 without a message on stderr", c.why)
			}
		})
	}
}

func TestPlanTableFormat(t *testing.T) {
	seed := filepath.Join("..", "..", "testdata", "plan", "seed-incident")
	code, stdout, _ := runCLI(t, "plan", "--repo", filepath.Join(seed, "repo"), filepath.Join(seed, "observations"))
	if code != 0 || !strings.Contains(stdout, "redis  prod-us-east  apps/v1|StatefulSet|redis|redis-replicas  allow") {
		t.Errorf("exit %d, table:\n%s", code, stdout)
	}
}
