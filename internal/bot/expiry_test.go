package bot

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/backflow-dev/backflow/internal/forge"
	"github.com/backflow-dev/backflow/internal/observe"
)

// TestHubBreakGlassRestart: a temporary acceptance over real HTTP and git,
// with the bot restarted between every cycle. What is due is read from
// the merged receipt on main, so a new process opens the restoring pull
// request (merged pre-authorized, replicaCount back at 3), and the next
// new process opens nothing: the restoring receipt replaced the expired
// one.
func TestHubBreakGlassRestart(t *testing.T) {
	e := newHubEnv(t, forge.CommitGit, func(f map[string]string) {
		p := ".github/reverse-reconcile-policy.yaml"
		f[p] = strings.Replace(
			f[p],
			"          autoMerge: true\n",
			"          autoMerge: true\n          acceptFor: 30s\n",
			1,
		)
	})
	restart := func() {
		t.Helper()
		b, err := New(Options{Forge: e.adapter, Sources: []Source{e.src}, Now: e.clock.Now, BotUserID: 4242,
			CommitMethod: forge.CommitGit, CommitKey: hubCommitKey, Logger: slog.New(slog.DiscardHandler),
			Renderer: renderCharts})
		if err != nil {
			t.Fatal(err)
		}
		e.bot = b
	}
	e.src.Result.Observations = []observe.Observation{replicas(4, 0)}
	e.cycle()
	if prs := e.pulls(); len(prs) != 1 || !prs[0].Merged {
		t.Fatalf("the acceptance: %+v", prs)
	}
	if v := e.file("main", valuesEast); !strings.Contains(v, "replicaCount: 4") ||
		!strings.Contains(v, "| backflow: accepted until ") {
		t.Fatalf("the values line does not say the expiry:\n%s", v)
	}
	// Live stays at the accepted 4, which desired now holds.
	e.src.Result.Observations = []observe.Observation{withField(replicas(4, 0))}
	restart()
	rep, _, _ := e.cycle()
	if prs := e.pulls(); len(prs) != 1 {
		t.Fatalf("restored before the expiry: %+v", prs)
	}
	if x := rep.Repos[0].Expiries; len(x) != 1 || x[0].State != "in-force" {
		t.Fatalf("expiries before the term: %+v", x)
	}
	e.clock.Advance(31 * time.Second)
	restart()
	rep, _, _ = e.cycle()
	prs := e.pulls()
	if len(prs) != 2 {
		t.Fatalf("want the restoring pull request after the term, got %+v\n%s", prs, rep.Text())
	}
	restore := prs[0]
	if restore.Number == 1 {
		restore = prs[1]
	}
	if !restore.Merged || !strings.Contains(restore.Title, "replica.replicaCount 4 -> 3") {
		t.Errorf("restoring pull request %q merged=%t", restore.Title, restore.Merged)
	}
	if v := e.file("main", valuesEast); !strings.Contains(
		v,
		"replicaCount: 3 # absorbs read load; scaled live during incidents\n",
	) {
		t.Errorf("main after the restoration:\n%s", v)
	}
	if x := rep.Repos[0].Expiries; len(x) != 1 || x[0].State != "due" || x[0].WriteBack != branchEast {
		t.Errorf("expiries at the term: %+v", x)
	}
	receiptFile := e.file("main", ".backflow/receipts/prod-us-east/redis/redis_StatefulSet.apps.v1_redis-replicas.yaml")
	if !strings.Contains(receiptFile, "expired:\n") || strings.Contains(receiptFile, "\n  expiry:\n") {
		t.Errorf("the receipt on main is not the restoring one:\n%s", receiptFile)
	}
	verifyWithPolicy(t, []byte(e.file("main", ".github/reverse-reconcile-policy.yaml")), []byte(receiptFile))
	// A new process later: nothing is due, nothing is written.
	e.clock.Advance(time.Minute)
	restart()
	rep, counts, routes := e.cycle()
	if n := len(e.pulls()); n != 2 || counts.Writes != 0 {
		t.Errorf("the expiry fired again: %d pull requests, %d writes (%v)", n, counts.Writes, routes)
	}
	if x := rep.Repos[0].Expiries; len(x) != 0 {
		t.Errorf("expiries after the restoration: %+v", x)
	}
}
