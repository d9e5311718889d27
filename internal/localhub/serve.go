package localhub

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"time"
)

// RepoImport names a folder to import as a repository's default branch.
type RepoImport struct {
	Owner, Name, Dir string
}

// ServeConfig is what `backflow localhub` serves.
type ServeConfig struct {
	Listen     string // host:port; port 0 picks a free one
	Dir        string // the state folder
	Repos      []RepoImport
	WebhookURL string
	Logger     *slog.Logger // failures the hub cannot answer to a client; nil discards
	// Mounts are served beside the hub (Options.Mounts).
	Mounts map[string]http.Handler
}

// Endpoints tells clients where the hub is and how to authenticate.
type Endpoints struct {
	APIURL            string `json:"apiURL"`
	GraphQLURL        string `json:"graphqlURL"`
	GitURL            string `json:"gitURL"`
	AppID             int64  `json:"appID"`
	InstallationID    int64  `json:"installationID"`
	PrivateKeyPath    string `json:"privateKeyPath"`
	WebhookSecretPath string `json:"webhookSecretPath"`
}

// Run imports the repositories (those already in the state folder are kept
// as they are), installs the App on their owners, writes the App's key and
// the webhook secret into the state folder, calls ready once the listener is
// up, and serves until ctx ends.
func Run(ctx context.Context, cfg ServeConfig, ready func(Endpoints)) error {
	s, err := Listen(cfg.Listen, Options{Dir: cfg.Dir, WebhookURL: cfg.WebhookURL, Logger: cfg.Logger, Mounts: cfg.Mounts})
	if err != nil {
		return err
	}
	defer s.Close()
	h := s.Hub
	var inst int64
	for _, r := range cfg.Repos {
		if !h.HasRepo(r.Owner + "/" + r.Name) {
			if err := h.CreateRepo(RepoOptions{Owner: r.Owner, Name: r.Name, Dir: r.Dir, AllowAutoMerge: true}); err != nil {
				return err
			}
		}
		id, err := h.Install(r.Owner)
		if err != nil {
			return err
		}
		if inst == 0 {
			inst = id
		}
	}
	if inst == 0 {
		// No repository given: still one installation, so tokens can be issued.
		if inst, err = h.Install(h.AppOwner()); err != nil {
			return err
		}
	}
	keyPath, secretPath := filepath.Join(cfg.Dir, "app.pem"), filepath.Join(cfg.Dir, "webhook-secret")
	if err := os.WriteFile(keyPath, h.PrivateKeyPEM(), 0o600); err != nil {
		return fmt.Errorf("writing the app key: %w", err)
	}
	if err := os.WriteFile(secretPath, []byte(h.WebhookSecret()), 0o600); err != nil {
		return fmt.Errorf("writing the webhook secret: %w", err)
	}
	ready(Endpoints{APIURL: s.APIURL(), GraphQLURL: s.GraphQLURL(), GitURL: s.URL + "/", AppID: h.AppID(),
		InstallationID: inst, PrivateKeyPath: keyPath, WebhookSecretPath: secretPath})
	select {
	case err := <-s.Done():
		return fmt.Errorf("serving: %w", err)
	case <-ctx.Done():
	}
	shut, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.srv.Shutdown(shut); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("shutting down: %w", err)
	}
	return nil
}
