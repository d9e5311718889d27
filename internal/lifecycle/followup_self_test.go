package lifecycle

import (
	"testing"
	"time"

	"github.com/backflow-dev/backflow/internal/forge"
	"github.com/backflow-dev/backflow/internal/observe"
	"github.com/backflow-dev/backflow/internal/plan"
	"github.com/backflow-dev/backflow/internal/repoconfig"
)

// A merged write-back of a unit of manifests (or a kustomization) names no
// value path: the field is written as itself. An observer that reports the
// object converged lists no field, so the follow-up reads the field's
// desired value from the object's own document, at the accepted 4: the
// receipt is proven, not reverted as if the field were null.
func TestFollowUpSelfFieldAtDesired(t *testing.T) {
	object := observe.ObjectKey{APIVersion: "apps/v1", Kind: "StatefulSet", Namespace: "shop", Name: "web-cache"}
	cfg, err := repoconfig.Parse(repoconfig.Path, []byte(`version: 1
policy: policy.yaml
environments:
  prod: {clusters: [prod-1]}
units:
  - name: shop
    environment: prod
    manifests: [shop.yaml]
    objects: ["apps/v1|StatefulSet|shop|*"]
`))
	if err != nil {
		t.Fatal(err)
	}
	snap := plan.Snapshot{Config: cfg, Commit: head, Files: map[string][]byte{
		"shop.yaml": []byte("apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {name: web-cache, namespace: shop}\nspec:\n  replicas: 4\n"),
	}}
	merged := t0.Add(10 * time.Minute)
	converged := observe.Observation{
		Source: observe.SourceKubernetes, Cluster: "prod-1", ObservedAt: merged.Add(time.Hour), Trust: observe.AttributionAuditLog,
		Object: object,
		Fields: []observe.Field{},
	}
	in := &Input{Snapshot: snap, Result: plan.Plan([]observe.Observation{converged}, nil, snap, merged.Add(time.Hour)),
		Now: merged.Add(time.Hour)}
	m := &Marker{Unit: "shop", Environment: "prod", Branch: "backflow/prod/shop",
		Changes: []MarkerChange{{Object: object, Field: "spec.replicas", From: 3, To: 4, Trust: observe.AttributionAuditLog}}}
	got := in.followMerged(&Pull{PR: forge.PullRequest{Number: 3, Merged: true, MergedAt: merged, MergeCommitSHA: head}, Marker: m})
	if got.Kind != Proven {
		t.Fatalf("follow-up of a converged manifests object: %s (%s), want proven", got.Kind, got.Reason)
	}
}
