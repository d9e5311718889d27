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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"
)

var stsGVR = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "statefulsets"}

// render renders the repository's chart (charts/redis) with a values file,
// as `helm template redis charts/redis -n redis -f values.yaml` would.
func render(valuesYAML []byte) ([]*unstructured.Unstructured, error) {
	ch, err := loader.Load("repo/charts/redis")
	if err != nil {
		return nil, fmt.Errorf("loading the chart: %w", err)
	}
	vals, err := chartutil.ReadValues(valuesYAML)
	if err != nil {
		return nil, fmt.Errorf("reading the values: %w", err)
	}
	rv, err := chartutil.ToRenderValues(ch, vals, chartutil.ReleaseOptions{Name: "redis", Namespace: namespace, IsInstall: true}, chartutil.DefaultCapabilities)
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
		for _, doc := range strings.Split(files[n], "\n---") {
			if strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(doc), "---")) == "" {
				continue
			}
			// Through JSON, so numbers are int64 as the API machinery has them.
			js, err := yaml.YAMLToJSON([]byte(doc))
			if err != nil {
				return nil, fmt.Errorf("%s: %w", n, err)
			}
			obj := &unstructured.Unstructured{}
			if err := obj.UnmarshalJSON(js); err != nil {
				return nil, fmt.Errorf("%s: %w", n, err)
			}
			out = append(out, obj)
		}
	}
	return out, nil
}

// forwardApply is the GitOps controller: render the chart with the values
// file on the default branch and server-side apply every object with force
// as helm-controller, as Flux does.
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
	if len(objs) != 2 {
		t.Fatalf("the chart rendered %d objects, want the two StatefulSets", len(objs))
	}
	d := c.dynamic(t, userFlux)
	for _, o := range objs {
		_, err := d.Resource(stsGVR).Namespace(namespace).Apply(context.Background(), o.GetName(), o,
			metav1.ApplyOptions{FieldManager: gitopsManager, Force: true})
		if err != nil {
			t.Fatalf("forward apply of %s: %v", o.GetName(), err)
		}
	}
}

func TestRenderSampleChart(t *testing.T) {
	// why: the forward apply is only as good as the rendering; the values
	// the policy maps must reach the fields it maps them to.
	objs, err := render([]byte("image: {registry: r, repository: redis, tag: \"7\"}\nmaster: {count: 1}\nreplica: {replicaCount: 3}\n"))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int64{}
	for _, o := range objs {
		n, _, _ := unstructured.NestedInt64(o.Object, "spec", "replicas")
		got[o.GetName()] = n
		cs, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
		if img := cs[0].(map[string]any)["image"]; img != "r/redis:7" {
			t.Errorf("%s: image %v", o.GetName(), img)
		}
	}
	if got["redis-master"] != 1 || got["redis-replicas"] != 3 {
		t.Errorf("replicas %v", got)
	}
}
