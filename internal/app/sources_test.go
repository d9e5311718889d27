package app

import (
	"strings"
	"testing"

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
