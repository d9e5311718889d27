package diffbound

import (
	"strings"
	"testing"
	"time"

	"github.com/backflow-dev/backflow/internal/kustomize/builder"
	"github.com/backflow-dev/backflow/internal/observe"
	"github.com/backflow-dev/backflow/internal/plan"
	"github.com/backflow-dev/backflow/internal/policy"
)

const kustomizeConfig = `version: 1
policy: .github/policy.yaml
environments:
  prod:
    clusters: [prod-1]
units:
  - name: web
    environment: prod
    kustomization: overlays/prod
    objects: ["apps/v1|Deployment|web|*"]
roles:
  sre:
    groups: [sre]
`

const (
	overlay       = "overlays/prod/kustomization.yaml"
	overlayFile   = "resources: [../../base]\nreplicas:\n  - name: web\n    count: 2 # two zones\nimages:\n  - name: web\n    newTag: \"1.0\"\n"
	baseKustomize = "resources: [web.yaml]\n"
	baseWeb       = "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web, namespace: web}\nspec:\n  replicas: 1\n  template:\n    spec:\n      containers:\n        - name: web\n          image: web:0.9\n"
)

// kustomizeWriteBack is the planner's write-back of alice's scale of web
// from 2 to 3: the overlay's replicas: entry.
func kustomizeWriteBack(t *testing.T) Input {
	t.Helper()
	return kustomizeWriteBackOf(
		t,
		map[string][]byte{overlay: []byte(overlayFile), "base/kustomization.yaml": []byte(baseKustomize), "base/web.yaml": []byte(baseWeb)},
	)
}

// kustomizeWriteBackOf is the planner's write-back of alice's scale of web
// from 2 to 3 in the repository of files.
func kustomizeWriteBackOf(t *testing.T, files map[string][]byte) Input {
	t.Helper()
	cfg, pol := parsed(t, kustomizeConfig, strings.NewReplacer("apps/v1|StatefulSet|db|db", "apps/v1|Deployment|web|web", "[prod, staging]", "[prod]").Replace(manifestsPolicy))
	snap := plan.Snapshot{Config: cfg, Policy: pol, PolicyPath: ".github/policy.yaml", Files: files, Kustomizer: &builder.Builder{}}
	at := time.Date(2026, 6, 18, 12, 0, 0, 0, time.UTC)
	o := observe.Observation{
		Source: observe.SourceKubernetes, Cluster: "prod-1", ObservedAt: at,
		Object: observe.ObjectKey{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "web", Name: "web"},
		Change: observe.Change{Actor: "alice", Groups: []string{"sre"}, Attribution: observe.AttributionAuditLog, Claimed: observe.AttributionAuditLog},
		Fields: []observe.Field{{Path: "spec.replicas", Live: 3, Desired: 2, HasDesired: true}},
	}
	return onlyWriteBack(t, snap, o)
}

// TestCheckKustomize: a kustomize unit's receipt authorizes only the path
// it wrote in its own overlay.
func TestCheckKustomize(t *testing.T) {
	for _, tc := range []struct {
		why    string
		change func(in *Input)
		want   []string
	}{
		{why: "the planner's own write-back is within its receipt", change: func(*Input) {}},
		{why: "another entry of the overlay changed is unclaimed", change: func(in *Input) {
			in.Head[overlay] = []byte(strings.Replace(string(in.Head[overlay]), `newTag: "1.0"`, `newTag: "6.6"`, 1))
		}, want: []string{overlay + ": document 0: images[0].newTag changed, but no receipt"}},
		{why: "a base is written only as an override in the overlay", change: func(in *Input) {
			rp := receiptPath(*in)
			in.Head[rp] = []byte(strings.ReplaceAll(string(in.Head[rp]), "writtenFile: "+overlay, "writtenFile: base/web.yaml"))
		}, want: []string{"names base/web.yaml, which is outside unit web's overlay overlays/prod"}},
	} {
		t.Run(tc.why, func(t *testing.T) {
			in := kustomizeWriteBack(t)
			if !strings.Contains(string(in.Head[overlay]), "count: 3 # two zones") {
				t.Fatalf("the write-back does not edit the replicas: entry:\n%s", in.Head[overlay])
			}
			checkChanged(t, in, tc.change, tc.want)
		})
	}
}

// TestCheckKustomizeFluxVariable: a kustomize unit's receipt may write a
// postBuild variable of the Flux Kustomization applying its own overlay,
// and of no other.
func TestCheckKustomizeFluxVariable(t *testing.T) {
	const flux = "clusters/prod/web.yaml"
	fluxFile := "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata: {name: web, namespace: flux-system}\n" +
		"spec:\n  path: ./overlays/prod\n  postBuild:\n    substitute:\n      web_replicas: \"2\"\n"
	writeBack := func(t *testing.T) Input {
		t.Helper()
		return kustomizeWriteBackOf(t, map[string][]byte{
			overlay:                   []byte("resources: [../../base]\n"),
			"base/kustomization.yaml": []byte(baseKustomize),
			"base/web.yaml":           []byte(strings.Replace(baseWeb, "replicas: 1", "replicas: ${web_replicas}", 1)),
			flux:                      []byte(fluxFile),
		})
	}
	for _, tc := range []struct {
		why    string
		change func(in *Input)
		want   []string
	}{
		{why: "the planner's write of the variable is within its receipt", change: func(*Input) {}},
		{why: "a Flux Kustomization of another overlay is not the unit's", change: func(in *Input) {
			in.Base[flux] = []byte(strings.Replace(fluxFile, "./overlays/prod", "./overlays/staging", 1))
		}, want: []string{"names " + flux + ", which is outside unit web's overlay overlays/prod"}},
	} {
		t.Run(tc.why, func(t *testing.T) {
			in := writeBack(t)
			if !strings.Contains(string(in.Head[flux]), `web_replicas: "3"`) {
				t.Fatalf("the write-back does not set the variable:\n%s", in.Head[flux])
			}
			checkChanged(t, in, tc.change, tc.want)
		})
	}
}

// TestCheckKustomizeSharedBase: a kustomize unit's receipt may edit a
// base outside its overlay only when the base policy lets its role accept
// the same change in every other environment with a kustomize unit.
func TestCheckKustomizeSharedBase(t *testing.T) {
	config := strings.Replace(kustomizeConfig, "units:\n", "  staging:\n    clusters: [staging-1]\nunits:\n", 1)
	config = strings.Replace(config, "roles:\n", "  - name: web\n    environment: staging\n    kustomization: overlays/staging\n"+
		"    objects: [\"apps/v1|Deployment|web|*\"]\nroles:\n", 1)
	policyText := strings.NewReplacer("apps/v1|StatefulSet|db|db", "apps/v1|Deployment|web|web").Replace(manifestsPolicy)
	cfg, pol := parsed(t, config, policyText)
	files := map[string][]byte{
		overlay:                               []byte("resources: [../../base]\n"),
		"overlays/staging/kustomization.yaml": []byte("resources: [../../base]\n"),
		"base/kustomization.yaml":             []byte(baseKustomize),
		"base/web.yaml":                       []byte(baseWeb),
	}
	snap := plan.Snapshot{Config: cfg, Policy: pol, PolicyPath: ".github/policy.yaml", Files: files, Kustomizer: &builder.Builder{}}
	at := time.Date(2026, 6, 18, 12, 0, 0, 0, time.UTC)
	var obs []observe.Observation
	for _, cluster := range []string{"prod-1", "staging-1"} {
		obs = append(obs, observe.Observation{
			Source: observe.SourceKubernetes, Cluster: cluster, ObservedAt: at,
			Object: observe.ObjectKey{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "web", Name: "web"},
			Change: observe.Change{Actor: "alice", Groups: []string{"sre"}, Attribution: observe.AttributionAuditLog, Claimed: observe.AttributionAuditLog},
			Fields: []observe.Field{{Path: "spec.replicas", Live: 3, Desired: 1, HasDesired: true}},
		})
	}
	res := plan.Plan(obs, nil, snap, at.Add(time.Minute))
	if len(res.WriteBacks) != 2 {
		t.Fatalf("%d write-backs, want 2: %v %v", len(res.WriteBacks), res.Errors, res.Decisions)
	}
	for _, tc := range []struct {
		why    string
		change func(in *Input)
		want   []string
	}{
		{why: "the base edited with every environment's agreement is within its receipt", change: func(*Input) {}},
		{why: "a base the base policy does not let staging change is not prod's to edit", change: func(in *Input) {
			p, err := policy.Parse(".github/policy.yaml", []byte(strings.Replace(policyText, "[prod, staging]", "[prod]", 1)))
			if err != nil {
				t.Fatal(err)
			}
			in.Policy = p
		}, want: []string{"names base/web.yaml, which is outside unit web's overlay overlays/prod"}},
	} {
		t.Run(tc.why, func(t *testing.T) {
			in := inputOf(snap, res.WriteBacks[0])
			if !strings.Contains(string(in.Head["base/web.yaml"]), "replicas: 3") {
				t.Fatalf("the write-back does not edit the base:\n%v", in.Changed)
			}
			checkChanged(t, in, tc.change, tc.want)
		})
	}
}
