package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
)

var cmGVR = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}

// TestHoldAdmissionPolicy installs the chart with the hold on for the redis
// StatefulSets and holds the API server's own enforcement to what the
// chart promises: backflow's service account may patch the hold's
// annotations on a held object, and the ValidatingAdmissionPolicy refuses
// any patch of it that touches spec, labels or another annotation, or a
// held ConfigMap's data, binaryData or immutable (RBAC alone would allow
// them); the scale subresource is not granted at all;
// other users are not bound by the policy.
func TestHoldAdmissionPolicy(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a kube-apiserver and etcd: run it with make e2e")
	}
	apiserver, _ := binaries(t)
	start := time.Now()
	c := startCluster(t, apiserver, "", "")
	ctx := context.Background()
	sts := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps/v1", "kind": "StatefulSet",
		"metadata": map[string]any{"name": "redis-replicas", "namespace": namespace},
		"spec": map[string]any{"replicas": int64(3), "serviceName": "redis-headless",
			"selector": map[string]any{"matchLabels": map[string]any{"app": "redis"}},
			"template": map[string]any{"metadata": map[string]any{"labels": map[string]any{"app": "redis"}},
				"spec": map[string]any{"containers": []any{map[string]any{"name": "redis", "image": defaultImage}}}}},
	}}
	cm := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "redis-config", "namespace": namespace},
		"data":     map[string]any{"maxmemory": "100mb"},
	}}
	applyObjects(t, c.restConfig(userFlux), gitopsManager, namespace, []*unstructured.Unstructured{sts, cm})
	values := fmt.Sprintf(`github: {appId: 1}
credentials: {existingSecret: %s}
kube:
  enabled: true
  cluster: %s
  objects:
    - {apiVersion: apps/v1, kind: StatefulSet, namespace: %s, name: "redis-*"}
hold:
  enabled: true
  objects:
    - {apiVersion: apps/v1, kind: StatefulSet, namespace: %s, name: "redis-*"}
    - {apiVersion: v1, kind: ConfigMap, namespace: %s, name: redis-config}
`, appSecret, chartCluster, namespace, namespace, namespace)
	objs := installChart(t, c, installNS, installRelease, values, map[string][]byte{"private-key.pem": []byte("k"), "webhook-secret": []byte("s")},
		func(o *unstructured.Unstructured) bool {
			switch o.GetKind() {
			case "Role", "RoleBinding", "ClusterRole", "ClusterRoleBinding", "ServiceAccount",
				"ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding":
				return true
			}
			return false
		})
	if !hasKind(objs, "ValidatingAdmissionPolicy") || !hasKind(objs, "ValidatingAdmissionPolicyBinding") {
		t.Fatal("the chart with hold.enabled renders no ValidatingAdmissionPolicy and binding")
	}
	sa := ""
	for _, o := range objs {
		if o.GetKind() == "ServiceAccount" {
			sa = o.GetName()
		}
	}
	rc := c.restConfig(userAdmin)
	rc.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:" + installNS + ":" + sa,
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + installNS, "system:authenticated"}}
	d, err := dynamic.NewForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	asBackflow := func(body string, sub ...string) error {
		_, err := d.Resource(stsGVR).Namespace(namespace).Patch(ctx, "redis-replicas", types.MergePatchType, []byte(body),
			metav1.PatchOptions{}, sub...)
		return err
	}
	// The policy takes effect once the API server has loaded it: until
	// then a label change (each a new value) goes through.
	n := 0
	installed := time.Now()
	eventually(t, 30*time.Second, "the admission policy in force", func() error {
		n++
		err := asBackflow(fmt.Sprintf(`{"metadata":{"labels":{"probe":"%d"}}}`, n))
		if err == nil {
			return fmt.Errorf("a label change by backflow's service account went through")
		}
		if !strings.Contains(err.Error(), "not labels") {
			return fmt.Errorf("refused for another reason: %v", err)
		}
		return nil
	})
	t.Logf("FIGURE hold-policy: in force %s after the install (%d probes); harness %s", time.Since(installed).Round(time.Millisecond), n,
		installed.Sub(start).Round(time.Millisecond))

	hold := `{"metadata":{"annotations":{"kustomize.toolkit.fluxcd.io/reconcile":"disabled","backflow.dev/hold":"{\"v\":1}"}}}`
	if err := asBackflow(hold); err != nil {
		t.Fatalf("placing the hold's annotations was refused: %v", err)
	}
	release := `{"metadata":{"annotations":{"kustomize.toolkit.fluxcd.io/reconcile":null,"backflow.dev/hold":null}}}`
	for _, tc := range []struct{ why, body, want string }{
		{"spec", `{"spec":{"replicas":4}}`, "not spec"},
		{"spec beside the hold", `{"spec":{"replicas":4},"metadata":{"annotations":{"backflow.dev/hold":"x"}}}`, "not spec"},
		{"another annotation", `{"metadata":{"annotations":{"prometheus.io/scrape":"false"}}}`, "only its hold annotations"},
		{"a label", `{"metadata":{"labels":{"app":"other"}}}`, "not labels"},
		{"a finalizer", `{"metadata":{"finalizers":["example.com/keep"]}}`, "finalizers, owners or other metadata"},
	} {
		err := asBackflow(tc.body)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("why: backflow may change only its hold annotations: %s: %v, want refused naming %q", tc.why, err, tc.want)
		}
	}
	// A ConfigMap held the same way: its own fields are frozen though the
	// policy lists none of them.
	asBackflowCM := func(body string) error {
		_, err := d.Resource(cmGVR).Namespace(namespace).Patch(ctx, "redis-config", types.MergePatchType, []byte(body),
			metav1.PatchOptions{})
		return err
	}
	if err := asBackflowCM(hold); err != nil {
		t.Fatalf("placing the hold's annotations on the ConfigMap was refused: %v", err)
	}
	for _, tc := range []struct{ why, body string }{
		{"data", `{"data":{"maxmemory":"200mb"}}`},
		{"data beside the hold", `{"data":{"maxmemory":"200mb"},"metadata":{"annotations":{"backflow.dev/hold":"y"}}}`},
		{"binaryData", `{"binaryData":{"k":"AA=="}}`},
		{"immutable", `{"immutable":true}`},
		{"data removed", `{"data":null}`},
	} {
		err := asBackflowCM(tc.body)
		if err == nil || !strings.Contains(err.Error(), "not spec, data or any other field") {
			t.Errorf("why: backflow may change only its hold annotations on a ConfigMap: %s: %v", tc.why, err)
		}
	}
	if err := asBackflowCM(release); err != nil {
		t.Fatalf("releasing the ConfigMap's hold was refused: %v", err)
	}
	admin, err := dynamic.NewForConfig(c.restConfig(userAdmin))
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := admin.Resource(cmGVR).Namespace(namespace).Get(ctx, "redis-config", metav1.GetOptions{}); got == nil ||
		got.Object["data"].(map[string]any)["maxmemory"] != "100mb" || got.Object["immutable"] != nil {
		t.Errorf("the ConfigMap changed under backflow's refused patches: %v", got)
	}
	if err := asBackflow(`{"spec":{"replicas":4}}`, "scale"); err == nil || !strings.Contains(err.Error(), "forbidden") {
		t.Errorf("why: the scale subresource is not granted: %v", err)
	}
	if err := asBackflow(release); err != nil {
		t.Fatalf("releasing the hold was refused: %v", err)
	}
	if n := replicas(t, c, "redis-replicas"); n != 3 {
		t.Errorf("redis-replicas has %d replicas after backflow's refused patches, want 3", n)
	}
	live := liveStatefulSet(t, c, "redis-replicas")
	if _, held := live.GetAnnotations()["backflow.dev/hold"]; held {
		t.Error("the released hold's annotation is still there")
	}
	// Other users are not bound by the policy.
	patch(t, c, userAlice, "redis-replicas", types.MergePatchType, `{"spec":{"replicas":4}}`, "scale")
	if n := replicas(t, c, "redis-replicas"); n != 4 {
		t.Errorf("alice's scale left %d replicas, want 4", n)
	}
}
