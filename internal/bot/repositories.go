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
	b.listed(repos)
	var out []forge.Repo
	for _, r := range repos {
		if b.allowed(r) {
			out = append(out, r)
		}
	}
	slices.SortFunc(out, func(a, b forge.Repo) int { return strings.Compare(a.FullName(), b.FullName()) })
	return out, nil
}

// listed keeps the repositories of a complete listing the allowlist lets
// in as the ones the installation serves.
func (b *Bot) listed(repos []forge.Repo) {
	served := []string{}
	for _, r := range repos {
		if b.allowed(r) {
			served = append(served, r.FullName())
		}
	}
	slices.Sort(served)
	b.mu.Lock()
	b.served = served
	b.mu.Unlock()
}

// servedRepos are the repositories the newest complete listing serves;
// nil before one.
func (b *Bot) servedRepos() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.served)
}

// allowed reports whether the allowlist lets the bot act on repo.
func (b *Bot) allowed(repo forge.Repo) bool {
	if len(b.opts.Repositories) == 0 {
		return true
	}
	return slices.ContainsFunc(b.opts.Repositories, func(r string) bool { return strings.EqualFold(r, repo.FullName()) })
}
