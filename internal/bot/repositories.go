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
	repos, err := b.ListRepos(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]string, len(repos))
	for i, r := range repos {
		out[i] = r.FullName()
	}
	return out, nil
}

// ListRepos lists the repositories a cycle would reconcile, with their
// default branches, sorted by name: what CycleList takes.
func (b *Bot) ListRepos(ctx context.Context) ([]forge.Repo, error) {
	repos, err := b.opts.Forge.Repositories(ctx)
	if err != nil {
		return nil, err
	}
	var out []forge.Repo
	for _, r := range repos {
		if b.allowed(r) {
			out = append(out, r)
		}
	}
	slices.SortFunc(out, func(a, b forge.Repo) int { return strings.Compare(a.FullName(), b.FullName()) })
	return out, nil
}

// allowed reports whether the allowlist lets the bot act on repo.
func (b *Bot) allowed(repo forge.Repo) bool {
	if len(b.opts.Repositories) == 0 {
		return true
	}
	return slices.ContainsFunc(b.opts.Repositories, func(r string) bool { return strings.EqualFold(r, repo.FullName()) })
}
