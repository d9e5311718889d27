package bot

import (
	"strings"
	"testing"

	"github.com/backflow-dev/backflow/internal/forge"
	"github.com/backflow-dev/backflow/internal/kustomize/builder"
	"github.com/backflow-dev/backflow/internal/observe"
	"github.com/backflow-dev/backflow/internal/repoconfig"
)

// shopFiles is a repository whose prod environment keeps its desired state
// as a kustomize overlay over a base (unit shop) and as a folder of plain
// manifests (unit cache).
func shopFiles(files map[string]string) {
	for k := range files {
		delete(files, k)
	}
	files[repoconfig.Path] = `version: 1
policy: .github/reverse-reconcile-policy.yaml
environments:
  prod-us-east:
    clusters: [` + usEastNode + `]
units:
  - name: shop
    environment: prod-us-east
    kustomization: overlays/prod
    objects: ["apps/v1|StatefulSet|shop|db"]
  - name: cache
    environment: prod-us-east
    manifests: [manifests/cache]
    objects: ["apps/v1|StatefulSet|cache|*"]
roles:
  sre:
    groups: [sre]
    attribution: [audit-log]
`
	files[".github/reverse-reconcile-policy.yaml"] = `apiVersion: backflow.dev/v1alpha1
kind: ReverseReconcilePolicy
metadata:
  name: shop
spec:
  default: deny
  rules:
    - role: sre
      mayAccept:
        - field: spec.replicas
          objects: ["apps/v1|StatefulSet|shop|db", "apps/v1|StatefulSet|cache|redis"]
          environments: [prod-us-east]
          autoMerge: true
`
	files["base/kustomization.yaml"] = "resources:\n  - db.yaml\n"
	files["base/db.yaml"] = "apiVersion: apps/v1\nkind: StatefulSet\nmetadata:\n  name: db\n  namespace: shop\nspec:\n  replicas: 3 # the base's count\n"
	files["overlays/prod/kustomization.yaml"] = "# prod\nresources:\n  - ../../base\n"
	files["manifests/cache/redis.yaml"] = "---\napiVersion: v1\nkind: Service\nmetadata:\n  name: redis\n  namespace: cache\n---\n" +
		"apiVersion: apps/v1\nkind: StatefulSet\nmetadata:\n  name: redis\n  namespace: cache\nspec:\n  replicas: 2 # keep\n"
	files["manifests/cache/.hidden/old.yaml"] = "apiVersion: apps/v1\nkind: StatefulSet\nmetadata:\n  name: redis\n  namespace: cache\nspec:\n  replicas: 9\n"
}

// scaled is alice's audit-logged scale of a StatefulSet to live.
func scaled(namespace, name string, from, live int) observe.Observation {
	o := replicas(live, 0)
	o.Object = observe.ObjectKey{APIVersion: "apps/v1", Kind: "StatefulSet", Namespace: namespace, Name: name}
	o.Fields[0].Desired = from
	return o
}

// TestCycleWritesKustomizeAndManifests: the bot plans kustomize and plain
// manifests units through the forge (the overlay built with the
// Kustomizer it is given, a manifests folder listed at the head), and
// writes each change where its value comes from.
func TestCycleWritesKustomizeAndManifests(t *testing.T) {
	fx := newFixture(t, shopFiles, func(o *Options) { o.Kustomizer = &builder.Builder{} })
	fx.observe(scaled("shop", "db", 3, 4), scaled("cache", "redis", 2, 5))
	rep, _ := fx.cycle()
	for _, rr := range rep.Repos {
		if len(rr.Errors) > 0 {
			t.Fatalf("cycle errors: %v", rr.Errors)
		}
	}
	file := func(branch, path string) string {
		got, ok := fx.hub.File(testRepo, branch, path)
		if !ok {
			t.Fatalf("no %s on %s", path, branch)
		}
		return got
	}
	overlay := file("backflow/prod-us-east/shop", "overlays/prod/kustomization.yaml")
	if !strings.Contains(overlay, "replicas:\n") || !strings.Contains(overlay, "count: 4") || !strings.HasPrefix(overlay, "# prod\n") {
		t.Errorf("why: the base is shared, so the count is an override in the overlay; got:\n%s", overlay)
	}
	if base := file("backflow/prod-us-east/shop", "base/db.yaml"); !strings.Contains(base, "replicas: 3 # the base's count") {
		t.Errorf("why: the base is left as it was; got:\n%s", base)
	}
	cache := file("backflow/prod-us-east/cache", "manifests/cache/redis.yaml")
	if !strings.Contains(cache, "replicas: 5 # keep") || !strings.HasPrefix(cache, "---\napiVersion: v1\nkind: Service") {
		t.Errorf("why: the field is written in its own document, the rest kept; got:\n%s", cache)
	}

	// why: without a Kustomizer the kustomize unit fails closed, and the
	// manifests unit is still written.
	fx = newFixture(t, shopFiles)
	fx.observe(scaled("shop", "db", 3, 4), scaled("cache", "redis", 2, 5))
	rep, _ = fx.cycle()
	if n := len(fx.pulls(forge.StateOpen)); n != 1 {
		t.Errorf("without a Kustomizer: %d pull requests, want the manifests unit's alone: %+v", n, rep)
	}
}
