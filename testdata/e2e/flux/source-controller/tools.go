//go:build tools

// Package sourcecontroller pins Flux's source-controller, which serves the
// live end-to-end test's repository to kustomize-controller as an artifact.
// The controller's own module replaces its api module with a folder its
// module zip leaves out, so it is built from here, where both are required at
// the same version. Nothing here is compiled into backflow.
package sourcecontroller

import (
	_ "github.com/fluxcd/source-controller"
	_ "github.com/fluxcd/source-controller/api/v1"
)
