package diffbound

import (
	"strings"
	"testing"
	"time"

	"github.com/backflow-dev/backflow/internal/observe"
	"github.com/backflow-dev/backflow/internal/plan"
	"github.com/backflow-dev/backflow/internal/policy"
	"github.com/backflow-dev/backflow/internal/repoconfig"
)

const testPolicy = `apiVersion: backflow.dev/v1alpha1
kind: ReverseReconcilePolicy
metadata:
  name: redis
spec:
  default: deny
  rules:
    - role: sre
      reason: SRE may scale redis.
      mayAccept:
        - valuePath: replica.replicaCount
          field: spec.replicas
          objects: ["apps/v1|StatefulSet|redis|redis-replicas"]
          environments: [prod]
`

const denyAll = `apiVersion: backflow.dev/v1alpha1
kind: ReverseReconcilePolicy
metadata:
  name: redis
spec:
  default: deny
  rules: []
`

const testConfig = `version: 1
policy: .github/policy.yaml
environments:
  prod:
    clusters: [prod-1]
units:
  - name: redis
    environment: prod
    valuesFiles: [envs/prod/values.yaml]
    objects: ["apps/v1|StatefulSet|redis|*"]
roles:
  sre:
    groups: [sre]
`

const valuesFile = "envs/prod/values.yaml"

const baseValues = `# redis in prod
replica:
  replicaCount: 3 # scaled live
  persistence:
    size: 8Gi
image:
  tag: "7.2"
`

// pullRequest is the planner's own write-back for replicas 3 -> 5, as
// the input of the check.
func pullRequest(t testing.TB) Input {
	t.Helper()
	return planned(t, testConfig, map[string][]byte{valuesFile: []byte(baseValues)})
}

// planned is the planner's write-back for replicas 3 -> 5 with config and
// the repository's values files, as the input of the check.
func planned(t testing.TB, config string, files map[string][]byte) Input {
	t.Helper()
	return plannedOn(t, config, testPolicy, "prod-1", files)
}

// plannedOn is the planner's write-back for replicas 3 -> 5 observed on
// cluster, under config and policy.
func plannedOn(t testing.TB, config, policyText, cluster string, files map[string][]byte) Input {
	t.Helper()
	cfg, pol := parsed(t, config, policyText)
	snap := plan.Snapshot{Config: cfg, Policy: pol, PolicyPath: ".github/policy.yaml", Files: files}
	at := time.Date(2026, 6, 18, 12, 0, 0, 0, time.UTC)
	res := plan.Plan([]observe.Observation{scaledTo5(cluster, at)}, nil, snap, at.Add(time.Minute))
	if len(res.WriteBacks) != 1 {
		t.Fatalf("no write-back: %v", res.Errors)
	}
	return inputOf(snap, res.WriteBacks[0])
}

// inputOf is the check's input for the write-back wb planned on snap.
func inputOf(snap plan.Snapshot, wb plan.WriteBack) Input {
	in := Input{Config: snap.Config, Policy: snap.Policy, PolicyPath: snap.PolicyPath, Base: snap.Files, Head: map[string][]byte{}}
	for _, f := range append(wb.Files, wb.Receipts...) {
		in.Changed = append(in.Changed, f.Path)
		in.Head[f.Path] = f.Data
	}
	return in
}

// scaledTo5 is alice's audit-logged scale of redis-replicas from 3 to 5
// on cluster, observed at at.
func scaledTo5(cluster string, at time.Time) observe.Observation {
	return observe.Observation{
		Source: observe.SourceKubernetes, Cluster: cluster, ObservedAt: at,
		Object: observe.ObjectKey{APIVersion: "apps/v1", Kind: "StatefulSet", Namespace: "redis", Name: "redis-replicas"},
		Change: observe.Change{Actor: "alice", Groups: []string{"sre"}, Attribution: observe.AttributionAuditLog, Claimed: observe.AttributionAuditLog},
		Fields: []observe.Field{{Path: "spec.replicas", Live: 5, Desired: 3, HasDesired: true}},
	}
}

func receiptPath(in Input) string {
	for _, p := range in.Changed {
		if strings.HasPrefix(p, repoconfig.DefaultReceiptsDir) {
			return p
		}
	}
	return ""
}

func TestCheck(t *testing.T) {
	for _, tc := range []struct {
		why    string
		change func(t *testing.T, in *Input)
		want   []string // substrings of the violations, in order; none: pass
	}{
		{why: "the planner's own write-back is within its receipt", change: func(*testing.T, *Input) {}},
		{why: "a comment edited next to the claimed value changes no parsed value", change: func(_ *testing.T, in *Input) {
			in.Head[valuesFile] = []byte(strings.Replace(string(in.Head[valuesFile]), "# redis in prod", "# redis in prod, reviewed", 1))
		}},
		{why: "an extra value change in the same file is unclaimed", change: func(_ *testing.T, in *Input) {
			in.Head[valuesFile] = []byte(strings.Replace(string(in.Head[valuesFile]), "size: 8Gi", "size: 80Gi", 1))
		}, want: []string{valuesFile + ": replica.persistence.size is set to 80Gi, but no receipt"}},
		{why: "a removed key is unclaimed", change: func(_ *testing.T, in *Input) {
			in.Head[valuesFile] = []byte(strings.Replace(string(in.Head[valuesFile]), "image:\n  tag: \"7.2\"\n", "", 1))
		}, want: []string{valuesFile + ": image is removed"}},
		{why: "the claimed path at another value than the receipt's to", change: func(_ *testing.T, in *Input) {
			in.Head[valuesFile] = []byte(strings.Replace(string(in.Head[valuesFile]), "replicaCount: 5", "replicaCount: 9", 1))
		}, want: []string{valuesFile + ": replica.replicaCount is set to 9"}},
		{why: "a number written as a string is another value", change: func(_ *testing.T, in *Input) {
			in.Head[valuesFile] = []byte(strings.Replace(string(in.Head[valuesFile]), "replicaCount: 5", `replicaCount: "5"`, 1))
		}, want: []string{valuesFile + `: replica.replicaCount is set to "5"`}},
		{why: "a new file outside the receipts and named values files", change: func(_ *testing.T, in *Input) {
			in.Changed = append(in.Changed, "scripts/deploy.sh")
			in.Head["scripts/deploy.sh"] = []byte("#!/bin/sh\n")
		}, want: []string{"scripts/deploy.sh: changed, but it is neither a receipt"}},
		{why: "the policy itself changed by the pull request", change: func(_ *testing.T, in *Input) {
			in.Changed = append(in.Changed, ".github/policy.yaml")
		}, want: []string{".github/policy.yaml: changed, but it is neither"}},
		{why: "a deleted receipt", change: func(_ *testing.T, in *Input) {
			in.Changed = append(in.Changed, repoconfig.DefaultReceiptsDir+"/prod/old.yaml")
		}, want: []string{"/prod/old.yaml: a receipt is deleted"}},
		{why: "receipts verify against the BASE policy, which here authorizes nothing", change: func(t *testing.T, in *Input) {
			pol, err := policy.Parse(".github/policy.yaml", []byte(denyAll))
			if err != nil {
				t.Fatal(err)
			}
			in.Policy = pol
		}, want: []string{"not authorized"}},
		{why: "a receipt that does not parse", change: func(_ *testing.T, in *Input) {
			in.Head[receiptPath(*in)] = []byte("kind: [")
		}, want: []string{repoconfig.DefaultReceiptsDir + "/prod/redis/redis_StatefulSet.apps.v1_redis-replicas.yaml: "}},
	} {
		t.Run(tc.why, func(t *testing.T) {
			in := pullRequest(t)
			tc.change(t, &in)
			res := Check(in)
			if len(tc.want) == 0 {
				if !res.OK() || res.Receipts != 1 || res.ValuePaths != 1 {
					t.Fatalf("%s: %+v", tc.why, res)
				}
				return
			}
			got := strings.Join(res.Violations, "\n")
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("%s: violations lack %q:\n%s", tc.why, w, got)
				}
			}
		})
	}
}

func TestCheckWithoutConfig(t *testing.T) {
	if res := Check(Input{Changed: []string{"a"}}); res.OK() {
		t.Error("no base config passed")
	}
}

const inlineConfig = `version: 1
policy: .github/policy.yaml
environments:
  prod:
    clusters: [prod-1]
units:
  - name: redis
    environment: prod
    valuesFiles: [envs/common.yaml, envs/prod/redis.yaml]
    valuesRoot: {document: HelmRelease/redis, path: spec.values}
    objects: ["apps/v1|StatefulSet|redis|*"]
roles:
  sre:
    groups: [sre]
`

const manifest = "envs/prod/redis.yaml"

const baseManifest = `apiVersion: v1
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
    spec:
      chart: redis
      version: "25.5.3"
  values:
    replica:
      replicaCount: 3 # scaled live
`

// TestCheckInline bounds a write-back of a HelmRelease's inline values: the
// receipt claims a value path below spec.values, so nothing else of the
// manifest may change, in that document or another.
func TestCheckInline(t *testing.T) {
	files := map[string][]byte{"envs/common.yaml": []byte("image:\n  tag: \"7.2\"\n"), manifest: []byte(baseManifest)}
	edit := func(old, replacement string) func(*Input) {
		return func(in *Input) {
			in.Head[manifest] = []byte(strings.Replace(string(in.Head[manifest]), old, replacement, 1))
		}
	}
	for _, tc := range []struct {
		why    string
		change func(in *Input)
		want   []string
	}{
		{why: "the planner's own write-back of the inline values is within its receipt", change: func(*Input) {}},
		{why: "the chart version of the HelmRelease changed too", change: edit(`version: "25.5.3"`, `version: "26.0.0"`),
			want: []string{manifest + ": document 1: spec.chart.spec.version changed outside the spec.values of HelmRelease/redis"}},
		{why: "another document of the manifest changed", change: edit("  name: redis\n---", "  name: redis-2\n---"),
			want: []string{manifest + ": document 0: metadata.name changed outside"}},
		{why: "a document added to the manifest", change: edit("", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n---\n"),
			want: []string{manifest + ": 2 documents at the base, 3 at the head"}},
		{why: "an unclaimed change inside the inline values", change: edit("replicaCount: 5", "replicaCount: 5\n      extra: true"),
			want: []string{manifest + ": replica.extra is set to true, but no receipt"}},
		{why: "an unclaimed change of the plain values file before the manifest", change: func(in *Input) {
			in.Changed = append(in.Changed, "envs/common.yaml")
			in.Head["envs/common.yaml"] = []byte("image:\n  tag: \"7.4\"\n")
		}, want: []string{"envs/common.yaml: changed, but it is neither a receipt"}},
	} {
		t.Run(tc.why, func(t *testing.T) {
			in := planned(t, inlineConfig, files)
			if got := string(in.Head[manifest]); got != strings.Replace(baseManifest, "replicaCount: 3", "replicaCount: 5", 1) {
				t.Fatalf("the write-back changed more than the inline value:\n%s", got)
			}
			tc.change(&in)
			res := Check(in)
			if len(tc.want) == 0 {
				if !res.OK() || res.Receipts != 1 || res.ValuePaths != 1 {
					t.Fatalf("%+v", res)
				}
				return
			}
			got := strings.Join(res.Violations, "\n")
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("violations lack %q:\n%s", w, got)
				}
			}
		})
	}
}

// parsed is the repository config and policy of the texts given, failing
// the test when either does not parse.
func parsed(t testing.TB, config, policyText string) (*repoconfig.Config, *policy.Policy) {
	t.Helper()
	cfg, err := repoconfig.Parse(repoconfig.Path, []byte(config))
	if err != nil {
		t.Fatal(err)
	}
	pol, err := policy.Parse(".github/policy.yaml", []byte(policyText))
	if err != nil {
		t.Fatal(err)
	}
	return cfg, pol
}
