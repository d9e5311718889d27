package render

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"helm.sh/helm/v4/pkg/chart/common"
	"helm.sh/helm/v4/pkg/chart/common/util"
	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"
	"helm.sh/helm/v4/pkg/engine"
	releaseutil "helm.sh/helm/v4/pkg/release/v1/util"
	"sigs.k8s.io/yaml"

	"github.com/backflow-dev/backflow/internal/helmvalues"
	"github.com/backflow-dev/backflow/internal/witness"
)

// DefaultKubeVersion is the Kubernetes version charts are rendered for
// when the unit does not say (.Capabilities.KubeVersion).
const DefaultKubeVersion = "v1.34.0"

// helmModule is the Helm SDK this package renders with.
const helmModule = "helm.sh/helm/v4"

// Options are what a chart is rendered as: the same for the renderings a
// witness compares.
type Options struct {
	// Release and Namespace are the release name and namespace the GitOps
	// controller installs the chart as.
	Release, Namespace string
	// KubeVersion is .Capabilities.KubeVersion; DefaultKubeVersion when empty.
	KubeVersion string
	// Bounds bound one rendering; their defaults where zero.
	Bounds
}

// HelmVersion is the version of the Helm SDK this package renders with;
// a test holds it equal to go.mod's.
const HelmVersion = "v4.3.1"

// Renderer names the Helm SDK and its version, as receipts record it.
func Renderer() string { return helmModule + " " + HelmVersion }

// clusterScoped are the kinds without a namespace among those charts
// commonly render; a namespaced object rendered without one is placed in the
// release namespace, as Helm places it when it applies.
var clusterScoped = map[string]bool{
	"Namespace": true, "ClusterRole": true, "ClusterRoleBinding": true, "CustomResourceDefinition": true,
	"PersistentVolume": true, "StorageClass": true, "PriorityClass": true, "IngressClass": true, "RuntimeClass": true,
	"ValidatingWebhookConfiguration": true, "MutatingWebhookConfiguration": true, "APIService": true,
	"CSIDriver": true, "VolumeSnapshotClass": true,
	"ValidatingAdmissionPolicy": true, "ValidatingAdmissionPolicyBinding": true,
}

// Render renders the chart with the values of files, merged in order as
// Helm merges several -f files, and returns the rendered objects of the
// release's manifest (hooks left out).
//
// The rendering runs in a child process (see ChildMain) bounded by
// opts.Bounds: killed at its deadline or past its memory budget, stopped
// past its output bounds, the error then wrapping ErrBound. It renders the
// values twice there, and a chart whose two runs differ fails with an
// error wrapping ErrNondeterministic that names the fields.
func (c *Chart) Render(ctx context.Context, opts Options, files []map[string]any) (*witness.Rendering, error) {
	if opts.KubeVersion == "" {
		opts.KubeVersion = DefaultKubeVersion
	}
	opts.Bounds = opts.Bounds.orDefaults()
	if _, err := common.ParseKubeVersion(opts.KubeVersion); err != nil {
		return nil, fmt.Errorf("kubeVersion %q: %w", opts.KubeVersion, err)
	}
	objects, err := children.render(ctx, c, opts, userValues(files))
	if err != nil {
		return nil, fmt.Errorf("chart %s: %w", c.Name, err)
	}
	return &witness.Rendering{
		Chart: c.Name, Version: c.Version, Digest: c.Digest, Renderer: Renderer(),
		Release: opts.Release, Namespace: opts.Namespace, KubeVersion: opts.KubeVersion,
		Objects: objects,
	}, nil
}

// renderHere renders the chart in this process, as a child does: twice
// when the first run called a function of chance or the clock (see run),
// from fresh copies of the values (read from their JSON), refusing output
// past the bounds and two runs that differ.
func (c *Chart) renderHere(ctx context.Context, opts Options, values []byte) (map[string]map[string]any, error) {
	drew := false
	first, err := c.renderRun(ctx, opts, values, firstRun, &drew)
	if err != nil {
		return nil, err
	}
	objects, err := collect(first, opts)
	if err != nil || !drew {
		return objects, err
	}
	second, err := c.renderRun(ctx, opts, values, secondRun, &drew)
	if err != nil {
		return nil, err
	}
	if maps.Equal(first, second) {
		return objects, nil
	}
	again, err := collect(second, opts)
	if err != nil {
		return nil, err
	}
	var fields []string
	for _, ch := range witness.Diff(&witness.Rendering{Objects: objects}, &witness.Rendering{Objects: again}) {
		fields = append(fields, strings.TrimSpace(ch.Object+" "+ch.Field))
	}
	if len(fields) > 0 {
		return nil, &nondeterministic{fields: fields}
	}
	return objects, nil
}

// maxNamedFields bounds the fields a nondeterministic chart's error names.
const maxNamedFields = 10

// nondeterministic is a chart whose two runs of the same values differ.
type nondeterministic struct{ fields []string }

func (e *nondeterministic) Error() string {
	named := e.fields[:min(len(e.fields), maxNamedFields)]
	more := ""
	if n := len(e.fields) - len(named); n > 0 {
		more = fmt.Sprintf(" and %d more", n)
	}
	return fmt.Sprintf("%v: two renderings of the same values differ (random or clock functions), "+
		"so no decision can rest on them: %s%s",
		ErrNondeterministic, strings.Join(named, ", "), more)
}

func (e *nondeterministic) Unwrap() error { return ErrNondeterministic }

// renderRun is one run of the templates: the rendered manifest files (of
// .yaml, .yml and .json templates), their bytes bounded.
// *drew is set when the run calls a function of chance or the clock.
func (c *Chart) renderRun(ctx context.Context, opts Options, values []byte, r run, drew *bool) (
	map[string]string, error) {
	parsed, err := common.ParseKubeVersion(opts.KubeVersion)
	if err != nil {
		return nil, fmt.Errorf("kubeVersion %q: %w", opts.KubeVersion, err)
	}
	caps := common.DefaultCapabilities.Copy()
	caps.KubeVersion = *parsed
	ch, err := c.load()
	if err != nil {
		return nil, err
	}
	var vals map[string]any
	if err := json.Unmarshal(values, &vals); err != nil {
		return nil, fmt.Errorf("values: %w", err)
	}
	if vals == nil {
		vals = map[string]any{}
	}
	if err := chartutil.ProcessDependencies(ch, vals); err != nil {
		return nil, fmt.Errorf("dependencies: %w", err)
	}
	rv, err := util.ToRenderValues(
		ch,
		vals,
		common.ReleaseOptions{Name: opts.Release, Namespace: opts.Namespace, IsInstall: true},
		caps,
	)
	if err != nil {
		return nil, fmt.Errorf("values: %w", err)
	}
	out, err := engine.Engine{CustomTemplateFuncs: r.funcs(drew)}.RenderWithContext(ctx, ch, rv)
	if err != nil {
		return nil, err
	}
	var total int64
	for name, text := range out {
		if !strings.HasSuffix(name, ".yaml") && !strings.HasSuffix(name, ".yml") && !strings.HasSuffix(name, ".json") {
			delete(out, name)
			continue
		}
		if total += int64(len(text)); total > opts.MaxOutputBytes {
			return nil, outputBytesBound(opts.Bounds, total)
		}
	}
	return out, nil
}

// collect reads the rendered objects of the release's manifest (hooks left
// out) from the rendered files, the documents bounded.
func collect(out map[string]string, opts Options) (map[string]map[string]any, error) {
	objects := map[string]map[string]any{}
	docs := 0
	for _, name := range slices.Sorted(maps.Keys(out)) {
		split := releaseutil.SplitManifests(out[name])
		if docs += len(split); docs > opts.MaxObjects {
			return nil, objectsBound(opts.Bounds)
		}
		for _, k := range slices.Sorted(maps.Keys(split)) {
			obj, err := decodeObject(split[k])
			if err != nil {
				return nil, fmt.Errorf("%s: %w", name, err)
			}
			if obj == nil || isHook(obj) {
				continue
			}
			key, err := objectKey(obj, opts.Namespace)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", name, err)
			}
			if _, dup := objects[key]; dup {
				return nil, fmt.Errorf("%s renders %s twice", name, key)
			}
			objects[key] = obj
		}
	}
	return objects, nil
}

// isHook reports a Helm hook (annotated helm.sh/hook): hooks are not part of
// the release's manifest, which is what a GitOps controller keeps applied.
func isHook(obj map[string]any) bool {
	md, _ := obj["metadata"].(map[string]any)
	ann, _ := md["annotations"].(map[string]any)
	_, ok := ann["helm.sh/hook"]
	return ok
}

// decodeObject reads one rendered YAML document; nil when it is empty.
func decodeObject(doc string) (map[string]any, error) {
	if strings.TrimSpace(doc) == "" {
		return nil, nil
	}
	js, err := yaml.YAMLToJSON([]byte(doc))
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if v == nil {
		return nil, nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("a rendered document is not a mapping")
	}
	// A rendered document is a Kubernetes object, whose integers stay
	// integers (helmvalues.Plain).
	return helmvalues.Plain(m).(map[string]any), nil
}

func objectKey(obj map[string]any, releaseNS string) (string, error) {
	api, _ := obj["apiVersion"].(string)
	kind, _ := obj["kind"].(string)
	md, _ := obj["metadata"].(map[string]any)
	name, _ := md["name"].(string)
	ns, _ := md["namespace"].(string)
	if api == "" || kind == "" || name == "" {
		return "", fmt.Errorf("a rendered object lacks apiVersion, kind or metadata.name")
	}
	if ns == "" && !clusterScoped[kind] {
		ns = releaseNS
	}
	return witness.Key(api, kind, ns, name), nil
}

// userValues layers the values files in order, as Helm layers -f files
// (helmvalues.Layer: its nulls kept, so that coalescing with the chart's
// defaults deletes a default a file nulls), with numbers typed as Helm's
// reader has them (helmvalues.Typed).
func userValues(files []map[string]any) map[string]any {
	typed := make([]map[string]any, len(files))
	for i, f := range files {
		typed[i] = helmvalues.Typed(f).(map[string]any)
	}
	return helmvalues.Layer(typed...)
}

// mergedValues is what the templates see of the values files: the user's
// values coalesced with the chart's defaults.
func (c *Chart) mergedValues(files []map[string]any) (common.Values, error) {
	ch, err := c.load()
	if err != nil {
		return nil, err
	}
	merged, err := util.CoalesceValues(ch, userValues(files))
	if err != nil {
		return nil, fmt.Errorf("merging the values: %w", err)
	}
	return merged, nil
}
