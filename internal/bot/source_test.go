package bot

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/backflow-dev/backflow/internal/forge"
	"github.com/backflow-dev/backflow/internal/observe"
	"github.com/backflow-dev/backflow/internal/observe/source"
)

// A source speaks for its own cluster only.
func TestKeyByCluster(t *testing.T) {
	named := replicas(4, 0)
	unnamed := replicas(4, 0)
	unnamed.Cluster = ""
	other := replicas(4, 0)
	other.Cluster = "prod-eu-west-1"
	res := keyByCluster(observe.Result{Observations: []observe.Observation{named, unnamed, other}}, usEastNode, "src")
	if len(res.Observations) != 2 || res.Observations[1].Cluster != usEastNode || len(res.Errors) != 1 {
		t.Fatalf("kept %d, errors %v", len(res.Observations), res.Errors)
	}
}

// A marker copied into a pull request from another branch is ignored: a
// marker counts only on the branch it names.
func TestForeignMarkerIgnored(t *testing.T) {
	fx := newFixture(t, reviewOnly)
	fx.observe(replicas(4, 0))
	fx.cycle()
	mine := fx.onlyPull(forge.StateOpen)
	fx.fake.Push(testRepo, "copycat", forge.Author{Name: "eve"}, "copy\n", map[string]string{"x": "y"})
	if _, err := fx.fake.CreatePullRequest(context.Background(), fx.repo, forge.NewPullRequest{Title: "copy", Body: mine.Body, Head: "copycat", Base: "main"}); err != nil {
		t.Fatal(err)
	}
	fx.clock.Advance(time.Minute)
	if _, effects := fx.cycle(); len(effects) != 0 {
		t.Errorf("a copied marker on another branch was acted on: %v", effects)
	}
}

// A URL source is named without its password.
func TestHTTPSourceName(t *testing.T) {
	s := &HTTPSource{Poller: &source.HTTPSource{URL: "https://scout:hunter2@observer.example/trace.json"}}
	if name := s.Name(); strings.Contains(name, "hunter2") {
		t.Errorf("name %q shows the password", name)
	}
}
