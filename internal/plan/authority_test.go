package plan

import (
	"fmt"
	"maps"
	"reflect"
	"strings"
	"testing"

	"github.com/backflow-dev/backflow/internal/helmvalues"
	"github.com/backflow-dev/backflow/internal/observe"
	"github.com/backflow-dev/backflow/internal/policy"
	"github.com/backflow-dev/backflow/internal/repoconfig"
)

// TestClusterBindsEnvironment: the repository, not the document, says which
// environment a cluster belongs to.
func TestClusterBindsEnvironment(t *testing.T) {
	for _, tc := range []struct {
		name, why         string
		cluster, docEnv   string
		attribution       observe.Attribution
		wantOutcome       Outcome
		wantEnv           string
		wantErrorContains []string
	}{
		{name: "listed cluster", why: "the config's environment decides",
			cluster: "euw-1", attribution: observe.AttributionAuditLog, wantOutcome: Allow, wantEnv: "prod-eu-west"},
		{name: "listed cluster, same environment named", why: "a document agreeing with the config is fine",
			cluster: "euw-1", docEnv: "prod-eu-west", attribution: observe.AttributionAuditLog, wantOutcome: Allow, wantEnv: "prod-eu-west"},
		{name: "unlisted cluster naming prod", why: "a cluster no environment lists cannot claim one, however trusted",
			cluster: "edge-7", docEnv: "prod-us-east", attribution: observe.AttributionAuditLog, wantOutcome: Unmapped,
			wantErrorContains: []string{"obs.yaml#0", `cluster "edge-7"`, "no environment"}},
		{name: "unlisted cluster, no environment named", why: "still an error, not a silent skip",
			cluster: "edge-7", attribution: observe.AttributionAuditLog, wantOutcome: Unmapped,
			wantErrorContains: []string{"obs.yaml#0", `cluster "edge-7"`}},
		{name: "listed cluster naming another environment", why: "the document contradicts the repository: refused",
			cluster: "euw-1", docEnv: "prod-us-east", attribution: observe.AttributionAuditLog, wantOutcome: Unmapped,
			wantErrorContains: []string{"obs.yaml#0", "prod-us-east", "prod-eu-west"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := byAlice(tc.cluster, "redis-replicas", t0, field("spec.replicas", 4, 3))
			o.Environment = tc.docEnv
			o.Origin = "obs.yaml#0"
			o.Change.Attribution = tc.attribution
			res := Plan([]observe.Observation{o}, nil, snapshot(t, testConfig), testNow)
			d := only(t, res)
			if d.Outcome != tc.wantOutcome || d.Environment != tc.wantEnv {
				t.Fatalf("%s: got %s in %q, want %s in %q (%v)", tc.why, d.Outcome, d.Environment, tc.wantOutcome, tc.wantEnv, d.Reasons)
			}
			if tc.wantOutcome != Allow {
				if len(res.WriteBacks) != 0 || d.WriteBack != "" || d.Receipt != nil {
					t.Errorf("%s: a refused observation was written back", tc.why)
				}
				if len(res.Errors) != 1 {
					t.Fatalf("%s: errors %q, want one", tc.why, res.Errors)
				}
				for _, s := range tc.wantErrorContains {
					if !strings.Contains(res.Errors[0], s) {
						t.Errorf("%s: error %q lacks %q", tc.why, res.Errors[0], s)
					}
				}
			} else if len(res.Errors) != 0 {
				t.Errorf("errors %q", res.Errors)
			}
		})
	}
}

const sharedPolicy = `apiVersion: backflow.dev/v1alpha1
kind: ReverseReconcilePolicy
metadata:
  name: web
spec:
  default: deny
  rules:
    - role: sre
      reason: SRE may scale web in stage only.
      mayAccept:
        - valuePath: web.replicas
          field: spec.replicas
          autoMerge: true
          objects: ["apps/v1|Deployment|web|web"]
          environments: [%s]
`

const sharedConfig = `version: 1
policy: .github/policy.yaml
environments:
  stage-eu:
    clusters: [stage-1]
  prod-eu:
    clusters: [prod-1]
units:
  - name: web
    environment: stage-eu
    valuesFiles: [base/values.yaml, stage/values.yaml]
    objects: ["apps/v1|Deployment|web|web"]
  - name: web
    environment: prod-eu
    valuesFiles: [base/values.yaml, %s]
    objects: ["apps/v1|Deployment|web|web"]
roles:
  sre:
    groups: [sre]
`

const sharedBase = `# shared by every environment
web:
  replicas: 3 # the fleet's default
  image: web:1.0
`

const stageValues = `# stage overrides
web:
  image: web:1.1-rc # stage runs the candidate
`

func sharedSnapshot(t *testing.T, envs, prodLast string) Snapshot {
	t.Helper()
	cfg, err := repoconfig.Parse(repoconfig.Path, []byte(fmt.Sprintf(sharedConfig, prodLast)))
	if err != nil {
		t.Fatal(err)
	}
	pol, err := policy.Parse(".github/policy.yaml", []byte(fmt.Sprintf(sharedPolicy, envs)))
	if err != nil {
		t.Fatal(err)
	}
	return Snapshot{Config: cfg, Policy: pol, PolicyPath: ".github/policy.yaml", Files: map[string][]byte{
		"base/values.yaml": []byte(sharedBase), "stage/values.yaml": []byte(stageValues), "prod/values.yaml": []byte("web:\n  image: web:1.0\n"),
	}}
}

func webObs(cluster string, live int) observe.Observation {
	return observe.Observation{
		Source: observe.SourceKubernetes, Cluster: cluster, ObservedAt: t0, Origin: cluster + ".yaml",
		Object: observe.ObjectKey{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "web", Name: "web"},
		Change: observe.Change{Actor: "alice", Groups: []string{"sre"}, Attribution: observe.AttributionAuditLog, Claimed: observe.AttributionAuditLog},
		Fields: []observe.Field{field("spec.replicas", live, 3)},
	}
}

// mergedAfter is a unit's merged desired values with the write-backs'
// files in place.
func mergedAfter(t *testing.T, snap Snapshot, res Result, env string) map[string]any {
	t.Helper()
	files := maps.Clone(snap.Files)
	for _, wb := range res.WriteBacks {
		for _, f := range wb.Files {
			files[f.Path] = f.Data
		}
	}
	for i := range snap.Config.Units {
		u := &snap.Config.Units[i]
		if u.Environment != env {
			continue
		}
		var trees []map[string]any
		for _, p := range u.ValuesFiles {
			tree, err := repoconfig.Values(p, files[p], nil)
			if err != nil {
				t.Fatal(err)
			}
			trees = append(trees, tree)
		}
		return helmvalues.Plain(MergeValues(trees)).(map[string]any)
	}
	t.Fatalf("no unit in %s", env)
	return nil
}

// TestSharedValuesFile: one environment's authority never changes another
// environment's desired state through a file both read.
func TestSharedValuesFile(t *testing.T) {
	t.Run("stage only: override in stage's own file", func(t *testing.T) {
		snap := sharedSnapshot(t, "stage-eu", "prod/values.yaml")
		prodBefore := mergedAfter(t, snap, Result{}, "prod-eu")
		res := Plan([]observe.Observation{webObs("stage-1", 5)}, nil, snap, testNow)
		d := only(t, res)
		if d.Outcome != Allow || len(res.WriteBacks) != 1 {
			t.Fatalf("got %s %v %q", d.Outcome, d.Reasons, res.Errors)
		}
		wb := res.WriteBacks[0]
		if len(wb.Files) != 1 || wb.Files[0].Path != "stage/values.yaml" {
			t.Fatalf("files written: %v", filePaths(wb.Files))
		}
		if d.Changes[0].ValuesFile != "stage/values.yaml" {
			t.Errorf("change names %s", d.Changes[0].ValuesFile)
		}
		want := "# stage overrides\nweb:\n  image: web:1.1-rc # stage runs the candidate\n  replicas: 5\n"
		if got := string(wb.Files[0].Data); got != want {
			t.Errorf("stage file:\n%s\nwant:\n%s", got, want)
		}
		if !reflect.DeepEqual(mergedAfter(t, snap, res, "prod-eu"), prodBefore) {
			t.Error("prod's desired state changed")
		}
		if got := mergedAfter(t, snap, res, "stage-eu")["web"].(map[string]any)["replicas"]; got != int64(5) {
			t.Errorf("stage's desired replicas %v", got)
		}
		r := string(wb.Receipts[0].Data)
		for _, s := range []string{"valuesFile: stage/values.yaml", "base/values.yaml", "prod-eu"} {
			if !strings.Contains(r, s) {
				t.Errorf("receipt lacks %q:\n%s", s, r)
			}
		}
	})
	t.Run("both environments authorized the same change: the shared file", func(t *testing.T) {
		snap := sharedSnapshot(t, "stage-eu, prod-eu", "prod/values.yaml")
		res := Plan([]observe.Observation{webObs("stage-1", 5), webObs("prod-1", 5)}, nil, snap, testNow)
		if len(res.WriteBacks) != 2 {
			t.Fatalf("write-backs %d, errors %q", len(res.WriteBacks), res.Errors)
		}
		for _, wb := range res.WriteBacks {
			if len(wb.Files) != 1 || wb.Files[0].Path != "base/values.yaml" {
				t.Errorf("%s writes %v", wb.Branch, filePaths(wb.Files))
			}
		}
	})
	t.Run("different values per environment: each its own file", func(t *testing.T) {
		snap := sharedSnapshot(t, "stage-eu, prod-eu", "prod/values.yaml")
		res := Plan([]observe.Observation{webObs("stage-1", 5), webObs("prod-1", 6)}, nil, snap, testNow)
		got := map[string][]string{}
		for _, wb := range res.WriteBacks {
			got[wb.Environment] = filePaths(wb.Files)
		}
		want := map[string][]string{"stage-eu": {"stage/values.yaml"}, "prod-eu": {"prod/values.yaml"}}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("files %v, want %v (errors %q)", got, want, res.Errors)
		}
	})
	t.Run("no file of its own: refused", func(t *testing.T) {
		snap := sharedSnapshot(t, "stage-eu", "stage/values.yaml")
		res := Plan([]observe.Observation{webObs("stage-1", 5)}, nil, snap, testNow)
		d := only(t, res)
		if d.Outcome != Deny || len(res.WriteBacks) != 0 || len(res.Errors) != 1 || !strings.Contains(res.Errors[0], "prod-eu") {
			t.Errorf("got %s %v, errors %q", d.Outcome, d.Reasons, res.Errors)
		}
	})
}

func filePaths(fs []File) []string {
	var out []string
	for _, f := range fs {
		out = append(out, f.Path)
	}
	return out
}
