package app

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/backflow-dev/backflow/internal/bot"
	"github.com/backflow-dev/backflow/internal/botconfig"
	"github.com/backflow-dev/backflow/internal/confighub"
	"github.com/backflow-dev/backflow/internal/confighub/confighubtest"
	"github.com/backflow-dev/backflow/internal/hubstore"
	"github.com/backflow-dev/backflow/internal/repoconfig"
)

// The bot config's confighub section builds the store behind the bot's
// Revisions port, reading the token from its file; without the section
// there is none, and a token that cannot be read is an error naming the
// section, never the token.
func TestWiringRevisions(t *testing.T) {
	hub := confighubtest.New(confighubtest.Options{Tokens: map[string]string{"hub-secret": "bot"}})
	url, stop, err := hub.Listen()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	hub.AddSpace("prod")
	if _, err := hub.AddUnit("prod", "redis", confighubtest.ToolchainKubernetesYAML,
		[]byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n"), "bob"); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	tok := filepath.Join(dir, "token")
	if err := os.WriteFile(tok, []byte("hub-secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	wire := func(extra string) *Wiring {
		t.Helper()
		bc, err := botconfig.ParseConfig(filepath.Join(dir, "b.yaml"), []byte(minimalConfig+extra))
		if err != nil {
			t.Fatal(err)
		}
		return Wire(bc)
	}
	if s, err := wire("").Revisions(); s != nil || err != nil {
		t.Fatalf("no confighub section: %v %v", s, err)
	}
	s, err := wire(fmt.Sprintf("confighub:\n  url: %s\n  tokenFile: %s\n", url, tok)).Revisions()
	if err != nil || s == nil {
		t.Fatalf("store: %v", err)
	}
	ref := repoconfig.StoreRef{Store: repoconfig.StoreConfigHub, Name: "prod/redis"}
	data, head, err := s.Read(context.Background(), ref)
	if err != nil || head.Number != 1 || head.Condition == "" || !strings.Contains(string(data), "ConfigMap") ||
		head.Words.Next != "confighub:prod/redis@2" {
		t.Fatalf("read %q %+v %v", data, head, err)
	}
	// Another store's document is refused by name, as is proving its receipt.
	other := repoconfig.StoreRef{Store: "other", Name: "prod/redis"}
	if _, _, err := s.Read(context.Background(), other); err == nil || !strings.Contains(err.Error(), "other:prod/redis") {
		t.Fatalf("another store's document: %v", err)
	}
	if _, err := s.Prove(context.Background(), bot.RevisionProof{Ref: other, Path: "r.yaml"}); err == nil ||
		!strings.Contains(err.Error(), "other:prod/redis is not served here") {
		t.Fatalf("another store's proof: %v", err)
	}
	_, err = wire(fmt.Sprintf("confighub:\n  url: %s\n  tokenFile: %s\n", url, filepath.Join(dir, "missing"))).Revisions()
	if err == nil || !strings.Contains(err.Error(), "confighub") || strings.Contains(err.Error(), "hub-secret") {
		t.Fatalf("a missing token file: %v", err)
	}
}

// The store's outcomes reach the executor as the bot's sentinels, the
// store's own errors kept.
func TestOutcomeKeepsTheStoresErrors(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want error
	}{
		{fmt.Errorf("upload: %w", confighub.ErrConflict), bot.ErrChangedSincePlan},
		{fmt.Errorf("dry run: %w", hubstore.ErrWitness), bot.ErrRevisionRefused},
		{fmt.Errorf("dry run: %w", hubstore.ErrMoved), bot.ErrRevisionRefused},
		{fmt.Errorf("prove: %w", hubstore.ErrNotYet), bot.ErrNotProven},
	} {
		got := outcome(tc.err)
		if !errors.Is(got, tc.want) || !errors.Is(got, errors.Unwrap(tc.err)) {
			t.Errorf("%v: %v, want %v kept with the store's", tc.err, got, tc.want)
		}
	}
	server := fmt.Errorf("upload: %w", confighub.ErrServer)
	if got := outcome(server); !errors.Is(got, confighub.ErrServer) || errors.Is(got, bot.ErrChangedSincePlan) || outcome(nil) != nil {
		t.Errorf("a server error is wrapped: %v", got)
	}
}
