package source

import (
	"context"
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/backflow-dev/backflow/internal/hold"
	"github.com/backflow-dev/backflow/internal/observe"
)

// This file is the kube source's side of holds: it lists, from the watch's
// cache, the watched objects that carry a hold's annotations, and applies
// the JSON merge patches the hold decides (annotations only; the chart's
// ValidatingAdmissionPolicy refuses anything else from backflow's service
// account) to a watched object or to the Flux object that applies it.

// holdAnnotations are the annotations that make an object's hold worth
// reading: backflow's record and the Flux controllers' marks.
var holdAnnotations = []string{
	"backflow.dev/hold", "kustomize.toolkit.fluxcd.io/reconcile", "helm.toolkit.fluxcd.io/driftDetection",
}

// patchOptions names backflow as the field manager of the hold's
// annotations (which the watch never reports as a change).
var patchOptions = metav1.PatchOptions{FieldManager: "backflow"}

// HeldObject is a watched object that carries a hold's annotation.
type HeldObject struct {
	Object      observe.ObjectKey
	UID         string
	Annotations map[string]string
}

// HeldObjects lists the watched objects in the cache that carry any of the
// hold's annotations, starting the watches when they were not.
func (s *KubeSource) HeldObjects(ctx context.Context) ([]HeldObject, error) {
	if err := s.Start(ctx); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []HeldObject
	for _, w := range s.watches {
		for _, it := range w.informer.GetStore().List() {
			u, ok := it.(*unstructured.Unstructured)
			if !ok || !matchAny(w.patterns, unstructuredKey(u)) {
				continue
			}
			ann := u.GetAnnotations()
			for _, a := range holdAnnotations {
				if _, has := ann[a]; has {
					out = append(out, HeldObject{Object: unstructuredKey(u), UID: string(u.GetUID()), Annotations: ann})
					break
				}
			}
		}
	}
	return out, nil
}

// PatchObject applies a JSON merge patch to a watched object.
func (s *KubeSource) PatchObject(ctx context.Context, k observe.ObjectKey, patch []byte) error {
	if err := s.Start(ctx); err != nil {
		return err
	}
	s.mu.Lock()
	watched := false
	for _, w := range s.watches {
		watched = watched || matchAny(w.patterns, k)
	}
	s.mu.Unlock()
	if !watched {
		return fmt.Errorf("cluster %s: %s is not a watched object", s.Cluster, k)
	}
	group, version := observe.SplitAPIVersion(k.APIVersion)
	m, err := s.Mapper.RESTMapping(schema.GroupKind{Group: group, Kind: k.Kind}, version)
	if err != nil {
		return fmt.Errorf("cluster %s: %s: %w", s.Cluster, k, err)
	}
	ri := s.Client.Resource(m.Resource).Namespace(k.Namespace)
	_, err = ri.Patch(ctx, k.Name, types.MergePatchType, patch, patchOptions)
	if err != nil {
		return fmt.Errorf("cluster %s: patching %s: %w", s.Cluster, k, err)
	}
	return nil
}

// applierResource is the resource of a Flux controller's applier.
func applierResource(controller string) (schema.GroupVersionResource, error) {
	switch controller {
	case hold.FluxKustomize:
		return kustomizationGVR, nil
	case hold.FluxHelm:
		return schema.GroupVersionResource{Group: "helm.toolkit.fluxcd.io", Version: "v2", Resource: "helmreleases"}, nil
	}
	return schema.GroupVersionResource{}, fmt.Errorf("controller %q has no applier", controller)
}

func (s *KubeSource) applier(controller, ref string) (schema.GroupVersionResource, string, string, error) {
	gvr, err := applierResource(controller)
	if err != nil {
		return gvr, "", "", err
	}
	ns, name, ok := strings.Cut(ref, "/")
	if !ok || ns == "" || name == "" {
		return gvr, "", "", fmt.Errorf("applier %q: want namespace/name", ref)
	}
	if s.Client == nil {
		return gvr, "", "", fmt.Errorf("cluster %s: not started", s.Cluster)
	}
	return gvr, ns, name, nil
}

// AppliedRevision is the revision of the source applied around the objects
// of controller's applier ref. For flux-kustomize it is the Kustomization's
// status.lastAppliedRevision. A v2 HelmRelease reports no commit, so for
// flux-helm it is the lastAppliedRevision of the Kustomization that applies
// the HelmRelease (named by kustomize-controller's labels on it), once
// helm-controller has acted on what that commit says (helmActed); until
// then the answer is an error wrapping hold.ErrNotApplied.
func (s *KubeSource) AppliedRevision(ctx context.Context, controller, ref string) (string, error) {
	gvr, ns, name, err := s.applier(controller, ref)
	if err != nil {
		return "", err
	}
	u, err := s.Client.Resource(gvr).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return "", fmt.Errorf("cluster %s: reading %s %s: %w", s.Cluster, gvr.Resource, ref, err)
	}
	if controller == hold.FluxHelm {
		return s.helmApplied(ctx, u)
	}
	rev, _, _ := unstructured.NestedString(u.Object, "status", "lastAppliedRevision")
	return rev, nil
}

// The labels kustomize-controller sets on every object it applies.
const (
	kustomizeNameLabel      = "kustomize.toolkit.fluxcd.io/name"
	kustomizeNamespaceLabel = "kustomize.toolkit.fluxcd.io/namespace"
)

var (
	kustomizationGVR = schema.GroupVersionResource{Group: "kustomize.toolkit.fluxcd.io", Version: "v1",
		Resource: "kustomizations"}
	helmChartGVR = schema.GroupVersionResource{Group: "source.toolkit.fluxcd.io", Version: "v1", Resource: "helmcharts"}
)

// helmApplied is the revision the Kustomization that applies the
// HelmRelease hr has applied, once helm-controller has acted on it. The
// HelmChart is read only when its chart is built from that Kustomization's
// own GitRepository: then the merge may have changed the chart's files
// (its values.yaml) rather than the HelmRelease.
func (s *KubeSource) helmApplied(ctx context.Context, hr *unstructured.Unstructured) (string, error) {
	what := "HelmRelease " + hr.GetNamespace() + "/" + hr.GetName()
	labels := hr.GetLabels()
	kname, kns := labels[kustomizeNameLabel], labels[kustomizeNamespaceLabel]
	if kname == "" || kns == "" {
		// Fails closed: without the Kustomization the commit the release
		// runs is unknown, so the hold stays until close, expiry or its
		// maximum.
		return "", fmt.Errorf("cluster %s: %s has no %s and %s labels: no Flux Kustomization applies it, "+
			"so the commit it runs is not known", s.Cluster, what, kustomizeNameLabel, kustomizeNamespaceLabel)
	}
	ks, err := s.Client.Resource(kustomizationGVR).Namespace(kns).Get(ctx, kname, metav1.GetOptions{})
	if err != nil {
		return "", fmt.Errorf("cluster %s: reading the Kustomization %s/%s that applies %s: %w", s.Cluster, kns, kname,
			what, err)
	}
	rev, _, _ := unstructured.NestedString(ks.Object, "status", "lastAppliedRevision")
	if rev == "" {
		return "", nil
	}
	var chart *unstructured.Unstructured
	if ref, ok := chartFromSourceOf(hr, ks); ok {
		if ref == "" {
			return "", fmt.Errorf("cluster %s: %s: helm-controller has not created its HelmChart: %w", s.Cluster, what,
				hold.ErrNotApplied)
		}
		cns, cname, _ := strings.Cut(ref, "/")
		chart, err = s.Client.Resource(helmChartGVR).Namespace(cns).Get(ctx, cname, metav1.GetOptions{})
		if err != nil {
			return "", fmt.Errorf("cluster %s: reading the HelmChart %s of %s: %w", s.Cluster, ref, what, err)
		}
	}
	if err := helmActed(hr, chart, rev); err != nil {
		return "", fmt.Errorf("cluster %s: %s: Kustomization %s/%s applied %s, %w", s.Cluster, what, kns, kname, rev, err)
	}
	return rev, nil
}

// chartFromSourceOf says whether the chart of the HelmRelease hr is built
// from the GitRepository the Kustomization ks applies, and names its
// HelmChart (status.helmChart, "namespace/name"; empty before
// helm-controller created it). A chart from a chart repository, an OCI
// repository or another GitRepository is not changed by a commit of ks's
// source.
func chartFromSourceOf(hr, ks *unstructured.Unstructured) (string, bool) {
	kind, _, _ := unstructured.NestedString(hr.Object, "spec", "chart", "spec", "sourceRef", "kind")
	name, _, _ := unstructured.NestedString(hr.Object, "spec", "chart", "spec", "sourceRef", "name")
	ns, _, _ := unstructured.NestedString(hr.Object, "spec", "chart", "spec", "sourceRef", "namespace")
	if ns == "" {
		ns = hr.GetNamespace()
	}
	kkind, _, _ := unstructured.NestedString(ks.Object, "spec", "sourceRef", "kind")
	kname, _, _ := unstructured.NestedString(ks.Object, "spec", "sourceRef", "name")
	kns, _, _ := unstructured.NestedString(ks.Object, "spec", "sourceRef", "namespace")
	if kns == "" {
		kns = ks.GetNamespace()
	}
	if kind != "GitRepository" || kind != kkind || name != kname || ns != kns {
		return "", false
	}
	ref, _, _ := unstructured.NestedString(hr.Object, "status", "helmChart")
	return ref, true
}

// helmActed says whether helm-controller has acted on the HelmRelease hr
// as the commit rev left it: it reconciled hr's current generation and is
// Ready at it (a merge that changed hr's spec, its values among them, bumps
// the generation; while helm-controller waits for the chart it does not
// record the generation as observed). When chart is not nil (hr's HelmChart
// is built from rev's repository), the chart must also be built from rev
// and be the version hr last released: a merge that changed only the
// chart's files leaves hr's generation as it was. Not acted: an error
// wrapping hold.ErrNotApplied, saying what is behind.
func helmActed(hr, chart *unstructured.Unstructured, rev string) error {
	gen := hr.GetGeneration()
	if og, _, _ := unstructured.NestedInt64(hr.Object, "status", "observedGeneration"); og != gen {
		return fmt.Errorf("helm-controller has not reconciled its generation %d (observed %d): %w", gen, og,
			hold.ErrNotApplied)
	}
	if err := readyAt(hr, gen); err != nil {
		return fmt.Errorf("helm-controller has not released its generation %d: %w", gen, err)
	}
	if chart == nil {
		return nil
	}
	cname := "HelmChart " + chart.GetNamespace() + "/" + chart.GetName()
	built, _, _ := unstructured.NestedString(chart.Object, "status", "observedSourceArtifactRevision")
	if built != rev {
		return fmt.Errorf("source-controller has built %s from %s, not from it yet: %w", cname, orNothing(built),
			hold.ErrNotApplied)
	}
	cgen := chart.GetGeneration()
	if og, _, _ := unstructured.NestedInt64(chart.Object, "status", "observedGeneration"); og != cgen {
		return fmt.Errorf("source-controller has not reconciled %s's generation %d (observed %d): %w", cname, cgen, og,
			hold.ErrNotApplied)
	}
	if err := readyAt(chart, cgen); err != nil {
		return fmt.Errorf("%s has no chart built from it: %w", cname, err)
	}
	version, _, _ := unstructured.NestedString(chart.Object, "status", "artifact", "revision")
	attempted, _, _ := unstructured.NestedString(hr.Object, "status", "lastAttemptedRevision")
	latest := latestRelease(hr)
	if version == "" || attempted != version || latest == nil || latest["chartVersion"] != version ||
		latest["status"] != "deployed" {
		return fmt.Errorf("helm-controller has not released %s's chart %s (last attempted %s, latest release %v): %w",
			cname, orNothing(version), orNothing(attempted), releaseOf(latest), hold.ErrNotApplied)
	}
	return nil
}

// readyAt says whether obj's Ready condition is True for its generation
// gen; otherwise an error wrapping hold.ErrNotApplied with the condition.
func readyAt(obj *unstructured.Unstructured, gen int64) error {
	conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] != "Ready" {
			continue
		}
		og, _, _ := unstructured.NestedInt64(m, "observedGeneration")
		if m["status"] == "True" && og == gen {
			return nil
		}
		return fmt.Errorf("Ready is %v at generation %d (%v: %v): %w", m["status"], og, m["reason"], m["message"],
			hold.ErrNotApplied)
	}
	return fmt.Errorf("no Ready condition: %w", hold.ErrNotApplied)
}

// latestRelease is the snapshot of the HelmRelease's newest Helm release
// (the highest version in status.history), or nil.
func latestRelease(hr *unstructured.Unstructured) map[string]any {
	history, _, _ := unstructured.NestedSlice(hr.Object, "status", "history")
	var latest map[string]any
	var top int64 = -1
	for _, h := range history {
		m, _ := h.(map[string]any)
		if v, _, _ := unstructured.NestedInt64(m, "version"); m != nil && v > top {
			latest, top = m, v
		}
	}
	return latest
}

// releaseOf names a release snapshot for an error: its chart version and
// status.
func releaseOf(s map[string]any) string {
	if s == nil {
		return "none"
	}
	return fmt.Sprintf("%v %v", s["chartVersion"], s["status"])
}

func orNothing(s string) string {
	if s == "" {
		return "nothing"
	}
	return s
}

// PatchApplier applies a JSON merge patch to the applier.
func (s *KubeSource) PatchApplier(ctx context.Context, controller, ref string, patch []byte) error {
	gvr, ns, name, err := s.applier(controller, ref)
	if err != nil {
		return err
	}
	ri := s.Client.Resource(gvr).Namespace(ns)
	if _, err := ri.Patch(ctx, name, types.MergePatchType, patch, patchOptions); err != nil {
		return fmt.Errorf("cluster %s: patching %s %s: %w", s.Cluster, gvr.Resource, ref, err)
	}
	return nil
}
