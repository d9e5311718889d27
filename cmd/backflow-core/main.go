// Command backflow-core is backflow's whole command line (package
// internal/cli): the GitHub App, the planner, the demo, the local hub and
// every other command. The backflow users run (cmd/backflow) answers the
// values commands and version itself and hands every other command line to
// this binary, which it finds beside itself, at $BACKFLOW_CORE or on PATH.
package main

import "github.com/backflow-dev/backflow/internal/cli"

// version is set at build time with -ldflags "-X main.version=...".
var version = ""

func main() { cli.Main(version) }
