package demo

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
)

// The ConfigHub demo runs the seed's incident with the desired state in a
// ConfigHub Unit: the pull request merges, revision 2 is written with a
// description naming alice, the rule and the receipt's digest, ConfigHub
// applies it, and the receipt is proven naming it.
func TestRunConfigHub(t *testing.T) {
	var out strings.Builder
	sum, err := RunConfigHub(context.Background(), Options{Narration: &out, Out: t.TempDir()})
	if err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if sum.Revision != 2 || sum.PullRequest != 1 || fmt.Sprint(sum.Live) != "4" {
		t.Fatalf("summary %+v\n%s", sum, out.String())
	}
	for _, part := range []string{"alice", "spec.rules[0].mayAccept[0]", "sha256:", "spec.replicas 3 -> 4"} {
		if !strings.Contains(sum.Description, part) {
			t.Errorf("the revision's description %q does not name %q", sum.Description, part)
		}
	}
	if !strings.Contains(sum.Proven, "mergeCommit: ") {
		t.Errorf("the proven receipt names no merge commit:\n%s", sum.Proven)
	}
	if data, err := os.ReadFile(sum.ProvenPath); err != nil || string(data) != sum.Proven {
		t.Errorf("the proven receipt was not written to %s: %v", sum.ProvenPath, err)
	}
	t.Logf("%s", out.String())
}
