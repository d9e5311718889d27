//go:build tools

// Package helmcontroller pins Flux's helm-controller, which installs and
// upgrades the live end-to-end test's HelmRelease. The controller's own
// module replaces its api module with a folder its module zip leaves out, so
// it is built from here, where both are required at the same version.
// Nothing here is compiled into backflow.
package helmcontroller

import (
	_ "github.com/fluxcd/helm-controller"
	_ "github.com/fluxcd/helm-controller/api/v2"
)
