package app

import (
	"context"
	"testing"
)

// Why: repositories cycle concurrently, but one installation's at most
// perInstallation at a time (its rate limits are shared); another
// installation's are not held back by them.
func TestCyclerBoundsCyclesPerInstallation(t *testing.T) {
	c := NewCycler(nil, nil)
	c.SetPerInstallation(2)
	ctx := context.Background()
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	var releases []func()
	for range 2 {
		release, err := c.slot(ctx, "acme")
		if err != nil {
			t.Fatal(err)
		}
		releases = append(releases, release)
	}
	// Full: a wait that is given up takes no slot.
	if _, err := c.slot(cancelled, "ACME"); err == nil {
		t.Fatal("a third cycle of the installation started while two ran")
	}
	if release, err := c.slot(ctx, "other"); err != nil {
		t.Fatalf("another installation waited: %v", err)
	} else {
		release()
	}
	releases[0]()
	release, err := c.slot(ctx, "acme")
	if err != nil {
		t.Fatalf("no room after a cycle ended: %v", err)
	}
	release()
	releases[1]()
}
