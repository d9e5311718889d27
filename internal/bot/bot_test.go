package bot

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/backflow-dev/backflow/internal/forge"
	"github.com/backflow-dev/backflow/internal/lifecycle"
	"github.com/backflow-dev/backflow/internal/observe"
	"github.com/backflow-dev/backflow/internal/policy"
	"github.com/backflow-dev/backflow/internal/receipt"
)

// The seed's incident: alice scales redis-replicas 3 -> 4; one cycle opens
// the pull request, checks the receipt, merges it (pre-authorized) and
// cleans the branch up; the receipt on the default branch verifies.
func TestSeedIncident(t *testing.T) {
	fx := newFixture(t, nil)
	before, _ := fx.hub.File(testRepo, "main", valuesEast)
	fx.observe(replicas(4, 0))
	rep, effects := fx.cycle()

	want := []string{
		"acme/gitops:commit:backflow/prod-us-east/redis:.backflow/receipts/prod-us-east/redis/redis_StatefulSet.apps.v1_redis-replicas.yaml,envs/prod-us-east/redis/values.yaml",
		"acme/gitops:check:backflow/receipt:success",
		"acme/gitops#1:open:backflow/prod-us-east/redis",
		"acme/gitops#1:edit:body", // the marker sealed for the number
		"acme/gitops#1:reviewers:bob,team:platform-sre",
		"acme/gitops#1:label:env:prod-us-east",
		"acme/gitops#1:label:pre-authorized",
		"acme/gitops#1:label:reverse-reconcile",
		"acme/gitops#1:merge:squash",
		"acme/gitops:branch:delete:backflow/prod-us-east/redis",
		"acme/gitops#1:edit:body",
	}
	if !slices.Equal(effects, want) {
		t.Fatalf("effects:\n%s\nwant:\n%s", strings.Join(effects, "\n"), strings.Join(want, "\n"))
	}
	pr := fx.onlyPull(forge.StateClosed)
	if !pr.Merged {
		t.Fatal("the pull request was not merged")
	}
	if want := "reverse-reconcile(prod-us-east): replica.replicaCount 3 -> 4 on redis-replicas"; pr.Title != want {
		t.Errorf("title %q, want %q", pr.Title, want)
	}
	for _, l := range []string{"reverse-reconcile", "env:prod-us-east", "pre-authorized"} {
		if !slices.Contains(pr.Labels, l) {
			t.Errorf("label %s missing: %v", l, pr.Labels)
		}
	}
	after, _ := fx.hub.File(testRepo, "main", valuesEast)
	if d := diffLines(before, after); len(d) != 1 || !strings.Contains(d[0], "replicaCount: 4 # absorbs read load") {
		t.Errorf("values diff: %q", d)
	}
	m, ok := ParseMarker(pr.Body)
	if !ok || len(m.Receipts) != 1 || !m.BranchDeleted {
		t.Fatalf("marker %+v", m)
	}
	data, ok := fx.hub.File(testRepo, "main", m.Receipts[0])
	if !ok {
		t.Fatal("the receipt is not on the default branch")
	}
	verifyReceipt(t, fx, []byte(data))
	for _, r := range fx.reads.reads {
		sha, _, _ := strings.Cut(r, " ")
		if sha != rep.Repos[0].Head {
			t.Errorf("read %s: not at the default branch's head %s", r, rep.Repos[0].Head)
		}
	}
	// The next cycle sees the change merged (desired is 4): nothing to write.
	if _, effects := fx.cycle(); len(effects) != 0 {
		t.Errorf("second cycle wrote: %v", effects)
	}
}

func verifyReceipt(t *testing.T, fx *fixture, data []byte) {
	t.Helper()
	pdata, _ := fx.hub.File(testRepo, "main", ".github/reverse-reconcile-policy.yaml")
	verifyWithPolicy(t, []byte(pdata), data)
}

// verifyWithPolicy verifies a receipt as backflow verify does.
func verifyWithPolicy(t *testing.T, pdata, data []byte) {
	t.Helper()
	pol, err := policy.Parse(".github/reverse-reconcile-policy.yaml", pdata)
	if err != nil {
		t.Fatal(err)
	}
	r, vs, err := receipt.Parse("receipt.yaml", data)
	if err != nil {
		t.Fatal(err)
	}
	vs = append(vs, receipt.Verify(r, pol, ".github/reverse-reconcile-policy.yaml")...)
	if len(vs) > 0 {
		t.Errorf("the receipt does not verify: %v", vs)
	}
}

// diffLines returns the lines of b that differ from a, line by line.
func diffLines(a, b string) []string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	var out []string
	for i := range max(len(al), len(bl)) {
		var x, y string
		if i < len(al) {
			x = al[i]
		}
		if i < len(bl) {
			y = bl[i]
		}
		if x != y {
			out = append(out, y)
		}
	}
	return out
}

// reviewOnly turns auto-merge off in the repo config, so pull requests stay
// open for the lifecycle tests.
func reviewOnly(files map[string]string) {
	files[".github/backflow.yaml"] = strings.Replace(files[".github/backflow.yaml"], "enabled: true", "enabled: false", 1)
}

// An open pull request for the same proposal costs no write, and the idle
// cycle reads only the default branch's head and the pull request list.
func TestIdleCycle(t *testing.T) {
	fx := newFixture(t, reviewOnly)
	fx.observe(replicas(4, 0))
	if _, effects := fx.cycle(); !hasEffect(effects, "#1:open") {
		t.Fatalf("no pull request opened: %v", effects)
	}
	reads, _ := fx.hub.Counts()
	t.Logf("first cycle: %d reads", reads)
	for i := range 3 {
		fx.clock.Advance(5 * time.Minute)
		_, effects := fx.cycle()
		reads, writes := fx.hub.Counts()
		if writes != 0 || len(effects) != 0 {
			t.Fatalf("idle cycle %d wrote %d times: %v", i, writes, effects)
		}
		// Repositories once per cycle, then per repository the head and
		// the pull request list.
		if reads != 3 {
			t.Errorf("idle cycle %d: %d reads, want 3 (repositories, head, pull requests)", i, reads)
		}
	}
	pr := fx.onlyPull(forge.StateOpen)
	if slices.Contains(pr.Labels, LabelPreAuthorized) || pr.AutoMergeEnabled {
		t.Errorf("auto-merge applied with auto-merge off: %v", pr.Labels)
	}
}

// Each lifecycle rule, from an open pull request for replicas 3 -> 4.
func TestLifecycle(t *testing.T) {
	kustomize := observe.Field{Path: "spec.replicas", Live: 3, Desired: 3, HasDesired: true, Manager: "kustomize-controller"}
	kubectlBack := observe.Field{Path: "spec.replicas", Live: 3, Desired: 3, HasDesired: true, Manager: "kubectl"}
	cases := []struct {
		name string
		why  string
		// then changes the world after the pull request was opened.
		then func(fx *fixture)
		// want are substrings of the second cycle's effects, in order; none
		// means no write at all.
		want  []string
		state forge.PRState
		// third says the third cycle must write nothing (each rule acts once).
		check func(t *testing.T, fx *fixture, pr forge.PullRequest)
	}{
		{
			name: "same value", why: "the same fingerprint open: no write request",
			then: func(fx *fixture) { fx.observe(replicas(4, time.Minute)) }, state: forge.StateOpen,
		},
		{
			name: "absent", why: "no observation is not evidence of anything",
			then: func(fx *fixture) { fx.observe() }, state: forge.StateOpen,
		},
		{
			name: "new live value", why: "a new live value rewrites the bot's own branch",
			then: func(fx *fixture) { fx.observe(replicas(5, time.Minute)) },
			want: []string{"commit:backflow/prod-us-east/redis", "check:backflow/receipt:success", "#1:edit:title,body"}, state: forge.StateOpen,
			check: func(t *testing.T, fx *fixture, pr forge.PullRequest) {
				if !strings.Contains(pr.Title, "3 -> 5") {
					t.Errorf("title not updated: %q", pr.Title)
				}
				if v, _ := fx.hub.File(testRepo, branchEast, valuesEast); !strings.Contains(v, "replicaCount: 5") {
					t.Errorf("branch not rewritten:\n%s", v)
				}
			},
		},
		{
			name: "person's commit", why: "a person's commit: comment once, never update the branch",
			then: func(fx *fixture) {
				fx.hub.Push(testRepo, branchEast, forge.Author{Name: "backflow[bot]", Email: "4242+backflow[bot]@users.noreply.github.com"}, "tweak\n", map[string]string{"notes.txt": "mine\n"})
				fx.observe(replicas(5, time.Minute))
			},
			want: []string{"#1:comment", "#1:edit:body"}, state: forge.StateOpen,
			check: func(t *testing.T, fx *fixture, pr forge.PullRequest) {
				if v, _ := fx.hub.File(testRepo, branchEast, "notes.txt"); v != "mine\n" {
					t.Error("the person's commit was overwritten")
				}
			},
		},
		{
			name: "base moved under the values file", why: "the default branch changed the values file: regenerate from the new base",
			then: func(fx *fixture) {
				v, _ := fx.hub.File(testRepo, "main", valuesEast)
				fx.pushDefault(map[string]string{valuesEast: strings.Replace(v, "size: 8Gi", "size: 16Gi", 1)})
			},
			want: []string{"commit:backflow/prod-us-east/redis", "check:backflow/receipt:success", "#1:edit:title,body"}, state: forge.StateOpen,
			check: func(t *testing.T, fx *fixture, pr forge.PullRequest) {
				v, _ := fx.hub.File(testRepo, branchEast, valuesEast)
				if !strings.Contains(v, "size: 16Gi") || !strings.Contains(v, "replicaCount: 4") {
					t.Errorf("branch not regenerated from the new base:\n%s", v)
				}
			},
		},
		{
			name: "base moved elsewhere", why: "a default-branch change outside the values file and policy needs no update",
			then: func(fx *fixture) { fx.pushDefault(map[string]string{"README.md": "hello\n"}) }, state: forge.StateOpen,
		},
		{
			name: "superseded", why: "desired changed to something else on the default branch: close as superseded",
			then: func(fx *fixture) {
				v, _ := fx.hub.File(testRepo, "main", valuesEast)
				fx.pushDefault(map[string]string{valuesEast: strings.Replace(v, "replicaCount: 3", "replicaCount: 6", 1)})
			},
			want: []string{"#1:edit:body", "#1:comment", "#1:close", "branch:delete:backflow/prod-us-east/redis", "#1:edit:body"}, state: forge.StateClosed,
			check: func(t *testing.T, fx *fixture, pr forge.PullRequest) {
				if m, _ := ParseMarker(pr.Body); m.Closed != lifecycle.ClosedSuperseded {
					t.Errorf("closed as %q", m.Closed)
				}
			},
		},
		{
			name: "converged", why: "live observed back at desired (no changed field): close with a comment",
			then: func(fx *fixture) { fx.observe(withField(replicas(4, time.Minute))) },
			want: []string{"#1:edit:body", "#1:comment", "#1:close", "branch:delete:backflow/prod-us-east/redis", "#1:edit:body"}, state: forge.StateClosed,
		},
		{
			name: "undone by a person", why: "live set back to desired by kubectl: the change was undone, close",
			then: func(fx *fixture) { fx.observe(withField(replicas(4, time.Minute), kubectlBack)) },
			want: []string{"#1:edit:body", "#1:comment", "#1:close", "branch:delete", "#1:edit:body"}, state: forge.StateClosed,
		},
		{
			name: "reverted by the forward apply", why: "the GitOps controller reverted it: keep open and say merging restores the fix",
			then: func(fx *fixture) { fx.observe(withField(replicas(4, time.Minute), kustomize)) },
			want: []string{"#1:comment", "#1:edit:body"}, state: forge.StateOpen,
		},
		{
			name: "no longer authorized", why: "the default branch's policy no longer allows it: a failed receipt check, once",
			then: func(fx *fixture) {
				p, _ := fx.hub.File(testRepo, "main", ".github/reverse-reconcile-policy.yaml")
				fx.pushDefault(map[string]string{".github/reverse-reconcile-policy.yaml": strings.Replace(p, "- prod-us-east\n            - prod-eu-west", "- prod-eu-west", 1)})
				fx.observe(replicas(4, time.Minute))
			},
			want: []string{"check:backflow/receipt:failure", "#1:comment", "#1:edit:body"}, state: forge.StateOpen,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fx := newFixture(t, reviewOnly)
			fx.observe(replicas(4, 0))
			if _, effects := fx.cycle(); !hasEffect(effects, "#1:open") {
				t.Fatalf("no pull request opened: %v", effects)
			}
			fx.clock.Advance(5 * time.Minute)
			tc.then(fx)
			_, effects := fx.cycle()
			if !inOrder(effects, tc.want) || (len(tc.want) == 0 && len(effects) > 0) {
				t.Fatalf("%s\neffects:\n%s\nwant in order:\n%s", tc.why, strings.Join(effects, "\n"), strings.Join(tc.want, "\n"))
			}
			prs := fx.pulls(forge.StateAll)
			if len(prs) != 1 || prs[0].State != tc.state {
				t.Fatalf("want one %s pull request, got %+v", tc.state, prs)
			}
			if tc.check != nil {
				tc.check(t, fx, prs[0])
			}
			if _, effects := fx.cycle(); len(effects) > 0 {
				t.Errorf("the rule acted again in the next cycle: %v", effects)
			}
		})
	}
}

// inOrder reports whether each want substring matches an effect, in order.
func inOrder(effects, want []string) bool {
	i := 0
	for _, e := range effects {
		if i < len(want) && strings.Contains(e, want[i]) {
			i++
		}
	}
	return i == len(want)
}

// A pull request a person closed is never reopened for the same value; a
// different live value opens a new one.
func TestClosedIsNeverReopened(t *testing.T) {
	fx := newFixture(t, reviewOnly)
	fx.observe(replicas(4, 0))
	fx.cycle()
	pr := fx.onlyPull(forge.StateOpen)
	fx.hub.closeAsPerson(fx.repo, pr.Number)
	_, effects := fx.cycle()
	if want := []string{"branch:delete:backflow/prod-us-east/redis", "#1:edit:body"}; len(effects) != 2 || !inOrder(effects, want) {
		t.Fatalf("cleanup effects %v, want %v", effects, want)
	}
	for day := range 30 {
		fx.clock.Advance(24 * time.Hour)
		fx.observe(replicas(4, time.Duration(day)*24*time.Hour))
		if _, effects := fx.cycle(); len(effects) > 0 {
			t.Fatalf("day %d: the closed proposal was acted on: %v", day, effects)
		}
	}
	fx.observe(replicas(5, 30*24*time.Hour))
	if _, effects := fx.cycle(); !hasEffect(effects, "#2:open") {
		t.Fatalf("a different value did not open a new pull request: %v", effects)
	}
	// Live goes back to the refused value: #2 is not rewritten into #1's
	// proposal; it no longer matches live and is closed.
	fx.clock.Advance(time.Hour)
	fx.observe(replicas(4, 30*24*time.Hour+time.Hour))
	if _, effects := fx.cycle(); hasEffect(effects, ":commit:") || !hasEffect(effects, "#2:close") {
		t.Fatalf("the refused value came back through another pull request: %v", effects)
	}
	if _, effects := fx.cycle(); len(effects) > 0 {
		t.Fatalf("not converged: %v", effects)
	}
}

// A change the policy authorizes but does not pre-authorize waits for review.
func TestNeedsReview(t *testing.T) {
	fx := newFixture(t, nil)
	o := withField(replicas(nil, 0), observe.Field{Path: "spec.podManagementPolicy", Live: "Parallel", Desired: "OrderedReady", HasDesired: true, Manager: "kubectl"})
	fx.observe(o)
	_, effects := fx.cycle()
	if hasEffect(effects, "merge") || hasEffect(effects, "pre-authorized") || !hasEffect(effects, "#1:open") {
		t.Fatalf("effects: %v", effects)
	}
	pr := fx.onlyPull(forge.StateOpen)
	if !strings.Contains(pr.Body, "needs a review") {
		t.Errorf("body does not say it needs a review:\n%s", pr.Body)
	}
}

// Unauthorized drift is reported and never written back.
func TestDeniedIsReported(t *testing.T) {
	fx := newFixture(t, nil)
	o := replicas(2, 0)
	o.Object.Name = "redis-master"
	fx.observe(o)
	rep, effects := fx.cycle()
	if len(effects) > 0 {
		t.Fatalf("denied drift was written: %v", effects)
	}
	ds := rep.Repos[0].Decisions
	if len(ds) != 1 || ds[0].Outcome != "deny" || len(ds[0].Reasons) == 0 {
		t.Fatalf("decisions %+v", ds)
	}
	if !strings.Contains(rep.Text(), "deny") {
		t.Errorf("summary does not show the denial:\n%s", rep.Text())
	}
}

// A required receipt check that fails blocks the merge.
func TestFailedReceiptCheckBlocksMerge(t *testing.T) {
	fx := newFixture(t, reviewOnly)
	fx.observe(replicas(4, 0))
	fx.cycle()
	p, _ := fx.hub.File(testRepo, "main", ".github/reverse-reconcile-policy.yaml")
	fx.pushDefault(map[string]string{".github/reverse-reconcile-policy.yaml": strings.Replace(p, "- prod-us-east\n            - prod-eu-west", "- prod-eu-west", 1)})
	fx.cycle()
	pr := fx.onlyPull(forge.StateOpen)
	// main requires the receipt check; people's pushes to main happen while
	// it does not (a protected branch refuses them).
	fx.hub.SetRequiredChecks(testRepo, "main", CheckName)
	_, err := fx.hub.Merge(context.Background(), fx.repo, pr.Number, pr.HeadSHA, forge.MergeSquash)
	if !errors.Is(err, forge.ErrNotMergeable) {
		t.Fatalf("merge with a failed receipt check: %v", err)
	}
	// The policy authorizes it again: the branch is regenerated with a
	// green check, once.
	fx.hub.SetRequiredChecks(testRepo, "main")
	fx.pushDefault(map[string]string{".github/reverse-reconcile-policy.yaml": p})
	fx.hub.SetRequiredChecks(testRepo, "main", CheckName)
	if _, effects := fx.cycle(); !inOrder(effects, []string{":commit:", "check:backflow/receipt:success", "#1:edit:title,body"}) {
		t.Fatalf("not regenerated: %v", effects)
	}
	if _, effects := fx.cycle(); len(effects) > 0 {
		t.Fatalf("regenerated again: %v", effects)
	}
	pr = fx.onlyPull(forge.StateOpen)
	if _, err := fx.hub.Merge(context.Background(), fx.repo, pr.Number, pr.HeadSHA, forge.MergeSquash); err != nil {
		t.Fatalf("merge after the policy allowed it again: %v", err)
	}
}

// Dry run reads and describes; it writes nothing.
func TestDryRun(t *testing.T) {
	fx := newFixture(t, nil, func(o *Options) { o.DryRun = true })
	fx.observe(replicas(4, 0))
	rep, effects := fx.cycle()
	if len(effects) > 0 {
		t.Fatalf("dry run wrote: %v", effects)
	}
	acts := rep.Repos[0].Actions
	if len(acts) != 1 || acts[0].Kind != ActOpen || !acts[0].DryRun {
		t.Fatalf("actions %+v", acts)
	}
	if !strings.Contains(rep.Text(), "would open backflow/prod-us-east/redis") {
		t.Errorf("summary:\n%s", rep.Text())
	}
}

// A failure at each step after the push (as a crash would leave it)
// converges on the next cycle: exactly one pull request, merged, no orphan
// branch, and nothing more to do after that.
func TestFailureAtEachStepConverges(t *testing.T) {
	for _, op := range []string{"CreateCheckRun", "CreatePullRequest", "RequestReviewers", "AddLabels", "EnableAutoMerge", "Merge", "DeleteBranch", "UpdatePullRequest"} {
		t.Run(op, func(t *testing.T) {
			fx := newFixture(t, nil)
			fx.observe(replicas(4, 0))
			fx.hub.Fail(op, forge.ErrUnavailable)
			rep, _ := fx.cycle()
			if len(rep.Repos[0].Errors) == 0 {
				t.Fatal("the injected failure was not reported")
			}
			// The error reaches the caller as the forge's sentinel, not
			// as a message.
			if errs := rep.Repos[0].Errors; !errors.Is(errs.Join(), forge.ErrUnavailable) || ErrorClass(errs[len(errs)-1]) != "unavailable" {
				t.Errorf("errors %v lost the sentinel", errs)
			}
			cycles := 1
			for ; cycles < 5; cycles++ {
				if _, effects := fx.cycle(); len(effects) == 0 {
					break
				}
			}
			prs := fx.pulls(forge.StateAll)
			if len(prs) != 1 || !prs[0].Merged {
				t.Fatalf("after %d cycles: %+v", cycles, prs)
			}
			if _, ok := fx.hub.Branches(testRepo)[branchEast]; ok {
				t.Error("orphan branch left behind")
			}
			if m, _ := ParseMarker(prs[0].Body); len(m.Commits) != 1 {
				t.Errorf("commits written: %v", m.Commits)
			}
			t.Logf("converged in %d cycles", cycles)
		})
	}
}

// A branch holding a person's commit and no pull request is left alone.
func TestForeignBranchIsLeftAlone(t *testing.T) {
	fx := newFixture(t, nil)
	fx.hub.Push(testRepo, branchEast, forge.Author{Name: "dave", Email: "dave@example.com"}, "wip\n", map[string]string{"wip.txt": "x\n"})
	fx.observe(replicas(4, 0))
	rep, effects := fx.cycle()
	if len(effects) > 0 {
		t.Fatalf("wrote over a person's branch: %v", effects)
	}
	if acts := rep.Repos[0].Actions; len(acts) != 1 || acts[0].Kind != ActSkip {
		t.Fatalf("actions %+v", acts)
	}
}

// Two processes on the same repository at once converge to one branch and
// one pull request: branch creation is compare-and-swap, and each
// recognises the other's commit by its keyed token.
func TestTwoProcesses(t *testing.T) {
	fx := newFixture(t, reviewOnly)
	fx.observe(replicas(4, 0))
	other, err := New(Options{Forge: fx.hub, Sources: []Source{fx.src}, Now: fx.clock.Now, BotUserID: 4242, CommitKey: []byte("test commit key"), Renderer: renderCharts})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for _, b := range []*Bot{fx.bot, other} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := b.Cycle(context.Background()); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if prs := fx.pulls(forge.StateAll); len(prs) != 1 {
		t.Fatalf("%d pull requests, want 1", len(prs))
	}
	for range 2 {
		if _, effects := fx.cycle(); len(effects) > 0 {
			t.Errorf("not converged: %v", effects)
		}
	}
}

// A rate limit longer than the adapter waits ends the cycle: the remaining
// repositories are not touched and the report says until when.
func TestRateLimitStopsTheCycle(t *testing.T) {
	fx := newFixture(t, nil)
	fx.hub.AddRepo("acme/zz-later", gitopsFiles(t))
	until := t0.Add(time.Hour)
	fx.hub.Fail("ListPullRequests", fmt.Errorf("listing: %w", &forge.RateLimitError{Until: until, Reason: "primary"}))
	fx.observe(replicas(4, 0))
	rep, effects := fx.cycle()
	if len(effects) > 0 {
		t.Fatalf("wrote while rate limited: %v", effects)
	}
	if rl, ok := rep.RateLimited(); !ok || !rl.Until.Equal(until) || !rep.Failed() {
		t.Fatalf("rate limit not reported: %+v", rep)
	}
	if len(rep.Repos) != 2 || !strings.Contains(rep.Repos[1].Skipped, "rate limited") {
		t.Fatalf("the next repository was not skipped: %+v", rep.Repos[1])
	}
}

// Logs carry the repo, unit and pr keys and never the commit key.
func TestLogs(t *testing.T) {
	var buf bytes.Buffer
	key := []byte("s3cret-commit-key")
	fx := newFixture(t, nil, func(o *Options) {
		o.Logger = slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
		o.CommitKey = key
	})
	fx.observe(replicas(4, 0))
	fx.cycle()
	out := buf.String()
	for _, want := range []string{"repo=acme/gitops", "unit=", "pr=1"} {
		if !strings.Contains(out, want) {
			t.Errorf("logs lack %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, string(key)) || strings.Contains(out, hex.EncodeToString(key)) {
		t.Errorf("the commit key reached the logs")
	}
}

// observe-only reports the decisions and writes nothing; paused does
// nothing at all; a repository without a repo config is skipped.
func TestModes(t *testing.T) {
	cases := []struct {
		name, why, skipped string
		mutate             func(map[string]string)
		decisions          int
	}{
		{"observe-only", "decisions are reported, nothing is written", "observe-only", func(f map[string]string) { f[".github/backflow.yaml"] += "mode: observe-only\n" }, 1},
		{"paused", "a paused repository is not planned", "paused", func(f map[string]string) { f[".github/backflow.yaml"] += "paused: true\n" }, 0},
		{"unconfigured", "no repo config, no reconcile", "no .github/backflow.yaml", func(f map[string]string) { delete(f, ".github/backflow.yaml") }, 0},
		{"invalid", "an invalid repo config is reported and nothing is written", "invalid repo config", func(f map[string]string) { f[".github/backflow.yaml"] += "bogus: 1\n" }, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fx := newFixture(t, tc.mutate)
			fx.observe(replicas(4, 0))
			rep, effects := fx.cycle()
			rr := rep.Repos[0]
			if len(effects) > 0 || !strings.Contains(rr.Skipped, tc.skipped) || len(rr.Decisions) != tc.decisions {
				t.Fatalf("%s: effects %v, skipped %q, decisions %d", tc.why, effects, rr.Skipped, len(rr.Decisions))
			}
		})
	}
}
