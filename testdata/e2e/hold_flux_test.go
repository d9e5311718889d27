package e2e

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
)

// stsWatch records every spec.replicas the API server's watch delivers of
// one StatefulSet, with when it arrived. It watches from the version a
// list returns and lists again after an error event (the API server's
// watch cache may answer "too large resource version" for a moment after a
// write).
type stsWatch struct {
	mu   sync.Mutex
	seen []replicaSeen
}

func watchSTS(t *testing.T, c *cluster, name string) *stsWatch {
	t.Helper()
	sw := &stsWatch{}
	watchObject(t, c, stsGVR, namespace, name, sw.add)
	return sw
}

// watchObject calls add with every version of one object the API server's
// watch delivers, from the version a list returns, listing again after an
// error event, until the test ends. It returns once the first list is
// recorded, so a change the test makes next is never dated before it.
func watchObject(t *testing.T, c *cluster, gvr schema.GroupVersionResource, ns, name string, add func(*unstructured.Unstructured)) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ri := c.dynamic(t, userAdmin).Resource(gvr).Namespace(ns)
	done, listed := make(chan struct{}), make(chan struct{})
	sel := metav1.ListOptions{FieldSelector: "metadata.name=" + name}
	go func() {
		defer close(done)
		rv := ""
		for ctx.Err() == nil {
			if rv == "" {
				list, err := ri.List(ctx, sel)
				if err != nil {
					time.Sleep(100 * time.Millisecond)
					continue
				}
				for i := range list.Items {
					add(&list.Items[i])
				}
				rv = list.GetResourceVersion()
				if listed != nil {
					close(listed)
					listed = nil
				}
			}
			opts := sel
			opts.ResourceVersion = rv
			w, err := ri.Watch(ctx, opts)
			if err != nil {
				rv = ""
				continue
			}
			for ev := range w.ResultChan() {
				u, ok := ev.Object.(*unstructured.Unstructured)
				if ev.Type == watch.Error || !ok {
					rv = ""
					break
				}
				if ev.Type == watch.Added || ev.Type == watch.Modified {
					add(u)
					rv = u.GetResourceVersion()
				}
			}
			w.Stop()
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
	select {
	case <-listed:
	case <-done:
	}
}

func (sw *stsWatch) add(u *unstructured.Unstructured) {
	n, _, _ := unstructured.NestedInt64(u.Object, "spec", "replicas")
	_, held := u.GetAnnotations()[holdAnnotation]
	sw.mu.Lock()
	defer sw.mu.Unlock()
	if k := len(sw.seen); k > 0 && sw.seen[k-1].rv == u.GetResourceVersion() {
		return // a list after an error delivers the last version again
	}
	sw.seen = append(sw.seen, replicaSeen{at: time.Now(), replicas: n, rv: u.GetResourceVersion(), held: held})
}

// firstAfter is the first version seen after t that match says yes to.
func (sw *stsWatch) firstAfter(t time.Time, match func(replicaSeen) bool) (replicaSeen, bool) {
	sw.mu.Lock()
	defer sw.mu.Unlock()
	for _, s := range sw.seen {
		if s.at.After(t) && match(s) {
			return s, true
		}
	}
	return replicaSeen{}, false
}

// since are the values seen at or after t.
func (sw *stsWatch) since(t time.Time) []int64 {
	sw.mu.Lock()
	defer sw.mu.Unlock()
	var out []int64
	for _, s := range sw.seen {
		if !s.at.Before(t) {
			out = append(out, s.replicas)
		}
	}
	return out
}

const (
	// holdAnnotation is backflow's sealed record of a hold, and fluxMark
	// kustomize-controller's own hands-off mark beside it.
	holdAnnotation = "backflow.dev/hold"
	fluxMark       = "kustomize.toolkit.fluxcd.io/reconcile"
	// helmMark is helm-controller's: drift detection skips the object.
	helmMark = "helm.toolkit.fluxcd.io/driftDetection"
)

// holdHarness is what the hold tests share: the loopback API server, the
// hub serving a hold repository, Flux's controllers having applied its
// main (revision first), backflow serve watching web-cache with the hold
// enabled (serve, started again from config), and a watch of web-cache.
// With helm, helm-controller releases web-cache from the HelmRelease
// flux-system/web that the Kustomization applies, and the hold's mark is
// helm-controller's.
type holdHarness struct {
	helm   bool
	mark   string
	c      *cluster
	h      *hubClient
	bin    string
	config string
	listen string
	first  string
	serve  *replicaProcess
	sw     *stsWatch
	start  time.Time
}

// startHoldHarness brings the hold's harness up with the repository folder
// repoDir, up to Flux having applied web-cache at 3 and backflow ready.
func startHoldHarness(t *testing.T, repoDir string) *holdHarness {
	t.Helper()
	return startHoldHarnessWith(t, repoDir, false)
}

// startHoldHarnessWith is startHoldHarness, with helm-controller releasing
// web-cache when helm says so.
func startHoldHarnessWith(t *testing.T, repoDir string, helm bool) *holdHarness {
	t.Helper()
	apiserver, bin := binaries(t)
	hh := &holdHarness{helm: helm, mark: fluxMark, bin: bin, start: time.Now()}
	if helm {
		hh.mark = helmMark
	}
	hh.c = startCluster(t, apiserver, "", "")
	hh.listen = fmt.Sprintf("127.0.0.1:%d", freePort(t))
	ep := startHubWith(t, bin, "http://"+hh.listen+"/webhook", repoDir)
	hh.h = newHubClient(t, ep)
	startFluxWith(t, hh.c, helm)
	fluxSync(t, hh.c, hh.h)
	hh.first = awaitApplied(t, hh.c, 3*time.Minute)
	if helm {
		awaitHelmReleased(t, hh.c, 3*time.Minute)
	}
	if n := replicas(t, hh.c, fluxSTS); n != 3 {
		t.Fatalf("Flux applied %d replicas of %s, want 3", n, fluxSTS)
	}
	// backflow's identity may patch the StatefulSets (the hold) and get and
	// patch the Kustomization (its revision, the reconcile request), as the
	// chart's hold.* grants; with helm, get and patch the HelmRelease (the
	// reconcile request) and get the Kustomization that applies it and the
	// HelmChart built from the same GitRepository.
	applier := `[{apiGroups: [kustomize.toolkit.fluxcd.io], resources: [kustomizations], resourceNames: [prod], verbs: [get, patch]}]`
	manager := "kustomize-controller"
	if helm {
		applier = `[{apiGroups: [helm.toolkit.fluxcd.io], resources: [helmreleases], resourceNames: [web], verbs: [get, patch]},
  {apiGroups: [kustomize.toolkit.fluxcd.io], resources: [kustomizations], resourceNames: [prod], verbs: [get]},
  {apiGroups: [source.toolkit.fluxcd.io], resources: [helmcharts], resourceNames: [flux-system-web], verbs: [get]}]`
		manager = "helm-controller"
	}
	rbac := decodeYAML(t, "the hold's RBAC", fmt.Appendf(nil, `apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: backflow-hold, namespace: %[1]s}
rules: [{apiGroups: [apps], resources: [statefulsets], verbs: [patch]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: backflow-hold, namespace: %[1]s}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: backflow-hold}
subjects: [{kind: User, name: %[2]s}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: backflow-applier, namespace: %[3]s}
rules: %[4]s
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: backflow-applier, namespace: %[3]s}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: backflow-applier}
subjects: [{kind: User, name: %[2]s}]
`, namespace, userBackflow, fluxNamespace, applier))
	for _, o := range rbac {
		res := "roles"
		if o.GetKind() == "RoleBinding" {
			res = "rolebindings"
		}
		applyAs(t, hh.c, userAdmin, schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: res}, o)
	}
	base := ep.APIURL
	if !strings.HasSuffix(base, "/") {
		base += "/"
	}
	cfg := fmt.Sprintf(`version: 1
github: {appId: %d, privateKeyFile: %s, baseURL: %s, graphqlURL: %s, gitURL: %s, appSlug: backflow}
repositories: [%s]
gitopsManagers: [%s]
observations:
  prod-us-east-1:
    - kube:
        kubeconfig: %s
        context: %s
        objects: ["apps/v1|StatefulSet|%s|%s"]
audit:
  logFiles: [%s]
hold: {enabled: true}
server:
  listen: %s
  schedule: "@every 3s"
  jitter: 0s
  webhook:
    secretFile: %s
`, ep.AppID, ep.PrivateKeyPath, base, ep.GraphQLURL, ep.GitURL, repoName, manager, hh.c.kubeconfig, userBackflow, namespace, fluxSTS,
		hh.c.auditLog, hh.listen, ep.WebhookSecretPath)
	hh.config = filepath.Join(t.TempDir(), "backflow.yaml")
	if err := os.WriteFile(hh.config, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	hh.serve = hh.startServe(t, "serve")
	hh.sw = watchSTS(t, hh.c, fluxSTS)
	t.Logf("timing: harness start %s (first apply of %s)", time.Since(hh.start).Round(time.Millisecond), hh.first)
	return hh
}

// startServe runs backflow serve with the harness's config as the process
// name (its log name.log beside the config) and waits until it is ready.
func (hh *holdHarness) startServe(t *testing.T, name string) *replicaProcess {
	t.Helper()
	cmd := exec.Command(hh.bin, "serve", "--config", hh.config)
	p := &replicaProcess{name: name, listen: hh.listen, cmd: cmd, log: startProcess(t, filepath.Dir(hh.config), name, cmd)}
	awaitReady(t, hh.listen, name+" ready")
	return p
}

// awaitHeld waits until web-cache carries the hold (the Flux mark and
// backflow's record) and returns when the test saw it.
func (hh *holdHarness) awaitHeld(t *testing.T) time.Time {
	t.Helper()
	var held time.Time
	eventually(t, stepTimeout, "the hold placed on "+fluxSTS, func() error {
		ann := liveStatefulSet(t, hh.c, fluxSTS).GetAnnotations()
		if ann[hh.mark] != "disabled" || ann[holdAnnotation] == "" {
			return fmt.Errorf("annotations %v", ann)
		}
		held = time.Now()
		return nil
	})
	return held
}

// awaitReleased waits until web-cache carries neither backflow's record
// nor the Flux mark, and returns when the test saw it.
func (hh *holdHarness) awaitReleased(t *testing.T, timeout time.Duration, what string) time.Time {
	t.Helper()
	var released time.Time
	eventually(t, timeout, what, func() error {
		ann := liveStatefulSet(t, hh.c, fluxSTS).GetAnnotations()
		_, record := ann[holdAnnotation]
		_, mark := ann[hh.mark]
		if record || mark {
			return fmt.Errorf("still held: %v", ann)
		}
		released = time.Now()
		return nil
	})
	return released
}

// applier is the Kustomization's lastAppliedRevision and the reconcile
// request backflow last made of the applier (the Kustomization, or with
// helm the HelmRelease).
func (hh *holdHarness) applier(t *testing.T) (applied, requested string) {
	t.Helper()
	ks, err := fluxObject(t, hh.c, kustomizationGVR, "prod")
	if err != nil {
		t.Fatal(err)
	}
	applied, _, _ = unstructured.NestedString(ks.Object, "status", "lastAppliedRevision")
	if !hh.helm {
		return applied, ks.GetAnnotations()["reconcile.fluxcd.io/requestedAt"]
	}
	hr, err := fluxObject(t, hh.c, helmReleaseGVR, "web")
	if err != nil {
		t.Fatal(err)
	}
	return applied, hr.GetAnnotations()["reconcile.fluxcd.io/requestedAt"]
}

// reverts counts the 3s among values.
func reverts(values []int64) int {
	n := 0
	for _, v := range values {
		if v == 3 {
			n++
		}
	}
	return n
}

// reviewHoldRepo is a copy of holdrepo whose policy asks for a review of
// web-cache's scale instead of pre-authorizing it: the held change's pull
// request stays open until a person merges or closes it.
func reviewHoldRepo(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "holdrepo")
	if err := os.CopyFS(dir, os.DirFS("holdrepo")); err != nil {
		t.Fatalf("copying holdrepo: %v", err)
	}
	p := filepath.Join(dir, policyRel)
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	review := strings.Replace(string(data), "autoMerge: true", "autoMerge: false", 1)
	if review == string(data) {
		t.Fatalf("%s: no rule with autoMerge: true to make a review of", p)
	}
	if err := os.WriteFile(p, []byte(review), 0o600); err != nil {
		t.Fatal(err)
	}
	return dir
}

// awaitOpenForReview waits for the held change's pull request and checks
// it is open and unmerged: its change needs a review.
// heldForReview starts the hold harness on the review-required copy of
// holdrepo and has alice scale web-cache 3 -> 4: it returns when backflow
// has held the object and opened the pull request that waits for a
// person, with the times of the change and of the hold.
func heldForReview(t *testing.T) (hh *holdHarness, changed, held time.Time, pr *pull) {
	t.Helper()
	hh = startHoldHarness(t, reviewHoldRepo(t))
	patch(t, hh.c, userAlice, fluxSTS, types.MergePatchType, `{"spec":{"replicas":4}}`, "scale")
	changed = time.Now()
	held = hh.awaitHeld(t)
	return hh, changed, held, hh.awaitOpenForReview(t)
}

func (hh *holdHarness) awaitOpenForReview(t *testing.T) *pull {
	t.Helper()
	pr := awaitPull(t, hh.h, fluxSTS, "the held change's pull request opened")
	if pr.State != "open" || pr.MergedAt != nil {
		t.Fatalf("#%d is %s (merged at %v), want open for review", pr.Number, pr.State, pr.MergedAt)
	}
	return pr
}

// TestHoldWithFlux runs the hold against Flux's real kustomize-controller
// reconciling every 5 s with force: alice scales web-cache 3 -> 4, backflow
// holds the object (kustomize.toolkit.fluxcd.io/reconcile: disabled and its
// sealed record) and opens the pull request, which merges itself; from the
// hold on, through the merge and the next apply, the watch never sees 3
// again; once the Kustomization has applied the merge commit, backflow
// releases the hold and asks it to reconcile.
func TestHoldWithFlux(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a kube-apiserver, etcd and Flux's controllers: run it with make e2e")
	}
	hh := startHoldHarness(t, "holdrepo")
	c, sw := hh.c, hh.sw

	patch(t, c, userAlice, fluxSTS, types.MergePatchType, `{"spec":{"replicas":4}}`, "scale")
	changed := time.Now()
	held := hh.awaitHeld(t)
	beforeHold := sw.since(changed)
	t.Logf("FIGURE hold: live change to hold placed in %s; values before the hold %v", held.Sub(changed).Round(time.Millisecond), beforeHold)
	pr := awaitMerged(t, hh.h, fluxSTS, "the held change's pull request merged")
	merged := time.Now()
	// The Kustomization applies the merge; the hold is released then.
	releasedAt := hh.awaitReleased(t, 3*time.Minute, "the hold released after the merge is applied")
	applied, requested := hh.applier(t)
	// Two more intervals: Flux keeps 4.
	time.Sleep(2*fluxInterval + time.Second)
	afterHold := sw.since(held)
	n := reverts(afterHold)
	t.Logf("FIGURE hold: #%d merged %s after the change; released %s after the merge (applied %s, reconcile requested at %q); "+
		"values seen from the hold on %v (%d at 3); whole test %s", pr.Number, merged.Sub(changed).Round(time.Millisecond),
		releasedAt.Sub(merged).Round(time.Millisecond), applied, requested, afterHold, n, time.Since(hh.start).Round(time.Millisecond))
	if n != 0 {
		t.Errorf("why: from the hold on Flux never reverts the accepted change; saw %v", afterHold)
	}
	if applied == hh.first {
		// main changes only by the merge here: a new revision applied is it.
		t.Errorf("the hold was released before the merge was applied (the Kustomization still at %s)", applied)
	}
	if requested == "" {
		t.Error("the Kustomization was not asked to reconcile on release")
	}
	if n := replicas(t, c, fluxSTS); n != 4 {
		t.Errorf("after the release Flux left %d replicas, want the merged 4", n)
	}
}

// TestHoldReleasedOnClose closes the held change's pull request as a
// person would: alice scales web-cache 3 -> 4 under a policy that wants a
// review, backflow holds it and opens the pull request, which a person
// closes unmerged through the hub's API; backflow removes its sealed
// record and the Flux mark, and kustomize-controller reverts web-cache to
// Git's 3 within one interval.
func TestHoldReleasedOnClose(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a kube-apiserver, etcd and Flux's controllers: run it with make e2e")
	}
	hh, changed, held, pr := heldForReview(t)
	c, sw := hh.c, hh.sw
	if err := hh.h.send(http.MethodPatch, fmt.Sprintf("/repos/%s/pulls/%d", repoName, pr.Number), map[string]string{"state": "closed"}, nil); err != nil {
		t.Fatalf("closing #%d: %v", pr.Number, err)
	}
	closed := time.Now()
	whileHeld := sw.since(changed)
	hh.awaitReleased(t, stepTimeout, fmt.Sprintf("the hold released after #%d was closed", pr.Number))
	eventually(t, 2*fluxInterval+5*time.Second, "kustomize-controller reverting "+fluxSTS+" to 3", func() error {
		if n := replicas(t, c, fluxSTS); n != 3 {
			return fmt.Errorf("%d replicas", n)
		}
		return nil
	})
	// The watch says when each happened, to the event.
	released, ok := sw.firstAfter(closed, func(s replicaSeen) bool { return !s.held })
	if !ok {
		t.Fatal("the watch never saw web-cache without the hold")
	}
	reverted, ok := sw.firstAfter(closed, func(s replicaSeen) bool { return s.replicas == 3 })
	if !ok {
		t.Fatal("the watch never saw web-cache back at 3")
	}
	// One interval on: the refused change stays refused (nothing held or
	// proposed again) and Flux keeps Git's 3.
	time.Sleep(fluxInterval)
	pulls, err := hh.h.pulls(t)
	if err != nil {
		t.Fatal(err)
	}
	after := sw.since(reverted.at)
	_, requested := hh.applier(t)
	t.Logf("FIGURE hold close: change to hold %s; #%d closed %s after the change; close -> release %.2fs; "+
		"release -> revert %.2fs (interval %s); values from the change to the close %v, after the revert %v; pull requests %d; whole test %s",
		held.Sub(changed).Round(time.Millisecond), pr.Number, closed.Sub(changed).Round(time.Millisecond),
		released.at.Sub(closed).Seconds(), reverted.at.Sub(released.at).Seconds(), fluxInterval, whileHeld, after, len(pulls),
		time.Since(hh.start).Round(time.Millisecond))
	if n := reverts(whileHeld); n != 0 {
		t.Errorf("why: while the pull request was open Flux never reverts the held change; saw %v", whileHeld)
	}
	if reverted.at.Before(released.at) {
		t.Errorf("web-cache went back to 3 at %s, before the hold was released at %s", reverted.at, released.at)
	}
	// kustomize-controller's revert comes within one interval of the
	// release (backflow asks it to reconcile at once); the slack is the
	// apply itself on a busy machine.
	if d := reverted.at.Sub(released.at); d > fluxInterval+2*time.Second {
		t.Errorf("kustomize-controller reverted %s after the release, want within one interval (%s)", d, fluxInterval)
	}
	if requested == "" {
		t.Error("the Kustomization was not asked to reconcile on release")
	}
	if back, ok := sw.firstAfter(reverted.at, func(s replicaSeen) bool { return s.held || s.replicas != 3 }); ok {
		t.Errorf("after the revert the refused change came back (replicas %d, held %t); values %v", back.replicas, back.held, after)
	}
	if len(pulls) != 1 {
		t.Errorf("%d pull requests, want only the closed #%d: a refused change is not proposed again", len(pulls), pr.Number)
	}
}

// TestHoldAcrossRestart kills backflow serve mid-hold: alice scales
// web-cache 3 -> 4 under a policy that wants a review, backflow holds it
// and opens the pull request, and is killed with SIGKILL (no shutdown); a
// new serve with the same config reads the sealed hold back from the live
// object and keeps it; a person merges the pull request through the hub's
// API, and the new process releases the hold once the Kustomization has
// applied the merge. The watch never sees 3 from the change on.
func TestHoldAcrossRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a kube-apiserver, etcd and Flux's controllers: run it with make e2e")
	}
	hh, changed, held, pr := heldForReview(t)
	c, sw := hh.c, hh.sw
	// Killed between cycles, with the hold placed and the pull request open.
	eventually(t, stepTimeout, "the cycle that held and opened the pull request done", func() error {
		hold := false
		for _, l := range hh.serve.lines(t) {
			hold = hold || l.Msg == "hold"
			if hold && l.Msg == "cycle done" {
				return nil
			}
		}
		return errors.New("not yet")
	})
	record := liveStatefulSet(t, c, fluxSTS).GetAnnotations()[holdAnnotation]
	if err := hh.serve.cmd.Process.Kill(); err != nil { // SIGKILL: no shutdown, nothing released
		t.Fatal(err)
	}
	killed := time.Now()
	eventually(t, 10*time.Second, "the killed serve's port closed", func() error {
		conn, err := net.DialTimeout("tcp", hh.listen, time.Second)
		if err != nil {
			return nil
		}
		conn.Close()
		return errors.New("still listening")
	})
	restarted := time.Now()
	again := hh.startServe(t, "serve-restarted")
	var firstCycle logLine
	eventually(t, stepTimeout, "the restarted serve's first cycle", func() error {
		for _, l := range again.lines(t) {
			if l.Msg == "cycle done" || l.Msg == "cycle failed" {
				firstCycle = l
				return nil
			}
		}
		return errors.New("no cycle ended yet")
	})
	if firstCycle.Msg != "cycle done" {
		t.Fatalf("the restarted serve's first cycle failed: %+v", firstCycle)
	}
	d, err := time.ParseDuration(firstCycle.Duration)
	if err != nil {
		t.Fatalf("the restarted serve's first cycle: %+v: %v", firstCycle, err)
	}
	// Its first cycle carried the hold on: the same sealed record, the pull
	// request still open for review.
	if got := liveStatefulSet(t, c, fluxSTS).GetAnnotations()[holdAnnotation]; got != record {
		t.Fatalf("after the restart's first cycle the hold record is %q, want the one placed before the kill %q", got, record)
	}
	pr = hh.awaitOpenForReview(t)

	if err := hh.h.send(http.MethodPut, fmt.Sprintf("/repos/%s/pulls/%d/merge", repoName, pr.Number), map[string]string{"merge_method": "squash"}, nil); err != nil {
		t.Fatalf("merging #%d: %v", pr.Number, err)
	}
	merged := time.Now()
	releasedAt := hh.awaitReleased(t, 3*time.Minute, fmt.Sprintf("the hold released after #%d's merge is applied", pr.Number))
	applied, requested := hh.applier(t)
	// Two more intervals: Flux keeps 4.
	time.Sleep(2*fluxInterval + time.Second)
	seen := sw.since(changed)
	n := reverts(seen)
	t.Logf("FIGURE hold restart: change to hold %s; killed %s after the hold; restart -> first cycle starts %.2fs, done %.2fs "+
		"(why %v); merge -> release %.2fs (applied %s); values from the change on %v (%d at 3); whole test %s",
		held.Sub(changed).Round(time.Millisecond), killed.Sub(held).Round(time.Millisecond),
		firstCycle.Time.Add(-d).Sub(restarted).Seconds(), firstCycle.Time.Sub(restarted).Seconds(), firstCycle.Why,
		releasedAt.Sub(merged).Seconds(), applied, seen, n, time.Since(hh.start).Round(time.Millisecond))
	if n != 0 {
		t.Errorf("why: the hold outlives backflow's restart, so Flux never reverts the accepted change; saw %v", seen)
	}
	if applied == hh.first {
		t.Errorf("the hold was released before the merge was applied (the Kustomization still at %s)", applied)
	}
	if requested == "" {
		t.Error("the Kustomization was not asked to reconcile on release")
	}
	if n := replicas(t, c, fluxSTS); n != 4 {
		t.Errorf("after the release Flux left %d replicas, want the merged 4", n)
	}
}
