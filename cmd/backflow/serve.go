package main

import (
	"errors"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/backflow-dev/backflow/internal/app"
)

func newServeCmd() *cobra.Command {
	var configPath string
	cmd := &cobra.Command{
		Use:   "serve --config FILE",
		Short: "Run backflow as a GitHub App: scheduled cycles, webhooks, pushed observations, metrics",
		Long: `Run backflow as a long-lived GitHub App process. It runs a reconcile cycle
for every repository at start and then on the cron schedule (with jitter),
and at once for a repository when a signed webhook says its default branch
moved, a pull request closed or a check run was re-requested, or when an
observation about its objects is pushed to /observations. One repository
never has two cycles at once.

FILE is the bot config of "backflow run --once" plus a server: section
(listen address, schedule, webhook secret file or variable, observation push
secret or token and trust ceiling). It refuses to start without a webhook
secret. Serves /webhook, /observations, /healthz, /readyz and /metrics, and,
with server.observations.urlTokensFile or urlTokensEnv, the secret URL
/observations/TOKEN for cub-scout watch --webhook, which cannot send a header
(its pushes are believed no higher than server.observations.urlTrust,
default asserted; the token is never logged, list several to rotate); logs
are JSON lines on stderr. With an admission: section (listen, certFile,
keyFile, optional clientCAFile, gitopsUsers, gitopsGroups, maxBytes, ttl) it
also serves POST /admission, the validating admission webhook that records
who changed which fields, on a TLS listener of its own: it always allows,
and a record attributes a change (level admission) only once the watch
sees the write carry the recorded values. SIGTERM or SIGINT stops
accepting requests and lets running cycles finish within
server.shutdownTimeout.`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if configPath == "" {
				return usageError("serve: --config is required")
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			logger := slog.New(slog.NewJSONHandler(cmd.ErrOrStderr(), nil))
			err := app.Serve(ctx, configPath, logger, nil)
			var se *app.SetupError
			switch {
			case errors.As(err, &se):
				return usageError("serve: %v", err)
			case err != nil:
				return negative("serve: %v", err)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&configPath, "config", "", "the bot config with its server: section (required)")
	return cmd
}
