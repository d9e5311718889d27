package bot

import (
	"strings"
	"testing"
)

// A unit that names a chart path is decided only with the render witness
// the bot is given, which reads the chart through the bot's files at the
// planned head; a bot given none fails the unit closed.
func TestChartWitnessIsGiven(t *testing.T) {
	chartPath := func(files map[string]string) {
		files[".github/backflow.yaml"] = strings.Replace(files[".github/backflow.yaml"],
			"chart: {name: bitnami/redis, version: 25.5.3}", "chart: {name: bitnami/redis, version: 25.5.3, path: charts/redis}", 1)
	}
	tests := []struct {
		name, why string
		renderer  RendererFunc
		want      string
	}{
		{"no renderer", "without the witness no write-back of a rendered unit is allowed", nil, "no renderer is available"},
		{"renderer", "the given renderer reads the chart through the bot, and a missing chart is an error, not an allow", renderCharts, "chart charts/redis"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fx := newFixture(t, chartPath, func(o *Options) { o.Renderer = tt.renderer })
			fx.observe(replicas(4, 0))
			rep, effects := fx.cycle()
			if len(effects) != 0 {
				t.Fatalf("%s: effects %v, want none", tt.why, effects)
			}
			if len(rep.Repos) != 1 || !strings.Contains(strings.Join(rep.Repos[0].PlanErrors, "\n"), tt.want) {
				t.Fatalf("%s: report %+v, want a plan error containing %q", tt.why, rep.Repos, tt.want)
			}
		})
	}
}
