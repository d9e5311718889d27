package source

import (
	"context"
	"errors"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynfake "k8s.io/client-go/dynamic/fake"

	"github.com/backflow-dev/backflow/internal/hold"
	"github.com/backflow-dev/backflow/internal/observe"
)

var kustGVR = schema.GroupVersionResource{Group: "kustomize.toolkit.fluxcd.io", Version: "v1", Resource: "kustomizations"}

func TestKubeSourceHolds(t *testing.T) {
	held := statefulSet(t, 4, "redis:7", nil, managedEntry{"helm-controller", "Apply", "", "2026-11-29T10:00:10Z", applyAll})
	held.SetAnnotations(map[string]string{"kustomize.toolkit.fluxcd.io/reconcile": "disabled", "backflow.dev/hold": "{}"})
	plain := held.DeepCopy()
	plain.SetName("redis-master")
	plain.SetUID("u-2")
	plain.SetAnnotations(map[string]string{"other": "x"})
	kust := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "kustomize.toolkit.fluxcd.io/v1", "kind": "Kustomization",
		"metadata": map[string]any{"name": "apps", "namespace": "flux-system"},
		"status":   map[string]any{"lastAppliedRevision": "main@sha1:abc"}}}
	client := dynfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{stsGVR: "StatefulSetList", kustGVR: "KustomizationList"}, held, plain, kust)
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "StatefulSet"}, meta.RESTScopeNamespace)
	s := &KubeSource{Cluster: "prod-us-east-1", Client: client, Mapper: mapper, Objects: []string{"apps/v1|StatefulSet|redis|redis-*"},
		GitOpsManagers: []string{"helm-controller"}}
	t.Cleanup(s.Close)
	ctx := context.Background()

	objs, err := s.HeldObjects(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(objs) != 1 || objs[0].Object.Name != "redis-replicas" || objs[0].UID != "u-1" || objs[0].Annotations["backflow.dev/hold"] != "{}" {
		t.Fatalf("why: only the watched objects carrying a hold's annotation are listed; got %+v", objs)
	}
	k := observe.ObjectKey{APIVersion: "apps/v1", Kind: "StatefulSet", Namespace: "redis", Name: "redis-replicas"}
	if err := s.PatchObject(ctx, k, []byte(`{"metadata":{"annotations":{"backflow.dev/hold":null,"kustomize.toolkit.fluxcd.io/reconcile":null}}}`)); err != nil {
		t.Fatal(err)
	}
	got, err := client.Resource(stsGVR).Namespace("redis").Get(ctx, "redis-replicas", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.GetAnnotations()) != 0 {
		t.Errorf("why: the release's patch removes the annotations; got %v", got.GetAnnotations())
	}
	other := k
	other.Namespace = "kube-system"
	if err := s.PatchObject(ctx, other, []byte(`{}`)); err == nil || !strings.Contains(err.Error(), "not a watched object") {
		t.Errorf("why: only watched objects are patched: %v", err)
	}
	rev, err := s.AppliedRevision(ctx, "flux-kustomize", "flux-system/apps")
	if err != nil || rev != "main@sha1:abc" {
		t.Errorf("applied revision %q, %v", rev, err)
	}
	if err := s.PatchApplier(ctx, "flux-kustomize", "flux-system/apps", []byte(`{"metadata":{"annotations":{"reconcile.fluxcd.io/requestedAt":"now"}}}`)); err != nil {
		t.Fatal(err)
	}
	k2, _ := client.Resource(kustGVR).Namespace("flux-system").Get(ctx, "apps", metav1.GetOptions{})
	if k2.GetAnnotations()["reconcile.fluxcd.io/requestedAt"] != "now" {
		t.Errorf("why: the applier is asked to reconcile; annotations %v", k2.GetAnnotations())
	}
	for _, tc := range []struct{ controller, ref, want string }{
		{"argocd", "a/b", "has no applier"},
		{"flux-kustomize", "apps", "want namespace/name"},
	} {
		if _, err := s.AppliedRevision(ctx, tc.controller, tc.ref); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s %s: %v", tc.controller, tc.ref, err)
		}
	}
	// The hold's annotations, set by backflow's own patch, are never a
	// live change.
	ch, err := observe.LiveChanges(map[string]any{"metadata": map[string]any{
		"annotations": map[string]any{"backflow.dev/hold": "{}", "kustomize.toolkit.fluxcd.io/reconcile": "disabled"},
		"managedFields": []any{map[string]any{"manager": "backflow", "operation": "Update", "time": "2026-11-29T10:00:10Z",
			"fieldsType": "FieldsV1", "fieldsV1": map[string]any{"f:metadata": map[string]any{"f:annotations": map[string]any{
				"f:backflow.dev/hold": map[string]any{}, "f:kustomize.toolkit.fluxcd.io/reconcile": map[string]any{}}}}}}}}, nil, nil)
	if err != nil || len(ch.Fields) != 0 {
		t.Errorf("why: the hold's annotations are bookkeeping, not a change; got %+v, %v", ch.Fields, err)
	}
}

var (
	hrGVR    = schema.GroupVersionResource{Group: "helm.toolkit.fluxcd.io", Version: "v2", Resource: "helmreleases"}
	chartGVR = schema.GroupVersionResource{Group: "source.toolkit.fluxcd.io", Version: "v1", Resource: "helmcharts"}
)

// fluxObj is a Flux object of kind in flux-system at generation gen, with
// labels and the given spec and status.
func fluxObj(apiVersion, kind, name string, gen int64, labels map[string]any, spec, status map[string]any) *unstructured.Unstructured {
	meta := map[string]any{"name": name, "namespace": "flux-system", "generation": gen}
	if labels != nil {
		meta["labels"] = labels
	}
	return &unstructured.Unstructured{Object: map[string]any{"apiVersion": apiVersion, "kind": kind, "metadata": meta,
		"spec": spec, "status": status}}
}

// ready is a Flux Ready condition of status at observedGeneration gen.
func ready(status string, gen int64) map[string]any {
	return map[string]any{"type": "Ready", "status": status, "observedGeneration": gen, "reason": "Reason", "message": "msg"}
}

// TestKubeSourceHelmAppliedRevision: a flux-helm hold's applied revision is
// the one the Kustomization applying the HelmRelease applied, counted only
// once helm-controller has acted on it: at the HelmRelease's generation,
// and, when its chart is built from that Kustomization's GitRepository, on
// the chart built from that revision.
func TestKubeSourceHelmAppliedRevision(t *testing.T) {
	const merge, before, later = "main@sha1:m3rge", "main@sha1:b3f0re", "main@sha1:l4ter"
	labels := map[string]any{"kustomize.toolkit.fluxcd.io/name": "apps", "kustomize.toolkit.fluxcd.io/namespace": "flux-system"}
	fromGit := map[string]any{"chart": map[string]any{"spec": map[string]any{"chart": "./charts/web",
		"sourceRef": map[string]any{"kind": "GitRepository", "name": "gitops"}}}}
	fromRepo := map[string]any{"chart": map[string]any{"spec": map[string]any{"chart": "web",
		"sourceRef": map[string]any{"kind": "HelmRepository", "name": "charts"}}}}
	release := func(version, status string) []any {
		return []any{map[string]any{"version": int64(1), "chartVersion": "0.1.0", "status": "superseded"},
			map[string]any{"version": int64(2), "chartVersion": version, "status": status}}
	}
	// hr is the HelmRelease at generation 3, observed at og, Ready status
	// at condGen, having last attempted and released chart version.
	hr := func(spec map[string]any, og int64, status string, condGen int64, version string, lbl map[string]any) *unstructured.Unstructured {
		return fluxObj("helm.toolkit.fluxcd.io/v2", "HelmRelease", "web", 3, lbl, spec, map[string]any{
			"observedGeneration": og, "conditions": []any{ready(status, condGen)}, "helmChart": "flux-system/flux-system-web",
			"lastAttemptedRevision": version, "history": release(version, "deployed")})
	}
	noChart := func(u *unstructured.Unstructured) *unstructured.Unstructured {
		unstructured.RemoveNestedField(u.Object, "status", "helmChart")
		return u
	}
	kust := func(rev string) *unstructured.Unstructured {
		return fluxObj("kustomize.toolkit.fluxcd.io/v1", "Kustomization", "apps", 1, nil,
			map[string]any{"sourceRef": map[string]any{"kind": "GitRepository", "name": "gitops"}},
			map[string]any{"lastAppliedRevision": rev})
	}
	// chart is the HelmChart built from rev into version, Ready status.
	chart := func(rev, version, status string) *unstructured.Unstructured {
		return fluxObj("source.toolkit.fluxcd.io/v1", "HelmChart", "flux-system-web", 2, nil,
			map[string]any{"sourceRef": map[string]any{"kind": "GitRepository", "name": "gitops"}},
			map[string]any{"observedGeneration": int64(2), "observedSourceArtifactRevision": rev,
				"conditions": []any{ready(status, 2)}, "artifact": map[string]any{"revision": version}})
	}
	for _, tc := range []struct {
		why     string
		objs    []runtime.Object
		want    string
		notYet  bool   // an error wrapping hold.ErrNotApplied
		wantErr string // another error, containing this
	}{
		{"the merge applied to the HelmRelease and released at its generation: applied",
			[]runtime.Object{hr(fromRepo, 3, "True", 3, "1.0.0", labels), kust(merge)}, merge, false, ""},
		{"a later commit applied: its revision, which the bot compares with the merge",
			[]runtime.Object{hr(fromRepo, 3, "True", 3, "1.0.0", labels), kust(later)}, later, false, ""},
		{"the Kustomization applied the merge, helm-controller has not reconciled the new generation",
			[]runtime.Object{hr(fromRepo, 2, "True", 2, "1.0.0", labels), kust(merge)}, "", true, ""},
		{"reconciled but the upgrade failed: Ready False at the generation",
			[]runtime.Object{hr(fromRepo, 3, "False", 3, "1.0.0", labels), kust(merge)}, "", true, ""},
		{"the upgrade in progress: Ready Unknown at the generation",
			[]runtime.Object{hr(fromRepo, 3, "Unknown", 3, "1.0.0", labels), kust(merge)}, "", true, ""},
		{"Ready True only for the previous generation",
			[]runtime.Object{hr(fromRepo, 3, "True", 2, "1.0.0", labels), kust(merge)}, "", true, ""},
		{"the Kustomization has applied nothing yet: no revision, no error",
			[]runtime.Object{hr(fromRepo, 3, "True", 3, "1.0.0", labels), kust("")}, "", false, ""},
		{"no kustomize-controller labels: not known, said so, never applied",
			[]runtime.Object{hr(fromRepo, 3, "True", 3, "1.0.0", nil), kust(merge)}, "", false,
			"HelmRelease flux-system/web has no kustomize.toolkit.fluxcd.io/name and kustomize.toolkit.fluxcd.io/namespace labels"},
		{"the labelled Kustomization is missing: named in the error",
			[]runtime.Object{hr(fromRepo, 3, "True", 3, "1.0.0", labels)}, "", false,
			"reading the Kustomization flux-system/apps that applies HelmRelease flux-system/web"},
		{"a chart from the Kustomization's GitRepository, built from the merge and released: applied",
			[]runtime.Object{hr(fromGit, 3, "True", 3, "1.0.0+m3rge", labels), kust(merge), chart(merge, "1.0.0+m3rge", "True")},
			merge, false, ""},
		{"the merge changed only the chart's files: the HelmChart is still built from the commit before",
			[]runtime.Object{hr(fromGit, 3, "True", 3, "1.0.0+b3f0re", labels), kust(merge), chart(before, "1.0.0+b3f0re", "True")},
			"", true, ""},
		{"the chart built from the merge, helm-controller still runs the previous chart version",
			[]runtime.Object{hr(fromGit, 3, "True", 3, "1.0.0+b3f0re", labels), kust(merge), chart(merge, "1.0.0+m3rge", "True")},
			"", true, ""},
		{"the chart's build from the merge failed: its artifact is the previous one",
			[]runtime.Object{hr(fromGit, 3, "True", 3, "1.0.0+b3f0re", labels), kust(merge), chart(merge, "1.0.0+b3f0re", "False")},
			"", true, ""},
		{"a chart from the Kustomization's GitRepository before helm-controller created its HelmChart",
			[]runtime.Object{noChart(hr(fromGit, 3, "True", 3, "1.0.0", labels)), kust(merge)}, "", true, ""},
		{"a chart from the Kustomization's GitRepository whose HelmChart is missing: named in the error",
			[]runtime.Object{hr(fromGit, 3, "True", 3, "1.0.0", labels), kust(merge)}, "", false,
			"reading the HelmChart flux-system/flux-system-web of HelmRelease flux-system/web"},
	} {
		t.Run(tc.why, func(t *testing.T) {
			client := dynfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
				hrGVR: "HelmReleaseList", kustGVR: "KustomizationList", chartGVR: "HelmChartList"}, tc.objs...)
			s := &KubeSource{Cluster: "prod-us-east-1", Client: client, Mapper: meta.NewDefaultRESTMapper(nil)}
			got, err := s.AppliedRevision(context.Background(), "flux-helm", "flux-system/web")
			switch {
			case tc.notYet:
				if !errors.Is(err, hold.ErrNotApplied) || got != "" || !strings.Contains(err.Error(), "HelmRelease flux-system/web") {
					t.Errorf("why: %s: got %q, %v; want not yet applied, naming the HelmRelease", tc.why, got, err)
				}
			case tc.wantErr != "":
				if err == nil || errors.Is(err, hold.ErrNotApplied) || got != "" || !strings.Contains(err.Error(), tc.wantErr) {
					t.Errorf("why: %s: got %q, %v; want an error containing %q", tc.why, got, err, tc.wantErr)
				}
			case err != nil || got != tc.want:
				t.Errorf("why: %s: got %q, %v; want %q", tc.why, got, err, tc.want)
			}
		})
	}
	// The release's reconcile request goes to the HelmRelease itself, not
	// to the Kustomization its revision is read from.
	client := dynfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		hrGVR: "HelmReleaseList", kustGVR: "KustomizationList"}, hr(fromRepo, 3, "True", 3, "1.0.0", labels), kust(merge))
	s := &KubeSource{Cluster: "prod-us-east-1", Client: client, Mapper: meta.NewDefaultRESTMapper(nil)}
	ctx := context.Background()
	if err := s.PatchApplier(ctx, "flux-helm", "flux-system/web", []byte(`{"metadata":{"annotations":{"reconcile.fluxcd.io/requestedAt":"now"}}}`)); err != nil {
		t.Fatal(err)
	}
	got, _ := client.Resource(hrGVR).Namespace("flux-system").Get(ctx, "web", metav1.GetOptions{})
	k, _ := client.Resource(kustGVR).Namespace("flux-system").Get(ctx, "apps", metav1.GetOptions{})
	if got.GetAnnotations()["reconcile.fluxcd.io/requestedAt"] != "now" || len(k.GetAnnotations()) != 0 {
		t.Errorf("why: the HelmRelease is asked to reconcile; its annotations %v, the Kustomization's %v", got.GetAnnotations(), k.GetAnnotations())
	}
}
