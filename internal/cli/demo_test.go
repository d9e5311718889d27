package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/backflow-dev/backflow/internal/demo"
	"github.com/backflow-dev/backflow/internal/receipt"
)

// backflow demo --json runs the whole round trip and says so in its
// summary: one pull request, merged, pre-authorized, changing only the
// values file and adding the receipt; bob's change denied and not written
// back; the proven receipt written, verified; an idle cycle that writes
// nothing and costs a few conditional reads.
func TestDemoJSON(t *testing.T) {
	out := t.TempDir()
	code, stdout, stderr := runCLI(t, "demo", "--json", "--out", out)
	if code != 0 {
		t.Fatalf("exit %d, stderr %s", code, stderr)
	}
	var sum demo.Summary
	dec := json.NewDecoder(strings.NewReader(stdout))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&sum); err != nil {
		t.Fatalf("the summary is not the documented JSON: %v\n%s", err, stdout)
	}

	if len(sum.PullRequests) != 1 {
		t.Fatalf("want one pull request, got %d", len(sum.PullRequests))
	}
	pr := sum.PullRequests[0]
	if pr.Number != 1 || !pr.Merged || len(pr.MergeCommit) != 40 {
		t.Errorf("pull request %d merged=%t at %q", pr.Number, pr.Merged, pr.MergeCommit)
	}
	if want := "reverse-reconcile(prod-us-east): replica.replicaCount 3 -> 4 on redis-replicas"; pr.Title != want {
		t.Errorf("title %q, want %q", pr.Title, want)
	}
	if want := sum.HubURL + "/acme/gitops/pull/1"; pr.URL != want || !strings.HasPrefix(sum.HubURL, "http://127.0.0.1:") {
		t.Errorf("url %q, want %q on loopback", pr.URL, want)
	}
	if want := []string{"env:prod-us-east", "pre-authorized", "reverse-reconcile", "reverse-reconcile:proven"}; !slices.Equal(pr.Labels, want) {
		t.Errorf("labels %v, want %v", pr.Labels, want)
	}
	wantFiles := []string{".backflow/receipts/prod-us-east/redis/redis_StatefulSet.apps.v1_redis-replicas.yaml", "envs/prod-us-east/redis/values.yaml"}
	if !slices.Equal(pr.Files, wantFiles) {
		t.Errorf("files %v, want %v", pr.Files, wantFiles)
	}
	wantDiff := []string{
		"-  replicaCount: 3 # absorbs read load; scaled live during incidents",
		"+  replicaCount: 4 # absorbs read load; scaled live during incidents",
	}
	if !slices.Equal(pr.Diff, wantDiff) {
		t.Errorf("diff %q, want the one line %q", pr.Diff, wantDiff)
	}
	if pr.Checks["backflow/receipt"] != "success" || pr.Checks["backflow/proven"] != "success" {
		t.Errorf("checks %v", pr.Checks)
	}

	if len(sum.Denied) != 1 {
		t.Fatalf("want bob's change denied, got %+v", sum.Denied)
	}
	d := sum.Denied[0]
	if d.Object.String() != "apps/v1|StatefulSet|redis|redis-master" || d.Environment != "prod-us-east" ||
		!slices.Equal(d.Fields, []string{"spec.template.spec.containers[0].image"}) || d.WrittenBack {
		t.Errorf("denied %+v", d)
	}
	if len(d.Reasons) == 0 || !strings.HasPrefix(d.Reasons[0], "no-role: bob ") {
		t.Errorf("reasons %q: want bob's missing role first", d.Reasons)
	}

	if len(sum.Receipts) != 1 {
		t.Fatalf("want one proven receipt, got %+v", sum.Receipts)
	}
	rc := sum.Receipts[0]
	if rc.Status != "proven" || !rc.Verified || rc.MergeCommit != pr.MergeCommit || filepath.Dir(rc.Path) != out {
		t.Errorf("receipt %+v (merge commit %s, out %s)", rc, pr.MergeCommit, out)
	}
	// The file is there and says what the summary says.
	r, _, err := receipt.Load(rc.Path)
	if err != nil {
		t.Fatal(err)
	}
	if r.Spec.Status != receipt.StatusProven || r.Spec.WriteBack.MergeCommit != pr.MergeCommit || r.Spec.Trigger.Actor != "alice" {
		t.Errorf("receipt file: status %s, merge commit %s, actor %s", r.Spec.Status, r.Spec.WriteBack.MergeCommit, r.Spec.Trigger.Actor)
	}
	// The sample's units name the real redis chart: the receipt carries the
	// render witness, which changed exactly the accepted field.
	if rs := r.Spec.Render; rs == nil || rs.Chart != "redis" || len(rs.ChangedFields) != 1 || rs.ChangedFields[0].Field != "spec.replicas" ||
		rs.ChangedFields[0].After.V != 4 || r.Spec.RoundTrip.RenderedAfterMatchesObserved == nil || !*r.Spec.RoundTrip.RenderedAfterMatchesObserved {
		t.Errorf("receipt file: render section %+v", rs)
	}

	live := map[string]any{}
	for _, f := range sum.ForwardApply {
		live[f.Object+" "+f.Field] = f.Live
	}
	if live["apps/v1|StatefulSet|redis|redis-replicas spec.replicas"] != float64(4) {
		t.Errorf("after the forward apply, replicas are %v, want 4", live["apps/v1|StatefulSet|redis|redis-replicas spec.replicas"])
	}
	if img := live["apps/v1|StatefulSet|redis|redis-master spec.template.spec.containers[0].image"]; img != "docker.io/bitnami/redis:7.4.2-debian-12-r0" {
		t.Errorf("bob's image survived the forward apply: %v", img)
	}
	if sum.DriftIssue == nil || sum.DriftIssue.State != "closed" {
		t.Errorf("drift issue %+v: want opened for bob's change, closed once it was reverted", sum.DriftIssue)
	}

	// The kustomize unit beside the Helm one: alice's scale of the shop's
	// cache written into the overlay's replicas: entry, merged, kept by the
	// forward apply of the build, and proven.
	k := sum.Kustomize
	if k == nil {
		t.Fatal("the summary has no kustomize unit")
	}
	kp := k.PullRequest
	if kp.Number != 3 || !kp.Merged || kp.Title != "reverse-reconcile(prod-us-east): spec.replicas 3 -> 4 on web-cache" {
		t.Errorf("kustomize pull request #%d merged=%t %q", kp.Number, kp.Merged, kp.Title)
	}
	wantFiles = []string{".backflow/receipts/prod-us-east/shop/shop_StatefulSet.apps.v1_web-cache.yaml", "apps/shop/overlays/prod-us-east/kustomization.yaml"}
	if !slices.Equal(kp.Files, wantFiles) {
		t.Errorf("kustomize files %v, want %v", kp.Files, wantFiles)
	}
	if want := []string{"-    count: 3", "+    count: 4"}; !slices.Equal(kp.Diff, want) {
		t.Errorf("kustomize diff %q, want %q", kp.Diff, want)
	}
	if kp.Checks["backflow/receipt"] != "success" || kp.Checks["backflow/proven"] != "success" {
		t.Errorf("kustomize checks %v", kp.Checks)
	}
	if len(k.Receipts) != 1 || k.Receipts[0].Status != "proven" || !k.Receipts[0].Verified || k.Receipts[0].MergeCommit != kp.MergeCommit {
		t.Errorf("kustomize receipts %+v", k.Receipts)
	} else if data, err := os.ReadFile(k.Receipts[0].Path); err != nil {
		t.Error(err)
	} else {
		for _, want := range []string{"writtenFile: apps/shop/overlays/prod-us-east/kustomization.yaml", "writtenPath: replicas[1].count",
			"renderer: sigs.k8s.io/kustomize/api v0.21.2 (krusty)"} {
			if !strings.Contains(string(data), want) {
				t.Errorf("the kustomize unit's proven receipt lacks %q:\n%s", want, data)
			}
		}
	}
	if f := k.ForwardApply; f.Object != "apps/v1|StatefulSet|shop|web-cache" || f.Live != float64(4) {
		t.Errorf("kustomize forward apply %+v: want web-cache at 4", f)
	}

	q := sum.Requests
	if q.FirstCycle < 10 || q.FollowUpCycle == 0 {
		t.Errorf("requests %+v: the writing cycles cannot be this cheap", q)
	}
	// The idle cycle: the App's installations and repositories, then per
	// repository its head, pull requests and drift issue, each a
	// conditional read.
	if q.IdleCycle > 5 || q.IdleWrites != 0 || q.IdleNotModified != q.IdleCycle {
		t.Errorf("idle cycle: %d requests, %d writes, %d not modified (%v)", q.IdleCycle, q.IdleWrites, q.IdleNotModified, q.IdleRoutes)
	}
	t.Logf("requests: first cycle %d, follow-up %d, idle %d; %.2fs", q.FirstCycle, q.FollowUpCycle, q.IdleCycle, sum.Seconds)
}

// Without --json the steps are shown, in order.
func TestDemoNarration(t *testing.T) {
	code, stdout, stderr := runCLI(t, "demo", "--out", t.TempDir())
	if code != 0 {
		t.Fatalf("exit %d, stderr %s", code, stderr)
	}
	steps := []string{
		"1. The GitOps repository",
		"alice (group sre) scales redis-replicas 3 -> 4",
		"deny  prod-us-east/redis redis-master",
		"allow prod-us-east/redis redis-replicas: spec.replicas 3 -> 4 (pre-authorized: auto-merge)",
		"pull request #1: reverse-reconcile(prod-us-east): replica.replicaCount 3 -> 4 on redis-replicas",
		"+  replicaCount: 4",
		"check backflow/receipt on the head",
		"|   status: proposed",
		"merged into main as",
		"redis-replicas spec.replicas stays 4",
		"proven backflow/prod-us-east/redis #1",
		"status proven",
		"writes: 0",
		"8. A kustomize unit beside the Helm one",
		"alice (group sre) scales web-cache 3 -> 4",
		"allow prod-us-east/shop web-cache: spec.replicas 3 -> 4 (pre-authorized: auto-merge)",
		"diff of the overlay:",
		"+    count: 4",
		"writtenPath: replicas[1].count",
		"web-cache spec.replicas stays 4",
		"proven backflow/prod-us-east/shop #3",
	}
	rest := stdout
	for _, s := range steps {
		i := strings.Index(rest, s)
		if i < 0 {
			t.Fatalf("step %q missing or out of order in:\n%s", s, stdout)
		}
		rest = rest[i+len(s):]
	}
}

// --out names the folder; one that cannot be created is an error (exit 2).
func TestDemoOutUnwritable(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := runCLI(t, "demo", "--json", "--out", filepath.Join(file, "sub"))
	if code != 2 || !strings.Contains(stderr, "output folder") {
		t.Errorf("exit %d, stderr %q", code, stderr)
	}
}
