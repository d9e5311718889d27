package render

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/backflow-dev/backflow/internal/repoconfig"
	"github.com/backflow-dev/backflow/internal/witness"
)

// Units renders units' charts from one repository snapshot: each chart is
// loaded from the source once, on first use, and a chart that cannot be
// loaded keeps failing for the snapshot. It is a witness.Renderer.
type Units struct {
	ctx     context.Context
	src     Source
	timeout time.Duration
	mu      sync.Mutex
	charts  map[string]loaded
}

type loaded struct {
	c   *Chart
	err error
}

// NewUnits returns a renderer of the charts in src. ctx bounds every
// rendering; timeout bounds each one (DefaultTimeout when zero).
func NewUnits(ctx context.Context, src Source, timeout time.Duration) *Units {
	return &Units{ctx: ctx, src: src, timeout: timeout, charts: map[string]loaded{}}
}

// Chart returns the unit's loaded chart.
func (r *Units) Chart(u *repoconfig.Unit) (*Chart, error) {
	if !u.Rendered() {
		return nil, fmt.Errorf("%w: unit %s (%s) names no chart path", witness.ErrRender, u.Name, u.Environment)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	l, ok := r.charts[u.Chart.Path]
	if !ok {
		l.c, l.err = LoadFromSource(r.src, u.Chart.Path)
		r.charts[u.Chart.Path] = l
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
	out, err := c.Render(r.ctx, OptionsFor(u, r.timeout), files)
	if err != nil {
		// Helm's errors span lines; a reason is one line.
		return nil, fmt.Errorf("%w: unit %s (%s): %s", witness.ErrRender, u.Name, u.Environment, strings.Join(strings.Fields(err.Error()), " "))
	}
	return out, nil
}

// OptionsFor are the options a unit's chart is rendered with.
func OptionsFor(u *repoconfig.Unit, timeout time.Duration) Options {
	o := Options{Release: u.ReleaseName(), Namespace: u.ReleaseNamespace(), Timeout: timeout}
	if u.Chart != nil {
		o.KubeVersion = u.Chart.KubeVersion
	}
	return o
}
