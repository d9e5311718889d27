// Package fluxdoc reads the repository's Flux Kustomizations: which one
// applies an overlay, and the variables its spec.postBuild substitutes.
//
// It reads documents and builds nothing: it must not know kustomize's
// build, the planner, the forge or any client, so that the whole-diff
// bound (internal/diffbound) and the kustomize builder read a Flux
// Kustomization the same way.
package fluxdoc
