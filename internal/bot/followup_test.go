package bot

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/backflow-dev/backflow/internal/forge"
	"github.com/backflow-dev/backflow/internal/lifecycle"
	"github.com/backflow-dev/backflow/internal/observe"
	"github.com/backflow-dev/backflow/internal/receipt"
)

// merged opens and auto-merges the seed's write-back (replicas 3 -> 4) and
// returns the merged pull request. The merge happens at the fixture's
// clock, t0+5m.
func merged(t *testing.T, mutate func(map[string]string)) (*fixture, forge.PullRequest) {
	t.Helper()
	fx := newFixture(t, mutate)
	fx.observe(replicas(4, 0))
	if _, effects := fx.cycle(); !hasEffect(effects, "#1:merge:") {
		t.Fatalf("the write-back was not merged: %v", effects)
	}
	pr := fx.onlyPull(forge.StateClosed)
	if !pr.Merged || pr.MergeCommitSHA == "" {
		t.Fatalf("pull request %+v", pr)
	}
	return fx, pr
}

// after returns alice's replicas observation at t0+offset showing fields
// (none: the object matches desired).
func after(offset time.Duration, fields ...observe.Field) observe.Observation {
	o := replicas(4, offset)
	o.Change = observe.Change{Attribution: observe.AttributionUnknown, Claimed: observe.AttributionUnknown}
	o.Fields = append([]observe.Field{}, fields...)
	return o
}

var (
	appliedAt4  = observe.Field{Path: "spec.replicas", Live: 4, Desired: 4, HasDesired: true, Manager: "kustomize-controller"}
	kubectlAt4  = observe.Field{Path: "spec.replicas", Live: 4, Desired: 4, HasDesired: true, Manager: "kubectl"}
	revertedTo3 = observe.Field{Path: "spec.replicas", Live: 3, Desired: 4, HasDesired: true, Manager: "kustomize-controller"}
)

func TestFollowUp(t *testing.T) {
	// The merge is at t0+5m and the default grace period is 10m, so
	// observations from t0+15m on are made after the grace period.
	cases := []struct {
		name, why string
		obs       []observe.Observation
		// want are substrings of the cycle's effects, in order; none means
		// no write at all.
		want     []string
		proven   int
		reverted int
		// comment is a substring of the follow-up's comment, when it makes one.
		comment string
	}{
		{name: "not observed since the merge", why: "the observation from before the merge is no evidence",
			obs: []observe.Observation{replicas(4, 0)}},
		{name: "matches desired within the grace period", why: "the forward apply may not have run yet: wait",
			obs: []observe.Observation{after(6 * time.Minute)}},
		{name: "still the person's write within the grace period", why: "live at 4 by kubectl says nothing about the forward apply yet",
			obs: []observe.Observation{after(6*time.Minute, kubectlAt4)}},
		{name: "different within the grace period", why: "a lagging controller may still apply the merged value: wait",
			obs: []observe.Observation{after(6*time.Minute, revertedTo3)}},
		{name: "written by the forward apply", why: "the GitOps manager wrote 4: positive evidence, no need to wait",
			obs:  []observe.Observation{after(6*time.Minute, appliedAt4)},
			want: []string{"check:backflow/proven:success", "#1:comment", "#1:label:reverse-reconcile:proven"}, proven: 1},
		{name: "matches desired after the grace period", why: "the merged desired state held through the grace period",
			obs:  []observe.Observation{after(16 * time.Minute)},
			want: []string{"check:backflow/proven:success", "#1:comment", "#1:label:reverse-reconcile:proven"}, proven: 1},
		{name: "newest observation decides", why: "an older post-merge observation at 3 is superseded by a newer one at 4",
			obs:  []observe.Observation{after(16*time.Minute, revertedTo3), after(17 * time.Minute)},
			want: []string{"check:backflow/proven:success", "#1:comment", "#1:label:reverse-reconcile:proven"}, proven: 1},
		{name: "different after the grace period", why: "live is still not the accepted value: reverted",
			obs:  []observe.Observation{after(16*time.Minute, revertedTo3)},
			want: []string{"#1:comment", "#1:label:reverse-reconcile:reverted"}, reverted: 1,
			comment: "is live <code>3</code> (last written by kustomize-controller) in prod-us-east-1"},
		{name: "removed after the grace period", why: "a field gone live is not the accepted value: reverted",
			obs:  []observe.Observation{after(16*time.Minute, observe.Field{Path: "spec.replicas", Removed: true, Manager: "kubectl"})},
			want: []string{"#1:comment", "#1:label:reverse-reconcile:reverted"}, reverted: 1,
			comment: "is live absent (last written by kubectl)"},
		{name: "other environment", why: "an observation of the same object in prod-eu-west says nothing of prod-us-east",
			obs: []observe.Observation{func() observe.Observation {
				o := after(16 * time.Minute)
				o.Cluster = "prod-eu-west-1"
				return o
			}()}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fx, pr := merged(t, nil)
			fx.clock.Advance(20 * time.Minute)
			fx.observe(tc.obs...)
			rep, effects := fx.cycle()
			if len(tc.want) == 0 && len(effects) != 0 {
				t.Fatalf("%s: wrote %v", tc.why, effects)
			}
			if !followedInOrder(effects, tc.want) {
				t.Fatalf("%s: effects %v, want in order %v", tc.why, effects, tc.want)
			}
			if p, r := rep.FollowUps(); p != tc.proven || r != tc.reverted {
				t.Errorf("%s: counted proven %d reverted %d, want %d %d", tc.why, p, r, tc.proven, tc.reverted)
			}
			if tc.proven > 0 {
				checkProven(t, fx, pr)
			}
			if tc.comment != "" {
				comments, err := fx.hub.ListComments(context.Background(), fx.repo, pr.Number)
				if err != nil {
					t.Fatal(err)
				}
				if !slices.ContainsFunc(comments, func(c forge.Comment) bool { return strings.Contains(c.Body, tc.comment) }) {
					t.Errorf("%s: no comment says %q: %+v", tc.why, tc.comment, comments)
				}
			}
			// Idempotent: the result label ends the follow-up.
			if _, effects := fx.cycle(); len(effects) != 0 {
				t.Errorf("the next cycle wrote %v", effects)
			}
		})
	}
}

// checkProven asserts that the proven receipt was published as a comment
// and a check run on the merge commit, and verifies.
func checkProven(t *testing.T, fx *fixture, pr forge.PullRequest) {
	t.Helper()
	ctx := context.Background()
	comments, err := fx.hub.ListComments(ctx, fx.repo, pr.Number)
	if err != nil {
		t.Fatal(err)
	}
	var body string
	for _, c := range comments {
		if strings.Contains(c.Body, lifecycle.TagProven) {
			body = c.Body
		}
	}
	doc := ProvenReceipts(body)
	if len(doc) != 1 {
		t.Fatalf("want one proven receipt in the comment, got %d:\n%s", len(doc), body)
	}
	verifyReceipt(t, fx, []byte(doc[0]))
	r, _, err := receipt.Parse("proven.yaml", []byte(doc[0]))
	if err != nil {
		t.Fatal(err)
	}
	if r.Spec.Status != receipt.StatusProven || r.Spec.WriteBack.MergeCommit != pr.MergeCommitSHA {
		t.Errorf("status %s, merge commit %s; want proven at %s", r.Spec.Status, r.Spec.WriteBack.MergeCommit, pr.MergeCommitSHA)
	}
	if slices.ContainsFunc(r.Spec.NotClaimed, func(s string) bool { return strings.HasPrefix(s, "Proposed, not proven") }) {
		t.Errorf("the proven receipt still says it is not proven: %q", r.Spec.NotClaimed)
	}
	runs, err := fx.hub.ListCheckRuns(ctx, fx.repo, pr.MergeCommitSHA, ProvenCheckName)
	if err != nil || len(runs) != 1 || runs[0].Conclusion != forge.ConclusionSuccess || !strings.Contains(runs[0].Text, "status: proven") {
		t.Errorf("check runs on the merge commit: %+v, %v", runs, err)
	}
}

// A proven receipt that the default branch's policy no longer authorizes
// fails closed: an error, and nothing is written.
func TestFollowUpFailsClosedOnPolicy(t *testing.T) {
	fx, _ := merged(t, nil)
	pol, _ := fx.hub.File(testRepo, "main", ".github/reverse-reconcile-policy.yaml")
	fx.pushDefault(map[string]string{".github/reverse-reconcile-policy.yaml": strings.Replace(pol, "role: platform-sre", "role: nobody", 1)})
	fx.clock.Advance(20 * time.Minute)
	fx.observe(after(16 * time.Minute))
	rep, effects := fx.cycle()
	if len(effects) != 0 {
		t.Fatalf("wrote %v", effects)
	}
	if errs := rep.Repos[0].Errors; len(errs) != 1 || !strings.Contains(errs[0].Error(), "fails verification") {
		t.Errorf("errors %q", errs)
	}
}

// A pull request closed without merge, or one a person opened, is never
// followed up.
func TestFollowUpOnlyMergedWriteBacks(t *testing.T) {
	fx := newFixture(t, reviewOnly)
	fx.observe(replicas(4, 0))
	fx.cycle()
	pr := fx.onlyPull(forge.StateOpen)
	fx.hub.closeAsPerson(fx.repo, pr.Number)
	fx.clock.Advance(20 * time.Minute)
	fx.observe(after(16*time.Minute, appliedAt4))
	rep, effects := fx.cycle()
	// The lifecycle deletes the closed pull request's branch; the
	// follow-up adds nothing.
	for _, e := range effects {
		if strings.Contains(e, ":comment") || strings.Contains(e, ":label:") || strings.Contains(e, ":check:") {
			t.Fatalf("followed up a closed pull request: %v", effects)
		}
	}
	if p, r := rep.FollowUps(); p+r != 0 {
		t.Errorf("followed up a closed pull request: %d %d", p, r)
	}
}

// The dry run says what it would do and writes nothing.
func TestFollowUpDryRun(t *testing.T) {
	fx, _ := merged(t, nil)
	fx.bot.opts.DryRun = true
	fx.clock.Advance(20 * time.Minute)
	fx.observe(after(16 * time.Minute))
	rep, effects := fx.cycle()
	if len(effects) != 0 {
		t.Fatalf("wrote %v", effects)
	}
	acts := rep.Repos[0].Actions
	if !slices.ContainsFunc(acts, func(a Action) bool { return a.Kind == ActProven && a.DryRun }) {
		t.Errorf("actions %+v", acts)
	}
	if p, _ := rep.FollowUps(); p != 0 {
		t.Errorf("a dry run counted %d proven", p)
	}
}

func trackingIssue(files map[string]string) {
	files[".github/backflow.yaml"] += "driftReport:\n  trackingIssue: true\n"
}

// bobsImage is an unauthorized change: bob, who holds no role, set the
// master's image.
func bobsImage(offset time.Duration, image string) observe.Observation {
	at := t0.Add(offset)
	return observe.Observation{
		Source: observe.SourceKubernetes, Cluster: usEastNode, ObservedAt: at,
		Object: observe.ObjectKey{APIVersion: "apps/v1", Kind: "StatefulSet", Namespace: "redis", Name: "redis-master"},
		Change: observe.Change{Actor: "bob", Groups: []string{"developers"}, Attribution: observe.AttributionAuditLog, Claimed: observe.AttributionAuditLog, At: at},
		Fields: []observe.Field{{Path: "spec.template.spec.containers[0].image", Live: image, Desired: "redis:7.2", HasDesired: true, Manager: "kubectl"}},
	}
}

// One tracking issue per repository: opened with the first drift, left
// alone while the list is the same, edited in place when it changes,
// closed when the drift is gone and reopened (the same issue) when it
// comes back.
func TestDriftTrackingIssue(t *testing.T) {
	fx := newFixture(t, trackingIssue)
	steps := []struct {
		why   string
		obs   []observe.Observation
		want  []string
		state forge.PRState
		has   []string
	}{
		{why: "first drift opens the issue", obs: []observe.Observation{bobsImage(0, "redis:debug")},
			want: []string{"issue:open"}, state: forge.StateOpen, has: []string{"redis-master", "redis:debug", "bob", "no-role"}},
		{why: "the same drift writes nothing", obs: []observe.Observation{bobsImage(time.Minute, "redis:debug")},
			state: forge.StateOpen},
		{why: "a new live value edits the issue in place", obs: []observe.Observation{bobsImage(2*time.Minute, "redis:latest")},
			want: []string{"issue:edit:body"}, state: forge.StateOpen, has: []string{"redis:latest"}},
		{why: "drift gone closes it", obs: []observe.Observation{withField(bobsImage(3*time.Minute, ""))},
			want: []string{"issue:edit:body,state"}, state: forge.StateClosed, has: []string{"No unauthorized live drift"}},
		{why: "still none writes nothing", obs: []observe.Observation{withField(bobsImage(4*time.Minute, ""))},
			state: forge.StateClosed},
		{why: "drift back reopens the same issue", obs: []observe.Observation{bobsImage(5*time.Minute, "redis:debug")},
			want: []string{"issue:edit:body,state"}, state: forge.StateOpen, has: []string{"redis:debug"}},
	}
	for i, s := range steps {
		fx.clock.Advance(time.Minute)
		fx.observe(s.obs...)
		rep, effects := fx.cycle()
		if len(s.want) == 0 && len(effects) != 0 {
			t.Fatalf("step %d (%s): wrote %v", i, s.why, effects)
		}
		if !followedInOrder(effects, s.want) {
			t.Fatalf("step %d (%s): effects %v, want %v", i, s.why, effects, s.want)
		}
		if hasEffect(effects, ":commit:") || hasEffect(effects, ":open:") {
			t.Fatalf("step %d (%s): drift was written back: %v", i, s.why, effects)
		}
		issues, err := fx.hub.ListIssues(context.Background(), fx.repo, LabelDrift, forge.StateAll)
		if err != nil || len(issues) != 1 {
			t.Fatalf("step %d (%s): want exactly one tracking issue, got %d (%v)", i, s.why, len(issues), err)
		}
		if issues[0].State != s.state {
			t.Errorf("step %d (%s): issue %s, want %s", i, s.why, issues[0].State, s.state)
		}
		for _, h := range s.has {
			if !strings.Contains(issues[0].Body, h) {
				t.Errorf("step %d (%s): issue body lacks %q:\n%s", i, s.why, h, issues[0].Body)
			}
		}
		wantDrift := 0
		if s.state == forge.StateOpen {
			wantDrift = 1
		}
		if n := rep.Drift(); n != wantDrift {
			t.Errorf("step %d (%s): drift count %d, want %d", i, s.why, n, wantDrift)
		}
	}
}

// Without driftReport.trackingIssue, drift is reported and counted but no
// issue is opened.
func TestDriftWithoutTrackingIssue(t *testing.T) {
	fx := newFixture(t, nil)
	fx.observe(bobsImage(0, "redis:debug"))
	rep, effects := fx.cycle()
	if len(effects) != 0 {
		t.Fatalf("wrote %v", effects)
	}
	if rep.Drift() != 1 {
		t.Errorf("drift count %d, want 1", rep.Drift())
	}
}

// followedInOrder reports whether each of want is a substring of an effect, in
// order.
func followedInOrder(effects, want []string) bool {
	i := 0
	for _, e := range effects {
		if i < len(want) && strings.Contains(e, want[i]) {
			i++
		}
	}
	return i == len(want)
}
