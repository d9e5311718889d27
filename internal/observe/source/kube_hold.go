package source

import (
	"context"
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

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
	case "flux-kustomize":
		return schema.GroupVersionResource{Group: "kustomize.toolkit.fluxcd.io", Version: "v1",
			Resource: "kustomizations"}, nil
	case "flux-helm":
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

// AppliedRevision is the applier's status.lastAppliedRevision.
func (s *KubeSource) AppliedRevision(ctx context.Context, controller, ref string) (string, error) {
	gvr, ns, name, err := s.applier(controller, ref)
	if err != nil {
		return "", err
	}
	u, err := s.Client.Resource(gvr).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return "", fmt.Errorf("cluster %s: reading %s %s: %w", s.Cluster, gvr.Resource, ref, err)
	}
	rev, _, _ := unstructured.NestedString(u.Object, "status", "lastAppliedRevision")
	return rev, nil
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
