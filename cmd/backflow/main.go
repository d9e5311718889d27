// Command backflow is backflow's command line (package internal/cli): a
// GitHub App that does reverse reconciliation for GitOps repositories.
package main

import "github.com/backflow-dev/backflow/internal/cli"

// version is set at build time with -ldflags "-X main.version=...".
var version = ""

func main() { cli.Main(version) }
