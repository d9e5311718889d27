package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"
)

const (
	fluxSTSKey = "apps/v1|StatefulSet|" + namespace + "|" + fluxSTS
	overlayRel = "envs/prod/kustomization.yaml"
)

// replicaEvent is one watch event of the StatefulSet: when the test saw
// it, the replica count and who owns spec.replicas.
type replicaEvent struct {
	at       time.Time
	replicas int64
	managers []string // the field managers owning spec.replicas
}

// replicaWatch records every watch event of one StatefulSet, as the
// admin sees it, from its start to the test's end.
type replicaWatch struct {
	mu     sync.Mutex
	events []replicaEvent
}

func watchReplicas(t *testing.T, c *cluster, name string) *replicaWatch {
	t.Helper()
	// An informer, not a bare watch: it lists again when the API server
	// refuses a watch (a resource version its cache has not reached yet).
	factory := dynamicinformer.NewFilteredDynamicSharedInformerFactory(c.dynamic(t, userAdmin), 0, namespace,
		func(o *metav1.ListOptions) { o.FieldSelector = "metadata.name=" + name })
	rw := &replicaWatch{}
	record := func(obj any) {
		u, ok := obj.(*unstructured.Unstructured)
		if !ok {
			return
		}
		n, _, _ := unstructured.NestedInt64(u.Object, "spec", "replicas")
		rw.mu.Lock()
		rw.events = append(rw.events, replicaEvent{at: time.Now(), replicas: n, managers: fieldManagers(u, "spec", "replicas")})
		rw.mu.Unlock()
	}
	informer := factory.ForResource(stsGVR).Informer()
	if _, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    record,
		UpdateFunc: func(_, obj any) { record(obj) },
	}); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	factory.Start(stop)
	t.Cleanup(func() { close(stop); factory.Shutdown() })
	if !cache.WaitForCacheSync(stop, informer.HasSynced) {
		t.Fatalf("the watch of %s never synced", name)
	}
	return rw
}

// since is the events seen at or after from.
func (rw *replicaWatch) since(from time.Time) []replicaEvent {
	rw.mu.Lock()
	defer rw.mu.Unlock()
	var out []replicaEvent
	for _, e := range rw.events {
		if !e.at.Before(from) {
			out = append(out, e)
		}
	}
	return out
}

// TestFluxWriteBack is the Flux round trip: alice's scale of the
// StatefulSet is written into the prod overlay's replicas: entry by
// backflow serve, merges itself, and the real source-controller and
// kustomize-controller fetch and apply it, so live ends at 4 and the
// receipt is proven; bob's image change is reported, not written, and
// kustomize-controller reverts it.
func TestFluxWriteBack(t *testing.T) {
	if testing.Short() {
		t.Skip("the Flux write-back starts a kube-apiserver, etcd, Flux's controllers and backflow serve: run it with make e2e")
	}
	apiserver, bin := binaries(t)
	start := time.Now()
	listen := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	auditToken := token()
	c := startCluster(t, apiserver, tlsFront(t, listen)+"/audit", auditToken)
	ep := startHubWith(t, bin, "http://"+listen+"/webhook", "kustomize")
	h := newHubClient(t, ep)
	startFlux(t, c)
	fluxSync(t, c, h)
	revision := awaitApplied(t, c, 3*time.Minute)
	if n := replicas(t, c, fluxSTS); n != 3 {
		t.Fatalf("kustomize-controller applied %s with %d replicas, want the overlay's 3", fluxSTS, n)
	}
	overlay, err := h.file(t, overlayRel)
	if err != nil {
		t.Fatal(err)
	}
	audit := fmt.Sprintf("audit:\n  logFiles: [%s]\n  webhook:\n    tokenFile: audit-token\n", c.auditLog)
	// Cycles every interval besides the watch's: a merge kustomize-controller
	// found unchanged is proven by an observation after the grace period.
	w := serveWatch{pattern: fluxSTSKey, manager: "kustomize-controller", schedule: "@every " + fluxInterval.String()}
	startServe(t, bin, serveConfigFor(t, ep, c, listen, w, audit,
		map[string][]byte{"audit-token": []byte(auditToken + "\n")}), listen)
	events := watchReplicas(t, c, fluxSTS)
	t.Logf("timing: harness start %s (cluster, hub, both controllers, the first apply of %s, backflow serve)",
		time.Since(start).Round(time.Millisecond), revision)

	// alice (group sre) scales the StatefulSet 3 -> 4 just after an apply,
	// so it stands an interval; backflow attributes it from the audit log
	// and writes the overlay's replicas: entry.
	fluxReconciled(t, c)
	scaled := time.Now()
	patch(t, c, userAlice, fluxSTS, types.MergePatchType, `{"spec":{"replicas":4}}`, "scale")
	changed := time.Now()
	pr := awaitPull(t, h, fluxSTSKey, "a write-back pull request for "+fluxSTS)
	t.Logf("timing: live change to pull request #%d in %s", pr.Number, time.Since(changed).Round(time.Millisecond))
	for _, want := range []string{"alice", "audit-log", overlayRel} {
		if !strings.Contains(pr.Body, want) {
			t.Errorf("pull request #%d does not name %q:\n%s", pr.Number, want, pr.Body)
		}
	}
	merged := awaitMerged(t, h, fluxSTSKey, fmt.Sprintf("the pre-authorized pull request #%d merged", pr.Number))
	mergedAt := time.Since(changed)
	after, err := h.file(t, overlayRel)
	if err != nil {
		t.Fatal(err)
	}
	if want := strings.Replace(string(overlay), "count: 3", "count: 4", 1); string(after) != want {
		t.Fatalf("main's overlay after the merge of #%d, want only the web-cache entry's count changed:\n%s", merged.Number, after)
	}

	// source-controller fetches the merge and kustomize-controller applies
	// it: live ends at 4.
	mergeRevision := "main@sha1:" + merged.MergeCommit
	eventually(t, 3*fluxInterval+10*time.Second, "kustomize-controller applying the merge "+mergeRevision, func() error {
		ks, err := fluxObject(t, c, kustomizationGVR, "prod")
		if err != nil {
			return err
		}
		if rev, _, _ := unstructured.NestedString(ks.Object, "status", "lastAppliedRevision"); rev != mergeRevision {
			return fmt.Errorf("Kustomization prod applied %s", rev)
		}
		return nil
	})
	appliedAt := time.Now()
	if n := replicas(t, c, fluxSTS); n != 4 {
		t.Fatalf("kustomize-controller applied the merge %s and left %s at %d replicas, want 4", mergeRevision, fluxSTS, n)
	}
	var receipts []string
	eventually(t, stepTimeout, "the proven receipt", func() error {
		comments, err := h.comments(t, pr.Number)
		if err != nil {
			return err
		}
		receipts = nil
		for _, cm := range comments {
			receipts = append(receipts, provenReceipts(cm.Body)...)
		}
		if len(receipts) == 0 {
			return fmt.Errorf("#%d: no proven receipt among %d comments", pr.Number, len(comments))
		}
		return nil
	})
	proven := time.Since(changed)
	for _, want := range []string{"status: proven", "actor: alice", "writtenFile: " + overlayRel,
		"writtenPath: replicas[1].count", "renderer: sigs.k8s.io/kustomize/api"} {
		if !strings.Contains(receipts[0], want) {
			t.Errorf("the proven receipt lacks %q:\n%s", want, receipts[0])
		}
	}
	verifyReceipt(t, h, bin, receipts[0])

	// The window: from alice's change, kustomize-controller's apply of the
	// old revision put 3 back until its apply of the merge set 4 again (or
	// it fetched the merge first and found 4 unchanged).
	var revertedAt, backAt time.Time
	seen := events.since(scaled)
	if !slices.ContainsFunc(seen, func(e replicaEvent) bool { return e.replicas == 4 }) {
		t.Fatalf("the watch of %s missed alice's 4 (%d events since her scale)", fluxSTS, len(seen))
	}
	for _, e := range seen {
		switch {
		case e.replicas == 3 && revertedAt.IsZero():
			revertedAt = e.at
		case e.replicas == 4 && !revertedAt.IsZero() && backAt.IsZero():
			backAt = e.at
		}
	}
	back := time.Duration(0)
	switch {
	case !revertedAt.IsZero() && backAt.IsZero():
		t.Fatalf("the watch saw %s reverted to 3 %s after alice's change and never back at 4", fluxSTS, sinceOrNone(revertedAt, changed))
	case !revertedAt.IsZero():
		back = backAt.Sub(revertedAt)
	}
	t.Logf("FIGURE flux write-back: live sat back at 3 for %s between alice's change and the applied merge"+
		" (%d watch events; reverted %s after it, back at 4 %s after it; merged %s after it, the merge applied by %s; interval %s)",
		back.Round(100*time.Millisecond), len(seen), sinceOrNone(revertedAt, changed), sinceOrNone(backAt, changed),
		mergedAt.Round(100*time.Millisecond), appliedAt.Sub(changed).Round(100*time.Millisecond), fluxInterval)
	// kustomize-controller writes spec.replicas only when it reverted the
	// 4 first; when it fetched the merge first, it found 4 unchanged and
	// the proof waits out the grace period.
	how := "an observation after the grace period (kustomize-controller found 4 unchanged)"
	if strings.Contains(receipts[0], "written by the forward apply") {
		how = "kustomize-controller writing 4"
	}
	t.Logf("FIGURE flux write-back: change to proven receipt %s, by %s", proven.Round(100*time.Millisecond), how)

	// bob changes the image: denied and reported, nothing written, and
	// kustomize-controller reverts it itself, keeping the 4.
	pullsBefore, err := h.pulls(t)
	if err != nil {
		t.Fatal(err)
	}
	fluxReconciled(t, c)
	patch(t, c, userBob, fluxSTS, types.StrategicMergePatchType,
		`{"spec":{"template":{"spec":{"containers":[{"name":"cache","image":"`+debugImage+`"}]}}}}`)
	bobAt := time.Now()
	eventually(t, 3*fluxInterval+10*time.Second, "bob's change reported as drift", func() error {
		// The actor column says bob, or unknown with each field's author
		// in the reasons when alice's scale still owns spec.replicas (at
		// the merged 4: kustomize-controller found it unchanged).
		return driftNames(t, h, "`spec.template.spec.containers[0].image`", "bob")
	})
	awaitReverted(t, "kustomize-controller reverting bob's image", bobAt, func() error {
		if img := image(t, c, fluxSTS); img != fluxImage {
			return fmt.Errorf("%s runs %s", fluxSTS, img)
		}
		return nil
	})
	t.Logf("FIGURE flux write-back: bob's image stood %s before kustomize-controller reverted it",
		time.Since(bobAt).Round(100*time.Millisecond))
	pulls, err := h.pulls(t)
	if err != nil {
		t.Fatal(err)
	}
	if len(pulls) != len(pullsBefore) {
		t.Errorf("bob's change opened a pull request: %d pull requests, want %d", len(pulls), len(pullsBefore))
	}
	if now, err := h.file(t, overlayRel); err != nil || string(now) != string(after) {
		t.Errorf("bob's change edited main's overlay (%v):\n%s", err, now)
	}
	// live stayed 4 from the applied merge through the apply that
	// reverted bob's image.
	settled := appliedAt
	if backAt.After(settled) {
		settled = backAt
	}
	for _, e := range events.since(settled) {
		if e.replicas != 4 {
			t.Errorf("after the applied merge %s went to %d replicas (%s, owned by %v)", fluxSTS, e.replicas,
				e.at.Sub(changed).Round(100*time.Millisecond), e.managers)
		}
	}
	t.Logf("FIGURE flux write-back e2e wall time: %s", time.Since(start).Round(time.Millisecond))
}

// fieldManagers are the managers owning the field at path of obj (a
// server-side apply of the value a field already has shares it).
func fieldManagers(obj *unstructured.Unstructured, path ...string) []string {
	key := "f:" + strings.Join(path, ".f:")
	var out []string
	for _, mf := range obj.GetManagedFields() {
		if mf.FieldsV1 == nil {
			continue
		}
		if fields, err := fieldPaths(mf.FieldsV1.Raw); err == nil && fields[key] {
			out = append(out, mf.Manager)
		}
	}
	return out
}

// fluxReconciled asks kustomize-controller to reconcile the Kustomization
// now (the annotation flux reconcile sets) and waits until it has: its next
// apply is an interval away. A change made at a random moment may stand
// less than the audit webhook's batch takes to say who made it, and
// nobody can tell then who to report.
func fluxReconciled(t *testing.T, c *cluster) {
	t.Helper()
	at := time.Now().UTC().Format(time.RFC3339Nano)
	body := fmt.Sprintf(`{"metadata":{"annotations":{"reconcile.fluxcd.io/requestedAt":%q}}}`, at)
	if _, err := c.dynamic(t, userAdmin).Resource(kustomizationGVR).Namespace(fluxNamespace).Patch(context.Background(),
		"prod", types.MergePatchType, []byte(body), metav1.PatchOptions{}); err != nil {
		t.Fatalf("requesting a reconcile of the Kustomization: %v", err)
	}
	eventually(t, 2*fluxInterval+10*time.Second, "kustomize-controller reconciling on request", func() error {
		ks, err := fluxObject(t, c, kustomizationGVR, "prod")
		if err != nil {
			return err
		}
		if got, _, _ := unstructured.NestedString(ks.Object, "status", "lastHandledReconcileAt"); got != at {
			return fmt.Errorf("lastHandledReconcileAt %q, want %q", got, at)
		}
		return nil
	})
}

// sinceOrNone is how long after from at came, or "never".
func sinceOrNone(at, from time.Time) string {
	if at.IsZero() {
		return "never"
	}
	return at.Sub(from).Round(100 * time.Millisecond).String()
}
