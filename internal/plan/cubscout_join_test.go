package plan_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/backflow-dev/backflow/internal/observe"
	"github.com/backflow-dev/backflow/internal/observe/source"
	"github.com/backflow-dev/backflow/internal/plan"
	"github.com/backflow-dev/backflow/internal/repoconfig"
)

// cubScoutScenario is the cub-scout contract's scenario: its checkout and
// one of its observation fixtures, read as backflow reads them.
func cubScoutScenario(t *testing.T, fixture string) (plan.Snapshot, observe.Observation) {
	t.Helper()
	dir := filepath.Join("testdata", "scenarios", "cub-scout")
	repo := filepath.Join(dir, "repo")
	got, err := plan.ReadSnapshot(func(p string, limit int64) ([]byte, error) { return repoconfig.ReadRepoFile(repo, p, limit) }, plan.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	obs := source.LoadPath(filepath.Join(dir, "observations", fixture), observe.Options{Ceiling: observe.AttributionAuditLog})
	if len(obs.Errors) != 0 || len(obs.Observations) != 1 {
		t.Fatalf("%s: %d observations, %v", fixture, len(obs.Observations), obs.Errors)
	}
	return got.Snapshot, obs.Observations[0]
}

func planOne(t *testing.T, snap plan.Snapshot, o observe.Observation) (plan.Decision, plan.Result) {
	t.Helper()
	now, _ := time.Parse(time.RFC3339, scenarioNow)
	res := plan.Plan([]observe.Observation{o}, nil, snap, now)
	if len(res.Decisions) != 1 {
		t.Fatalf("want one decision, got %+v", res.Decisions)
	}
	return res.Decisions[0], res
}

func TestCubScoutFloatRenderedFieldWithTheAuditJoin(t *testing.T) {
	snap, o := cubScoutScenario(t, "trace-diff.float-rendered.json")
	data, err := os.ReadFile(filepath.Join("testdata", "scenarios", "cub-scout", "audit.float-rendered.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	audit := observe.ParseAuditEvents(data, "audit.float-rendered.jsonl")
	if len(audit.Errors) != 0 {
		t.Fatal(audit.Errors)
	}
	d, _ := planOne(t, snap, observe.Attribute(o, audit.Events))
	// why: the untouched memory limit (desired 1073741824 printed as
	// 1.073741824e+09, live "1073741824") was a field the join credited to
	// the controller's apply, and alice's seven authorized edits were all
	// denied actor-unknown.
	if d.Outcome != plan.Allow || d.Actor != "alice" || len(d.Changes) != 7 {
		t.Fatalf("got %s by %q, %d changes: %v", d.Outcome, d.Actor, len(d.Changes), d.Reasons)
	}
	for _, c := range d.Changes {
		if strings.Contains(c.Field, "limits.memory") {
			t.Errorf("the untouched memory limit is a change: %+v", c)
		}
	}
}

func TestCubScoutConfigMapStringsAreWritten(t *testing.T) {
	snap, o := cubScoutScenario(t, "trace-diff.configmap-strings.json")
	o.Change = observe.Change{Actor: "alice", Groups: []string{"sre"}, Attribution: observe.AttributionAuditLog, Claimed: observe.AttributionAuditLog}
	d, res := planOne(t, snap, o)
	// why: desired "-" against the values file's "" and "-" was stale for
	// ever; `map[a:c]` was structural and `<nil>` a removal, though a
	// ConfigMap's data holds strings.
	if d.Outcome != plan.Allow || len(res.WriteBacks) != 1 {
		t.Fatalf("got %s: %v", d.Outcome, d.Reasons)
	}
	var edited string
	for _, f := range res.WriteBacks[0].Files {
		edited += string(f.Data)
	}
	for _, want := range []string{`dashDesired: "y"`, `empty: "set-now"`, "mapText: map[a:c]\n", "nilText: <nil>\n"} {
		if !strings.Contains(edited, want) {
			t.Errorf("the values file lacks %s:\n%s", want, edited)
		}
	}
}

func TestCubScoutLiveDashIsAmbiguous(t *testing.T) {
	snap, o := cubScoutScenario(t, "trace-diff.configmap-ambiguous.json")
	o.Change = observe.Change{Actor: "alice", Groups: []string{"sre"}, Attribution: observe.AttributionAuditLog, Claimed: observe.AttributionAuditLog}
	d, _ := planOne(t, snap, o)
	// why: live "" and "-" (printed "-") were planned as removals.
	if d.Outcome != plan.Deny || slices.ContainsFunc(d.Reasons, func(r string) bool { return strings.HasPrefix(r, "field-removed") }) {
		t.Fatalf("got %s: %v", d.Outcome, d.Reasons)
	}
	for _, field := range []string{"data.blank", "data.dash"} {
		if !slices.ContainsFunc(d.Reasons, func(r string) bool {
			return strings.HasPrefix(r, "ambiguous: "+field+": ") && strings.Contains(r, "the Kubernetes watch")
		}) {
			t.Errorf("%s is not named ambiguous with how to settle it: %v", field, d.Reasons)
		}
	}
}
