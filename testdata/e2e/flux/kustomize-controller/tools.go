//go:build tools

// Package kustomizecontroller pins Flux's kustomize-controller, the forward
// apply the live end-to-end test runs against. The controller's own module
// replaces its api module with a folder its module zip leaves out, so it is
// built from here, where both are required at the same version. Nothing here
// is compiled into backflow.
package kustomizecontroller

import (
	_ "github.com/fluxcd/kustomize-controller"
	_ "github.com/fluxcd/kustomize-controller/api/v1"
)
