package app

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/backflow-dev/backflow/internal/bot"
	"github.com/backflow-dev/backflow/internal/confighub"
	"github.com/backflow-dev/backflow/internal/hubstore"
	"github.com/backflow-dev/backflow/internal/plan"
	"github.com/backflow-dev/backflow/internal/receipt"
	"github.com/backflow-dev/backflow/internal/repoconfig"
)

// defaultConfigHubTimeout bounds one ConfigHub request when the bot
// config says nothing.
const defaultConfigHubTimeout = 30 * time.Second

// Revisions is the ConfigHub store the bot config's confighub section
// names, behind the bot's Revisions port; nil when it names none (units
// naming a ConfigHub Unit then fail closed). The token is read here and
// never shown.
func (c *Wiring) Revisions() (bot.Revisions, error) {
	if !c.ConfigHub.Enabled() {
		return nil, nil
	}
	tok, err := c.ConfigHubToken()
	if err != nil {
		return nil, err
	}
	cl, err := confighub.New(confighub.Config{URL: c.ConfigHub.URL, Token: string(tok),
		HTTP:        &http.Client{Timeout: cmp.Or(c.ConfigHub.Timeout.Duration, defaultConfigHubTimeout)},
		MaxDataSize: c.ConfigHub.MaxDataSize})
	if err != nil {
		return nil, fmt.Errorf("confighub.url: %w", err)
	}
	return HubRevisions{Store: &hubstore.Store{Client: cl}}, nil
}

// HubRevisions is internal/hubstore behind the bot's Revisions port: it
// serves ConfigHub Units (repoconfig.StoreConfigHub), refusing another
// store's documents by name, wraps the store's outcomes in the bot's
// sentinels (keeping the store's own errors), and writes a receipt's
// revision once.
type HubRevisions struct {
	Store *hubstore.Store
}

// Read is the store's reader of one Unit.
func (h HubRevisions) Read(ctx context.Context, ref repoconfig.StoreRef) ([]byte, plan.Head, error) {
	return h.Store.Reader(ctx)(ref)
}

// Preview is the store's dry run of rv, as Markdown.
func (h HubRevisions) Preview(ctx context.Context, rv *plan.Revision) (string, error) {
	p, err := h.Store.Preview(ctx, rv)
	if err != nil {
		return "", outcome(err)
	}
	return p.Markdown(rv.Ref.Name), nil
}

// Write writes rv for the receipt, unless a revision of the Unit already
// names the receipt's digest in its change description (a write whose
// answer was lost, a cycle before a restart): then it writes nothing.
// The look-up reads ConfigHub, not the bot's memory, so it holds across
// restarts and processes.
func (h HubRevisions) Write(ctx context.Context, rv *plan.Revision, path string, data []byte) (bot.Revised, error) {
	if n, ok, err := h.Store.WrittenFor(ctx, rv.Ref, data); err != nil || ok {
		return bot.Revised{Number: n, Already: ok}, outcome(err)
	}
	r, _, err := receipt.Parse(path, data)
	if err != nil {
		return bot.Revised{}, fmt.Errorf("error reading receipt %s: %w", path, err)
	}
	w, err := h.Store.Write(ctx, rv, r, data)
	if err != nil {
		return bot.Revised{}, outcome(err)
	}
	return bot.Revised{Number: w.Revision}, nil
}

// Prove is the store's proof of a merged receipt.
func (h HubRevisions) Prove(ctx context.Context, p bot.RevisionProof) ([]byte, error) {
	if p.Ref.Store != repoconfig.StoreConfigHub {
		return nil, fmt.Errorf("proving %s: %s is not served here (ConfigHub Units are)", p.Path, p.Ref)
	}
	out, err := h.Store.Prove(ctx, hubstore.Proof{Receipt: p.Receipt, Path: p.Path, MergeCommit: p.MergeCommit,
		Live: p.Live, Policy: p.Policy, PolicyPath: p.PolicyPath})
	return out, outcome(err)
}

// outcome wraps the store's errors in the bot's sentinels, keeping them.
func outcome(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, confighub.ErrConflict):
		return fmt.Errorf("%w: %w", bot.ErrChangedSincePlan, err)
	case errors.Is(err, hubstore.ErrWitness), errors.Is(err, hubstore.ErrMoved):
		return fmt.Errorf("%w: %w", bot.ErrRevisionRefused, err)
	case errors.Is(err, hubstore.ErrNotYet):
		return fmt.Errorf("%w: %w", bot.ErrNotProven, err)
	}
	return err
}
