package kustomize

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/backflow-dev/backflow/internal/witness"
)

// fluxRepo is an overlay of a base whose fields hold postBuild variables,
// applied by a Flux Kustomization in clusters/prod.
func fluxRepo(flux string) map[string][]byte {
	return map[string][]byte{
		"base/kustomization.yaml": []byte("resources: [db.yaml, web.yaml]\n"),
		"base/db.yaml": []byte("apiVersion: apps/v1\nkind: StatefulSet\nmetadata:\n  name: db\nspec:\n" +
			"  replicas: ${db_replicas:=1}\n  minReadySeconds: ${ready}\n"),
		"base/web.yaml": []byte("apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n" +
			"  replicas: 2\n  template:\n    spec:\n      containers:\n        - name: web\n" +
			"          image: ghcr.io/example/web:${tag}\n"),
		"overlays/prod/kustomization.yaml": []byte("resources: [../../base]\n"),
		"clusters/prod/shop.yaml":          []byte(flux),
	}
}

const fluxProd = `apiVersion: v1
kind: Namespace
metadata:
  name: shop
---
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: shop
  namespace: flux-system
spec:
  path: ./overlays/prod
  postBuild:
    substitute:
      db_replicas: "3" # three zones
      tag: '1.5.0'
`

func TestBuildSubstitutesAsFlux(t *testing.T) {
	cases := []struct {
		name, flux string
		db, web    map[string]any
	}{
		{
			name: "inline variables, a default, an undefined variable empty",
			flux: fluxProd,
			db:   map[string]any{"replicas": float64(3), "minReadySeconds": nil},
			web:  map[string]any{"image": "ghcr.io/example/web:1.5.0"},
		},
		{
			name: "the default when the variable is not defined",
			flux: strings.Replace(fluxProd, `      db_replicas: "3" # three zones`+"\n", "", 1),
			db:   map[string]any{"replicas": float64(1)},
		},
		{
			name: "a variable only substituteFrom defines stays its reference",
			flux: fluxProd + "    substituteFrom:\n      - kind: ConfigMap\n        name: cluster-vars\n",
			db:   map[string]any{"replicas": float64(3), "minReadySeconds": "${ready}"},
		},
		{
			name: "no postBuild: nothing is substituted",
			flux: "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata: {name: shop}\nspec: {path: overlays/prod}\n",
			db:   map[string]any{"replicas": "${db_replicas:=1}"},
		},
		{
			name: "another overlay's Flux Kustomization does not apply",
			flux: strings.Replace(fluxProd, "./overlays/prod", "./overlays/staging", 1),
			db:   map[string]any{"replicas": "${db_replicas:=1}"},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b, err := Run(fluxRepo(c.flux), "overlays/prod")
			if err != nil {
				t.Fatal(err)
			}
			spec := b.Rendering.Objects["apps/v1|StatefulSet||db"]["spec"].(map[string]any)
			for k, want := range c.db {
				if got := spec[k]; !reflect.DeepEqual(got, want) && (want != nil || got != nil) {
					t.Errorf("db spec.%s = %#v, want %#v", k, got, want)
				}
			}
			if c.web != nil {
				web := b.Rendering.Objects["apps/v1|Deployment||web"]
				img := web["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)["containers"].([]any)[0].(map[string]any)["image"]
				if img != c.web["image"] {
					t.Errorf("web image %v, want %v", img, c.web["image"])
				}
			}
			raw := b.Raw["apps/v1|StatefulSet||db"]["spec"].(map[string]any)["replicas"]
			if raw != "${db_replicas:=1}" {
				t.Errorf("raw replicas %v, want the unsubstituted reference", raw)
			}
		})
	}
}

func TestBuildKeepsAnObjectThatTurnsSubstitutionOff(t *testing.T) {
	files := fluxRepo(fluxProd)
	files["base/db.yaml"] = []byte("apiVersion: apps/v1\nkind: StatefulSet\nmetadata:\n  name: db\n" +
		"  annotations:\n    kustomize.toolkit.fluxcd.io/substitute: disabled\nspec:\n  replicas: ${db_replicas:=1}\n")
	b, err := Run(files, "overlays/prod")
	if err != nil {
		t.Fatal(err)
	}
	if got := b.Rendering.Objects["apps/v1|StatefulSet||db"]["spec"].(map[string]any)["replicas"]; got != "${db_replicas:=1}" {
		t.Errorf("replicas %v, want the reference kept", got)
	}
}

func TestBuildRefusesBadFluxKustomizations(t *testing.T) {
	files := fluxRepo(strings.Replace(fluxProd, "tag: '1.5.0'", "tag: '1.5.0'\n      bad-name: x", 1))
	if _, err := Run(files, "overlays/prod"); err == nil || !strings.Contains(err.Error(), `"bad-name" is not a valid variable name`) {
		t.Errorf("%v, want the bad variable name named", err)
	}
	files = fluxRepo(strings.Replace(fluxProd, `db_replicas: "3"`, "db_replicas: 3", 1))
	if _, err := Run(files, "overlays/prod"); err == nil || !strings.Contains(err.Error(), "spec.postBuild.substitute.db_replicas is 3, not a string") {
		t.Errorf("%v, want a variable that is not a string named", err)
	}
	files = fluxRepo(fluxProd)
	files["clusters/prod/again.yaml"] = []byte(fluxProd)
	if _, err := Run(files, "overlays/prod"); err == nil || !strings.Contains(err.Error(), "both apply overlays/prod") {
		t.Errorf("%v, want two Flux Kustomizations of one overlay named", err)
	}
}

func TestWriteVariableWhereFluxDefinesIt(t *testing.T) {
	cases := []struct {
		object, field string
		old, live     any
		path, line    string
	}{
		{"apps/v1|StatefulSet||db", "spec.replicas", int64(3), int64(4),
			"spec.postBuild.substitute.db_replicas", `      db_replicas: "4" # three zones`},
		{"apps/v1|Deployment||web", "spec.template.spec.containers[0].image", "ghcr.io/example/web:1.5.0", "ghcr.io/example/web:1.6.0",
			"spec.postBuild.substitute.tag", `      tag: '1.6.0'`},
	}
	for _, c := range cases {
		t.Run(c.field, func(t *testing.T) {
			files := fluxRepo(fluxProd)
			before, err := Run(files, "overlays/prod")
			if err != nil {
				t.Fatal(err)
			}
			src, err := Locate(files, before, c.object, c.field)
			if err != nil {
				t.Fatal(err)
			}
			if src.File != "clusters/prod/shop.yaml" || src.Document != 1 || src.Path != c.path || src.Kind != KindPostBuild {
				t.Fatalf("source %+v", src)
			}
			w, err := Write(files[src.File], src, c.old, c.live)
			if err != nil {
				t.Fatal(err)
			}
			if n := changedLines(files[src.File], w.Data); n != 1 || !strings.Contains(string(w.Data), c.line+"\n") {
				t.Errorf("%d lines changed, want only %q:\n%s", n, c.line, w.Data)
			}
			after := edited(t, files, "overlays/prod", w)
			if m := Witness(before, after, []witness.Accepted{{Object: c.object, Field: c.field, Live: c.live}}); len(m) > 0 {
				t.Errorf("witness: %v", m)
			}
		})
	}
}

func TestLocateRefusesVariablesNotInTheRepository(t *testing.T) {
	from := fluxProd + "    substituteFrom:\n      - kind: ConfigMap\n        name: cluster-vars\n      - kind: Secret\n        name: sealed\n"
	cases := []struct {
		name, flux, object, field, db, want string
	}{
		{"substituteFrom", from, "apps/v1|StatefulSet||db", "spec.minReadySeconds", "",
			"ready is not in spec.postBuild.substitute of the Flux Kustomization flux-system/shop (clusters/prod/shop.yaml), " +
				"so it comes from its substituteFrom (ConfigMap/cluster-vars, Secret/sealed)"},
		{"only its default", strings.Replace(fluxProd, `      db_replicas: "3" # three zones`+"\n", "", 1),
			"apps/v1|StatefulSet||db", "spec.replicas", "", "db_replicas is not in spec.postBuild.substitute"},
		{"two variables", fluxProd, "apps/v1|StatefulSet||db", "spec.replicas",
			"apiVersion: apps/v1\nkind: StatefulSet\nmetadata:\n  name: db\nspec:\n  serviceName: ${tag}-${db_replicas}\n  replicas: ${tag}${db_replicas}\n",
			"more than one variable"},
		{"no Flux Kustomization", "# none\n", "apps/v1|StatefulSet||db", "spec.replicas", "",
			"none with a postBuild among the files read does"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			files := fluxRepo(c.flux)
			if c.db != "" {
				files["base/db.yaml"] = []byte(c.db)
			}
			b, err := Run(files, "overlays/prod")
			if err != nil {
				t.Fatal(err)
			}
			_, err = Locate(files, b, c.object, c.field)
			if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%v, want a refusal saying %q", err, c.want)
			}
		})
	}
}

func TestVariableValueKeepsTheTextAroundIt(t *testing.T) {
	s := Source{Why: "the variable tag", Affix: [2]string{"ghcr.io/example/web:", ""}}
	if v, err := variableValue(s, "ghcr.io/example/web:1.6.0"); err != nil || v != "1.6.0" {
		t.Errorf("%q, %v", v, err)
	}
	if _, err := variableValue(s, "ghcr.io/other/web:1.6.0"); err == nil || !strings.Contains(err.Error(), "does not keep") {
		t.Errorf("%v, want the changed text around the variable refused", err)
	}
	if _, err := variableValue(s, map[string]any{}); err == nil {
		t.Error("a mapping was taken for a variable's value")
	}
}

func TestFluxInputsFindsTheOverlaysFluxKustomization(t *testing.T) {
	files := fluxRepo(fluxProd)
	files["clusters/staging/shop.yaml"] = []byte(strings.Replace(fluxProd, "./overlays/prod", "./overlays/staging", 1))
	read := func(p string) ([]byte, error) {
		if d, ok := files[p]; ok {
			return d, nil
		}
		return nil, errors.New("no such file")
	}
	list := func(string) ([]string, error) { return sortedKeys(files), nil }
	got, err := FluxInputs(read, list, "overlays/prod")
	if err != nil || len(got) != 1 || got["clusters/prod/shop.yaml"] == nil {
		t.Errorf("%v, %v: want clusters/prod/shop.yaml alone", sortedKeys(got), err)
	}
	if !HasVariables(files) || HasVariables(map[string][]byte{"a.yaml": []byte("a: $b {c}\n")}) {
		t.Error("HasVariables")
	}
}

func TestWitnessDeniesAVariableOtherObjectsUse(t *testing.T) {
	files := fluxRepo(fluxProd)
	files["base/db.yaml"] = []byte("apiVersion: apps/v1\nkind: StatefulSet\nmetadata:\n  name: db\nspec:\n" +
		"  template:\n    spec:\n      containers:\n        - name: sidecar\n          image: ghcr.io/example/web:${tag}\n")
	before, err := Run(files, "overlays/prod")
	if err != nil {
		t.Fatal(err)
	}
	const field = "spec.template.spec.containers[0].image"
	src, err := Locate(files, before, "apps/v1|Deployment||web", field)
	if err != nil {
		t.Fatal(err)
	}
	w, err := Write(files[src.File], src, "ghcr.io/example/web:1.5.0", "ghcr.io/example/web:1.6.0")
	if err != nil {
		t.Fatal(err)
	}
	after := edited(t, files, "overlays/prod", w)
	m := Witness(before, after, []witness.Accepted{{Object: "apps/v1|Deployment||web", Field: field, Live: "ghcr.io/example/web:1.6.0"}})
	if len(m) != 1 || m[0].Object != "apps/v1|StatefulSet||db" {
		t.Errorf("mismatches %v, want the StatefulSet that uses the variable too", m)
	}
}
