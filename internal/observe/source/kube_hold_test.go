package source

import (
	"context"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynfake "k8s.io/client-go/dynamic/fake"

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
