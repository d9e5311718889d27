// Package kustomize builds a unit's kustomization with kustomize itself
// (sigs.k8s.io/kustomize/api's krusty) from the repository's files held in
// memory, finds which source sets a built field's value (a replicas: or
// images: entry, a strategic-merge or JSON 6902 patch, the resource file),
// writes an override into the unit's own overlay where that source is a
// shared base, and is the witness of a write-back: the overlay built
// before and after the edit must differ exactly in the accepted fields.
//
// It must not know GitHub, git or a cluster: it reads no disk and no
// network (a remote base is refused before kustomize could fetch it).
package kustomize
