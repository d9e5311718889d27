package plan_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/backflow-dev/backflow/internal/kustomize/builder"
	"github.com/backflow-dev/backflow/internal/observe"
	"github.com/backflow-dev/backflow/internal/observe/source"
	"github.com/backflow-dev/backflow/internal/plan"
	"github.com/backflow-dev/backflow/internal/receipt"
	"github.com/backflow-dev/backflow/internal/repoconfig"
)

var update = flag.Bool("update", false, "rewrite testdata/scenarios/*/expected.json, expected.md and writebacks.txt from the planner's output")

// scenarioNow is the time every scenario is planned at.
const scenarioNow = "2026-06-18T12:05:00Z"

// markdownScenarios also have a golden of the Markdown report, expected.md.
var markdownScenarios = map[string]bool{"seed-incident": true, "deny-reasons": true, "grouping": true}

// scenarios lists testdata/scenarios/<scenario> folders: repo/ (a GitOps
// checkout), observations/, an optional args file (the extra command-line
// arguments of backflow plan, one per line: --trust LEVEL), an optional
// audit.jsonl (an audit log every observation is joined with), an optional
// voided file (the expiries already said void), and the goldens
// expected.json (the JSON contract), expected.md (some) and writebacks.txt
// (each write-back's branch, files as a line diff, and receipt paths).
func scenarios(t *testing.T) []string {
	t.Helper()
	dirs, err := filepath.Glob(filepath.Join("testdata", "scenarios", "*", "repo"))
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no scenarios under testdata/scenarios: %v", err)
	}
	for i, d := range dirs {
		dirs[i] = filepath.Dir(d)
	}
	return dirs
}

// scenarioTrust is the trust ceiling the scenario's args give, audit-log
// (backflow plan's default) when they give none.
func scenarioTrust(t *testing.T, dir string) observe.Attribution {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "args"))
	if os.IsNotExist(err) {
		return observe.AttributionAuditLog
	}
	if err != nil {
		t.Fatal(err)
	}
	args := strings.Fields(string(data))
	if len(args) != 2 || args[0] != "--trust" {
		t.Fatalf("%s/args: want --trust LEVEL, got %q", dir, args)
	}
	trust, err := observe.ParseAttribution(args[1])
	if err != nil {
		t.Fatal(err)
	}
	return trust
}

// planScenario plans a scenario as backflow plan does: the checkout read
// through the shared snapshot reader, the observations folder at the
// scenario's trust, and every read error ahead of the planner's own.
func planScenario(t *testing.T, dir string) (plan.Result, plan.Snapshot) {
	t.Helper()
	repo := filepath.Join(dir, "repo")
	got, err := plan.ReadSnapshot(func(p string, limit int64) ([]byte, error) { return repoconfig.ReadRepoFile(repo, p, limit) },
		plan.ReadOptions{List: func(dir string) ([]string, error) { return repoconfig.ListRepoDir(repo, dir) }, Kustomizer: &builder.Builder{}})
	if err != nil {
		t.Fatal(err)
	}
	obs := source.LoadPath(filepath.Join(dir, "observations"), observe.Options{Ceiling: scenarioTrust(t, dir)})
	obs.ApplyForgets()
	joinScenarioAudit(t, dir, obs.Observations)
	got.Snapshot.Voided = scenarioVoided(t, dir)
	now, _ := time.Parse(time.RFC3339, scenarioNow)
	res := plan.Plan(obs.Observations, obs.Triggers, got.Snapshot, now)
	res.Notices = obs.Notices
	var errs []string
	for _, e := range append(got.FileErrors, obs.Errors...) {
		errs = append(errs, e.Error())
	}
	res.Errors = append(errs, res.Errors...)
	return res, got.Snapshot
}

// scenarioVoided reads the scenario's voided file, when it has one: the
// temporary acceptances already said void, one "receipt-path expiresAt" a
// line, as the lifecycle reads them from the pull requests' notes.
func scenarioVoided(t *testing.T, dir string) map[string]string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "voided"))
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for line := range strings.Lines(string(data)) {
		f := strings.Fields(line)
		if len(f) != 2 {
			t.Fatalf("%s/voided: want \"receipt-path expiresAt\", got %q", dir, line)
		}
		out[f[0]] = f[1]
	}
	return out
}

// joinScenarioAudit joins each observation with the scenario's audit log,
// audit.jsonl, when it has one, as the bot's Attributing source does.
func joinScenarioAudit(t *testing.T, dir string, obs []observe.Observation) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "audit.jsonl"))
	if os.IsNotExist(err) {
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	audit := observe.ParseAuditEvents(data, "audit.jsonl")
	if len(audit.Errors) != 0 {
		t.Fatalf("%s/audit.jsonl: %v", dir, audit.Errors)
	}
	for i := range obs {
		obs[i] = observe.Attribute(obs[i], audit.Events)
	}
}

func compareOrUpdate(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update || os.Getenv("UPDATE_GOLDEN") == "1" {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -run TestScenarios -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs:\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

// TestScenarios plans each scenario and compares the JSON contract (and the
// Markdown report, where there is a golden of it) and the write-backs with
// the goldens; every allow's receipt must verify against the policy.
func TestScenarios(t *testing.T) {
	for _, dir := range scenarios(t) {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			res, snap := planScenario(t, dir)
			js, err := res.JSON()
			if err != nil {
				t.Fatal(err)
			}
			compareOrUpdate(t, filepath.Join(dir, "expected.json"), js)
			if markdownScenarios[filepath.Base(dir)] {
				md, err := res.Markdown()
				if err != nil {
					t.Fatal(err)
				}
				compareOrUpdate(t, filepath.Join(dir, "expected.md"), md)
			}
			compareOrUpdate(t, filepath.Join(dir, "writebacks.txt"), []byte(describeWriteBacks(t, dir, res)))
			verifyReceipts(t, res, snap)
		})
	}
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

// verifyReceipts checks that only allows carry a receipt, and that each
// verifies against the policy at the path its policyRef names.
func verifyReceipts(t *testing.T, res plan.Result, snap plan.Snapshot) {
	t.Helper()
	for _, d := range res.Decisions {
		if d.Outcome != plan.Allow {
			if d.Receipt != nil {
				t.Errorf("%s: a %s decision carries a receipt", d.Object, d.Outcome)
			}
			continue
		}
		if vs := receipt.Verify(d.Receipt, snap.Policy, snap.PolicyPath); len(vs) > 0 {
			t.Errorf("%s: receipt does not verify: %v", d.Object, vs)
		}
	}
}

// TestSeedIncident is the seed's story end to end: alice (group sre, role
// platform-sre, attribution audit-log) scaled redis-replicas from 3 to 4 in
// prod-us-east; the plan allows it with a one-line values diff and a
// receipt that verifies.
func TestSeedIncident(t *testing.T) {
	dir := filepath.Join("testdata", "scenarios", "seed-incident")
	res, snap := planScenario(t, dir)
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
	js, err := res.JSON()
	if err != nil {
		t.Fatal(err)
	}
	var out map[string]any
	if err := json.Unmarshal(js, &out); err != nil {
		t.Fatal(err)
	}
	ch := out["decisions"].([]any)[0].(map[string]any)["changes"].([]any)[0].(map[string]any)
	if ch["from"] != float64(3) || ch["to"] != float64(4) {
		t.Errorf("JSON change from %#v to %#v, want the numbers 3 and 4", ch["from"], ch["to"])
	}
	verifyReceipts(t, res, snap)
}
