package cli

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/backflow-dev/backflow/internal/cliroot"
	"github.com/backflow-dev/backflow/internal/confighub"
	"github.com/backflow-dev/backflow/internal/confighub/confighubtest"
	"github.com/backflow-dev/backflow/internal/localhub"
)

// Where localhub serves the ConfigHub stand-in: its API (the URL a bot
// config's confighub.url names) and the stand-in's own worker route, which
// is not part of ConfigHub's API. A GitHub login cannot begin with "_", so
// neither path can be a repository's.
const (
	hubStandinPath = "/_standin/confighub"
	hubAPIPath     = hubStandinPath + confighubtest.BasePath
	hubApplyPath   = hubStandinPath + "/apply"
	// hubBotUser is the ConfigHub user the stand-in's token acts as;
	// hubSeedUser made each Unit's first revision.
	hubBotUser  = "0b07b07b-0000-4000-8000-000000000001"
	hubSeedUser = "5eed0000-0000-4000-8000-000000000001"
)

// hubEndpoints is localhub's JSON line: the hub's endpoints and, with
// --confighub-unit, where the ConfigHub stand-in is and its token.
type hubEndpoints struct {
	localhub.Endpoints
	ConfigHubURL       string `json:"confighubURL,omitempty"`
	ConfigHubApplyURL  string `json:"confighubApplyURL,omitempty"`
	ConfigHubTokenPath string `json:"confighubTokenPath,omitempty"`
}

func newLocalhubCmd() *cobra.Command {
	var listen, dir, webhookURL string
	var repos, hubUnits []string
	cmd := &cobra.Command{
		Use: "localhub --listen ADDR --dir STATE_DIR [--repo OWNER/NAME=FOLDER ...] " +
			"[--confighub-unit SPACE/UNIT=FILE ...] [--webhook-url URL]",
		Short: "Serve a local GitHub-compatible hub (REST, GraphQL auto-merge, git, webhooks)",
		Long: `Serve a stateful GitHub-compatible server on loopback, so backflow (or any
GitHub App client) runs without GitHub. Each --repo folder becomes a
repository whose default branch holds one commit with its files. The App and
an installation are created; the App's private key is written to
STATE_DIR/app.pem and the webhook secret to STATE_DIR/webhook-secret. One JSON
line on stdout gives apiURL, graphqlURL, gitURL, appID, installationID,
privateKeyPath and webhookSecretPath. Serves until SIGINT or SIGTERM; the
state stays in STATE_DIR for the next run.

With --confighub-unit, the same listener also serves a ConfigHub stand-in
(the API backflow's ConfigHub client speaks) under ` + hubAPIPath + `:
each SPACE/UNIT becomes a Unit (toolchain Kubernetes/YAML) whose revision 1,
FILE's bytes, is applied. Its bearer token is written to
STATE_DIR/confighub-token, and the JSON line adds confighubURL (a bot
config's confighub.url), confighubApplyURL and confighubTokenPath.
ConfigHub's worker is not part of its API: the stand-in's own route
POST ` + hubApplyPath + `?space=SPACE&unit=UNIT (with the token) plays it,
releasing the Unit's head revision and answering {"RevisionNum", "Data"}
for the caller to apply to its cluster. Unlike the repositories, the
ConfigHub stand-in keeps nothing: each run starts every Unit again from its
FILE at revision 1 and writes a new token.`,
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
			var units []hubUnit
			for _, u := range hubUnits {
				hu, err := parseHubUnitFlag(u)
				if err != nil {
					return err
				}
				units = append(units, hu)
			}
			var tokenPath string
			if len(units) > 0 {
				var err error
				if cfg.Mounts, tokenPath, err = hubStandin(dir, units); err != nil {
					return cliroot.UsageError("localhub: %v", err)
				}
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			out := cmd.OutOrStdout()
			err := localhub.Run(ctx, cfg, func(ep localhub.Endpoints) {
				line := hubEndpoints{Endpoints: ep}
				if tokenPath != "" {
					root := strings.TrimSuffix(ep.GitURL, "/")
					line.ConfigHubURL, line.ConfigHubApplyURL = root+hubAPIPath, root+hubApplyPath
					line.ConfigHubTokenPath = tokenPath
				}
				data, _ := json.Marshal(line) // plain strings and numbers: cannot fail
				_, _ = out.Write(append(data, '\n'))
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
	cmd.Flags().StringArrayVar(&hubUnits, "confighub-unit", nil,
		"SPACE/UNIT=FILE: serve a ConfigHub stand-in Unit whose applied revision 1 is FILE's manifests (repeatable)")
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

// hubUnit is one --confighub-unit: a Unit of the ConfigHub stand-in and
// the data of its first revision.
type hubUnit struct {
	space, unit string
	data        []byte
}

// parseHubUnitFlag reads SPACE/UNIT=FILE: both slugs as ConfigHub's API
// allows them, FILE readable and holding Kubernetes manifests as a
// Kubernetes/YAML Unit's data must.
func parseHubUnitFlag(s string) (hubUnit, error) {
	name, file, ok := strings.Cut(s, "=")
	space, unit, ok2 := strings.Cut(name, "/")
	if !ok || !ok2 || file == "" {
		return hubUnit{}, cliroot.UsageError("localhub: --confighub-unit %q: want SPACE/UNIT=FILE", s)
	}
	for _, slug := range []string{space, unit} {
		if !confighub.ValidSlug(slug) {
			return hubUnit{}, cliroot.UsageError("localhub: --confighub-unit %q: %q is not a ConfigHub slug "+
				"(letters, digits, '-', '_' and '.', beginning and ending with a letter or digit)", s, slug)
		}
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return hubUnit{}, cliroot.UsageError("localhub: --confighub-unit %q: %v", s, err)
	}
	if err := confighubtest.CheckManifests(data); err != nil {
		return hubUnit{}, cliroot.UsageError("localhub: --confighub-unit %q: %s is not a %s Unit's data: %v",
			s, file, confighubtest.ToolchainKubernetesYAML, err)
	}
	return hubUnit{space: space, unit: unit, data: data}, nil
}

// hubStandin makes the ConfigHub stand-in holding units, each at revision
// 1 applied, writes a new token to dir/confighub-token, and returns the
// handlers localhub mounts and the token's path.
func hubStandin(dir string, units []hubUnit) (map[string]http.Handler, string, error) {
	token := make([]byte, 20)
	_, _ = rand.Read(token) // crypto/rand.Read never returns an error (Go 1.24+)
	tok := hex.EncodeToString(token)
	ch := confighubtest.New(confighubtest.Options{Tokens: map[string]string{tok: hubBotUser}})
	spaces := map[string]bool{}
	for _, u := range units {
		if !spaces[u.space] {
			ch.AddSpace(u.space)
			spaces[u.space] = true
		}
		if ch.Data(u.space, u.unit) != nil {
			return nil, "", fmt.Errorf("--confighub-unit %s/%s is given twice", u.space, u.unit)
		}
		if _, err := ch.AddUnit(u.space, u.unit, confighubtest.ToolchainKubernetesYAML, u.data, hubSeedUser); err != nil {
			return nil, "", err
		}
		if _, _, err := ch.Apply(u.space, u.unit); err != nil {
			return nil, "", err
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, "", fmt.Errorf("creating the state folder: %w", err)
	}
	path := filepath.Join(dir, "confighub-token")
	if err := os.WriteFile(path, []byte(tok+"\n"), 0o600); err != nil {
		return nil, "", fmt.Errorf("writing the ConfigHub token: %w", err)
	}
	return map[string]http.Handler{
		hubAPIPath + "/": http.StripPrefix(hubStandinPath, ch.Handler()),
		hubApplyPath:     ch.ApplyHandler(),
	}, path, nil
}
