package cli

import (
	"encoding/json"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/backflow-dev/backflow/internal/cliroot"
	"github.com/backflow-dev/backflow/internal/localhub"
)

func newLocalhubCmd() *cobra.Command {
	var listen, dir, webhookURL string
	var repos []string
	cmd := &cobra.Command{
		Use:   "localhub --listen ADDR --dir STATE_DIR [--repo OWNER/NAME=FOLDER ...] [--webhook-url URL]",
		Short: "Serve a local GitHub-compatible hub (REST, GraphQL auto-merge, git, webhooks)",
		Long: `Serve a stateful GitHub-compatible server on loopback, so backflow (or any
GitHub App client) runs without GitHub. Each --repo folder becomes a
repository whose default branch holds one commit with its files. The App and
an installation are created; the App's private key is written to
STATE_DIR/app.pem and the webhook secret to STATE_DIR/webhook-secret. One JSON
line on stdout gives apiURL, graphqlURL, gitURL, appID, installationID,
privateKeyPath and webhookSecretPath. Serves until SIGINT or SIGTERM; the
state stays in STATE_DIR for the next run.`,
		Args: cliroot.ExactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if listen == "" || dir == "" {
				return cliroot.UsageError("localhub: --listen and --dir are required")
			}
			logger := commandLogger(cmd, slog.LevelInfo, "text")
			cfg := localhub.ServeConfig{Listen: listen, Dir: dir, WebhookURL: webhookURL, Logger: logger}
			for _, r := range repos {
				imp, err := parseRepoFlag(r)
				if err != nil {
					return err
				}
				cfg.Repos = append(cfg.Repos, imp)
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			out := cmd.OutOrStdout()
			err := localhub.Run(ctx, cfg, func(ep localhub.Endpoints) {
				line, _ := json.Marshal(ep) // plain strings and numbers: cannot fail
				_, _ = out.Write(append(line, '\n'))
			})
			if err != nil {
				return cliroot.UsageError("localhub: %v", err)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&listen, "listen", "", "address to listen on (127.0.0.1:0 picks a free port)")
	cmd.Flags().StringVar(&dir, "dir", "", "state folder (created when missing; reused when it holds state)")
	cmd.Flags().StringArrayVar(&repos, "repo", nil, "OWNER/NAME=FOLDER: import FOLDER as a repository (repeatable)")
	cmd.Flags().StringVar(&webhookURL, "webhook-url", "", "URL that receives the App's signed webhook deliveries")
	return cmd
}

// parseRepoFlag reads OWNER/NAME=FOLDER; the folder must exist.
func parseRepoFlag(s string) (localhub.RepoImport, error) {
	name, folder, ok := strings.Cut(s, "=")
	owner, repo, ok2 := strings.Cut(name, "/")
	if !ok || !ok2 || owner == "" || repo == "" || folder == "" || strings.Contains(repo, "/") {
		return localhub.RepoImport{}, cliroot.UsageError("localhub: --repo %q: want OWNER/NAME=FOLDER", s)
	}
	info, err := os.Stat(folder)
	if err != nil {
		return localhub.RepoImport{}, cliroot.UsageError("localhub: --repo %q: %v", s, err)
	}
	if !info.IsDir() {
		return localhub.RepoImport{}, cliroot.UsageError("localhub: --repo %q: %s is not a folder", s, folder)
	}
	return localhub.RepoImport{Owner: owner, Name: repo, Dir: folder}, nil
}
