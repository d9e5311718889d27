package plan

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/backflow-dev/backflow/internal/observe"
	"github.com/backflow-dev/backflow/internal/policy"
	"github.com/backflow-dev/backflow/internal/repoconfig"
	"github.com/backflow-dev/backflow/internal/values"
)

// fleetSnapshot is a repository of apps in four environments: each unit
// reads a base file every environment shares and its environment's own
// file (for some apps a Flux HelmRelease with the values inline, for some a
// file behind an alias the editor refuses to edit through, for some a file
// that could not be read, for some a last file two environments share);
// env-3 requires its two clusters to agree.
func fleetSnapshot(t *testing.T, apps int) Snapshot {
	t.Helper()
	var cfg strings.Builder
	cfg.WriteString("version: 1\npolicy: .github/policy.yaml\nenvironments:\n")
	for e := range 4 {
		fmt.Fprintf(&cfg, "  env-%d:\n    clusters: [c-%d-a, c-%d-b]\n", e, e, e)
		if e == 3 {
			cfg.WriteString("    requireClusterAgreement: true\n")
		}
	}
	cfg.WriteString("units:\n")
	files := map[string][]byte{}
	for a := range apps {
		app := fmt.Sprintf("app-%02d", a)
		base := "base/" + app + ".yaml"
		files[base] = fmt.Appendf(nil, "# %s defaults\nreplicaCount: 2 # every environment\nimage:\n  tag: \"1.0\"\nsettings:\n  f1: 1\n", app)
		for e := range 4 {
			own := fmt.Sprintf("envs/env-%d/%s.yaml", e, app)
			if a%9 == 5 && e >= 2 {
				// env-2 and env-3 share their last file too: an override
				// has nowhere to go.
				own = "envs/late/" + app + ".yaml"
			}
			fmt.Fprintf(&cfg, "  - name: %s\n    environment: env-%d\n    valuesFiles: [%s, %s]\n    objects: [\"apps/v1|Deployment|%s|*\"]\n", app, e, base, own, app)
			switch {
			case a%7 == 3 && e == 1:
				// A file that could not be read: the unit fails closed.
			case a%5 == 2:
				fmt.Fprintf(&cfg, "    valuesRoot: {document: HelmRelease/%s, path: spec.values}\n", app)
				files[own] = fmt.Appendf(nil, "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: %s\n---\napiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata:\n  name: %s\nspec:\n  values:\n    settings:\n      f2: 5 # inline\n", app, app)
			case a%6 == 4:
				files[own] = []byte("anchors: &s\n  f2: 5\nsettings: *s\n")
			default:
				files[own] = fmt.Appendf(nil, "# env-%d\nsettings:\n  f2: 5 # tuned\n", e)
			}
		}
	}
	cfg.WriteString("roles:\n  sre:\n    groups: [sre]\n")
	const pol = `apiVersion: backflow.dev/v1alpha1
kind: ReverseReconcilePolicy
metadata:
  name: fleet
spec:
  default: deny
  rules:
    - role: sre
      mayAccept:
        - valuePath: replicaCount
          field: spec.replicas
          autoMerge: true
          objects: ["apps/v1|Deployment|*|*"]
          environments: ["env-*"]
          maximum: 10
        - valuePath: settings.f1
          field: spec.f1
          objects: ["apps/v1|Deployment|*|*"]
          environments: ["env-*"]
        - valuePath: settings.f2
          field: spec.f2
          objects: ["apps/v1|Deployment|*|web"]
          environments: ["env-*"]
        - valuePath: image.tag
          field: spec.template.metadata.labels.version
          objects: ["apps/v1|Deployment|*|*"]
          environments: ["env-0", "env-1", "env-2"]
`
	c, err := repoconfig.Parse(repoconfig.Path, []byte(cfg.String()))
	if err != nil {
		t.Fatal(err)
	}
	p, err := policy.Parse(".github/policy.yaml", []byte(pol))
	if err != nil {
		t.Fatal(err)
	}
	return Snapshot{Config: c, Policy: p, PolicyPath: ".github/policy.yaml", Commit: "0123abcd", Files: files}
}

// fleetObservations observes the apps' web and worker Deployments on random
// clusters with random fields, values (some out of bounds, some equal to
// desired, some the same in every environment, so that a shared file may
// change), actors and attributions; some observations come from a cluster
// no environment lists.
func fleetObservations(rng *rand.Rand, apps int) []observe.Observation {
	actors := []struct {
		name   string
		groups []string
	}{{"alice", []string{"sre"}}, {"alice", []string{"sre"}}, {"alice", []string{"sre"}}, {"bob", nil}, {"", nil}}
	fields := []string{"spec.replicas", "spec.f1", "spec.f2", "spec.template.metadata.labels.version"}
	var obs []observe.Observation
	for a := range apps {
		if a%4 == 0 {
			// Every environment scaled the same way: the shared base file
			// may change.
			for e := range 4 {
				for _, side := range "ab" {
					obs = append(obs, observe.Observation{
						Source: observe.SourceKubernetes, Cluster: fmt.Sprintf("c-%d-%c", e, side), ObservedAt: t0,
						Object: observe.ObjectKey{APIVersion: "apps/v1", Kind: "Deployment", Namespace: fmt.Sprintf("app-%02d", a), Name: "web"},
						Change: observe.Change{Actor: "alice", Groups: []string{"sre"}, Attribution: observe.AttributionAuditLog, Claimed: observe.AttributionAuditLog},
						Fields: []observe.Field{{Path: "spec.replicas", Live: 3}},
					})
				}
			}
			continue
		}
		pinned := func(cluster, name string, f observe.Field) {
			obs = append(obs, observe.Observation{
				Source: observe.SourceKubernetes, Cluster: cluster, ObservedAt: t0,
				Object: observe.ObjectKey{APIVersion: "apps/v1", Kind: "Deployment", Namespace: fmt.Sprintf("app-%02d", a), Name: name},
				Change: observe.Change{Actor: "alice", Groups: []string{"sre"}, Attribution: observe.AttributionAuditLog, Claimed: observe.AttributionAuditLog},
				Fields: []observe.Field{f},
			})
		}
		switch {
		case a%9 == 5:
			// An override into a last file another environment reads.
			pinned("c-2-a", "web", observe.Field{Path: "spec.replicas", Live: 4})
			pinned("nowhere-1", "web", observe.Field{Path: "spec.replicas", Live: 4})
			continue
		case a%4 == 1:
			// Two objects of one unit write one value path: a conflict.
			pinned("c-0-a", "web", observe.Field{Path: "spec.f1", Live: 3})
			pinned("c-0-a", "worker", observe.Field{Path: "spec.f1", Live: 4})
			continue
		case a%6 == 4:
			// The value sits behind an alias: the edit is refused.
			pinned("c-0-a", "web", observe.Field{Path: "spec.f2", Live: 7})
			continue
		}
		for _, name := range []string{"web", "worker"} {
			for range rng.IntN(4) {
				cluster := fmt.Sprintf("c-%d-%c", rng.IntN(4), 'a'+rng.IntN(2))
				if rng.IntN(20) == 0 {
					cluster = "nowhere-1"
				}
				actor := actors[rng.IntN(len(actors))]
				at := t0.Add(time.Duration(rng.IntN(4)) * time.Minute)
				o := observe.Observation{
					Source: observe.SourceKubernetes, Cluster: cluster, ObservedAt: at,
					Object: observe.ObjectKey{APIVersion: "apps/v1", Kind: "Deployment", Namespace: fmt.Sprintf("app-%02d", a), Name: name},
					Change: observe.Change{Actor: actor.name, Groups: actor.groups, Attribution: observe.AttributionAuditLog, Claimed: observe.AttributionAuditLog},
				}
				if rng.IntN(6) == 0 {
					o.Change.Attribution = observe.AttributionAsserted
				}
				if rng.IntN(10) == 0 {
					o.Fields = append(o.Fields, observe.Field{Path: "spec.paused", Live: true})
				}
				for _, f := range fields {
					if rng.IntN(2) == 0 || f == "spec.f2" && name == "worker" && rng.IntN(4) > 0 {
						continue
					}
					var live any = 2 + rng.IntN(3)
					switch {
					case f == "spec.template.metadata.labels.version":
						live = fmt.Sprintf("1.%d", rng.IntN(3))
					case rng.IntN(10) == 0:
						live = 200
					}
					o.Fields = append(o.Fields, observe.Field{Path: f, Live: live})
				}
				obs = append(obs, o)
			}
		}
	}
	return obs
}

// TestParallelPlanIsSequential: the units' values are read and their
// write-backs built on several goroutines, and a Readings may be kept
// across plans; neither changes anything of the result (decisions, their
// receipts, write-backs and their bytes, errors and their order), on a
// fleet that exercises shared files, inline values, refused edits,
// conflicts, unreadable files, cluster agreement and bounds.
func TestParallelPlanIsSequential(t *testing.T) {
	const apps = 30
	snap := fleetSnapshot(t, apps)
	kept := values.NewReadings()
	for seed := range uint64(3) {
		obs := fleetObservations(rand.New(rand.NewPCG(seed, 7)), apps)
		seq := PlanWith(obs, nil, snap, testNow, Options{Workers: 1})
		for _, opts := range []Options{{Workers: 8}, {Workers: 3, Readings: kept}, {Readings: kept}} {
			got := PlanWith(obs, nil, snap, testNow, opts)
			if !reflect.DeepEqual(got, seq) {
				t.Errorf("seed %d: planned with %d workers (a kept Readings: %t), the result differs from the sequential plan", seed, opts.Workers, opts.Readings != nil)
				diffResults(t, seq, got)
			}
		}
		checkAllows(t, seq, snap)
		// The fleet must keep exercising what it is for.
		count := map[string]int{}
		for _, d := range seq.Decisions {
			count[string(d.Outcome)]++
		}
		for _, e := range seq.Errors {
			for _, kind := range []string{"conflict:", "refused", "shared values file", "could not be read"} {
				if strings.Contains(e, kind) {
					count[kind]++
				}
			}
		}
		for _, d := range seq.Decisions {
			if d.Receipt != nil && strings.Contains(strings.Join(d.Receipt.Spec.NotClaimed, " "), "written as an override") {
				count["override"]++
			}
		}
		for _, wb := range seq.WriteBacks {
			for _, f := range wb.Files {
				if strings.HasPrefix(f.Path, "base/") {
					count["shared-file edit"]++
				}
			}
		}
		t.Logf("seed %d: %d observations, %d write-backs, %v", seed, len(obs), len(seq.WriteBacks), count)
		for _, k := range []string{"allow", "deny", "unmapped", "noop", "conflict:", "refused", "shared values file", "could not be read", "override", "shared-file edit"} {
			if count[k] == 0 {
				t.Errorf("seed %d: no %q in the fleet's plan: it no longer exercises it", seed, k)
			}
		}
	}
}

// diffResults names the first differences between two results.
func diffResults(t *testing.T, want, got Result) {
	t.Helper()
	for i := range max(len(want.Errors), len(got.Errors)) {
		if i >= len(want.Errors) || i >= len(got.Errors) || want.Errors[i] != got.Errors[i] {
			t.Errorf("%d errors, want %d; the first difference is error %d", len(got.Errors), len(want.Errors), i)
			break
		}
	}
	if len(want.Decisions) != len(got.Decisions) || len(want.WriteBacks) != len(got.WriteBacks) {
		t.Errorf("%d decisions, %d write-backs; want %d, %d", len(got.Decisions), len(got.WriteBacks), len(want.Decisions), len(want.WriteBacks))
		return
	}
	for i := range want.Decisions {
		if !reflect.DeepEqual(want.Decisions[i], got.Decisions[i]) {
			t.Errorf("decision %d:\n%+v\nwant:\n%+v", i, got.Decisions[i], want.Decisions[i])
		}
	}
	for i := range want.WriteBacks {
		if !reflect.DeepEqual(want.WriteBacks[i], got.WriteBacks[i]) {
			t.Errorf("write-back %s differs", want.WriteBacks[i].Branch)
		}
	}
}
