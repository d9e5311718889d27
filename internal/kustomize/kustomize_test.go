package kustomize

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/backflow-dev/backflow/internal/witness"
)

// repo reads testdata/shop as the repository, by repository path.
func repo(t testing.TB) func(string) ([]byte, error) {
	t.Helper()
	return func(p string) ([]byte, error) {
		info, err := os.Stat(filepath.Join("testdata", "shop", filepath.FromSlash(p)))
		if err != nil {
			return nil, err
		}
		if info.IsDir() {
			return nil, errors.New("a folder")
		}
		return os.ReadFile(filepath.Join("testdata", "shop", filepath.FromSlash(p)))
	}
}

func build(t testing.TB, dir string) (map[string][]byte, *Build) {
	t.Helper()
	files, err := Inputs(repo(t), dir)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Run(files, dir)
	if err != nil {
		t.Fatal(err)
	}
	return files, b
}

const (
	db    = "apps/v1|StatefulSet|shop|db"
	web   = "apps/v1|Deployment|shop|web"
	cache = "apps/v1|Deployment|shop|cache"
	prodK = "overlays/prod/kustomization.yaml"
)

func TestInputsAndBuild(t *testing.T) {
	files, b := build(t, "overlays/prod")
	want := []string{"base/db.yaml", "base/kustomization.yaml", "base/web.yaml", "overlays/prod/cache.yaml", "overlays/prod/db-patch.yaml", prodK}
	if strings.Join(b.Files, " ") != strings.Join(want, " ") {
		t.Errorf("files %v, want %v", b.Files, want)
	}
	if len(files) != len(want) {
		t.Errorf("%d inputs", len(files))
	}
	obj := b.Rendering.Objects[web]
	if obj == nil {
		t.Fatalf("no %s in %v", web, b.Rendering.Keys())
	}
	if _, ok := obj["metadata"].(map[string]any)["annotations"]; ok {
		t.Errorf("kustomize's annotations are left on the built object: %v", obj["metadata"])
	}
	if o := b.Origin[web]; o.Path != "base/web.yaml" {
		t.Errorf("origin %+v, want base/web.yaml", o)
	}
	generated := 0
	for k, o := range b.Origin {
		if o.GeneratedBy != "" {
			generated++
			if !strings.HasPrefix(k, "v1|ConfigMap||flags-") || o.GeneratedBy != "ConfigMapGenerator in "+prodK {
				t.Errorf("%s: origin %+v", k, o)
			}
		}
	}
	if generated != 1 {
		t.Errorf("%d generated objects, want the flags ConfigMap", generated)
	}
}

func TestInputsRefuseRemoteBases(t *testing.T) {
	for _, ref := range []string{"https://github.com/example/shop//base?ref=v1", "github.com/example/shop/base", "git@github.com:example/shop.git", "../../../outside"} {
		read := func(p string) ([]byte, error) {
			if p == "overlays/x/kustomization.yaml" {
				return []byte("resources:\n  - " + ref + "\n"), nil
			}
			return nil, os.ErrNotExist
		}
		_, err := Inputs(read, "overlays/x")
		if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "overlays/x/kustomization.yaml") {
			t.Errorf("%s: %v, want a refusal naming the kustomization", ref, err)
		}
	}
}

func TestLocate(t *testing.T) {
	files, b := build(t, "overlays/prod")
	for _, tc := range []struct {
		why, object, field string
		want               Source
		refused            string
	}{
		{"the overlay's replicas: entry", web, "spec.replicas",
			Source{File: prodK, Path: "replicas[0].count", Kind: KindReplicas, Dir: "overlays/prod", Name: "web"}, ""},
		{"the overlay's images: entry", web, "spec.template.spec.containers[0].image",
			Source{File: prodK, Path: "images[0]", Kind: KindImages, Dir: "overlays/prod", Name: "web"}, ""},
		{"a strategic-merge patch file of the overlay", db, "spec.minReadySeconds",
			Source{File: "overlays/prod/db-patch.yaml", Path: "spec.minReadySeconds", Kind: KindPatch, Dir: "overlays/prod", Name: "db"}, ""},
		{"an inline JSON 6902 patch of the overlay", web, "spec.revisionHistoryLimit",
			Source{File: prodK, Path: "patches[1].patch", InlinePath: "[0].value", Kind: KindPatch, Dir: "overlays/prod", Name: "web"}, ""},
		{"the shared base's resource file", db, "spec.replicas",
			Source{File: "base/db.yaml", Document: 0, Path: "spec.replicas", Kind: KindResource, Dir: "base", Name: "db"}, ""},
		{"the overlay's own resource file", cache, "spec.replicas",
			Source{File: "overlays/prod/cache.yaml", Path: "spec.replicas", Kind: KindResource, Dir: "overlays/prod", Name: "cache"}, ""},
	} {
		got, err := Locate(files, b, tc.object, tc.field)
		if err != nil {
			t.Errorf("%s: %v", tc.why, err)
			continue
		}
		got.Why = ""
		if got != tc.want {
			t.Errorf("%s: got %+v, want %+v", tc.why, got, tc.want)
		}
	}
	var generated string
	for k, o := range b.Origin {
		if o.GeneratedBy != "" {
			generated = k
		}
	}
	_, err := Locate(files, b, generated, "data.LOG_LEVEL")
	if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "ConfigMapGenerator in "+prodK) {
		t.Errorf("a generated value: %v, want a refusal naming the generator", err)
	}
}

// edited builds dir again with one file's bytes replaced.
func edited(t *testing.T, files map[string][]byte, dir string, w Written) *Build {
	t.Helper()
	after := map[string][]byte{}
	for p, d := range files {
		after[p] = d
	}
	after[w.File] = w.Data
	b, err := Run(after, dir)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// changedLines counts the lines of a that b changes (same line count).
func changedLines(a, b []byte) int {
	al, bl := strings.Split(string(a), "\n"), strings.Split(string(b), "\n")
	if len(al) != len(bl) {
		return -1
	}
	n := 0
	for i := range al {
		if al[i] != bl[i] {
			n++
		}
	}
	return n
}

func TestWriteWitnessed(t *testing.T) {
	files, before := build(t, "overlays/prod")
	for _, tc := range []struct {
		why, object, field string
		old, live          any
		lines              int
	}{
		{"replicas: entry", web, "spec.replicas", int64(2), int64(4), 1},
		{"images: entry's tag", web, "spec.template.spec.containers[0].image", "ghcr.io/example/web:1.5.0", "ghcr.io/example/web:1.5.1", 1},
		{"strategic-merge patch file", db, "spec.minReadySeconds", int64(30), int64(45), 1},
		{"inline JSON 6902 patch", web, "spec.revisionHistoryLimit", int64(3), int64(5), 1},
	} {
		s, err := Locate(files, before, tc.object, tc.field)
		if err != nil {
			t.Fatalf("%s: %v", tc.why, err)
		}
		w, err := Write(files[s.File], s, tc.old, tc.live)
		if err != nil {
			t.Fatalf("%s: %v", tc.why, err)
		}
		if n := changedLines(files[s.File], w.Data); n != tc.lines {
			t.Errorf("%s: %d lines changed, want %d:\n%s", tc.why, n, tc.lines, w.Data)
		}
		after := edited(t, files, "overlays/prod", w)
		live := tc.live
		if m := Witness(before, after, []witness.Accepted{{Object: tc.object, Field: tc.field, Live: live}}); len(m) > 0 {
			t.Errorf("%s: the witness denies: %v", tc.why, m)
		}
	}
}

func TestOverrideKeepsTheBase(t *testing.T) {
	files, before := build(t, "overlays/prod")
	s, err := Locate(files, before, db, "spec.replicas")
	if err != nil || s.Dir != "base" {
		t.Fatalf("%+v %v", s, err)
	}
	w, err := Override(files[prodK], prodK, "StatefulSet", "db", "spec.replicas", int64(3), int64(4), "base/db.yaml is shared")
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Replace(string(files[prodK]), "    count: 2 # two zones\n", "    count: 2 # two zones\n  - count: 4\n    name: db\n", 1)
	if string(w.Data) != want || w.Path != "replicas[1]" {
		t.Errorf("override %s:\n%s\nwant\n%s", w.Path, w.Data, want)
	}
	after := edited(t, files, "overlays/prod", w)
	if m := Witness(before, after, []witness.Accepted{{Object: db, Field: "spec.replicas", Live: int64(4)}}); len(m) > 0 {
		t.Errorf("the witness denies the override: %v", m)
	}
	// Any other field: a patch the overlay lists.
	w, err = Override(files[prodK], prodK, "StatefulSet", "db", "spec.serviceName", "db", "db-headless", "shared")
	if err != nil {
		t.Fatal(err)
	}
	after = edited(t, files, "overlays/prod", w)
	if m := Witness(before, after, []witness.Accepted{{Object: db, Field: "spec.serviceName", Live: "db-headless"}}); len(m) > 0 {
		t.Errorf("the witness denies the patch override: %v\n%s", m, w.Data)
	}
}

// TestWitnessDeniesAnotherObjectMoved: a replicas: entry matches every
// object of its name, whatever the kind; writing it for the StatefulSet
// also scales a Deployment of the same name, which kustomize's build
// shows and the witness denies.
func TestWitnessDeniesAnotherObjectMoved(t *testing.T) {
	files := map[string][]byte{
		"o/kustomization.yaml": []byte("resources: [db.yaml]\nreplicas:\n  - name: db\n    count: 3\n"),
		"o/db.yaml": []byte("apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {name: db}\nspec: {replicas: 1}\n---\n" +
			"apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: db}\nspec: {replicas: 1}\n"),
	}
	before, err := Run(files, "o")
	if err != nil {
		t.Fatal(err)
	}
	s, err := Locate(files, before, "apps/v1|StatefulSet||db", "spec.replicas")
	if err != nil || s.Kind != KindReplicas {
		t.Fatalf("%+v %v", s, err)
	}
	w, err := Write(files[s.File], s, int64(3), int64(4))
	if err != nil {
		t.Fatal(err)
	}
	after := edited(t, files, "o", w)
	m := Witness(before, after, []witness.Accepted{{Object: "apps/v1|StatefulSet||db", Field: "spec.replicas", Live: int64(4)}})
	if len(m) != 1 || m[0].Object != "apps/v1|Deployment||db" {
		t.Errorf("mismatches %v, want the Deployment's replicas", m)
	}
}

func TestLocateRefusesPostBuildVariables(t *testing.T) {
	files := map[string][]byte{
		"o/kustomization.yaml": []byte("resources: [web.yaml]\n"),
		"o/web.yaml":           []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web}\ndata:\n  REGION: ${cluster_region:=eu}\n"),
	}
	b, err := Run(files, "o")
	if err != nil {
		t.Fatal(err)
	}
	_, err = Locate(files, b, "v1|ConfigMap||web", "data.REGION")
	if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "Flux postBuild variable ${cluster_region:=eu}") {
		t.Errorf("%v, want a refusal naming the variable", err)
	}
}

func TestBuilderBuildsEachInputOnce(t *testing.T) {
	files, _ := build(t, "overlays/prod")
	var b Builder
	for range 3 {
		if _, err := b.Build(files, "overlays/prod"); err != nil {
			t.Fatal(err)
		}
	}
	if b.Runs != 1 {
		t.Errorf("%d builds of unchanged inputs, want 1", b.Runs)
	}
	changed := map[string][]byte{}
	for p, d := range files {
		changed[p] = d
	}
	changed[prodK] = append([]byte("# edited\n"), files[prodK]...)
	if _, err := b.Build(changed, "overlays/prod"); err != nil || b.Runs != 2 {
		t.Errorf("changed inputs: %d builds, %v", b.Runs, err)
	}
}

// TestBuildsAtTheRepositoryRoot: a kustomization at the repository's root
// (its folder is ".", as kustomize's examples/multibases has it) builds,
// and a field of a base it names is located and written.
func TestBuildsAtTheRepositoryRoot(t *testing.T) {
	files := map[string][]byte{
		"kustomization.yaml":      []byte("resources: [base]\nnamePrefix: a-\n"),
		"base/kustomization.yaml": []byte("resources: [pod.yaml]\n"),
		"base/pod.yaml":           []byte("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {priority: 1}\n"),
	}
	b, err := Run(files, ".")
	if err != nil {
		t.Fatal(err)
	}
	const pod = "v1|Pod||a-p"
	s, err := Locate(files, b, pod, "spec.priority")
	if err != nil || s.File != "base/pod.yaml" {
		t.Fatalf("located %+v, %v; want base/pod.yaml", s, err)
	}
	w, err := Write(files[s.File], s, 1, 2)
	if err != nil {
		t.Fatal(err)
	}
	after := map[string][]byte{}
	for k, v := range files {
		after[k] = v
	}
	after[s.File] = w.Data
	rebuilt, err := Run(after, ".")
	if err != nil {
		t.Fatal(err)
	}
	if m := Witness(b, rebuilt, []witness.Accepted{{Object: pod, Field: "spec.priority", Live: 2}}); len(m) > 0 {
		t.Errorf("witness: %v", m)
	}
}

// TestImageEntryKeepsTagAndDigest: kustomize's images: entry with a digest
// alone drops the reference's tag, and with a newTag alone its digest, so
// a reference holding both is written as both; one losing its tag to a
// digest alone cannot be an entry and is refused.
func TestImageEntryKeepsTagAndDigest(t *testing.T) {
	const (
		d1 = "sha256:1111111111111111111111111111111111111111111111111111111111111111"
		d2 = "sha256:2222222222222222222222222222222222222222222222222222222222222222"
	)
	files := map[string][]byte{
		"base/kustomization.yaml": []byte("resources: [web.yaml]\n"),
		"base/web.yaml": []byte("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  template:\n" +
			"    spec:\n      containers: [{name: web, image: \"busybox:1.38@" + d1 + "\"}]\n"),
		"o/kustomization.yaml": []byte("resources: [../base]\n"),
	}
	const obj, field = "apps/v1|Deployment||web", "spec.template.spec.containers[0].image"
	before, err := Run(files, "o")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ why, live, refused string }{
		{"the digest changes, the tag stays", "busybox:1.38@" + d2, ""},
		{"the tag changes, the digest stays", "busybox:1.39@" + d1, ""},
		{"the tag goes, which an entry cannot say", "busybox@" + d2, "cannot take the tag"},
	} {
		w, err := Override(files["o/kustomization.yaml"], "o/kustomization.yaml", "Deployment", "web", field,
			"busybox:1.38@"+d1, tc.live, "shared")
		if tc.refused != "" {
			if err == nil || !strings.Contains(err.Error(), tc.refused) {
				t.Errorf("%s: %v, want a refusal saying %q", tc.why, err, tc.refused)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", tc.why, err)
		}
		after := edited(t, files, "o", w)
		if m := Witness(before, after, []witness.Accepted{{Object: obj, Field: field, Live: tc.live}}); len(m) > 0 {
			t.Errorf("%s: the witness denies %s: %v", tc.why, w.Data, m)
		}
	}
}
