package demo

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestBreakGlassDemo runs the demo with the break-glass policy on the
// simulated clock: alice's scale is accepted for 2h (the values line says
// until when), the term passes, the restoring pull request takes
// replicaCount back to 3 and merges pre-authorized, the forward apply puts
// live back at 3, the follow-up proves it, and nothing fires twice.
func TestBreakGlassDemo(t *testing.T) {
	var story bytes.Buffer
	sum, err := Run(context.Background(), Options{Out: t.TempDir(), Narration: &story, BreakGlass: true})
	if err != nil {
		t.Fatalf("%v\n%s", err, story.String())
	}
	if len(sum.PullRequests) != 1 || len(sum.PullRequests[0].Diff) != 2 ||
		!strings.Contains(
			sum.PullRequests[0].Diff[1],
			"replicaCount: 4 # absorbs read load; scaled live during incidents | backflow: accepted until ",
		) {
		t.Fatalf("the acceptance's diff does not say its expiry: %+v", sum.PullRequests)
	}
	x := sum.Expiry
	if x == nil {
		t.Fatal("no expiry in the summary")
	}
	if _, err := time.Parse(time.RFC3339, x.ExpiresAt); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(sum.PullRequests[0].Diff[1], x.ExpiresAt) {
		t.Errorf("the values line does not name the receipt's expiry %s: %s", x.ExpiresAt, sum.PullRequests[0].Diff[1])
	}
	p := x.Restore
	// #2 is the drift issue, which shares the numbers, and #3 the
	// kustomize unit's pull request.
	if p.Number != 4 || !p.Merged ||
		p.Title != "reverse-reconcile(prod-us-east): replica.replicaCount 4 -> 3 on redis-replicas" {
		t.Errorf("restoring pull request %+v", p)
	}
	if want := []string{"-  replicaCount: 4 # absorbs read load; scaled live during incidents | backflow: accepted " +
		"until " + x.ExpiresAt,
		"+  replicaCount: 3 # absorbs read load; scaled live during incidents"}; len(p.Diff) != 2 ||
		!strings.HasPrefix(p.Diff[0], want[0]) ||
		p.Diff[1] != want[1] {
		t.Errorf("restoring diff %q", p.Diff)
	}
	if !slices.Contains(p.Labels, "pre-authorized") || !slices.Contains(p.Labels, "reverse-reconcile:proven") ||
		p.Checks["backflow/receipt"] != "success" {
		t.Errorf("restoring pull request labels %v checks %v", p.Labels, p.Checks)
	}
	if x.Live != 3 && x.Live != float64(3) && x.Live != int64(3) {
		t.Errorf("live after the restoring forward apply: %v (%T), want 3", x.Live, x.Live)
	}
	if x.Again != 0 {
		t.Errorf("the expiry fired again: %d new pull requests", x.Again)
	}
	var proven int
	for _, rc := range sum.Receipts {
		if rc.Status == "proven" && rc.Verified {
			proven++
		}
	}
	if proven != 2 {
		t.Errorf("want the acceptance's and the restoration's receipts proven and verified, got %+v", sum.Receipts)
	}
	for _, s := range []string{
		"10. Break glass", "restored 4 -> 3", "proven backflow/prod-us-east/redis #4", "new pull requests: 0",
	} {
		if !strings.Contains(story.String(), s) {
			t.Errorf("the story does not say %q:\n%s", s, story.String())
		}
	}
}
