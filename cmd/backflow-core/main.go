// Command backflow-core is backflow's whole command line (package
// internal/cli): the GitHub App, the planner, the demo, the local hub and
// every other command. The backflow users run (cmd/backflow) answers the
// values commands and version itself and hands every other command line to
// this binary, which it finds beside itself, at $BACKFLOW_CORE or on PATH.
package main

import (
	"github.com/backflow-dev/backflow/internal/cli"
	"github.com/backflow-dev/backflow/internal/render"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = ""

// main first serves renderings when started as a render child (the render
// witness renders each chart in a child process, this binary started again;
// see internal/render), before the command line reads anything.
func main() {
	render.ChildMain()
	cli.Main(version)
}
