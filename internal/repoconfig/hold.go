package repoconfig

import (
	"fmt"
	"strings"
	"time"
)

// The forward controllers whose own hands-off mark a hold places.
const (
	// HoldFluxKustomize is Flux's kustomize-controller: the object carries
	// kustomize.toolkit.fluxcd.io/reconcile: disabled while held.
	HoldFluxKustomize = "flux-kustomize"
	// HoldFluxHelm is Flux's helm-controller: the object carries
	// helm.toolkit.fluxcd.io/driftDetection: disabled while held.
	HoldFluxHelm = "flux-helm"
)

// DefaultMaxHold is how long a hold lasts at most when the config does not
// say.
const DefaultMaxHold = time.Hour

// Hold opts a unit, or every unit of an environment, into holding the
// forward controller off an accepted live change until its merge is
// applied.
type Hold struct {
	Controller  string   `yaml:"controller" json:"controller" jsonschema:"required,enum=flux-kustomize,enum=flux-helm" jsonschema_description:"The forward controller whose own hands-off mark is placed on the held object: flux-kustomize (kustomize.toolkit.fluxcd.io/reconcile: disabled) or flux-helm (helm.toolkit.fluxcd.io/driftDetection: disabled)."`
	Applier     string   `yaml:"applier" json:"applier" jsonschema:"required" jsonschema_description:"The Flux object that applies the unit's objects, namespace/name: the Kustomization (flux-kustomize) or HelmRelease (flux-helm) whose status.lastAppliedRevision says the merge is applied, and which is asked to reconcile when the hold is released."`
	MaxDuration Duration `yaml:"maxDuration" json:"maxDuration,omitempty" jsonschema_description:"The longest a hold lasts (a Go duration); then it is released and the pull request says so. Default 1h."`
}

// HoldOf is the hold the unit opted into, its own or its environment's;
// nil when neither opts in.
func (c *Config) HoldOf(u *Unit) *Hold {
	if u.Hold != nil {
		return u.Hold
	}
	if e, ok := c.Environments[u.Environment]; ok && e.Hold != nil {
		return e.Hold
	}
	return nil
}

// Max is the hold's maximum duration, DefaultMaxHold when unset.
func (h *Hold) Max() time.Duration {
	if h.MaxDuration.Duration > 0 {
		return h.MaxDuration.Duration
	}
	return DefaultMaxHold
}

// ApplierRef splits Applier into its namespace and name.
func (h *Hold) ApplierRef() (namespace, name string) {
	namespace, name, _ = strings.Cut(h.Applier, "/")
	return namespace, name
}

func (h *Hold) validate(k *checker, p string) {
	if h == nil {
		return
	}
	switch h.Controller {
	case HoldFluxKustomize, HoldFluxHelm:
	case "":
		k.addf(p+".controller", "required: %s or %s", HoldFluxKustomize, HoldFluxHelm)
	default:
		k.addf(p+".controller", "%q: want %s or %s", h.Controller, HoldFluxKustomize, HoldFluxHelm)
	}
	ns, name, ok := strings.Cut(h.Applier, "/")
	if !ok || checkName(ns) != nil || checkName(name) != nil || strings.Contains(name, "/") {
		k.add(p+".applier", fmt.Errorf("%q: want namespace/name of the Flux object that applies the unit", h.Applier))
	}
	if h.MaxDuration.Duration < 0 {
		k.addf(p+".maxDuration", "must not be negative")
	}
}
