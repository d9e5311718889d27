package app

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/backflow-dev/backflow/internal/botconfig"
	"github.com/backflow-dev/backflow/internal/observe"
	"github.com/backflow-dev/backflow/internal/observe/source"
)

// A source speaks for its own cluster only.
func TestKeyByCluster(t *testing.T) {
	obs := func(cluster string) observe.Observation {
		return observe.Observation{Cluster: cluster, Object: observe.ObjectKey{APIVersion: "apps/v1", Kind: "StatefulSet", Namespace: "redis", Name: "redis-replicas"}}
	}
	res := keyByCluster(observe.Result{Observations: []observe.Observation{obs("prod-us-east-1"), obs(""), obs("prod-eu-west-1")}}, "prod-us-east-1", "src")
	if len(res.Observations) != 2 || res.Observations[1].Cluster != "prod-us-east-1" || len(res.Errors) != 1 {
		t.Fatalf("kept %d, errors %v", len(res.Observations), res.Errors)
	}
}

// A URL source is named without its password.
func TestHTTPSourceName(t *testing.T) {
	s := &HTTPSource{Poller: &source.HTTPSource{URL: "https://scout:hunter2@observer.example/trace.json"}}
	if name := s.Name(); strings.Contains(name, "hunter2") {
		t.Errorf("name %q shows the password", name)
	}
}

const minimalConfig = "version: 1\ngithub:\n  appId: 7\n  privateKeyEnv: KEY\n"

// The example config's sources are built from the folder it sits in.
func TestExampleConfigSources(t *testing.T) {
	bc, err := botconfig.LoadConfig(filepath.Join("..", "..", "config", "bot", "backflow.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if n := len(Wire(bc).Sources()); n != 3 {
		t.Errorf("the example config builds %d sources, want 3", n)
	}
}

// Relative observation paths are read from the config's folder.
func TestSourcesAnchorPaths(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "bot.yaml")
	data := minimalConfig + "observations:\n  c1:\n    - path: obs\n"
	if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	bc, err := botconfig.LoadConfig(p)
	if err != nil {
		t.Fatal(err)
	}
	src := Wire(bc).Sources()[0].(*PathSource)
	if src.Path != filepath.Join(dir, "obs") || src.Cluster != "c1" {
		t.Errorf("source %+v", src)
	}
}
