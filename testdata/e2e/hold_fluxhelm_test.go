package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

var helmReleaseGVR = schema.GroupVersionResource{Group: "helm.toolkit.fluxcd.io", Version: "v2", Resource: "helmreleases"}

// objectSeen is one version of a Flux object a watch delivered, and when.
type objectSeen struct {
	at  time.Time
	rv  int64
	obj *unstructured.Unstructured
}

// objectWatch records every version of one object.
type objectWatch struct {
	mu   sync.Mutex
	seen []objectSeen
}

func watchFlux(t *testing.T, c *cluster, gvr schema.GroupVersionResource, name string) *objectWatch {
	t.Helper()
	ow := &objectWatch{}
	watchObject(t, c, gvr, fluxNamespace, name, func(u *unstructured.Unstructured) {
		rv, _ := strconv.ParseInt(u.GetResourceVersion(), 10, 64)
		ow.mu.Lock()
		defer ow.mu.Unlock()
		ow.seen = append(ow.seen, objectSeen{at: time.Now(), rv: rv, obj: u.DeepCopy()})
	})
	return ow
}

// first is the first version seen that match says yes to.
func (ow *objectWatch) first(match func(*unstructured.Unstructured) bool) (objectSeen, bool) {
	ow.mu.Lock()
	defer ow.mu.Unlock()
	for _, s := range ow.seen {
		if match(s.obj) {
			return s, true
		}
	}
	return objectSeen{}, false
}

// helmReleased says whether helm-controller has released the HelmRelease
// hr as it is (Ready at its generation, its newest Helm release deployed),
// and that release's version and chart version.
func helmReleased(hr *unstructured.Unstructured) (ok bool, version int64, chart string) {
	gen := hr.GetGeneration()
	og, _, _ := unstructured.NestedInt64(hr.Object, "status", "observedGeneration")
	ready := false
	conds, _, _ := unstructured.NestedSlice(hr.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		cg, _, _ := unstructured.NestedInt64(m, "observedGeneration")
		ready = ready || m["type"] == "Ready" && m["status"] == "True" && cg == gen
	}
	history, _, _ := unstructured.NestedSlice(hr.Object, "status", "history")
	var latest map[string]any
	for _, h := range history {
		m, _ := h.(map[string]any)
		if v, _, _ := unstructured.NestedInt64(m, "version"); v > version {
			version, latest = v, m
		}
	}
	chart, _ = latest["chartVersion"].(string)
	return og == gen && ready && latest["status"] == "deployed", version, chart
}

// awaitHelmReleased waits until helm-controller has installed the
// HelmRelease flux-system/web.
func awaitHelmReleased(t *testing.T, c *cluster, timeout time.Duration) {
	t.Helper()
	eventually(t, timeout, "helm-controller installing the HelmRelease web", func() error {
		hr, err := fluxObject(t, c, helmReleaseGVR, "web")
		if err != nil {
			return err
		}
		if ok, _, _ := helmReleased(hr); !ok {
			s, msg := condition(hr, "Ready")
			return fmt.Errorf("HelmRelease web not released: Ready %s: %s", s, msg)
		}
		return nil
	})
}

// chartValuesRepo is a copy of helmholdrepo whose replicaCount is the
// chart's own values.yaml, the unit's values file: the HelmRelease has no
// spec.values, so the merge changes the chart and not the HelmRelease, and
// the HelmRelease's chart is rebuilt for every commit (reconcileStrategy
// Revision: with Flux's default, ChartVersion, a chart whose version did not
// change is not rebuilt and the merge would never be released).
func chartValuesRepo(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "helmholdrepo")
	if err := os.CopyFS(dir, os.DirFS("helmholdrepo")); err != nil {
		t.Fatalf("copying helmholdrepo: %v", err)
	}
	for _, e := range []struct{ file, old, new string }{
		{".github/backflow.yaml", "    valuesFiles: [envs/prod/helmrelease.yaml]\n    valuesRoot: {document: HelmRelease/web, path: spec.values}\n",
			"    valuesFiles: [charts/web/values.yaml]\n"},
		{"envs/prod/helmrelease.yaml", "  values:\n    replicaCount: 3 # absorbs read load; scaled live during incidents\n", ""},
		{"envs/prod/helmrelease.yaml", "      interval: 5s\n", "      interval: 5s\n      reconcileStrategy: Revision\n"},
		{"charts/web/values.yaml", "replicaCount: 1\n", "replicaCount: 3 # absorbs read load; scaled live during incidents\n"},
	} {
		p := filepath.Join(dir, e.file)
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		edited := strings.Replace(string(data), e.old, e.new, 1)
		if edited == string(data) {
			t.Fatalf("%s: no %q to replace", e.file, e.old)
		}
		if err := os.WriteFile(p, []byte(edited), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestHoldWithFluxHelm runs the flux-helm hold against Flux's real
// helm-controller: the Kustomization applies the HelmRelease web, whose
// chart (charts/web, from the same GitRepository) helm-controller installs
// with drift correction every 5 s. alice scales web-cache 3 -> 4; backflow
// holds it (helm.toolkit.fluxcd.io/driftDetection: disabled and its sealed
// record) and opens the pull request, which merges itself; backflow
// releases the hold only once the Kustomization has applied the merge and
// helm-controller has upgraded the release from it, and asks the
// HelmRelease to reconcile; from the hold on the watch never sees 3. The
// value is written where it comes from: the HelmRelease's spec.values (the
// merge bumps its generation), or the chart's values.yaml (the merge
// changes the chart, built again from the merge commit, not the
// HelmRelease).
func TestHoldWithFluxHelm(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a kube-apiserver, etcd and Flux's controllers: run it with make e2e")
	}
	for _, tc := range []struct {
		name string
		repo func(*testing.T) string
		// chartChanged: the merge changes the chart, whose version then
		// carries the merge commit; otherwise the HelmRelease's spec.
		chartChanged bool
	}{
		{"HelmReleaseValues", func(*testing.T) string { return "helmholdrepo" }, false},
		{"ChartValues", chartValuesRepo, true},
	} {
		t.Run(tc.name, func(t *testing.T) { holdWithFluxHelm(t, tc.repo(t), tc.chartChanged) })
	}
}

func holdWithFluxHelm(t *testing.T, repoDir string, chartChanged bool) {
	hh := startHoldHarnessWith(t, repoDir, true)
	c, sw := hh.c, hh.sw
	hrw := watchFlux(t, c, helmReleaseGVR, "web")
	ksw := watchFlux(t, c, kustomizationGVR, "prod")
	hr, err := fluxObject(t, c, helmReleaseGVR, "web")
	if err != nil {
		t.Fatal(err)
	}
	_, installed, _ := helmReleased(hr)
	generation := hr.GetGeneration()

	patch(t, c, userAlice, fluxSTS, types.MergePatchType, `{"spec":{"replicas":4}}`, "scale")
	changed := time.Now()
	held := hh.awaitHeld(t)
	beforeHold := sw.since(changed)
	t.Logf("FIGURE helm hold: live change to hold placed in %s; values before the hold %v", held.Sub(changed).Round(time.Millisecond), beforeHold)
	pr := awaitMerged(t, hh.h, fluxSTS, "the held change's pull request merged")
	merged := time.Now()
	hh.awaitReleased(t, 3*time.Minute, "the hold released after the merge is applied and released by helm-controller")
	applied, requested := hh.applier(t)
	// Two more intervals: helm-controller's drift correction keeps 4.
	time.Sleep(2*fluxInterval + time.Second)
	afterHold := sw.since(held)
	n := reverts(afterHold)

	if len(pr.MergeCommit) < 12 {
		t.Fatalf("#%d has no merge commit (%q)", pr.Number, pr.MergeCommit)
	}
	// The order the API server wrote them in (resourceVersions of one
	// etcd): the Kustomization's applied merge, helm-controller's upgrade
	// from it, backflow's release.
	ksApplied, ok := ksw.first(func(u *unstructured.Unstructured) bool {
		rev, _, _ := unstructured.NestedString(u.Object, "status", "lastAppliedRevision")
		return strings.HasSuffix(rev, pr.MergeCommit)
	})
	if !ok {
		t.Fatalf("the watch never saw the Kustomization apply the merge %s", pr.MergeCommit)
	}
	// Upgraded from the merge: a new Helm release, from the HelmRelease's
	// new generation, or from the chart built from the merge commit.
	upgraded, ok := hrw.first(func(u *unstructured.Unstructured) bool {
		ok, version, chart := helmReleased(u)
		if chartChanged {
			return ok && version > installed && strings.HasSuffix(chart, "+"+pr.MergeCommit[:12])
		}
		return ok && version > installed && u.GetGeneration() > generation
	})
	if !ok {
		t.Fatalf("the watch never saw helm-controller upgrade the release from the merge %s", pr.MergeCommit)
	}
	released, ok := sw.firstAfter(merged, func(s replicaSeen) bool { return !s.held })
	if !ok {
		t.Fatal("the watch never saw web-cache without the hold")
	}
	releaseRV, _ := strconv.ParseInt(released.rv, 10, 64)
	_, version, chart := helmReleased(upgraded.obj)
	t.Logf("FIGURE helm hold: #%d merged %s after the change; merge -> Kustomization applied %.2fs, -> helm-controller upgraded "+
		"(release v%d, chart %s, generation %d) %.2fs, -> hold released %.2fs (applied %s, reconcile requested at %q); "+
		"values seen from the hold on %v (%d at 3); whole test %s", pr.Number, merged.Sub(changed).Round(time.Millisecond),
		ksApplied.at.Sub(merged).Seconds(), version, chart, upgraded.obj.GetGeneration(), upgraded.at.Sub(merged).Seconds(),
		released.at.Sub(merged).Seconds(), applied, requested, afterHold, n, time.Since(hh.start).Round(time.Millisecond))
	if n != 0 {
		t.Errorf("why: from the hold on helm-controller never reverts the accepted change; saw %v", afterHold)
	}
	if releaseRV <= ksApplied.rv || releaseRV <= upgraded.rv {
		t.Errorf("why: the hold is released only after the Kustomization applied the merge (rv %d) and helm-controller "+
			"upgraded from it (rv %d); released at rv %d", ksApplied.rv, upgraded.rv, releaseRV)
	}
	if gen := upgraded.obj.GetGeneration(); chartChanged == (gen > generation) {
		t.Errorf("the merge changed the HelmRelease's generation %d -> %d; want a change only when the values are its own",
			generation, gen)
	}
	if applied == hh.first {
		t.Errorf("the hold was released before the merge was applied (the Kustomization still at %s)", applied)
	}
	if requested == "" {
		t.Error("the HelmRelease was not asked to reconcile on release")
	}
	if n := replicas(t, c, fluxSTS); n != 4 {
		t.Errorf("after the release helm-controller left %d replicas, want the merged 4", n)
	}
}
