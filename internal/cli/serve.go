package cli

import (
	"errors"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/backflow-dev/backflow/internal/app"
	"github.com/backflow-dev/backflow/internal/cliroot"
)

func newServeCmd() *cobra.Command {
	var configPath string
	var elect bool
	le := app.DefaultLeaderElection()
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
are JSON lines on stderr unless --log-format text. With an admission:
section (listen, certFile, keyFile, optional clientCAFile, gitopsUsers,
gitopsGroups, maxBytes, ttl, maxHeldBytes, maxInFlightBytes) it also
serves POST /admission, the validating admission webhook that records who
changed which fields, on a TLS listener of its own: it always allows (or
answers 429 with Retry-After while maxInFlightBytes are being read), and a
record attributes a change (level admission) only once the watch
sees the very next write after the reviewed version make exactly the
recorded change; others are logged as refused. SIGTERM or SIGINT stops
accepting requests and lets running cycles finish within
server.shutdownTimeout.

With --leader-elect, several replicas run and one writes: the replica that
holds the Kubernetes Lease --leader-elect-namespace/--leader-elect-name runs
the cycles; the others stand by, live on /healthz but not ready on /readyz
(so the Service sends webhooks and pushes to the leader), and answer 503 on
/webhook, /observations and /audit. A leader that cannot renew the lease
within the renew deadline stops its cycles at once; a standby takes the lease
over when it expires, or at once when the leader released it on SIGTERM.
The Lease's cluster is reached with --kubeconfig, else the pod's service
account, else $KUBECONFIG or ~/.kube/config.`,
		Args: cliroot.ExactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if configPath == "" {
				return cliroot.UsageError("serve: --config is required")
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			logger := commandLogger(cmd, slog.LevelInfo, "json")
			opts := app.ServeOptions{Version: cliroot.Version()}
			if elect {
				opts.LeaderElection = &le
			}
			err := app.ServeWith(ctx, configPath, opts, logger, nil)
			var se *app.SetupError
			switch {
			case errors.As(err, &se):
				return cliroot.UsageError("serve: %v", err)
			case err != nil:
				return cliroot.Negative("serve: %v", err)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&configPath, "config", "", "the bot config with its server: section (required)")
	f := cmd.Flags()
	f.BoolVar(&elect, "leader-elect", false, "run cycles only while this replica holds the Lease (for several replicas)")
	f.StringVar(
		&le.Namespace,
		"leader-elect-namespace",
		"",
		"namespace of the Lease (default: POD_NAMESPACE, else the pod's own namespace)",
	)
	f.StringVar(&le.Name, "leader-elect-name", le.Name, "name of the Lease")
	f.DurationVar(
		&le.LeaseDuration,
		"leader-elect-lease-duration",
		le.LeaseDuration,
		"how long a standby waits after the leader's last renewal before taking over",
	)
	f.DurationVar(
		&le.RenewDeadline,
		"leader-elect-renew-deadline",
		le.RenewDeadline,
		"how long the leader tries to renew before it stops its cycles (below the lease duration)",
	)
	f.DurationVar(
		&le.RetryPeriod,
		"leader-elect-retry-period",
		le.RetryPeriod,
		"wait between attempts to acquire or renew the Lease",
	)
	f.StringVar(
		&le.Kubeconfig,
		"kubeconfig",
		"",
		"kubeconfig of the Lease's cluster (default: the pod's service account, else $KUBECONFIG or ~/.kube/config)",
	)
	return cmd
}
