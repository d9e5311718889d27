package kustomize

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/backflow-dev/backflow/internal/witness"
)

// overlayOf is an overlay over a base of n Deployments (and one
// StatefulSet, db), with a replicas: entry for db.
func overlayOf(n int) map[string][]byte {
	files := map[string][]byte{}
	res := "resources:\n"
	for i := range n {
		f := fmt.Sprintf("base/d%03d.yaml", i)
		res += "  - " + f[len("base/"):] + "\n"
		files[f] = fmt.Appendf(nil, "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: d%03d\n  namespace: shop\nspec:\n  replicas: 1\n  template:\n    spec:\n      containers:\n        - name: app\n          image: ghcr.io/example/app:1.0\n          resources: {requests: {cpu: 100m, memory: 64Mi}}\n", i)
	}
	res += "  - db.yaml\n"
	files["base/db.yaml"] = []byte("apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {name: db, namespace: shop}\nspec: {replicas: 3}\n")
	files["base/kustomization.yaml"] = []byte(res)
	files["overlays/prod/kustomization.yaml"] = []byte("resources: [../../base]\nreplicas:\n  - name: db\n    count: 3\nimages:\n  - name: ghcr.io/example/app\n    newTag: \"1.1\"\n")
	return files
}

// fluxOverlayOf is overlayOf(n) with its image tag a postBuild variable
// that a Flux Kustomization in clusters/prod defines, so every object is
// substituted after the build.
func fluxOverlayOf(n int) map[string][]byte {
	files := overlayOf(n)
	files["overlays/prod/kustomization.yaml"] = []byte("resources: [../../base]\nreplicas:\n  - name: db\n    count: 3\n")
	for p, d := range files {
		files[p] = []byte(strings.ReplaceAll(string(d), "app:1.0", "app:${app_tag}"))
	}
	files["clusters/prod/shop.yaml"] = []byte("apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\n" +
		"metadata: {name: shop, namespace: flux-system}\nspec:\n  path: ./overlays/prod\n  postBuild:\n    substitute:\n      app_tag: \"1.1\"\n")
	return files
}

// BenchmarkBuild is one build of an overlay: the small one of the tests
// (testdata/shop, 6 objects) and one over 200 resources.
func BenchmarkBuild(b *testing.B) {
	small, _ := build(b, "overlays/prod")
	for _, tc := range []struct {
		name  string
		files map[string][]byte
	}{{"small", small}, {"200-resources", overlayOf(200)}, {"200-resources-flux-postbuild", fluxOverlayOf(200)}} {
		b.Run(tc.name, func(b *testing.B) {
			var times []time.Duration
			for b.Loop() {
				start := time.Now()
				if _, err := Run(tc.files, "overlays/prod"); err != nil {
					b.Fatal(err)
				}
				times = append(times, time.Since(start))
			}
			report(b, times)
		})
	}
}

// BenchmarkWriteBack is a write-back of the 200-resource overlay's db
// replicas as the planner makes it (build before, locate, write, build
// after, witness), reporting the witness's share: the two builds and the
// comparison, of the whole.
func BenchmarkWriteBack(b *testing.B) {
	files := overlayOf(200)
	var witnessed, total time.Duration
	for b.Loop() {
		t0 := time.Now()
		before, err := Run(files, "overlays/prod")
		if err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		s, err := Locate(files, before, "apps/v1|StatefulSet|shop|db", "spec.replicas")
		if err != nil {
			b.Fatal(err)
		}
		w, err := Write(files[s.File], s, int64(3), int64(4))
		if err != nil {
			b.Fatal(err)
		}
		t2 := time.Now()
		after := map[string][]byte{}
		for p, d := range files {
			after[p] = d
		}
		after[w.File] = w.Data
		ab, err := Run(after, "overlays/prod")
		if err != nil {
			b.Fatal(err)
		}
		if m := Witness(before, ab, []witness.Accepted{{Object: "apps/v1|StatefulSet|shop|db", Field: "spec.replicas", Live: int64(4)}}); len(m) > 0 {
			b.Fatal(m)
		}
		t3 := time.Now()
		witnessed += t1.Sub(t0) + t3.Sub(t2)
		total += t3.Sub(t0)
	}
	b.ReportMetric(100*float64(witnessed)/float64(total), "%witness")
}

func report(b *testing.B, times []time.Duration) {
	slices.Sort(times)
	if len(times) == 0 {
		return
	}
	b.ReportMetric(float64(times[len(times)/2].Microseconds())/1000, "ms-median")
	b.ReportMetric(float64(times[min(len(times)-1, len(times)*99/100)].Microseconds())/1000, "ms-p99")
}
