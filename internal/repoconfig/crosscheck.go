package repoconfig

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"

	"github.com/backflow-dev/backflow/internal/policy"
)

// Places splits an error that lists several invalid places of one file
// into one problem per place, so that problems are counted as listed.
func Places(err error) []error {
	var out []error
	var ce *Error
	var pe *policy.ValidationError
	switch {
	case errors.As(err, &ce) && len(ce.Errors) > 1:
		for _, fe := range ce.Errors {
			out = append(out, &Error{File: ce.File, Errors: []FieldError{fe}})
		}
	case errors.As(err, &pe) && len(pe.Errors) > 1:
		for _, fe := range pe.Errors {
			out = append(out, &policy.ValidationError{File: pe.File, Errors: []policy.FieldError{fe}})
		}
	default:
		out = append(out, err)
	}
	return out
}

// CrossCheck warns about a policy and config that do not fit together yet:
// a policy entry that applies to a unit names a valuePath the unit's values
// (unitValues[i] for cfg.Units[i], complete only when every file was read)
// do not hold yet, or the config and the policy disagree on role names.
func CrossCheck(cfg *Config, p *policy.Policy, unitValues [][]map[string]any) []string {
	var warnings []string
	ruleRoles := map[string]bool{}
	for ri, r := range p.Rules {
		ruleRoles[r.Role] = true
		if _, ok := cfg.Roles[r.Role]; !ok {
			warnings = append(warnings, fmt.Sprintf("%s: spec.rules[%d]: role %s is not in %s roles, so nobody holds it",
				cfg.Policy, ri, r.Role, Path))
		}
		for ai, a := range r.MayAccept {
			for ui, u := range cfg.Units {
				if !accepts(a, u) || len(unitValues[ui]) < len(u.ValuesFiles) {
					continue // a unit whose values could not be read is a problem already
				}
				switch {
				case u.Documents() && a.ValuePath != "":
					warnings = append(
						warnings,
						fmt.Sprintf(
							"%s: spec.rules[%d].mayAccept[%d]: names valuePath %s, but units[%d] (%s in %s) writes fields as themselves: "+
								"the entry authorizes nothing there",
							cfg.Policy,
							ri,
							ai,
							a.ValuePath,
							ui,
							u.Name,
							u.Environment,
						),
					)
					continue
				case u.Documents():
					continue
				case a.ValuePath == "":
					warnings = append(
						warnings,
						fmt.Sprintf(
							"%s: spec.rules[%d].mayAccept[%d]: names no valuePath, but units[%d] (%s in %s) reads values files: the entry "+
								"authorizes nothing there",
							cfg.Policy,
							ri,
							ai,
							ui,
							u.Name,
							u.Environment,
						),
					)
					continue
				}
				if !inAny(unitValues[ui], a.ValuePath) {
					warnings = append(warnings, fmt.Sprintf(
						"%s: spec.rules[%d].mayAccept[%d]: valuePath %s is not in the values of units[%d] (%s in %s) yet",
						cfg.Policy, ri, ai, a.ValuePath, ui, u.Name, u.Environment))
				}
			}
		}
	}
	for _, name := range slices.Sorted(maps.Keys(cfg.Roles)) {
		if !ruleRoles[name] {
			warnings = append(warnings, fmt.Sprintf("%s: roles.%s: no rule of %s names this role", Path, name, cfg.Policy))
		}
	}
	sort.Strings(warnings)
	return warnings
}

// accepts reports whether a policy entry can apply to some object of the
// unit in the unit's environment.
func accepts(a policy.Accept, u Unit) bool {
	envOK := false
	for _, e := range a.Environments {
		if policy.Glob(e, u.Environment) {
			envOK = true
			break
		}
	}
	if !envOK {
		return false
	}
	for _, po := range a.Objects {
		for _, uo := range u.Objects {
			if objectsOverlap(po, uo) {
				return true
			}
		}
	}
	return false
}

func inAny(vals []map[string]any, path string) bool {
	for _, v := range vals {
		if _, ok := Lookup(v, path); ok {
			return true
		}
	}
	return false
}
