package main

import (
	"log/slog"

	"github.com/spf13/cobra"

	"github.com/backflow-dev/backflow/internal/bot"
	"github.com/backflow-dev/backflow/internal/forge"
	"github.com/backflow-dev/backflow/internal/forge/github"
)

func newRunCmd() *cobra.Command {
	var (
		configPath, format string
		once, dryRun       bool
		verbose            bool
	)
	cmd := &cobra.Command{
		Use:   "run --once --config FILE [--dry-run] [--format text|json]",
		Short: "Run one reconcile cycle over every repository",
		Long: `Run one reconcile cycle: for each repository the GitHub App may act on
(limited by the config's repositories allowlist), read .github/backflow.yaml,
the policy and the values files at the default branch's head, plan with the
observations of every configured source, and write back: open, update,
close or merge the write-back pull requests as their lifecycle says.

--dry-run reads with the real credentials and writes nothing; the summary
says what would be done. Logs go to stderr (--verbose for every effect).

Exit 0: the cycle ran for every repository (denied drift is reported, not an
error); 1: some repository could not be reconciled, or a rate limit stopped
the cycle; 2: the config is invalid or unreadable, or the cycle could not
start (the App's identity or its repositories could not be read).`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, args []string) error {
			if !once {
				return usageError("run: --once is required (backflow serve runs cycles on a schedule)")
			}
			if configPath == "" {
				return usageError("run: --config is required")
			}
			if format != "text" && format != "json" {
				return usageError("run: --format %q: want text or json", format)
			}
			cfg, err := bot.LoadConfig(configPath)
			if err != nil {
				return usageError("run: %v", err)
			}
			key, err := cfg.PrivateKey()
			if err != nil {
				return usageError("run: %s: %v", configPath, err)
			}
			level := slog.LevelWarn
			if verbose {
				level = slog.LevelInfo
			}
			logger := slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: level}))
			fg, err := github.New(forgeConfig(cfg, key, logger))
			if err != nil {
				return usageError("run: %v", err)
			}
			opts := botOptions(cfg, key, fg, cfg.Sources(), logger)
			opts.DryRun = dryRun
			b, err := bot.New(opts)
			if err != nil {
				return usageError("run: %v", err)
			}
			rep, cycleErr := b.Cycle(cmd.Context())
			out := []byte(rep.Text())
			if format == "json" {
				if out, err = rep.JSON(); err != nil {
					return usageError("run: %v", err)
				}
			}
			if _, err := cmd.OutOrStdout().Write(out); err != nil {
				return err
			}
			switch {
			case cycleErr != nil:
				return usageError("run: %v", cycleErr)
			case rep.Failed():
				if rl, ok := rep.RateLimited(); ok {
					return negative("run: %v", rl)
				}
				return negative("run: some repositories could not be reconciled")
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&once, "once", false, "run one cycle and exit (required)")
	cmd.Flags().StringVar(&configPath, "config", "", "the bot config (required)")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "read with the real credentials, write nothing, print what would be done")
	cmd.Flags().StringVar(&format, "format", "text", "summary format: text or json")
	cmd.Flags().BoolVar(&verbose, "verbose", false, "log every decision and effect to stderr")
	return cmd
}

// forgeConfig is the GitHub adapter's config as the bot config says it,
// for every command that acts as the App.
func forgeConfig(c *bot.Config, key []byte, logger *slog.Logger) github.Config {
	return github.Config{
		AppID: c.GitHub.AppID, PrivateKey: key,
		BaseURL: c.GitHub.BaseURL, GraphQLURL: c.GitHub.GraphQLURL, GitURL: c.GitHub.GitURL,
		Allowlist:       c.Repositories,
		WritesPerMinute: c.Pacing.WritesPerMinute, MaxWait: c.Pacing.MaxWait.Duration,
		Attempts: c.Pacing.Attempts, RequestTimeout: c.Pacing.RequestTimeout.Duration, Backoff: c.Pacing.Backoff.Duration,
		Logger: logger,
	}
}

// botOptions is the bot as the bot config says it, acting through fg on
// the observations of sources. The commit key comes from the App's key, so
// that every process acting as the App recognises the others' commits.
func botOptions(c *bot.Config, key []byte, fg forge.Forge, sources []bot.Source, logger *slog.Logger) bot.Options {
	return bot.Options{
		Forge: fg, Sources: sources, Logger: logger,
		AppSlug: c.GitHub.AppSlug, BotUserID: c.GitHub.BotUserID,
		CommitMethod: c.Method(), Repositories: c.Repositories, GitOpsManagers: c.Managers(),
		CommitKey: bot.CommitKey(key),
	}
}
