package bot

import (
	"context"
	"slices"
	"strings"

	"github.com/backflow-dev/backflow/internal/forge"
)

// Repositories lists the repositories a cycle would reconcile ("owner/name",
// sorted): those the forge shows the App, limited by the allowlist.
func (b *Bot) Repositories(ctx context.Context) ([]string, error) {
	repos, err := b.opts.Forge.Repositories(ctx)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, r := range repos {
		if b.allowed(r) {
			out = append(out, r.FullName())
		}
	}
	slices.SortFunc(out, strings.Compare)
	return out, nil
}

// allowed reports whether the allowlist lets the bot act on repo.
func (b *Bot) allowed(repo forge.Repo) bool {
	if len(b.opts.Repositories) == 0 {
		return true
	}
	return slices.ContainsFunc(b.opts.Repositories, func(r string) bool { return strings.EqualFold(r, repo.FullName()) })
}
