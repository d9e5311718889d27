// Package cli is backflow's whole command line, the program of
// cmd/backflow-core, to which cmd/backflow hands every command but the
// values commands: a GitHub App that does reverse reconciliation for GitOps
// repositories, accepting authorized live changes back into the Helm values
// files that Git holds, through attributed pull requests that carry a
// machine-checkable receipt.
//
// The package holds flags, output formats and exit codes (0 success, 1 a
// negative answer, 2 could not run); each subcommand's --help is its
// reference. It must not hold logic a test outside this package would need:
// reading configs, snapshots and observations, wiring the adapters and
// running the cycle are internal/app's, deciding is the core's.
package cli
