package plan

import (
	"fmt"
	"slices"
	"strings"

	"github.com/backflow-dev/backflow/internal/repoconfig"
	"github.com/backflow-dev/backflow/internal/values"
)

// readKustomizeUnits reads every kustomize unit before write-backs are
// built concurrently, so that whether a base may be edited reads the
// units' builds without reading any of them then.
func (p *planner) readKustomizeUnits() {
	for i := range p.cfg.Units {
		if u := &p.cfg.Units[i]; u.Kustomization != "" {
			p.unitValues(u)
		}
	}
}

// baseAgreed says whether file, a file the kustomize unit u's overlay
// builds from outside the overlay, may be edited for f on u's authority,
// as a values file shared between environments is: when every other
// environment whose kustomize unit's overlay builds file has an allowed
// decision in this plan for the same field of an object of the same
// apiVersion, kind and name, to the same live value, and there is at
// least one such environment. It returns those
// environments, for the receipt's reason. A unit of another environment
// whose overlay could not be read may build file: no agreement then.
func (p *planner) baseAgreed(u *repoconfig.Unit, file string, f KustomizeField) ([]string, bool) {
	var envs []string
	for i := range p.cfg.Units {
		o := &p.cfg.Units[i]
		if o.Environment == u.Environment || o.Kustomization == "" {
			continue
		}
		ov := p.values[o]
		if ov == nil || ov.kust == nil {
			return nil, false
		}
		if _, builds := ov.kust.files[file]; !builds {
			continue
		}
		if !p.allowsSame(o, f) {
			return nil, false
		}
		if !slices.Contains(envs, o.Environment) {
			envs = append(envs, o.Environment)
		}
	}
	// A base no other environment's unit builds may still be built by
	// overlays backflow does not manage: the override stays the rule.
	return envs, len(envs) > 0
}

// allowsSame reports whether unit o has an allowed decision for f's field
// of an object of f's apiVersion, kind and name, to f's live value.
func (p *planner) allowsSame(o *repoconfig.Unit, f KustomizeField) bool {
	want := f.Object
	for _, pd := range p.allowed[o] {
		k := pd.obs.Object
		if k.APIVersion != want.APIVersion || k.Kind != want.Kind || k.Name != want.Name {
			continue
		}
		for _, fs := range pd.fields {
			if fs.f.Path == f.Field && values.Equal(fs.live, f.Live) {
				return true
			}
		}
	}
	return false
}

// baseWhy is the receipt's reason for a base edited with every building
// environment's agreement.
func baseWhy(file string, envs []string) string {
	return fmt.Sprintf("Shared base: %s is also built by units of %s, each allowed the same value for this field in "+
		"this plan, so the base itself is edited.", file, strings.Join(envs, ", "))
}
