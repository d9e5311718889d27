// Command backflow is a GitHub App that does reverse reconciliation for
// GitOps repositories: it accepts authorized live changes back into the Helm
// values files that Git holds, through attributed pull requests that carry a
// machine-checkable receipt.
//
// The command holds flags, output formats and exit codes (0 success, 1 a
// negative answer, 2 could not run); each subcommand's --help is its
// reference. It must not hold logic a test outside package main would need:
// reading configs, snapshots and observations, wiring the adapters and
// running the cycle are internal/app's, deciding is the core's.
package main
