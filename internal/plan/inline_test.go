package plan

import (
	"strings"
	"testing"

	"github.com/backflow-dev/backflow/internal/observe"
)

// sharedRelease is a Flux manifest both production environments apply (a
// base HelmRelease), with the replica count inline.
const sharedRelease = `apiVersion: v1
kind: Namespace
metadata:
  name: redis
---
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: redis
  namespace: redis
spec:
  chart:
    spec: {chart: redis, version: "25.5.3"}
  values:
    master:
      count: 1
    replica:
      replicaCount: 3 # scaled live
`

// TestSharedManifest: a manifest whose inline values units of several
// environments read is a shared file. Its values change only when every
// environment reading it allowed the same value; otherwise there is no
// later file of the unit to hold an override (the manifest is always the
// last), and the decision is denied with the reason.
func TestSharedManifest(t *testing.T) {
	config := strings.NewReplacer(
		"    valuesFiles: [us/values.yaml]\n", "    valuesFiles: [base/redis.yaml]\n    valuesRoot: {document: HelmRelease/redis, path: spec.values}\n",
		"    valuesFiles: [eu/values.yaml]\n", "    valuesFiles: [base/redis.yaml]\n    valuesRoot: {document: HelmRelease/redis, path: spec.values}\n",
	).Replace(testConfig)
	snap := snapshot(t, config)
	snap.Files = map[string][]byte{"base/redis.yaml": []byte(sharedRelease)}

	res := Plan([]observe.Observation{byAlice("euw-1", "redis-replicas", t0, field("spec.replicas", 4, 3))}, nil, snap, testNow)
	d := only(t, res)
	if d.Outcome != Deny || !hasReason(d, "error: shared values file: replica.replicaCount is set in base/redis.yaml, which units of prod-us-east also read") || len(res.WriteBacks) != 0 {
		t.Errorf("one environment changed a manifest another reads: %s %q, %d write-backs", d.Outcome, d.Reasons, len(res.WriteBacks))
	}

	res = Plan([]observe.Observation{
		byAlice("euw-1", "redis-replicas", t0, field("spec.replicas", 4, 3)),
		byAlice("use-1", "redis-replicas", t0, field("spec.replicas", 4, 3)),
		byAlice("use-2", "redis-replicas", t0, field("spec.replicas", 4, 3)),
	}, nil, snap, testNow)
	if len(res.WriteBacks) != 2 {
		t.Fatalf("every environment allowed the same value: want two write-backs, got %d: %q", len(res.WriteBacks), res.Errors)
	}
	want := strings.Replace(sharedRelease, "replicaCount: 3 #", "replicaCount: 4 #", 1)
	for _, wb := range res.WriteBacks {
		if len(wb.Files) != 1 || wb.Files[0].Path != "base/redis.yaml" || string(wb.Files[0].Data) != want {
			t.Errorf("%s: the manifest is not the original with one value changed: %+v", wb.Branch, wb.Files)
		}
	}
	checkAllows(t, res, snap)
}
