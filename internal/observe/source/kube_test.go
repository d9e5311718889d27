package source

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynfake "k8s.io/client-go/dynamic/fake"

	"github.com/backflow-dev/backflow/internal/observe"
)

// managedEntry is one metadata.managedFields entry, FieldsV1 given as JSON.
type managedEntry struct {
	manager, operation, subresource, at, fields string
}

// statefulSet is the sample chart's redis-replicas as the API server holds
// it, with the given replicas, image, env and managedFields.
func statefulSet(t *testing.T, replicas int64, image string, env []any, entries ...managedEntry) *unstructured.Unstructured {
	t.Helper()
	container := map[string]any{"name": "redis", "image": image}
	if env != nil {
		container["env"] = env
	}
	var mf []any
	for _, e := range entries {
		var fields map[string]any
		if err := json.Unmarshal([]byte(e.fields), &fields); err != nil {
			t.Fatalf("fields of %s: %v", e.manager, err)
		}
		m := map[string]any{"manager": e.manager, "operation": e.operation, "apiVersion": "apps/v1", "time": e.at, "fieldsType": "FieldsV1", "fieldsV1": fields}
		if e.subresource != "" {
			m["subresource"] = e.subresource
		}
		mf = append(mf, m)
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps/v1", "kind": "StatefulSet",
		"metadata": map[string]any{"name": "redis-replicas", "namespace": "redis", "uid": "u-1", "resourceVersion": "7",
			"annotations": map[string]any{observe.IntentAnnotation: "INC-4412"}, "managedFields": mf},
		"spec": map[string]any{"replicas": replicas, "serviceName": "redis",
			"template": map[string]any{"spec": map[string]any{"containers": []any{container}}}},
		"status": map[string]any{"replicas": replicas},
	}}
}

const (
	// The forward apply owns everything the chart renders.
	applyAll = `{"f:spec":{"f:replicas":{},"f:serviceName":{},"f:template":{"f:spec":{"f:containers":{"k:{\"name\":\"redis\"}":{".":{},"f:image":{},"f:name":{}}}}}}}`
	// After kubectl scale, the forward apply no longer owns spec.replicas.
	applyNoReplicas = `{"f:spec":{"f:serviceName":{},"f:template":{"f:spec":{"f:containers":{"k:{\"name\":\"redis\"}":{".":{},"f:image":{},"f:name":{}}}}}}}`
	scaled          = `{"f:spec":{"f:replicas":{}}}`
)

func TestLiveChanges(t *testing.T) {
	gitops := []string{"helm-controller", "kustomize-controller"}
	at := "2026-11-29T10:00:10Z"
	cases := []struct {
		why     string
		obj     *unstructured.Unstructured
		ignore  []string
		fields  []string
		gitOnly []string
	}{
		{why: "only the forward apply wrote the object: it has converged",
			obj:     statefulSet(t, 3, "redis:7", nil, managedEntry{"helm-controller", "Apply", "", at, applyAll}),
			gitOnly: []string{"spec.replicas", "spec.serviceName", "spec.template.spec.containers[0].image", "spec.template.spec.containers[0].name"}},
		{why: "a scale took spec.replicas from the forward apply: a live change, through the scale subresource",
			obj: statefulSet(t, 4, "redis:7", nil, managedEntry{"helm-controller", "Apply", "", at, applyNoReplicas},
				managedEntry{"kubectl", "Update", "scale", at, scaled}),
			fields:  []string{"spec.replicas=4 kubectl/scale"},
			gitOnly: []string{"spec.serviceName", "spec.template.spec.containers[0].image", "spec.template.spec.containers[0].name"}},
		{why: "a field the forward apply shares with a person holds the applied value: converged",
			obj: statefulSet(t, 4, "redis:7", nil, managedEntry{"helm-controller", "Apply", "", at, applyAll},
				managedEntry{"kubectl", "Update", "scale", at, scaled}),
			gitOnly: []string{"spec.replicas", "spec.serviceName", "spec.template.spec.containers[0].image", "spec.template.spec.containers[0].name"}},
		{why: "an env var added by hand is reported item by item, the list item found by its key",
			obj: statefulSet(t, 3, "redis:7", []any{map[string]any{"name": "REDIS_MAXMEMORY", "value": "2gb"}},
				managedEntry{"helm-controller", "Apply", "", at, applyAll},
				managedEntry{"kubectl-edit", "Update", "", at, `{"f:spec":{"f:template":{"f:spec":{"f:containers":{"k:{\"name\":\"redis\"}":{"f:env":{".":{},"k:{\"name\":\"REDIS_MAXMEMORY\"}":{".":{},"f:name":{},"f:value":{}}}}}}}}}`}),
			fields:  []string{"spec.template.spec.containers[0].env[0].name=REDIS_MAXMEMORY kubectl-edit/", "spec.template.spec.containers[0].env[0].value=2gb kubectl-edit/"},
			gitOnly: []string{"spec.replicas", "spec.serviceName", "spec.template.spec.containers[0].image", "spec.template.spec.containers[0].name"}},
		{why: "an ignored manager's writes (an autoscaler) are not live changes",
			obj: statefulSet(t, 4, "redis:7", nil, managedEntry{"helm-controller", "Apply", "", at, applyNoReplicas},
				managedEntry{"keda-operator", "Update", "scale", at, scaled}),
			ignore:  []string{"keda-operator"},
			gitOnly: []string{"spec.serviceName", "spec.template.spec.containers[0].image", "spec.template.spec.containers[0].name"}},
		{why: "status, the intent annotation and last-applied bookkeeping are never live changes",
			obj: statefulSet(t, 3, "redis:7", nil, managedEntry{"helm-controller", "Apply", "", at, applyAll},
				managedEntry{"kube-controller-manager", "Update", "status", at, `{"f:status":{"f:replicas":{}}}`},
				managedEntry{"kubectl-annotate", "Update", "", at, `{"f:metadata":{"f:annotations":{".":{},"f:backflow.dev/intent":{}}}}`}),
			gitOnly: []string{"spec.replicas", "spec.serviceName", "spec.template.spec.containers[0].image", "spec.template.spec.containers[0].name"}},
		{why: "a field owned but gone from the live object has nothing to read and is skipped",
			obj: statefulSet(t, 3, "redis:7", nil, managedEntry{"helm-controller", "Apply", "", at, applyAll},
				managedEntry{"kubectl", "Update", "", at, `{"f:spec":{"f:minReadySeconds":{}}}`}),
			gitOnly: []string{"spec.replicas", "spec.serviceName", "spec.template.spec.containers[0].image", "spec.template.spec.containers[0].name"}},
	}
	for _, tc := range cases {
		t.Run(tc.why, func(t *testing.T) {
			res, err := observe.LiveChanges(tc.obj.Object, gitops, tc.ignore)
			if err != nil {
				t.Fatal(err)
			}
			var fields, gitOnly []string
			for _, f := range res.Fields {
				fields = append(fields, f.Path+"="+jsonText(f.Live)+" "+f.Manager+"/"+f.Subresource)
				if f.ManagedAt.IsZero() {
					t.Errorf("%s: no managedFields time", f.Path)
				}
			}
			for p := range res.GitOps {
				gitOnly = append(gitOnly, p)
			}
			sortStrings(fields)
			sortStrings(gitOnly)
			if d := cmp.Diff(tc.fields, fields); d != "" {
				t.Errorf("fields (-want +got):\n%s", d)
			}
			if d := cmp.Diff(tc.gitOnly, gitOnly); d != "" {
				t.Errorf("GitOps-only fields (-want +got):\n%s", d)
			}
		})
	}
}

func TestLiveChangesRefusesMalformedManagedFields(t *testing.T) {
	cases := []struct{ why, fields, want string }{
		{why: "a key of no known kind cannot be placed", fields: `{"x:spec":{}}`, want: `fieldsV1 key "x:spec"`},
		{why: "an index key must be a number", fields: `{"f:spec":{"f:list":{"i:one":{}}}}`, want: `fieldsV1 key "i:one"`},
	}
	for _, tc := range cases {
		t.Run(tc.why, func(t *testing.T) {
			obj := statefulSet(t, 3, "redis:7", nil, managedEntry{"kubectl", "Update", "", "2026-11-29T10:00:00Z", tc.fields})
			_, err := observe.LiveChanges(obj.Object, nil, nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "managedFields[0] (kubectl)") {
				t.Errorf("err = %v, want one naming the entry and %q", err, tc.want)
			}
		})
	}
}

func jsonText(v any) string {
	b, _ := json.Marshal(v)
	return strings.Trim(string(b), `"`)
}

func sortStrings(s []string) { sort.Strings(s) }

var stsGVR = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "statefulsets"}

func fakeKube(t *testing.T, objs ...runtime.Object) (*KubeSource, *dynfake.FakeDynamicClient, chan observe.ObjectKey) {
	t.Helper()
	client := dynfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{stsGVR: "StatefulSetList"}, objs...)
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "StatefulSet"}, meta.RESTScopeNamespace)
	changed := make(chan observe.ObjectKey, 16)
	s := &KubeSource{
		Cluster: "prod-us-east-1", Client: client, Mapper: mapper,
		Objects:        []string{"apps/v1|StatefulSet|redis|redis-*"},
		GitOpsManagers: []string{"helm-controller"},
		Now:            func() time.Time { return t0.Add(time.Minute) },
		OnChange:       func(k observe.ObjectKey) { changed <- k },
	}
	t.Cleanup(s.Close)
	return s, client, changed
}

func TestKubeSource(t *testing.T) {
	at := "2026-11-29T10:00:10Z"
	applied := statefulSet(t, 3, "redis:7", nil, managedEntry{"helm-controller", "Apply", "", at, applyAll})
	other := applied.DeepCopy()
	other.SetName("memcached")
	other.SetUID("u-2")
	s, client, changed := fakeKube(t, applied, other)
	now := t0.Add(time.Minute)
	s.Now = func() time.Time { return now }
	ctx := context.Background()

	res := s.Read(ctx)
	if len(res.Errors) > 0 || len(res.Observations) != 1 {
		t.Fatalf("why: only the object the globs claim is observed; got %d observations, errors %v", len(res.Observations), res.Errors)
	}
	o := res.Observations[0]
	if o.Source != observe.SourceKubernetes || o.Cluster != "prod-us-east-1" || o.Object.String() != "apps/v1|StatefulSet|redis|redis-replicas" || len(o.Fields) != 0 || o.Fields == nil {
		t.Fatalf("why: an object only the forward apply wrote is positive evidence of convergence; got %+v", o)
	}
	<-changed // the initial list

	// alice scales 3 -> 4 through the scale subresource.
	scaledObj := statefulSet(t, 4, "redis:7", nil, managedEntry{"helm-controller", "Apply", "", at, applyNoReplicas},
		managedEntry{"kubectl", "Update", "scale", "2026-11-29T10:00:20Z", scaled})
	scaledObj.SetResourceVersion("8")
	if _, err := client.Resource(stsGVR).Namespace("redis").Update(ctx, scaledObj, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitChange(t, changed, s, "8")
	o = s.Read(ctx).Observations[0]
	if len(o.Fields) != 1 || o.Fields[0].Path != "spec.replicas" || o.Fields[0].Live != int64(4) || o.Change.Attribution != observe.AttributionManagedFields || o.Change.Actor != "kubectl" {
		t.Fatalf("why: the scale is a live change, attributed from managedFields without audit events; got %+v", o)
	}

	// The forward apply forces replicas back to 3 before the merge.
	reverted := statefulSet(t, 3, "redis:7", nil, managedEntry{"helm-controller", "Apply", "", "2026-11-29T10:00:40Z", applyAll})
	reverted.SetResourceVersion("9")
	if _, err := client.Resource(stsGVR).Namespace("redis").Update(ctx, reverted, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitChange(t, changed, s, "9")
	o = s.Read(ctx).Observations[0]
	if len(o.Fields) != 1 || o.Fields[0].Cause != observe.CauseForwardApply || o.Fields[0].Manager != "helm-controller" || o.Fields[0].Live != int64(3) ||
		!o.Fields[0].HasDesired || o.Fields[0].Desired != int64(3) {
		t.Fatalf("why: a live change the forward apply wrote back is reported as reverted; got %+v", o.Fields)
	}

	// The merged 4 is applied: the controller and kubectl share the field.
	accepted := statefulSet(t, 4, "redis:7", nil, managedEntry{"helm-controller", "Apply", "", "2026-11-29T10:01:40Z", applyAll},
		managedEntry{"kubectl", "Update", "scale", "2026-11-29T10:01:20Z", scaled})
	accepted.SetResourceVersion("10")
	if _, err := client.Resource(stsGVR).Namespace("redis").Update(ctx, accepted, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitChange(t, changed, s, "10")
	o = s.Read(ctx).Observations[0]
	if len(o.Fields) != 1 || o.Fields[0].Cause != observe.CauseForwardApply || o.Fields[0].Manager != "helm-controller" || o.Fields[0].Live != int64(4) {
		t.Fatalf("why: the forward apply writing the accepted value is reported as the controller's, so the follow-up can prove it; got %+v", o.Fields)
	}
	now = now.Add(2 * ForwardApplyMemory)
	if o = s.Read(ctx).Observations[0]; len(o.Fields) != 0 {
		t.Fatalf("why: later the object has simply converged; got %+v", o.Fields)
	}

	// An object gone from the cluster takes its memory along.
	s.mu.Lock()
	s.applied["gone"] = map[string]time.Time{"spec.replicas": now}
	s.mu.Unlock()
	s.Read(ctx)
	s.mu.Lock()
	_, kept := s.applied["gone"]
	s.mu.Unlock()
	if kept {
		t.Error("why: what is remembered of a deleted object is dropped")
	}
}

func TestKubeSourceAuditJoin(t *testing.T) {
	// why: with audit events, the scale is alice's (audit-log), not just
	// kubectl's (managed-fields).
	obj := statefulSet(t, 4, "redis:7", nil, managedEntry{"helm-controller", "Apply", "", "2026-11-29T09:00:00Z", applyNoReplicas},
		managedEntry{"kubectl", "Update", "scale", "2026-11-29T10:00:10Z", scaled})
	s, _, _ := fakeKube(t, obj)
	s.Audit = &AuditLog{}
	s.Audit.Add(parseEvents(t, scaleEvent{id: "a", user: "alice", groups: []string{"sre"}, replicas: 4, at: t0.Add(10*time.Second + 300*time.Millisecond)})...)
	o := s.Read(context.Background()).Observations[0]
	if o.Change.Actor != "alice" || o.Change.Attribution != observe.AttributionAuditLog {
		t.Fatalf("change %+v", o.Change)
	}
}

func TestKubeSourceConfigErrors(t *testing.T) {
	cases := []struct{ why, glob, want string }{
		{why: "a kind must be literal to be listed", glob: "apps/v1|*|redis|x", want: "must be given literally"},
		{why: "Secrets are never observed", glob: "v1|Secret|redis|x", want: "Secrets are never observed"},
		{why: "a key has four segments", glob: "apps/v1|StatefulSet|x", want: "want apiVersion|Kind|namespace|name"},
	}
	for _, tc := range cases {
		t.Run(tc.why, func(t *testing.T) {
			s, _, _ := fakeKube(t)
			s.Objects = []string{tc.glob}
			res := s.Read(context.Background())
			if len(res.Errors) != 1 || !strings.Contains(res.Errors[0].Error(), tc.want) || !strings.Contains(res.Errors[0].Error(), "objects[0]") {
				t.Errorf("errors %v, want one naming objects[0] and %q", res.Errors, tc.want)
			}
		})
	}
}

// waitChange waits for the watch to deliver resourceVersion rv.
func waitChange(t *testing.T, changed chan observe.ObjectKey, s *KubeSource, rv string) {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case <-changed:
			if res := s.Read(context.Background()); len(res.Observations) > 0 && res.Observations[0].ResourceVersion == rv {
				return
			}
		case <-timeout:
			t.Fatalf("the watch did not deliver resourceVersion %s", rv)
		}
	}
}

func TestKubeSourceWaitsForTheAuditEvent(t *testing.T) {
	at := "2026-11-29T10:00:10Z"
	applied := statefulSet(t, 3, "redis:7", nil, managedEntry{"helm-controller", "Apply", "", at, applyAll})
	s, client, changed := fakeKube(t, applied)
	var mu sync.Mutex
	now := t0.Add(time.Minute)
	s.Now = func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	s.Audit = &AuditLog{}
	s.AuditSettle = time.Minute
	ctx := context.Background()
	if res := s.Read(ctx); len(res.Observations) != 1 {
		t.Fatalf("why: a converged object is reported at once; got %+v", res)
	}
	<-changed // the initial list

	update := func(obj *unstructured.Unstructured, rv string) {
		t.Helper()
		obj.SetResourceVersion(rv)
		if _, err := client.Resource(stsGVR).Namespace("redis").Update(ctx, obj, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		<-changed // the watch has the new version in its cache before it tells
	}
	update(statefulSet(t, 4, "redis:7", nil, managedEntry{"helm-controller", "Apply", "", at, applyNoReplicas},
		managedEntry{"kubectl", "Update", "scale", "2026-11-29T10:00:50Z", scaled}), "8")
	if res := s.Read(ctx); len(res.Observations) != 0 || res.Ignored != 1 {
		t.Fatalf("why: a fresh change without its audit event is held back, not judged authorless; got %+v", res)
	}
	s.Audit.Add(parseEvents(t, scaleEvent{id: "a", user: "alice", groups: []string{"sre"}, replicas: 4, at: t0.Add(50 * time.Second)})...)
	res := s.Read(ctx)
	if len(res.Observations) != 1 || res.Observations[0].Change.Actor != "alice" || res.Observations[0].Change.Attribution != observe.AttributionAuditLog {
		t.Fatalf("why: once the event is there the change is reported, attributed; got %+v", res)
	}

	update(statefulSet(t, 4, "redis:8", nil, managedEntry{"helm-controller", "Apply", "", at, `{"f:spec":{"f:serviceName":{}}}`},
		managedEntry{"kubectl", "Update", "scale", "2026-11-29T10:00:50Z", scaled},
		managedEntry{"kubectl-set", "Update", "", "2026-11-29T10:00:55Z", `{"f:spec":{"f:template":{"f:spec":{"f:containers":{"k:{\"name\":\"redis\"}":{"f:image":{}}}}}}}`}), "9")
	if res := s.Read(ctx); len(res.Observations) != 0 {
		t.Fatalf("why: bob's image change has no event yet and is held back; got %+v", res.Observations)
	}
	mu.Lock()
	now = now.Add(2 * time.Minute)
	mu.Unlock()
	res = s.Read(ctx)
	if len(res.Observations) != 1 || res.Observations[0].Change.Attribution != observe.AttributionUnknown {
		t.Fatalf("why: past the settle time the change is reported with what is known (two people: unknown); got %+v", res)
	}
}

func TestNewKubeSource(t *testing.T) {
	dir := t.TempDir()
	kubeconfig := filepath.Join(dir, "config")
	if err := os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:6443"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: prod, context: {cluster: c, user: u}}]
`), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		why  string
		cfg  KubeConfig
		want string
	}{
		{why: "a kubeconfig and one of its contexts make a client", cfg: KubeConfig{Kubeconfig: kubeconfig, Context: "prod"}},
		{why: "a context the kubeconfig lacks is an error naming the cluster", cfg: KubeConfig{Kubeconfig: kubeconfig, Context: "staging"}, want: "cluster prod-us-east-1: kubeconfig"},
		{why: "in-cluster config excludes a kubeconfig", cfg: KubeConfig{InCluster: true, Kubeconfig: kubeconfig}, want: "inCluster excludes kubeconfig and context"},
	}
	for _, tc := range cases {
		t.Run(tc.why, func(t *testing.T) {
			s, err := NewKubeSource("prod-us-east-1", tc.cfg)
			if tc.want != "" {
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("err %v, want %q", err, tc.want)
				}
				return
			}
			if err != nil || s.Client == nil || s.Mapper == nil {
				t.Fatalf("source %+v, err %v", s, err)
			}
		})
	}
}

// TestKubeSourceConfirmsTheNextTransitionOnly: the watch's own events, old
// and new, settle the admission records: alice's review of 7 -> 8 is
// confirmed by that write, and a forged review of the version the watch
// already saw, claiming the value already live, is not confirmed by the
// status update that follows.
func TestKubeSourceConfirmsTheNextTransitionOnly(t *testing.T) {
	at := "2026-11-29T10:00:10Z"
	s, client, changed := fakeKube(t, statefulSet(t, 3, "redis:7", nil, managedEntry{"helm-controller", "Apply", "", at, applyAll}))
	var refused []observe.AdmissionRefusal
	s.Admission = &observe.AdmissionLog{Now: s.Now, OnRefuse: func(r observe.AdmissionRefusal) { refused = append(refused, r) }}
	ctx := context.Background()
	if res := s.Read(ctx); len(res.Errors) > 0 {
		t.Fatal(res.Errors)
	}
	<-changed // the initial list
	review := func(user, rv string) observe.AdmissionRecord {
		return observe.AdmissionRecord{ReviewUID: user + "-" + rv, Operation: "UPDATE", User: user, Groups: []string{"sre"}, UID: "u-1", OldResourceVersion: rv,
			Object: observe.AuditObject{Group: "apps", Version: "v1", Resource: "statefulsets", Subresource: "scale", Namespace: "redis", Name: "redis-replicas"},
			Fields: []observe.AdmissionField{{Path: "spec.replicas", Value: int64(4)}}}
	}
	if err := s.Admission.Add(review("alice", "7")); err != nil {
		t.Fatal(err)
	}
	scaled := statefulSet(t, 4, "redis:7", nil, managedEntry{"helm-controller", "Apply", "", at, applyNoReplicas},
		managedEntry{"kubectl", "Update", "scale", "2026-11-29T10:00:20Z", scaled})
	scaled.SetResourceVersion("8")
	if _, err := client.Resource(stsGVR).Namespace("redis").Update(ctx, scaled, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitChange(t, changed, s, "8")
	if o := s.Read(ctx).Observations[0]; o.Change.Actor != "alice" || o.Change.Attribution != observe.AttributionAdmission {
		t.Fatalf("why: alice's reviewed write is hers at admission; got %+v", o.Change)
	}
	if err := s.Admission.Add(review("mallory", "8")); err != nil {
		t.Fatal(err)
	}
	status := scaled.DeepCopy()
	status.Object["status"] = map[string]any{"replicas": int64(4), "readyReplicas": int64(4)}
	status.SetResourceVersion("9")
	if _, err := client.Resource(stsGVR).Namespace("redis").Update(ctx, status, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitChange(t, changed, s, "9")
	if o := s.Read(ctx).Observations[0]; o.Change.Actor != "alice" {
		t.Errorf("why: a status update confirms no review of spec.replicas; got %+v", o.Change)
	}
	if len(refused) != 1 || refused[0].Reason != observe.RefusedChange || refused[0].User != "mallory" {
		t.Errorf("refused %+v, want mallory's review reported for its change", refused)
	}
}
