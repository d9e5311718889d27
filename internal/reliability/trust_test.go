package reliability

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	gh "github.com/google/go-github/v62/github"

	"github.com/backflow-dev/backflow/internal/app"
	"github.com/backflow-dev/backflow/internal/bot"
	"github.com/backflow-dev/backflow/internal/forge"
	"github.com/backflow-dev/backflow/internal/observe"
	"github.com/backflow-dev/backflow/internal/observe/source"
	"github.com/backflow-dev/backflow/internal/plan"
	"github.com/backflow-dev/backflow/internal/policy"
	"github.com/backflow-dev/backflow/internal/repoconfig"
)

// readLog wraps a forge and records the commit of every file read.
type readLog struct {
	bot.Forge
	mu    sync.Mutex
	reads []string // "sha path"
}

func (r *readLog) ReadFile(ctx context.Context, repo forge.Repo, sha, p string) ([]byte, error) {
	r.mu.Lock()
	r.reads = append(r.reads, sha+" "+p)
	r.mu.Unlock()
	return r.Forge.ReadFile(ctx, repo, sha, p)
}

// widenedPolicy authorizes developers to accept any replica count, with
// auto-merge: what a pull request from one of them would like the policy to say.
const widenedRule = `    - role: developer
      reason: self-approved
      mayAccept:
        - valuePath: replica.replicaCount
          field: spec.replicas
          objects: ["apps/v1|StatefulSet|redis|redis-replicas"]
          environments: [prod-us-east, prod-eu-west]
          autoMerge: true
`

// mallory is a developer's audit-logged scale of redis-replicas, which the
// default branch's policy does not authorize.
func mallory(at time.Time) observe.Observation {
	o := replicas(usEastNode, 12, at)
	o.Change.Actor, o.Change.Groups = "mallory", []string{"dev"}
	return o
}

// withDesired sets the desired value the observer compared against.
func withDesired(o observe.Observation, desired any) observe.Observation {
	o.Fields = append([]observe.Field(nil), o.Fields...)
	o.Fields[0].Desired = desired
	return o
}

// Case 4: a pull request that edits the repo config and the policy to
// authorize its author's own live change changes nothing: every file the
// cycles read is read at the default branch's head, the change is denied,
// and nothing but backflow's own authorized write-back is merged.
func TestCase04PolicyFromDefaultBranchOnly(t *testing.T) {
	files := gitopsFiles(t)
	e := newHubEnv(t, files)
	dev := e.person("mallory")
	widened := map[string]string{
		policyPath: files[policyPath] + widenedRule,
		configPath: strings.Replace(files[configPath], "roles:\n", "roles:\n  developer:\n    groups: [dev]\n    attribution: [audit-log]\n", 1),
		valuesEast: strings.Replace(files[valuesEast], "replicaCount: 3", "replicaCount: 12", 1),
	}
	e.pushAs(dev, e.repo, "widen-policy", "main", widened, "Let developers scale redis\n")
	evil, _, err := dev.PullRequests.Create(e.ctx, owner, repoName, &gh.NewPullRequest{Title: gh.String("Let developers scale redis"), Head: gh.String("widen-policy"), Base: gh.String("main")})
	if err != nil {
		t.Fatal(err)
	}
	// The same widening pushed to backflow's own branch name.
	e.pushAs(dev, e.repo, branchEU, "main", widened, "Widen the policy on the bot's branch\n")

	a := e.adapter(nil)
	log := &readLog{Forge: a}
	src := &staticSource{}
	b := e.newBot(log, src, forge.CommitGit)
	heads := map[string]bool{}
	mainHead := func() {
		sha, err := a.BranchHead(e.ctx, e.repo, "main")
		if err != nil {
			t.Fatal(err)
		}
		heads[sha] = true
	}
	denied := 0
	for i, obs := range []observe.Observation{
		mallory(e.clock.Now()),
		replicas(usEastNode, 4, e.clock.Now()), // alice's authorized change, merged
		withDesired(mallory(e.clock.Now().Add(time.Minute)), 4),
	} {
		src.set(obs)
		mainHead()
		rep := e.cycle(b)
		mainHead()
		for _, rr := range rep.Repos {
			for _, d := range rr.Decisions {
				switch {
				case obs.Change.Actor == "mallory" && d.Outcome == string(plan.Allow):
					t.Errorf("cycle %d: mallory's change was allowed: %+v", i, d)
				case obs.Change.Actor == "mallory":
					denied++
				}
			}
		}
		e.clock.Advance(time.Minute)
	}
	nonDefault, policyReads := 0, 0
	for _, r := range log.reads {
		sha, p, _ := strings.Cut(r, " ")
		if p == policyPath {
			policyReads++
		}
		if !heads[sha] {
			nonDefault++
			t.Errorf("read %s at %s, not a head of main", p, sha)
		}
	}
	merged, hostileMerged := 0, 0
	for _, pr := range e.pulls(a, e.repo) {
		if !pr.Merged {
			continue
		}
		merged++
		if pr.Number == evil.GetNumber() || !pr.Mine || strings.Contains(pr.Body, "mallory") {
			hostileMerged++
			t.Errorf("#%d merged: %s", pr.Number, pr.Title)
		}
	}
	if merged != 1 {
		t.Errorf("%d pull requests merged, want alice's one", merged)
	}
	if denied == 0 {
		t.Error("mallory's change was never decided")
	}
	report(t, "4", "policy-from-default-branch", "evaluations_reading_non_default_ref", nonDefault, "file_reads", len(log.reads),
		"policy_reads", policyReads, "hostile_merges", hostileMerged, "denials", denied)
}

// claimDoc is a native observation document that claims the audit log.
func claimDoc(at time.Time, actor, groups, extra string) string {
	return fmt.Sprintf(`apiVersion: backflow.dev/v1alpha1
kind: ObjectStateObserved
spec:
  cluster: prod-us-east-1
  observedAt: %q
  object: "apps/v1|StatefulSet|redis|redis-replicas"
  change:
    actor: %s
    groups: %s
    attribution: audit-log
    at: %q
%s  fields:
    - field: spec.replicas
      live: 5
      desired: 3
      manager: kubectl
`, at.UTC().Format(time.RFC3339), actor, groups, at.Add(-time.Minute).UTC().Format(time.RFC3339), extra)
}

// lenient lets platform-sre's changes be accepted at any attribution, so
// that only the ceiling stands between an asserted claim and auto-merge.
func lenient(files map[string]string) {
	files[configPath] = strings.Replace(files[configPath], "attribution: [audit-log]", "attribution: [audit-log, managed-fields, asserted]", 1)
}

// Case 7b: observations that claim attribution: audit-log through a file,
// a URL or a push, whose ceiling is lower, or that name a role directly,
// are never auto-merged and never allowed beyond what the ceiling grants.
// The planner is checked with the strict repo config (audit-log only: no
// allow at all) and a lenient one (every level: allowed for review, never
// auto-merged); the cycle is checked with file and URL sources.
func TestCase07bTrustCeilings(t *testing.T) {
	at := time.Now().UTC().Truncate(time.Second)
	docs := []struct{ name, doc string }{
		{"alice claims the audit log", claimDoc(at, "alice", "[sre]", "")},
		{"the actor is a role's name", claimDoc(at, "platform-sre", "[]", "")},
		{"a group is a role's name", claimDoc(at, "mallory", "[platform-sre]", "")},
		{"the document names a role", claimDoc(at, "mallory", "[dev]", "    role: platform-sre\n")},
	}
	ceilings := []struct {
		source  string
		ceiling observe.Attribution
	}{
		{"file", observe.DefaultCeiling},
		{"URL", observe.AttributionAsserted},
		{"push", observe.AttributionAsserted},
		{"a managed-fields source", observe.AttributionManagedFields},
	}
	files := gitopsFiles(t)
	strictCfg, err := repoconfig.Parse(repoconfig.Path, []byte(files[configPath]))
	if err != nil {
		t.Fatal(err)
	}
	lf := gitopsFiles(t)
	lenient(lf)
	lenientCfg, err := repoconfig.Parse(repoconfig.Path, []byte(lf[configPath]))
	if err != nil {
		t.Fatal(err)
	}
	pol, err := policy.Parse(policyPath, []byte(files[policyPath]))
	if err != nil {
		t.Fatal(err)
	}
	beyond, autoMerges, evaluated, refusedDocs := 0, 0, 0, 0
	for _, c := range ceilings {
		for _, d := range docs {
			res := observe.ParseBytes([]byte(d.doc), observe.Options{Name: c.source, Ceiling: c.ceiling})
			if len(res.Observations) == 0 {
				refusedDocs++
				if !strings.Contains(d.name, "names a role") {
					t.Errorf("%s via %s: refused: %v", d.name, c.source, res.Errors)
				}
				continue
			}
			for _, o := range res.Observations {
				if o.Change.Attribution.Rank() > c.ceiling.Rank() {
					beyond++
					t.Errorf("%s via %s: believed at %s, above the ceiling %s", d.name, c.source, o.Change.Attribution, c.ceiling)
				}
			}
			for _, cfg := range []struct {
				name string
				c    *repoconfig.Config
			}{{"strict", strictCfg}, {"lenient", lenientCfg}} {
				snap := plan.Snapshot{Config: cfg.c, Policy: pol, PolicyPath: policyPath, Files: map[string][]byte{valuesEast: []byte(files[valuesEast])}}
				for _, dec := range plan.Plan(res.Observations, nil, snap, at).Decisions {
					evaluated++
					if dec.Outcome != plan.Allow {
						continue
					}
					if cfg.name == "strict" || d.name != "alice claims the audit log" {
						beyond++
						t.Errorf("%s via %s (%s config): allowed", d.name, c.source, cfg.name)
					}
					if dec.AutoMerge {
						autoMerges++
						t.Errorf("%s via %s (%s config): auto-merge", d.name, c.source, cfg.name)
					}
				}
			}
		}
	}

	// The cycle: a file source and a URL source, both claiming the audit
	// log, on the lenient config with auto-merge on.
	e := newHubEnv(t, lf)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "obs.yaml"), []byte(claimDoc(e.clock.Now(), "alice", "[sre]", "")), 0o644); err != nil {
		t.Fatal(err)
	}
	web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, claimDoc(e.clock.Now(), "alice", "[sre]", ""))
	}))
	t.Cleanup(web.Close)
	a := e.adapter(nil)
	b, err := bot.New(bot.Options{Forge: a, Now: e.clock.Now, Logger: e.log, CommitKey: []byte("k"), Renderer: app.Renderer, Sources: []bot.Source{
		&app.PathSource{Cluster: usEastNode, Path: dir, Ceiling: observe.DefaultCeiling},
		&app.HTTPSource{Cluster: usEastNode, Poller: &source.HTTPSource{URL: web.URL, Ceiling: observe.AttributionAsserted}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		e.cycle(b)
		e.clock.Advance(time.Minute)
	}
	prs := e.pulls(a, e.repo)
	if len(prs) != 1 {
		t.Errorf("%d pull requests, want 1 for review", len(prs))
	}
	for _, pr := range prs {
		if pr.Merged || pr.AutoMergeEnabled || slices.Contains(pr.Labels, bot.LabelPreAuthorized) {
			autoMerges++
			t.Errorf("#%d from an under-trusted source: merged %v, auto-merge %v, labels %v", pr.Number, pr.Merged, pr.AutoMergeEnabled, pr.Labels)
		}
	}
	report(t, "7b", "trust-ceilings", "auto_merges_from_under_trusted_sources", autoMerges, "allowed_beyond_ceiling", beyond,
		"decisions", evaluated, "documents_naming_a_role_refused", refusedDocs, "pull_requests_for_review", len(prs))
}

// FuzzPlanFailClosed feeds arbitrary observation documents, read at the
// trust ceiling of a file, URL or push (asserted), to the planner with the
// test repository's config and policy: whatever a document claims, the
// strict config (platform-sre only on audit-log evidence) allows nothing,
// and the lenient one never auto-merges. A failure is a fail-open result.
func FuzzPlanFailClosed(f *testing.F) {
	at := time.Date(2026, 6, 18, 12, 0, 0, 0, time.UTC)
	f.Add([]byte(claimDoc(at, "alice", "[sre]", "")))
	f.Add([]byte(claimDoc(at, "platform-sre", "[platform-sre]", "")))
	f.Add([]byte(claimDoc(at, "alice", "[sre]", "") + "---\n" + claimDoc(at.Add(time.Minute), "bob", "[sre, admin]", "")))
	files := map[string]string{}
	for k, v := range gitopsFiles(f) {
		files[k] = v
	}
	strictCfg, err := repoconfig.Parse(repoconfig.Path, []byte(files[configPath]))
	if err != nil {
		f.Fatal(err)
	}
	lenient(files)
	lenientCfg, err := repoconfig.Parse(repoconfig.Path, []byte(files[configPath]))
	if err != nil {
		f.Fatal(err)
	}
	pol, err := policy.Parse(policyPath, []byte(files[policyPath]))
	if err != nil {
		f.Fatal(err)
	}
	values := map[string][]byte{valuesEast: []byte(files[valuesEast])}
	f.Fuzz(func(t *testing.T, data []byte) {
		res := observe.ParseBytes(data, observe.Options{Name: "fuzz", Ceiling: observe.AttributionAsserted})
		for _, o := range res.Observations {
			if o.Change.Attribution.Rank() > observe.AttributionAsserted.Rank() {
				t.Fatalf("believed at %s above the ceiling", o.Change.Attribution)
			}
		}
		for _, d := range plan.Plan(res.Observations, res.Triggers, plan.Snapshot{Config: strictCfg, Policy: pol, PolicyPath: policyPath, Files: values}, at).Decisions {
			if d.Outcome == plan.Allow {
				t.Fatalf("fail-open: the strict config allowed %s %+v", d.Object, d.Changes)
			}
		}
		for _, d := range plan.Plan(res.Observations, res.Triggers, plan.Snapshot{Config: lenientCfg, Policy: pol, PolicyPath: policyPath, Files: values}, at).Decisions {
			if d.AutoMerge {
				t.Fatalf("fail-open: an asserted claim qualifies for auto-merge: %s %+v", d.Object, d.Changes)
			}
		}
	})
}
