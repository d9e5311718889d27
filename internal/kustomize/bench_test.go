package kustomize

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
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

// e2eOverlay is the live end-to-end test's kustomization
// (testdata/e2e/kustomize of the repository), by path under it.
func e2eOverlay(b *testing.B) map[string][]byte {
	b.Helper()
	root := filepath.Join("..", "..", "testdata", "e2e", "kustomize")
	files := map[string][]byte{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, p)
		files[filepath.ToSlash(rel)] = data
		return err
	})
	if err != nil {
		b.Fatal(err)
	}
	return files
}

// BenchmarkBuild is one build of an overlay: the small one of the tests
// (testdata/shop, 6 objects), the end-to-end test's (2 objects) and one
// over 200 resources.
func BenchmarkBuild(b *testing.B) {
	small, _ := build(b, "overlays/prod")
	for _, tc := range []struct {
		name, dir string
		files     map[string][]byte
	}{
		{"small", "overlays/prod", small},
		{"e2e", "envs/prod", e2eOverlay(b)},
		{"200-resources", "overlays/prod", overlayOf(200)},
		{"200-resources-flux-postbuild", "overlays/prod", fluxOverlayOf(200)},
	} {
		b.Run(tc.name, func(b *testing.B) {
			var times []time.Duration
			for b.Loop() {
				start := time.Now()
				if _, err := Run(tc.files, tc.dir); err != nil {
					b.Fatal(err)
				}
				times = append(times, time.Since(start))
			}
			report(b, times)
		})
	}
}

// BenchmarkWriteBack is a write-back of a replica count as the planner
// makes it (build before, locate, write, build after, witness), of the
// 200-resource overlay's db and of the end-to-end test's web-cache,
// reporting its median and p99 and the witness's share: the two builds
// and the comparison, of the whole.
func BenchmarkWriteBack(b *testing.B) {
	for _, tc := range []struct {
		name, dir, object string
		files             map[string][]byte
		old, live         int64
	}{
		{"200-resources", "overlays/prod", "apps/v1|StatefulSet|shop|db", overlayOf(200), 3, 4},
		{"e2e", "envs/prod", "apps/v1|StatefulSet|redis|web-cache", e2eOverlay(b), 3, 4},
	} {
		b.Run(tc.name, func(b *testing.B) {
			var witnessed, total time.Duration
			var times []time.Duration
			for b.Loop() {
				t0 := time.Now()
				before, err := Run(tc.files, tc.dir)
				if err != nil {
					b.Fatal(err)
				}
				t1 := time.Now()
				s, err := Locate(tc.files, before, tc.object, "spec.replicas")
				if err != nil {
					b.Fatal(err)
				}
				w, err := Write(tc.files[s.File], s, tc.old, tc.live)
				if err != nil {
					b.Fatal(err)
				}
				t2 := time.Now()
				after := map[string][]byte{}
				for p, d := range tc.files {
					after[p] = d
				}
				after[w.File] = w.Data
				ab, err := Run(after, tc.dir)
				if err != nil {
					b.Fatal(err)
				}
				accepted := []witness.Accepted{{Object: tc.object, Field: "spec.replicas", Live: tc.live}}
				if m := Witness(before, ab, accepted); len(m) > 0 {
					b.Fatal(m)
				}
				t3 := time.Now()
				witnessed += t1.Sub(t0) + t3.Sub(t2)
				total += t3.Sub(t0)
				times = append(times, t3.Sub(t0))
			}
			report(b, times)
			b.ReportMetric(100*float64(witnessed)/float64(total), "%witness")
		})
	}
}

func report(b *testing.B, times []time.Duration) {
	slices.Sort(times)
	if len(times) == 0 {
		return
	}
	b.ReportMetric(float64(times[len(times)/2].Microseconds())/1000, "ms-median")
	b.ReportMetric(float64(times[min(len(times)-1, len(times)*99/100)].Microseconds())/1000, "ms-p99")
}
