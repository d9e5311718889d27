package render

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/backflow-dev/backflow/internal/repoconfig"
	"github.com/backflow-dev/backflow/internal/witness"
)

// Units renders units' charts from one repository snapshot: each chart is
// loaded from the source (a chart path) or fetched (a repository or OCI
// reference) once, on first use, and a chart that cannot be loaded keeps
// failing for the snapshot. It is a witness.Renderer.
type Units struct {
	ctx    context.Context
	src    Source
	fetch  *Fetcher
	bounds Bounds
	mu     sync.Mutex
	charts map[string]loaded
}

type loaded struct {
	c   *Chart
	err error
}

// NewUnits returns a renderer of the charts in src and of those fetch
// fetches (a unit with a remote chart fails to render when fetch is nil).
// ctx bounds every fetch and rendering; bounds bound each rendering (their
// defaults where zero).
func NewUnits(ctx context.Context, src Source, fetch *Fetcher, bounds Bounds) *Units {
	return &Units{ctx: ctx, src: src, fetch: fetch, bounds: bounds, charts: map[string]loaded{}}
}

// Chart returns the unit's loaded chart.
func (r *Units) Chart(u *repoconfig.Unit) (*Chart, error) {
	if !u.Rendered() {
		return nil, fmt.Errorf(
			"%w: unit %s (%s) names no chart path, repository or OCI reference",
			witness.ErrRender,
			u.Name,
			u.Environment,
		)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	key := u.Chart.Source()
	l, ok := r.charts[key]
	if !ok {
		l.c, l.err = Load(r.ctx, r.src, r.fetch, u.Chart)
		r.charts[key] = l
	}
	if l.err != nil {
		return nil, fmt.Errorf("%w: %w", witness.ErrRender, l.err)
	}
	return l.c, nil
}

// Render renders the unit's chart with the values trees of its files.
func (r *Units) Render(u *repoconfig.Unit, files []map[string]any) (*witness.Rendering, error) {
	c, err := r.Chart(u)
	if err != nil {
		return nil, err
	}
	out, err := c.Render(r.ctx, OptionsFor(u, r.bounds), files)
	if err != nil {
		// Helm's errors span lines; a reason is one line.
		return nil, fmt.Errorf(
			"%w: unit %s (%s): %s",
			witness.ErrRender,
			u.Name,
			u.Environment,
			strings.Join(strings.Fields(err.Error()), " "),
		)
	}
	return out, nil
}

// Load loads the chart c names: from its path in src, or fetched with
// fetch from its repository or OCI registry. Dependencies that its charts/
// folder lacks are fetched with fetch as its Chart.lock pins them.
func Load(ctx context.Context, src Source, fetch *Fetcher, c *repoconfig.Chart) (*Chart, error) {
	switch {
	case c.Path != "":
		return loadFromSource(ctx, src, c.Path, fetch)
	case !c.Remote():
		return nil, fmt.Errorf("%w: chart %s names no path, repository or OCI reference", ErrChart, c.Name)
	case fetch == nil:
		return nil, fmt.Errorf("%w %s: no chart fetcher is configured", ErrFetch, c.Source())
	}
	return fetch.Fetch(ctx, c)
}

// OptionsFor are the options a unit's chart is rendered with, within bounds.
func OptionsFor(u *repoconfig.Unit, bounds Bounds) Options {
	o := Options{Release: u.ReleaseName(), Namespace: u.ReleaseNamespace(), Bounds: bounds}
	if u.Chart != nil {
		o.KubeVersion = u.Chart.KubeVersion
	}
	return o
}
