package cli

import (
	"log/slog"

	"github.com/spf13/cobra"

	"github.com/backflow-dev/backflow/internal/app"
	"github.com/backflow-dev/backflow/internal/cliroot"
)

func newRunCmd() *cobra.Command {
	var (
		configPath, format string
		dryRun             bool
		verbose            bool
	)
	cmd := &cobra.Command{
		Use:   "run --config FILE [--once] [--dry-run] [--format text|json]",
		Short: "Run one reconcile cycle over every repository",
		Long: `Run one reconcile cycle and exit: for each repository the GitHub App may act on
(limited by the config's repositories allowlist), read .github/backflow.yaml,
the policy and the values files at the default branch's head, plan with the
observations of every configured source, and write back: open, update,
close or merge the write-back pull requests as their lifecycle says.

Each repository's effects (open, update, keep, close, comment, check,
auto-merge, cleanup, proven, reverted, follow-up, drift-issue) are decided,
each with its reason, before any is applied. --dry-run reads with the real
credentials, prints the decided effects ("would open ...") and applies none;
what only the forge can tell mid-way (a branch left by a crash, another
process's pull request) is known in a real run only. Logs go to stderr
(--verbose for every effect).

run always runs exactly one cycle; backflow serve runs them on a schedule.
--once says so explicitly and is accepted for the scripts that pass it.

Exit 0: the cycle ran for every repository (denied drift is reported, not an
error); 1: some repository could not be reconciled, or a rate limit stopped
the cycle; 2: the config is invalid or unreadable, or the cycle could not
start (the App's identity or its repositories could not be read).`,
		Args: cliroot.ExactArgs(0),
		RunE: func(cmd *cobra.Command, args []string) error {
			if configPath == "" {
				return cliroot.UsageError("run: --config is required")
			}
			if format != "text" && format != "json" {
				return cliroot.UsageError("run: --format %q: want text or json", format)
			}
			level := slog.LevelWarn
			if verbose {
				level = slog.LevelInfo
			}
			logger := commandLogger(cmd, level, "text")
			rep, cycleErr := app.RunOnce(cmd.Context(), configPath, dryRun, logger)
			if rep == nil {
				return cliroot.UsageError("run: %v", cycleErr)
			}
			out := []byte(rep.Text())
			if format == "json" {
				js, err := rep.JSON()
				if err != nil {
					return cliroot.UsageError("run: %v", err)
				}
				out = js
			}
			if _, err := cmd.OutOrStdout().Write(out); err != nil {
				return err
			}
			switch {
			case cycleErr != nil:
				return cliroot.UsageError("run: %v", cycleErr)
			case rep.Failed():
				if rl, ok := rep.RateLimited(); ok {
					return cliroot.Negative("run: %v", rl)
				}
				return cliroot.Negative("run: some repositories could not be reconciled")
			}
			return nil
		},
	}
	cmd.Flags().Bool("once", false, "run one cycle and exit (what run always does; accepted for compatibility)")
	cmd.Flags().StringVar(&configPath, "config", "", "the bot config (required)")
	cmd.Flags().BoolVar(
		&dryRun,
		"dry-run",
		false,
		"read with the real credentials, write nothing, print what would be done",
	)
	cmd.Flags().StringVar(&format, "format", "text", "summary format: text or json")
	cmd.Flags().BoolVar(&verbose, "verbose", false, "log every decision and effect to stderr (--log-level info)")
	return cmd
}
