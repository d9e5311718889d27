package builder

import (
	"fmt"
	"slices"
	"strings"

	"github.com/backflow-dev/backflow/internal/policy"
	"github.com/backflow-dev/backflow/internal/repoconfig"
	"github.com/backflow-dev/backflow/internal/yamlnode"
)

// Check builds every kustomize unit of a valid repository checked out at
// repoDir (cfg and pol as its check read them) and checks each policy
// entry that applies to such a unit: every object the entry names without
// a glob, among those the unit claims, must be built, and the entry's
// field must be in at least one built object it names. Each problem names
// the unit or the entry.
func Check(repoDir string, cfg *repoconfig.Config, pol *policy.Policy) []error {
	if cfg == nil {
		return nil
	}
	var b Builder
	read := func(p string) ([]byte, error) { return repoconfig.ReadRepoFile(repoDir, p, repoconfig.MaxValuesSize) }
	var out []error
	for ui, u := range cfg.Units {
		if u.Source() != repoconfig.SourceKustomize {
			continue
		}
		at := fmt.Sprintf("%s: units[%d] (%s in %s)", repoconfig.Path, ui, u.Name, u.Environment)
		files, err := b.Inputs(read, nil, u.Kustomization)
		if err != nil {
			out = append(out, fmt.Errorf("%s: %w", at, err))
			continue
		}
		built, err := b.Build(files, u.Kustomization)
		if err != nil {
			out = append(out, fmt.Errorf("%s: %w", at, err))
			continue
		}
		if pol == nil {
			continue
		}
		claims := func(key string) bool {
			return slices.ContainsFunc(u.Objects, func(p string) bool { return policy.MatchKey(p, key) })
		}
		for ri, r := range pol.Rules {
			for ai, a := range r.MayAccept {
				if !slices.ContainsFunc(a.Environments, func(e string) bool { return policy.Glob(e, u.Environment) }) {
					continue
				}
				entry := fmt.Sprintf("%s: spec.rules[%d].mayAccept[%d]", cfg.Policy, ri, ai)
				segs, err := yamlnode.ParsePath(a.Field)
				if err != nil {
					continue
				}
				named, hasField := 0, false
				for _, k := range built.Keys() {
					if !slices.ContainsFunc(a.Objects, func(p string) bool { return policy.MatchKey(p, k) }) || !claims(k) {
						continue
					}
					named++
					if _, ok := yamlnode.Lookup(built.Objects[k], segs); ok {
						hasField = true
					}
				}
				for _, o := range a.Objects {
					if !strings.Contains(o, "*") && claims(o) && built.Objects[o] == nil {
						out = append(
							out,
							fmt.Errorf("%s: %s is not in kustomize's build of %s (units[%d])", entry, o, u.Kustomization, ui),
						)
					}
				}
				if named > 0 && !hasField {
					out = append(
						out,
						fmt.Errorf(
							"%s: %s is in none of the objects it names in kustomize's build of %s (units[%d])",
							entry,
							a.Field,
							u.Kustomization,
							ui,
						),
					)
				}
			}
		}
	}
	return out
}
