package bot

import (
	"context"
	"slices"
	"testing"
)

// TestServedIsTheNewestCompleteListing: the repositories a cycle tells the
// lifecycle it serves (a sealed hold naming another is released as
// unserved) are the forge's listing within the allowlist, and none before
// a listing.
func TestServedIsTheNewestCompleteListing(t *testing.T) {
	for _, tc := range []struct {
		why   string
		allow []string
		want  []string
	}{
		{"no allowlist: every repository the forge lists", nil, []string{"acme/gitops"}},
		{"the allowlist lets it in", []string{"ACME/gitops", "acme/other"}, []string{"acme/gitops"}},
		{"the allowlist leaves it out: it is not served", []string{"acme/other"}, []string{}},
	} {
		fx := newFixture(t, nil, func(o *Options) { o.Repositories = tc.allow })
		if got := fx.bot.servedRepos(); got != nil {
			t.Errorf("why: %s: served before any listing: %v", tc.why, got)
		}
		if _, err := fx.bot.ListRepos(context.Background()); err != nil {
			t.Fatal(err)
		}
		if got := fx.bot.servedRepos(); !slices.Equal(got, tc.want) || got == nil {
			t.Errorf("why: %s: served %v, want %v", tc.why, got, tc.want)
		}
	}
}
