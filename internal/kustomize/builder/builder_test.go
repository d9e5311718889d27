package builder

import (
	"testing"
	"time"

	"github.com/backflow-dev/backflow/internal/observe"
	"github.com/backflow-dev/backflow/internal/plan"
	"github.com/backflow-dev/backflow/internal/policy"
	"github.com/backflow-dev/backflow/internal/repoconfig"
)

// TestBuildsOncePerInputs: a write-back builds the overlay once before and
// once after the edit, and a tick whose inputs did not change builds
// nothing.
func TestBuildsOncePerInputs(t *testing.T) {
	cfg, err := repoconfig.Parse(repoconfig.Path, []byte(`version: 1
policy: .github/policy.yaml
environments:
  prod: {clusters: [prod-1]}
units:
  - name: web
    environment: prod
    kustomization: o
    objects: ["apps/v1|Deployment|web|*"]
roles:
  sre: {users: [alice]}
`))
	if err != nil {
		t.Fatal(err)
	}
	pol, err := policy.Parse(".github/policy.yaml", []byte(`apiVersion: backflow.dev/v1alpha1
kind: ReverseReconcilePolicy
metadata: {name: web}
spec:
  default: deny
  rules:
    - role: sre
      mayAccept:
        - field: spec.replicas
          objects: ["apps/v1|Deployment|web|web"]
          environments: [prod]
`))
	if err != nil {
		t.Fatal(err)
	}
	b := &Builder{}
	snap := plan.Snapshot{Config: cfg, Policy: pol, PolicyPath: ".github/policy.yaml", Kustomizer: b, Files: map[string][]byte{
		"o/kustomization.yaml": []byte("resources: [web.yaml]\nreplicas:\n  - name: web\n    count: 2\n"),
		"o/web.yaml":           []byte("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web, namespace: web}\nspec: {replicas: 1}\n"),
	}}
	at := time.Date(2026, 6, 18, 12, 0, 0, 0, time.UTC)
	o := observe.Observation{Source: observe.SourceKubernetes, Cluster: "prod-1", ObservedAt: at,
		Object: observe.ObjectKey{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "web", Name: "web"},
		Change: observe.Change{Actor: "alice", Attribution: observe.AttributionAuditLog, Claimed: observe.AttributionAuditLog},
		Fields: []observe.Field{{Path: "spec.replicas", Live: 3, Desired: 2, HasDesired: true}}}
	for tick, want := range []int{2, 2, 2} {
		res := plan.Plan([]observe.Observation{o}, nil, snap, at.Add(time.Minute))
		if len(res.WriteBacks) != 1 {
			t.Fatalf("tick %d: %d write-backs: %v", tick, len(res.WriteBacks), res.Errors)
		}
		if b.Builds.Runs != want {
			t.Errorf("tick %d: %d builds in all, want %d (once before, once after, then none)", tick, b.Builds.Runs, want)
		}
	}
}
