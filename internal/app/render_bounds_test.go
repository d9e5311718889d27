package app

import (
	"testing"
	"time"

	"github.com/backflow-dev/backflow/internal/botconfig"
	"github.com/backflow-dev/backflow/internal/render"
)

func TestRenderBoundsFromConfig(t *testing.T) {
	// why: charts.render's keys reach the render witness's bounds; zero
	// keeps render's defaults.
	c, err := botconfig.ParseConfig("b.yaml", []byte(minimalConfig+"charts:\n  render:\n    timeout: 10s\n    maxMemory: 268435456\n    maxOutputBytes: 1048576\n    maxObjects: 500\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := render.Bounds{Timeout: 10 * time.Second, MaxMemory: 256 << 20, MaxOutputBytes: 1 << 20, MaxObjects: 500}
	if got := Wire(c).RenderBounds(); got != want {
		t.Errorf("bounds %+v, want %+v", got, want)
	}
}
