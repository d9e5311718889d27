package builder

import (
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/backflow-dev/backflow/internal/kustomize"
	"github.com/backflow-dev/backflow/internal/observe"
	"github.com/backflow-dev/backflow/internal/plan"
	"github.com/backflow-dev/backflow/internal/policy"
	"github.com/backflow-dev/backflow/internal/repoconfig"
	"github.com/backflow-dev/backflow/internal/witness"
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

func TestCheckBuildsEachKustomizeUnit(t *testing.T) {
	dir := t.TempDir()
	write := func(p, s string) {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(".github/backflow.yaml", "version: 1\npolicy: .github/policy.yaml\nenvironments:\n  prod: {clusters: [prod-1]}\nunits:\n  - name: web\n    environment: prod\n    kustomization: o\n    objects: [\"apps/v1|*|web|*\"]\nroles:\n  sre: {users: [alice]}\n")
	write(".github/policy.yaml", "apiVersion: backflow.dev/v1alpha1\nkind: ReverseReconcilePolicy\nmetadata: {name: web}\nspec:\n  default: deny\n  rules:\n    - role: sre\n      mayAccept:\n"+
		"        - field: spec.replicas\n          objects: [\"apps/v1|Deployment|web|web\"]\n          environments: [prod]\n"+
		"        - field: spec.paused\n          objects: [\"apps/v1|Deployment|web|web\"]\n          environments: [prod]\n"+
		"        - field: spec.replicas\n          objects: [\"apps/v1|StatefulSet|web|db\"]\n          environments: [prod]\n")
	write("o/kustomization.yaml", "resources: [web.yaml]\n")
	write("o/web.yaml", "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web, namespace: web}\nspec: {replicas: 1}\n")
	cfg, err := repoconfig.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(dir, ".github/policy.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	pol, err := policy.Parse(".github/policy.yaml", data)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range Check(dir, cfg, pol) {
		got = append(got, e.Error())
	}
	want := []string{
		".github/policy.yaml: spec.rules[0].mayAccept[1]: spec.paused is in none of the objects it names in kustomize's build of o (units[0])",
		".github/policy.yaml: spec.rules[0].mayAccept[2]: apps/v1|StatefulSet|web|db is not in kustomize's build of o (units[0])",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestOverrideOfASharedImageIsAPatch: an image another object's container
// also runs is written into the overlay as a JSON 6902 patch of the one
// object, not as an images: entry, which would change both; an image no
// other container runs is an images: entry.
func TestOverrideOfASharedImageIsAPatch(t *testing.T) {
	dep := func(name, image string) string {
		return "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: " + name + "}\nspec:\n  template:\n    spec:\n" +
			"      containers: [{name: c, image: \"" + image + "\"}]\n"
	}
	files := map[string][]byte{
		"base/kustomization.yaml": []byte("resources: [web.yaml, worker.yaml, db.yaml]\n"),
		"base/web.yaml":           []byte(dep("web", "busybox:1.38")),
		"base/worker.yaml":        []byte(dep("worker", "busybox:1.38")),
		"base/db.yaml":            []byte(dep("db", "postgres:16")),
		"o/kustomization.yaml":    []byte("resources: [../base]\n"),
	}
	const field = "spec.template.spec.containers[0].image"
	b := &Builder{}
	before, err := kustomize.Run(files, "o")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		why             string
		object          observe.ObjectKey
		old, live, path string
	}{
		{"busybox is also the worker's", observe.ObjectKey{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"},
			"busybox:1.38", "busybox:1.39", "patches[0]"},
		{"postgres is the db's alone", observe.ObjectKey{APIVersion: "apps/v1", Kind: "Deployment", Name: "db"},
			"postgres:16", "postgres:17", "images[0]"},
	} {
		out, edited, err := b.Write(files, "o", func(string, plan.KustomizeField) bool { return false },
			[]plan.KustomizeField{{Object: tc.object, Field: field, Old: tc.old, Live: tc.live}})
		if err != nil || out[0].Refused != "" {
			t.Fatalf("%s: %v %s", tc.why, err, out[0].Refused)
		}
		if out[0].File != "o/kustomization.yaml" || out[0].Path != tc.path {
			t.Errorf("%s: written at %s %s, want o/kustomization.yaml %s", tc.why, out[0].File, out[0].Path, tc.path)
		}
		after := maps.Clone(files)
		after[out[0].File] = edited[out[0].File]
		rebuilt, err := kustomize.Run(after, "o")
		if err != nil {
			t.Fatal(err)
		}
		if m := kustomize.Witness(before, rebuilt, []witness.Accepted{{Object: tc.object.String(), Field: field, Live: tc.live}}); len(m) > 0 {
			t.Errorf("%s: the witness denies: %v", tc.why, m)
		}
	}
}
