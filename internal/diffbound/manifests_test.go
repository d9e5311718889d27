package diffbound

import (
	"strings"
	"testing"
	"time"

	"github.com/backflow-dev/backflow/internal/observe"
	"github.com/backflow-dev/backflow/internal/plan"
)

const manifestsConfig = `version: 1
policy: .github/policy.yaml
environments:
  prod:
    clusters: [prod-1]
  staging:
    clusters: [staging-1]
units:
  - name: db
    environment: prod
    manifests: [deploy/prod]
    objects: ["apps/v1|StatefulSet|db|*", "v1|Service|db|*"]
  - name: db
    environment: staging
    manifests: [deploy/staging/db.yaml]
    objects: ["apps/v1|StatefulSet|db|*", "v1|Service|db|*"]
roles:
  sre:
    groups: [sre]
`

const manifestsPolicy = `apiVersion: backflow.dev/v1alpha1
kind: ReverseReconcilePolicy
metadata:
  name: db
spec:
  default: deny
  rules:
    - role: sre
      mayAccept:
        - field: spec.replicas
          objects: ["apps/v1|StatefulSet|db|db"]
          environments: [prod, staging]
`

const (
	prodManifest    = "deploy/prod/db.yaml"
	stagingManifest = "deploy/staging/db.yaml"
	dbManifest      = `apiVersion: v1
kind: Service
metadata:
  name: db
  namespace: db
spec:
  clusterIP: None
---
apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: db
  namespace: db
spec:
  replicas: 3 # read replicas
`
)

// manifestsWriteBack is the planner's write-back of alice's scale of the
// prod database from 3 to 4, in the second document of its manifest.
func manifestsWriteBack(t *testing.T) Input {
	t.Helper()
	cfg, pol := parsed(t, manifestsConfig, manifestsPolicy)
	snap := plan.Snapshot{Config: cfg, Policy: pol, PolicyPath: ".github/policy.yaml",
		Files: map[string][]byte{prodManifest: []byte(dbManifest), stagingManifest: []byte(dbManifest)}}
	at := time.Date(2026, 6, 18, 12, 0, 0, 0, time.UTC)
	o := observe.Observation{
		Source: observe.SourceKubernetes, Cluster: "prod-1", ObservedAt: at,
		Object: observe.ObjectKey{APIVersion: "apps/v1", Kind: "StatefulSet", Namespace: "db", Name: "db"},
		Change: observe.Change{Actor: "alice", Groups: []string{"sre"}, Attribution: observe.AttributionAuditLog, Claimed: observe.AttributionAuditLog},
		Fields: []observe.Field{{Path: "spec.replicas", Live: 4, Desired: 3, HasDesired: true}},
	}
	return onlyWriteBack(t, snap, o)
}

// onlyWriteBack plans o a minute after it was observed and returns the one
// write-back as the pull request check sees it.
func onlyWriteBack(t *testing.T, snap plan.Snapshot, o observe.Observation) Input {
	t.Helper()
	res := plan.Plan([]observe.Observation{o}, nil, snap, o.ObservedAt.Add(time.Minute))
	if len(res.WriteBacks) != 1 {
		t.Fatalf("%d write-backs, want 1: %v %v", len(res.WriteBacks), res.Errors, res.Decisions)
	}
	return inputOf(snap, res.WriteBacks[0])
}

// TestCheckManifests: a receipt of a unit of plain manifests authorizes
// only its field, in its object's document, of its own unit's manifests.
func TestCheckManifests(t *testing.T) {
	for _, tc := range []struct {
		why    string
		change func(in *Input)
		want   []string
	}{
		{why: "the planner's own write-back is within its receipt", change: func(*Input) {}},
		{why: "another document of the same file changed is unclaimed", change: func(in *Input) {
			in.Head[prodManifest] = []byte(strings.Replace(string(in.Head[prodManifest]), "clusterIP: None", "clusterIP: 10.0.0.9", 1))
		}, want: []string{prodManifest + ": document 0 (v1|Service|db|db): spec.clusterIP is set to 10.0.0.9, but no receipt"}},
		{why: "another field of the object's own document is unclaimed", change: func(in *Input) {
			in.Head[prodManifest] = []byte(strings.Replace(string(in.Head[prodManifest]), "  replicas: 4", "  replicas: 4\n  serviceName: db", 1))
		}, want: []string{prodManifest + ": document 1 (apps/v1|StatefulSet|db|db): spec.serviceName is set to db, but no receipt"}},
		{why: "a document added is never a field's write-back", change: func(in *Input) {
			in.Head[prodManifest] = append(in.Head[prodManifest], []byte("---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n")...)
		}, want: []string{prodManifest + ": 2 documents at the base, 3 at the head"}},
		{why: "the receipt may not write another environment's manifest", change: func(in *Input) {
			rp := receiptPath(*in)
			in.Head[rp] = []byte(strings.ReplaceAll(string(in.Head[rp]), prodManifest, stagingManifest))
			in.Head[stagingManifest] = in.Head[prodManifest]
			delete(in.Head, prodManifest)
			in.Changed = []string{rp, stagingManifest}
		}, want: []string{"names deploy/staging/db.yaml, which is not a manifest of unit db in prod", stagingManifest + ": changed, but it is neither a receipt"}},
		{why: "a manifest's field is written at its own path only", change: func(in *Input) {
			rp := receiptPath(*in)
			in.Head[rp] = []byte(strings.Replace(string(in.Head[rp]), "writtenPath: spec.replicas", "writtenPath: spec.serviceName", 1))
		}, want: []string{"writes spec.replicas at spec.serviceName, but a unit of plain manifests writes a field at its own path"}},
	} {
		t.Run(tc.why, func(t *testing.T) {
			in := manifestsWriteBack(t)
			if _, ok := in.Head[prodManifest]; !ok {
				t.Fatalf("the write-back does not edit %s: %v", prodManifest, in.Changed)
			}
			checkChanged(t, in, tc.change, tc.want)
		})
	}
}

// checkChanged checks the planner's write-back in after change: within
// bounds with one changed path when want is empty, else with violations
// containing each of want.
func checkChanged(t *testing.T, in Input, change func(*Input), want []string) {
	t.Helper()
	change(&in)
	r := Check(in)
	if len(want) == 0 {
		if !r.OK() || r.ValuePaths != 1 {
			t.Fatalf("%+v", r)
		}
		return
	}
	all := strings.Join(r.Violations, "\n")
	for _, w := range want {
		if !strings.Contains(all, w) {
			t.Errorf("violations lack %q:\n%s", w, all)
		}
	}
}
