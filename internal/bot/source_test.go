package bot

import (
	"context"
	"testing"
	"time"

	"github.com/backflow-dev/backflow/internal/forge"
)

// A marker copied into a pull request from another branch is ignored: a
// marker counts only on the branch it names.
func TestForeignMarkerIgnored(t *testing.T) {
	fx := newFixture(t, reviewOnly)
	fx.observe(replicas(4, 0))
	fx.cycle()
	mine := fx.onlyPull(forge.StateOpen)
	fx.hub.Push(testRepo, "copycat", forge.Author{Name: "eve"}, "copy\n", map[string]string{"x": "y"})
	if _, err := fx.hub.CreatePullRequest(context.Background(), fx.repo, forge.NewPullRequest{Title: "copy", Body: mine.Body, Head: "copycat", Base: "main"}); err != nil {
		t.Fatal(err)
	}
	fx.clock.Advance(time.Minute)
	if _, effects := fx.cycle(); len(effects) != 0 {
		t.Errorf("a copied marker on another branch was acted on: %v", effects)
	}
}
