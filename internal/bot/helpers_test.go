package bot

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/backflow-dev/backflow/internal/forge"
	"github.com/backflow-dev/backflow/internal/forge/forgetest"
	"github.com/backflow-dev/backflow/internal/localhub"
	"github.com/backflow-dev/backflow/internal/observe"
	"github.com/backflow-dev/backflow/internal/render"
	"github.com/backflow-dev/backflow/internal/witness"
)

// renderCharts is the render witness the tests plan with, as internal/app
// wires it: the Helm SDK reading the chart through the bot's files.
func renderCharts(ctx context.Context, files ChartFiles) witness.Renderer {
	return render.NewUnits(ctx, files, nil, render.Bounds{})
}

const (
	testRepo    = "acme/gitops"
	usEast      = "prod-us-east"
	usEastNode  = "prod-us-east-1"
	branchEast  = "backflow/prod-us-east/redis"
	valuesEast  = "envs/prod-us-east/redis/values.yaml"
	replicasKey = "apps/v1|StatefulSet|redis|redis-replicas"
)

var t0 = time.Date(2026, 6, 18, 12, 0, 0, 0, time.UTC)

// gitopsFiles is the test GitOps repository, by path.
func gitopsFiles(t *testing.T) map[string]string {
	t.Helper()
	return forgetest.ReadFiles(t, filepath.Join("testdata", "gitops"))
}

// readLog wraps a Forge and records the commit of every file read, so a
// test can assert that configuration is read from the default branch only.
type readLog struct {
	Forge
	mu    sync.Mutex
	reads []string // "sha path"
}

func (r *readLog) ReadFile(ctx context.Context, repo forge.Repo, sha, p string) ([]byte, error) {
	r.mu.Lock()
	r.reads = append(r.reads, sha+" "+p)
	r.mu.Unlock()
	return r.Forge.ReadFile(ctx, repo, sha, p)
}

// fixture is the local hub with the test repository, a clock, a source the
// test fills and a bot whose writes are recorded.
type fixture struct {
	t     *testing.T
	hub   *testHub
	clock *localhub.FakeClock
	src   *staticSource
	bot   *Bot
	reads *readLog
	repo  forge.Repo
}

func newFixture(t *testing.T, mutate func(files map[string]string), opts ...func(*Options)) *fixture {
	t.Helper()
	files := gitopsFiles(t)
	if mutate != nil {
		mutate(files)
	}
	c := localhub.NewFakeClock(t0.Add(5 * time.Minute))
	hub := newTestHub(t, c)
	repo := hub.AddRepo(testRepo, files)
	fx := &fixture{t: t, hub: hub, clock: c, src: &staticSource{Label: "test"}, repo: repo}
	fx.reads = &readLog{Forge: hub}
	o := Options{Forge: fx.reads, Sources: []Source{fx.src}, Now: c.Now, BotUserID: 4242, CommitKey: []byte("test commit key"), CommitMethod: forge.CommitAPI, Renderer: renderCharts}
	for _, f := range opts {
		f(&o)
	}
	b, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	fx.bot = b
	return fx
}

// observe replaces what the source serves.
func (fx *fixture) observe(obs ...observe.Observation) {
	fx.src.Result = observe.Result{Observations: obs}
}

// cycle runs one cycle and returns its report and the writes it recorded.
func (fx *fixture) cycle() (*Report, []string) {
	fx.t.Helper()
	fx.hub.Reset()
	fx.reads.mu.Lock()
	fx.reads.reads = nil
	fx.reads.mu.Unlock()
	rep, err := fx.bot.Cycle(context.Background())
	if err != nil {
		fx.t.Fatalf("cycle: %v", err)
	}
	// Configuration, policy and values are read at the default branch's
	// head only, never at a pull request's; the one exception is the
	// whole-diff bound on a head a person pushed, which reads the files
	// the pull request changes at both its ends (never the config or the
	// policy: those are the default branch's).
	bound := false
	for _, rr := range rep.Repos {
		for _, a := range rr.Actions {
			bound = bound || a.Kind == "check" && strings.Contains(a.Detail, "a commit backflow did not make")
		}
	}
	for _, r := range fx.reads.reads {
		sha, path, _ := strings.Cut(r, " ")
		if len(rep.Repos) == 0 || sha != rep.Repos[0].Head && (!bound || strings.HasPrefix(path, ".github/")) {
			fx.t.Errorf("read %s at %s, not at the default branch's head", path, sha)
		}
	}
	for _, rr := range rep.Repos {
		for _, e := range rr.Errors {
			fx.t.Logf("repository error: %s", e)
		}
	}
	return rep, fx.hub.Effects()
}

func (fx *fixture) pulls(state forge.PRState) []forge.PullRequest {
	fx.t.Helper()
	prs, err := fx.hub.ListPullRequests(context.Background(), fx.repo, forge.PullRequestFilter{State: state})
	if err != nil {
		fx.t.Fatal(err)
	}
	return prs
}

func (fx *fixture) onlyPull(state forge.PRState) forge.PullRequest {
	fx.t.Helper()
	prs := fx.pulls(state)
	if len(prs) != 1 {
		fx.t.Fatalf("want one %s pull request, got %d", state, len(prs))
	}
	return prs[0]
}

// pushDefault commits files to the default branch as a person would.
func (fx *fixture) pushDefault(files map[string]string) {
	fx.hub.Push(testRepo, "main", forge.Author{Name: "carol", Email: "carol@example.com"}, "edit values\n", files)
}

// replicas is alice's audit-logged observation of redis-replicas in
// prod-us-east: spec.replicas live (desired 3), at t0 plus offset.
func replicas(live any, offset time.Duration) observe.Observation {
	at := t0.Add(offset)
	return observe.Observation{
		Source: observe.SourceKubernetes, Cluster: usEastNode, ObservedAt: at, Trust: observe.AttributionAuditLog,
		Object: observe.ObjectKey{APIVersion: "apps/v1", Kind: "StatefulSet", Namespace: "redis", Name: "redis-replicas"},
		Change: observe.Change{Actor: "alice", Groups: []string{"sre"}, Attribution: observe.AttributionAuditLog, Claimed: observe.AttributionAuditLog,
			At: at.Add(-time.Minute), Intent: "incident-fix: scale replicas to absorb a load spike"},
		Fields: []observe.Field{{Path: "spec.replicas", Live: live, Desired: 3, HasDesired: true, Manager: "kubectl"}},
	}
}

// withField returns o with its fields replaced.
func withField(o observe.Observation, fields ...observe.Field) observe.Observation {
	o.Fields = fields
	return o
}

func hasEffect(effects []string, substr string) bool {
	return slices.ContainsFunc(effects, func(e string) bool { return strings.Contains(e, substr) })
}
