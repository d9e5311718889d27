package checkout

import (
	"context"
	"fmt"

	"github.com/backflow-dev/backflow/internal/render"
	"github.com/backflow-dev/backflow/internal/repoconfig"
)

// PolicyMismatchError is a mayAccept entry the unit's chart does not render
// as the policy says: Problem names the entry, Policy is the policy's path.
type PolicyMismatchError struct {
	Policy, Problem string
}

func (e *PolicyMismatchError) Error() string { return e.Policy + ": " + e.Problem }

// CheckCharts renders every unit of a valid repo config whose chart names a
// path in the checkout at repo, a chart repository or an OCI reference
// (fetched with fetch), with the unit's values files, and checks the
// policy's mayAccept entries against it. It returns one error per entry
// (a *PolicyMismatchError) or chart or values file that fails, each naming
// the unit's chart key in the repo config.
func CheckCharts(ctx context.Context, repo string, rep *Report, fetch *render.Fetcher) []error {
	var problems []error
	src := render.DirSource{Root: repo}
	for i := range rep.Config.Units {
		u := &rep.Config.Units[i]
		if !u.Rendered() {
			continue
		}
		key := "path"
		switch {
		case u.Chart.Path != "":
		case u.Chart.OCI != "":
			key = "oci"
		default:
			key = "repository"
		}
		at := fmt.Sprintf("%s: units[%d].chart.%s", repoconfig.Path, i, key)
		c, err := render.Load(ctx, src, fetch, u.Chart)
		if err != nil {
			problems = append(problems, fmt.Errorf("%s: %w", at, err))
			continue
		}
		var trees []map[string]any
		for _, f := range u.ValuesFiles {
			data, err := repoconfig.ReadRepoFile(repo, f, repoconfig.MaxValuesSize)
			if err == nil {
				var t map[string]any
				if t, err = repoconfig.Values(f, data, u.RootOf(f)); err == nil {
					trees = append(trees, t)
					continue
				}
			}
			problems = append(problems, fmt.Errorf("%s: %w", at, err))
		}
		if len(trees) != len(u.ValuesFiles) {
			continue
		}
		ps, err := render.CheckPolicy(ctx, c, u, trees, rep.Policy, render.OptionsFor(u, render.Bounds{}))
		if err != nil {
			problems = append(problems, fmt.Errorf("%s: cannot render %s with the values of unit %s (%s): %w",
				at, u.Chart.Source(), u.Name, u.Environment, err))
			continue
		}
		for _, p := range ps {
			problems = append(problems, &PolicyMismatchError{Policy: rep.Config.Policy, Problem: p})
		}
	}
	return problems
}
