package cli

import (
	"encoding/json"

	"github.com/spf13/cobra"

	"github.com/backflow-dev/backflow/internal/cliroot"
	"github.com/backflow-dev/backflow/internal/demo"
)

func newDemoCmd() *cobra.Command {
	var (
		asJSON     bool
		breakGlass bool
		configHub  bool
		out        string
	)
	cmd := &cobra.Command{
		Use:   "demo [--json] [--out DIR] [--break-glass | --confighub]",
		Short: "Run the whole round trip against an in-process local hub",
		Long: `Run reverse reconciliation end to end on this machine, with no GitHub
account and no network but loopback: a local GitHub-compatible hub serves a
sample GitOps repository (redis in prod-us-east and prod-eu-west, the seed's
policy with replica.replicaCount pre-authorized, branch protection requiring
backflow/receipt); simulated clusters take alice's incident fix (redis-replicas
3 -> 4, attributed by the audit log) and bob's unauthorized image change; real
reconcile cycles through the GitHub adapter open, check and merge the pull
request, a forward apply keeps the fix, and the follow-up proves the receipt.

With --confighub, the same incident with prod-us-east's desired state in a
ConfigHub Unit held by the ConfigHub stand-in on loopback: the pull request
carries the receipt and the Unit's dry-run diff and auto-merges, the next
cycle writes the revision conditionally, the stand-in applies it, and the
follow-up proves the receipt naming the revision.

Each step is shown on stdout; --json prints a summary instead. The proven
receipt is written to --out (default: a new temporary folder). Needs git.

--break-glass runs the same story with acceptFor: 2h on the policy's entry:
the values line and the pull request say until when the scale is accepted;
the simulated clock then passes the term, a pre-authorized pull request
restores replicaCount 3, the forward apply puts live back at 3, the follow-up
proves it, and a cycle after it shows the expiry does not fire twice.

Exit 0 when the round trip completed; 2 when it could not run.`,
		Args: cliroot.ExactArgs(0),
		RunE: func(cmd *cobra.Command, args []string) error {
			if breakGlass && configHub {
				return cliroot.UsageError("demo: --break-glass and --confighub are two stories: give one")
			}
			opts := demo.Options{Out: out, BreakGlass: breakGlass}
			if !asJSON {
				opts.Narration = cmd.OutOrStdout()
			}
			var sum any
			var err error
			if configHub {
				sum, err = demo.RunConfigHub(cmd.Context(), opts)
			} else {
				sum, err = demo.Run(cmd.Context(), opts)
			}
			if err != nil {
				return cliroot.UsageError("demo: %v", err)
			}
			if !asJSON {
				return nil
			}
			enc := json.NewEncoder(cmd.OutOrStdout())
			enc.SetIndent("", "  ")
			enc.SetEscapeHTML(false)
			return enc.Encode(sum)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print a JSON summary instead of the steps")
	cmd.Flags().StringVar(&out, "out", "", "folder for the proven receipt (default: a new temporary folder)")
	cmd.Flags().BoolVar(&breakGlass, "break-glass", false,
		"accept the fix for 2h only, then show the pull request that restores desired state")
	cmd.Flags().BoolVar(&configHub, "confighub", false,
		"run the incident with the desired state in a ConfigHub Unit (the ConfigHub stand-in on loopback)")
	return cmd
}
