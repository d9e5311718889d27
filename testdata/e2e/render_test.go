package e2e

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"helm.sh/helm/v3/pkg/releaseutil"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"sigs.k8s.io/yaml"
)

var stsGVR = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "statefulsets"}

// kubeVersion is the API server's, as the GitOps controller reads it for
// .Capabilities.
const kubeVersion = "v1.34.4"

// render renders the repository's chart (charts/redis: bitnami/redis with
// its common dependency) with a values file, as
// `helm template redis charts/redis -n redis -f values.yaml` would, with
// the Helm SDK of the GitOps controllers (v3, not backflow's v4): the
// objects of the release's manifest, hooks left out.
func render(valuesYAML []byte) ([]*unstructured.Unstructured, error) {
	return renderChart("repo/charts/redis", "redis", namespace, valuesYAML)
}

// renderChart renders the chart at dir as release in ns with a values
// file (checked against the chart's values.schema.json and its
// kubeVersion), as `helm template` would: the objects of the release's
// manifest, hooks left out.
func renderChart(dir, release, ns string, valuesYAML []byte) ([]*unstructured.Unstructured, error) {
	ch, err := loader.Load(dir)
	if err != nil {
		return nil, fmt.Errorf("loading the chart: %w", err)
	}
	vals, err := chartutil.ReadValues(valuesYAML)
	if err != nil {
		return nil, fmt.Errorf("reading the values: %w", err)
	}
	if err := chartutil.ProcessDependenciesWithMerge(ch, vals); err != nil {
		return nil, fmt.Errorf("the chart's dependencies: %w", err)
	}
	caps := chartutil.DefaultCapabilities.Copy()
	kv, err := chartutil.ParseKubeVersion(kubeVersion)
	if err != nil {
		return nil, err
	}
	caps.KubeVersion = *kv
	if r := ch.Metadata.KubeVersion; r != "" && !chartutil.IsCompatibleRange(r, kubeVersion) {
		return nil, fmt.Errorf("chart %s needs Kubernetes %s, the API server is %s", ch.Name(), r, kubeVersion)
	}
	rv, err := chartutil.ToRenderValuesWithSchemaValidation(ch, vals, chartutil.ReleaseOptions{Name: release, Namespace: ns, IsInstall: true}, caps, false)
	if err != nil {
		return nil, err
	}
	files, err := engine.Render(ch, rv)
	if err != nil {
		return nil, fmt.Errorf("rendering the chart: %w", err)
	}
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	var out []*unstructured.Unstructured
	for _, n := range names {
		if !strings.HasSuffix(n, ".yaml") {
			continue
		}
		docs := releaseutil.SplitManifests(files[n])
		keys := make([]string, 0, len(docs))
		for k := range docs {
			keys = append(keys, k)
		}
		sort.Sort(releaseutil.BySplitManifestsOrder(keys))
		for _, k := range keys {
			if strings.TrimSpace(docs[k]) == "" {
				continue
			}
			// Through JSON, so numbers are int64 as the API machinery has them.
			js, err := yaml.YAMLToJSON([]byte(docs[k]))
			if err != nil {
				return nil, fmt.Errorf("%s: %w", n, err)
			}
			if strings.TrimSpace(string(js)) == "null" {
				continue
			}
			obj := &unstructured.Unstructured{}
			if err := obj.UnmarshalJSON(js); err != nil {
				return nil, fmt.Errorf("%s: %w", n, err)
			}
			if _, hook := obj.GetAnnotations()["helm.sh/hook"]; hook {
				continue
			}
			out = append(out, obj)
		}
	}
	return out, nil
}

// forwardApply is the GitOps controller: render the chart with the values
// file on the default branch and server-side apply every object of the
// release with force as helm-controller, as Flux does.
func forwardApply(t *testing.T, c *cluster, h *hubClient) {
	t.Helper()
	values, err := h.file(t, valuesRel)
	if err != nil {
		t.Fatalf("reading %s on main: %v", valuesRel, err)
	}
	objs, err := render(values)
	if err != nil {
		t.Fatal(err)
	}
	sts := 0
	for _, o := range objs {
		if o.GetKind() == "StatefulSet" {
			sts++
		}
	}
	if sts != 2 {
		t.Fatalf("the chart rendered %d StatefulSets among %d objects, want the master and the replicas", sts, len(objs))
	}
	applyObjects(t, c.restConfig(userFlux), gitopsManager, namespace, objs)
}

// applyObjects server-side applies objs with force as manager, with the
// client config rc, in their order; a namespaced object with no namespace
// goes to ns. An object the API server refuses fails the test with its
// message.
func applyObjects(t *testing.T, rc *rest.Config, manager, ns string, objs []*unstructured.Unstructured) {
	t.Helper()
	dc, err := discovery.NewDiscoveryClientForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))
	d, err := dynamic.NewForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		gvk := o.GroupVersionKind()
		m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			t.Fatalf("applying %s %s: %v", gvk.Kind, o.GetName(), err)
		}
		ri := d.Resource(m.Resource)
		var r interface {
			Apply(context.Context, string, *unstructured.Unstructured, metav1.ApplyOptions, ...string) (*unstructured.Unstructured, error)
		} = ri
		if m.Scope.Name() == meta.RESTScopeNameNamespace {
			if o.GetNamespace() == "" {
				o.SetNamespace(ns)
			}
			r = ri.Namespace(o.GetNamespace())
		}
		if _, err := r.Apply(context.Background(), o.GetName(), o, metav1.ApplyOptions{FieldManager: manager, Force: true}); err != nil {
			t.Fatalf("applying %s %s/%s: %v", gvk.Kind, o.GetNamespace(), o.GetName(), err)
		}
	}
}

func TestRenderSampleChart(t *testing.T) {
	// why: the forward apply is only as good as the rendering; the values
	// the policy maps must reach the fields it maps them to, and the
	// release must be the whole chart, not only its StatefulSets.
	objs, err := render([]byte("image: {registry: docker.io, repository: bitnami/redis, tag: 7.4.2-debian-12-r0}\nauth: {existingSecret: redis-auth}\nmaster: {count: 1}\nreplica: {replicaCount: 3}\n"))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int64{}
	kinds := map[string]bool{}
	for _, o := range objs {
		kinds[o.GetKind()] = true
		if o.GetKind() != "StatefulSet" {
			continue
		}
		n, _, _ := unstructured.NestedInt64(o.Object, "spec", "replicas")
		got[o.GetName()] = n
		cs, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
		if img := cs[0].(map[string]any)["image"]; img != "docker.io/bitnami/redis:7.4.2-debian-12-r0" {
			t.Errorf("%s: image %v", o.GetName(), img)
		}
	}
	if got["redis-master"] != 1 || got["redis-replicas"] != 3 {
		t.Errorf("replicas %v", got)
	}
	for _, k := range []string{"ConfigMap", "Service", "ServiceAccount", "StatefulSet"} {
		if !kinds[k] {
			t.Errorf("no %s rendered: kinds %v", k, kinds)
		}
	}
}
