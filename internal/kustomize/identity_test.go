package kustomize

import (
	"errors"
	"strings"
	"testing"

	"github.com/backflow-dev/backflow/internal/witness"
	"github.com/backflow-dev/backflow/internal/yamlnode"
)

// renamed is a base built by an overlay that renames it (namespace:,
// namePrefix:, nameSuffix:) and by a region overlay that renames it again,
// with patches whose targets select by every field kustomize selects by.
var renamed = map[string][]byte{
	"base/kustomization.yaml": []byte("resources: [web.yaml, other.yaml]\n"),
	"base/web.yaml": []byte(`apiVersion: v1
kind: Service
metadata: {name: web}
spec: {ports: [{port: 80}]}
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  labels: {app: web}
spec:
  replicas: 1
  minReadySeconds: 5
  revisionHistoryLimit: 10
  progressDeadlineSeconds: 300
  template:
    spec:
      terminationGracePeriodSeconds: 10
      dnsPolicy: ClusterFirst
      containers: [{name: web, image: "ghcr.io/x/web:1.0.0"}]
`),
	"base/other.yaml": []byte(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: other
  labels: {app: other}
  annotations: {team: other}
spec:
  replicas: 1
  template:
    spec:
      containers: [{name: other, image: "ghcr.io/x/other:1.0.0"}]
`),
	"overlays/prod/kustomization.yaml": []byte(`resources: [../../base]
namespace: prod
namePrefix: prod-
nameSuffix: -eu
replicas:
  - name: web
    count: 3
images:
  - name: ghcr.io/x/web
    newTag: 1.1.0
patchesStrategicMerge:
  - |-
    apiVersion: apps/v1
    kind: Deployment
    metadata: {name: web}
    spec: {template: {spec: {dnsPolicy: Default}}}
patches:
  - path: web-patch.yaml
  - target: {kind: Deployment, name: "we.*"}
    patch: |-
      - op: replace
        path: /spec/template/spec/terminationGracePeriodSeconds
        value: 20
  - target: {kind: Deployment, name: eb}
    patch: |-
      - op: replace
        path: /spec/template/spec/terminationGracePeriodSeconds
        value: 30
  - target: {kind: Deployment, namespace: staging}
    patch: |-
      - op: replace
        path: /spec/template/spec/terminationGracePeriodSeconds
        value: 40
  - target: {kind: Deployment, labelSelector: app=other}
    patch: |-
      - op: replace
        path: /spec/minReadySeconds
        value: 9
  - target: {group: extensions, kind: Deployment}
    patch: |-
      - op: replace
        path: /spec/progressDeadlineSeconds
        value: 900
  - target: {kind: Deployment, name: prod-web-eu}
    patch: |-
      - op: replace
        path: /spec/progressDeadlineSeconds
        value: 700
  - patch: |-
      apiVersion: apps/v1
      kind: Deployment
      metadata: {name: web}
      spec: {template: {spec: {dnsPolicy: ClusterFirstWithHostNet}}}
patchesJson6902:
  - target: {kind: Deployment, name: prod-web-eu}
    patch: |-
      - op: replace
        path: /spec/revisionHistoryLimit
        value: 4
  - target: {kind: Deployment, name: ".*", annotationSelector: team=other}
    patch: |-
      - op: replace
        path: /spec/revisionHistoryLimit
        value: 8
`),
	"overlays/prod/web-patch.yaml": []byte(`apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec: {progressDeadlineSeconds: 600}
`),
	"region/kustomization.yaml": []byte(`resources: [../overlays/prod]
namePrefix: eu-
replicas:
  - name: prod-web-eu
    count: 5
`),
}

// TestLocateThroughRenaming locates fields of an object its overlays
// rename, and writes each: the witness (kustomize building the edit)
// accepts only when the located source is the one kustomize applied last.
func TestLocateThroughRenaming(t *testing.T) {
	const prodK = "overlays/prod/kustomization.yaml"
	for _, tc := range []struct {
		why, dir, object, field string
		file, path, inline      string
	}{
		{"the overlay's replicas: entry names the object by its name in the base, before namePrefix",
			"overlays/prod", "apps/v1|Deployment|prod|prod-web-eu", "spec.replicas", prodK, "replicas[0].count", ""},
		{"a region's replicas: entry names it as the overlay it builds renamed it",
			"region", "apps/v1|Deployment|prod|eu-prod-web-eu", "spec.replicas", "region/kustomization.yaml",
			"replicas[0].count", ""},
		{"the resource file's document is the Deployment whose name the renaming turns into the built one",
			"overlays/prod", "apps/v1|Deployment|prod|prod-web-eu", "spec.template.spec.containers[0].name",
			"base/web.yaml", "spec.template.spec.containers[0].name", ""},
		{"a labelSelector target selecting another object is not the source",
			"overlays/prod", "apps/v1|Deployment|prod|prod-web-eu", "spec.minReadySeconds", "base/web.yaml",
			"spec.minReadySeconds", ""},
		{"a regex name target matches anchored, and a namespace target matches the namespace before namespace:",
			"overlays/prod", "apps/v1|Deployment|prod|prod-web-eu", "spec.template.spec.terminationGracePeriodSeconds",
			prodK, "patches[1].patch", "[0].value"},
		{"a target by another group is not the source, nor one naming the object as its own namePrefix renames it",
			"overlays/prod", "apps/v1|Deployment|prod|prod-web-eu", "spec.progressDeadlineSeconds",
			"overlays/prod/web-patch.yaml", "spec.progressDeadlineSeconds", ""},
		{"patchesJson6902 runs after namePrefix: its target names the renamed object; an annotationSelector of another",
			"overlays/prod", "apps/v1|Deployment|prod|prod-web-eu", "spec.revisionHistoryLimit", prodK,
			"patchesJson6902[0].patch", "[0].value"},
		{"patches run after patchesStrategicMerge: the inline patch of patches is the last writer",
			"overlays/prod", "apps/v1|Deployment|prod|prod-web-eu", "spec.template.spec.dnsPolicy", prodK,
			"patches[7].patch", "spec.template.spec.dnsPolicy"},
		{"the images: entry of the renaming overlay",
			"overlays/prod", "apps/v1|Deployment|prod|prod-web-eu", "spec.template.spec.containers[0].image", prodK,
			"images[0]", ""},
	} {
		before, err := Run(renamed, tc.dir)
		if err != nil {
			t.Fatal(err)
		}
		s, err := Locate(renamed, before, tc.object, tc.field)
		if err != nil {
			t.Errorf("%s: %v", tc.why, err)
			continue
		}
		if s.File != tc.file || s.Path != tc.path || s.InlinePath != tc.inline || s.Name != "web" {
			t.Errorf("%s: got %s %s %s (name %s), want %s %s %s", tc.why, s.File, s.Path, s.InlinePath, s.Name,
				tc.file, tc.path, tc.inline)
			continue
		}
		old := lookup(t, before, tc.object, tc.field)
		live := any("ghcr.io/x/web:1.2.0")
		switch o := old.(type) {
		case int:
			old, live = int64(o), int64(o)+1
		case string:
			if !strings.Contains(o, ":") {
				live = o + "-live"
			}
		}
		w, err := Write(renamed[s.File], s, old, live)
		if err != nil {
			t.Errorf("%s: %v", tc.why, err)
			continue
		}
		after := edited(t, renamed, tc.dir, w)
		if m := Witness(before, after, []witness.Accepted{{Object: tc.object, Field: tc.field, Live: live}}); len(m) > 0 {
			t.Errorf("%s: the witness denies writing %s: %v", tc.why, s.Why, m)
		}
	}
}

func lookup(t *testing.T, b *Build, object, field string) any {
	t.Helper()
	segs, err := yamlnode.ParsePath(field)
	if err != nil {
		t.Fatal(err)
	}
	v, ok := yamlnode.Lookup(b.Rendering.Objects[object], segs)
	if !ok {
		t.Fatalf("%s has no %s", object, field)
	}
	return v
}

// TestLocateNamespaceTransformer: an overlay's namespace: moves the
// object; its resource file's document is still found by the namespace it
// is written in, and two documents of one name in two namespaces are told
// apart.
func TestLocateNamespaceTransformer(t *testing.T) {
	files := map[string][]byte{
		"base/kustomization.yaml": []byte("resources: [cm.yaml]\n"),
		"base/cm.yaml": []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cfg, namespace: a}\ndata: {k: a}\n---\n" +
			"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cfg, namespace: b}\ndata: {k: b}\n"),
		"o/kustomization.yaml": []byte("resources: [../base]\nnamePrefix: o-\n"),
		"p/kustomization.yaml": []byte("resources: [../base]\nnamespace: p\nnamePrefix: p-\npatches:\n" +
			"  - target: {kind: ConfigMap, namespace: b}\n    patch: |-\n      - op: replace\n" +
			"        path: /data/k\n        value: patched\n"),
	}
	for _, tc := range []struct {
		why, dir, object string
		doc              int
		err              string
	}{
		{"the document written in namespace b", "o", "v1|ConfigMap|b|o-cfg", 1, ""},
		{"the document written in namespace a", "o", "v1|ConfigMap|a|o-cfg", 0, ""},
	} {
		b, err := Run(files, tc.dir)
		if err != nil {
			t.Fatal(err)
		}
		s, err := Locate(files, b, tc.object, "data.k")
		if err != nil || s.File != "base/cm.yaml" || s.Document != tc.doc {
			t.Errorf("%s: %+v %v", tc.why, s, err)
		}
	}
	// Two documents that namespace: p makes one object: kustomize refuses
	// the build itself, naming the clash.
	if _, err := Run(files, "p"); err == nil {
		t.Fatal("kustomize built two ConfigMaps into one")
	}
	one := map[string][]byte{
		"base/kustomization.yaml": []byte("resources: [cm.yaml]\n"),
		"base/cm.yaml":            []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cfg, namespace: b}\ndata: {k: b}\n"),
		"p/kustomization.yaml":    files["p/kustomization.yaml"],
	}
	b, err := Run(one, "p")
	if err != nil {
		t.Fatal(err)
	}
	s, err := Locate(one, b, "v1|ConfigMap|p|p-cfg", "data.k")
	if err != nil || s.File != "p/kustomization.yaml" || s.Path != "patches[0].patch" {
		t.Errorf("a namespace target matching the namespace the object is written in: %+v %v", s, err)
	}
}

// TestLocateNamesTheRenaming: a resource file no longer holding the
// object is an error naming the file and the kustomizations renaming it.
func TestLocateNamesTheRenaming(t *testing.T) {
	before, err := Run(renamed, "overlays/prod")
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{}
	for p, d := range renamed {
		files[p] = d
	}
	files["base/web.yaml"] = []byte("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: api}\n")
	_, err = Locate(files, before, "apps/v1|Deployment|prod|prod-web-eu", "spec.replicas")
	if err == nil || errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "base/web.yaml: no document is Deployment prod-web-eu") ||
		!strings.Contains(err.Error(), "overlays/prod/kustomization.yaml") {
		t.Errorf("%v, want an error naming the file and the renaming overlay", err)
	}
}
