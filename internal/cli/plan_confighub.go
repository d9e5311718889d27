package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/backflow-dev/backflow/internal/checkout"
	"github.com/backflow-dev/backflow/internal/confighub"
	"github.com/backflow-dev/backflow/internal/hubstore"
	"github.com/backflow-dev/backflow/internal/plan"
	"github.com/backflow-dev/backflow/internal/repoconfig"
)

// hubFlags name the ConfigHub server `backflow plan` reads the Units of
// units naming one from.
type hubFlags struct {
	url, tokenFile string
}

func (h *hubFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&h.url, "confighub-url", "",
		"the ConfigHub API's base URL, for units whose desired state is a ConfigHub Unit "+
			"(read only: nothing is written)")
	cmd.Flags().StringVar(&h.tokenFile, "confighub-token-file", "",
		"the file holding the ConfigHub bearer token (required with --confighub-url)")
}

// options are the checkout options the flags ask for: a ConfigHub reader
// when --confighub-url is set.
func (h *hubFlags) options(ctx context.Context) (checkout.Options, error) {
	if h.url == "" {
		if h.tokenFile != "" {
			return checkout.Options{}, fmt.Errorf("--confighub-token-file needs --confighub-url")
		}
		return checkout.Options{Revisions: func(repoconfig.StoreRef) ([]byte, plan.Head, error) {
			return nil, plan.Head{}, errors.New("no ConfigHub server is given (--confighub-url and --confighub-token-file)")
		}}, nil
	}
	if h.tokenFile == "" {
		return checkout.Options{}, fmt.Errorf("--confighub-url needs --confighub-token-file")
	}
	tok, err := os.ReadFile(h.tokenFile)
	if err != nil {
		return checkout.Options{}, fmt.Errorf("--confighub-token-file: %w", err)
	}
	c, err := confighub.New(confighub.Config{URL: h.url, Token: string(bytes.TrimSpace(tok)),
		HTTP: &http.Client{Timeout: 30 * time.Second}})
	if err != nil {
		return checkout.Options{}, fmt.Errorf("--confighub-url: %w", err)
	}
	store := &hubstore.Store{Client: c}
	return checkout.Options{Revisions: store.Reader(ctx)}, nil
}
