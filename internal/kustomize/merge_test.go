package kustomize

import (
	"errors"
	"maps"
	"strings"
	"testing"

	"github.com/backflow-dev/backflow/internal/witness"
)

// deploy is a base Deployment with a container, its env, its volume
// mounts and two volumes, and a Service with one port.
const deploy = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  template:
    spec:
      containers:
      - name: web
        image: nginx:1.0
        env:
        - name: MODE
          value: base
        volumeMounts:
        - name: data
          mountPath: /data
      volumes:
      - name: data
        emptyDir: {}
      - name: run
        emptyDir: {}
---
apiVersion: v1
kind: Service
metadata:
  name: web
spec:
  ports:
  - port: 80
    targetPort: 8080
`

// TestLocateAsKustomizeMerges: each field of a real layout's shape (found
// by the kustomize corpus, testdata/corpus/kustomize) is either located
// where kustomize takes it from, written and witnessed, or refused with a
// reason naming where the value comes from.
func TestLocateAsKustomizeMerges(t *testing.T) {
	base := map[string][]byte{
		"base/kustomization.yaml": []byte("resources: [web.yaml]\n"),
		"base/web.yaml":           []byte(deploy),
	}
	with := func(more map[string]string) map[string][]byte {
		out := maps.Clone(base)
		for k, v := range more {
			out[k] = []byte(v)
		}
		return out
	}
	const dep, svc = "apps/v1|Deployment||web", "v1|Service||web"
	// A strategic-merge patch adding a probe and an env entry to the
	// container by name, and a volume before the base's (kustomize's merge
	// puts the patch's new items first).
	probe := with(map[string]string{
		"o/kustomization.yaml": "resources: [../base]\npatches:\n- path: p.yaml\n",
		"o/p.yaml": `apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  template:
    spec:
      containers:
      - name: web
        livenessProbe:
          periodSeconds: 3
        env:
        - name: EXTRA
          value: "1"
      volumes:
      - name: disk
        gcePersistentDisk: {pdName: d}
`,
	})
	for _, tc := range []struct {
		why           string
		files         map[string][]byte
		dir           string
		object, field string
		old, live     any
		file, path    string
		refused       string
	}{
		{"a field a strategic-merge patch adds to a list item is in the patch, by the item's merge key",
			probe, "o", dep, "spec.template.spec.containers[0].livenessProbe.periodSeconds", int64(3), int64(4),
			"o/p.yaml", "spec.template.spec.containers[0].livenessProbe.periodSeconds", ""},
		{"an env entry the patch adds is the patch's",
			probe, "o", dep, "spec.template.spec.containers[0].env[0].value", "1", "2",
			"o/p.yaml", "spec.template.spec.containers[0].env[0].value", ""},
		{"the base's env entry after it is the base's, by name, not at the built index",
			probe, "o", dep, "spec.template.spec.containers[0].env[1].value", "base", "prod",
			"base/web.yaml", "spec.template.spec.containers[0].env[0].value", ""},
		{"the base's item is found by its merge key, not at the built index the patch's new volume moved it from",
			probe, "o", dep, "spec.template.spec.volumes[1].name", "data", "data2",
			"base/web.yaml", "spec.template.spec.volumes[0].name", ""},
		{"a merge key the patch names the item by is refused: changed, the patch would add another item",
			probe, "o", dep, "spec.template.spec.containers[0].name", "web", "web2",
			"", "", "is the key kustomize merges the list item by (name)"},
		{"a merge key no patch names is written in the resource file",
			probe, "o", svc, "spec.ports[0].port", int64(80), int64(81),
			"base/web.yaml", "spec.ports[0].port", ""},
		{"a label commonLabels sets is refused, naming it",
			with(map[string]string{"o/kustomization.yaml": "resources: [../base]\ncommonLabels: {app: web}\n"}),
			"o", svc, "metadata.labels.app", "web", "web2", "", "", "set by the commonLabels of o/kustomization.yaml"},
		{"a label a labels: entry sets is refused in the object's labels",
			with(map[string]string{"o/kustomization.yaml": "resources: [../base]\nlabels: [{pairs: {app: web}}]\n"}),
			"o", dep, "metadata.labels.app", "web", "web2", "", "", "set by the labels of o/kustomization.yaml"},
		{"but not in a selector without includeSelectors, which it leaves as it is",
			with(map[string]string{
				"o/kustomization.yaml": "resources: [../base]\nlabels: [{pairs: {app: web}}]\n",
				"base/web.yaml":        strings.Replace(deploy, "  ports:\n", "  selector: {app: web}\n  ports:\n", 1),
			}),
			"o", svc, "spec.selector.app", "web", "web2", "base/web.yaml", "spec.selector.app", ""},
		{"an annotation commonAnnotations sets on the template is refused, naming it",
			with(map[string]string{"o/kustomization.yaml": "resources: [../base]\ncommonAnnotations: {team: a}\n"}),
			"o", dep, "spec.template.metadata.annotations.team", "a", "b", "", "",
			"set by the commonAnnotations of o/kustomization.yaml"},
		{"a base an overlay builds twice (two overlays of it) is refused: written, it moves both copies",
			with(map[string]string{
				"kustomization.yaml":   "resources: [a, b]\n",
				"a/kustomization.yaml": "resources: [../base]\nnamePrefix: a-\n",
				"b/kustomization.yaml": "resources: [../base]\nnamePrefix: b-\n",
			}),
			".", "apps/v1|Deployment||b-web", "spec.template.spec.containers[0].image", "nginx:1.0", "nginx:1.1",
			"", "", "which the overlay builds 2 times (through . > a > base; . > b > base)"},
		{"a field a component's patch sets is refused, naming the component",
			with(map[string]string{
				"o/kustomization.yaml": "resources: [../base]\ncomponents: [../c]\n",
				"c/kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\npatches:\n- path: p.yaml\n",
				"c/p.yaml": "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  template:\n    spec:\n" +
					"      containers:\n      - name: web\n        env:\n        - {name: MODE, value: traced}\n",
			}),
			"o", dep, "spec.template.spec.containers[0].env[0].value", "traced", "plain", "", "",
			"is set by the component c, which o/kustomization.yaml includes"},
		{"a value vars: substitutes is refused, naming the vars",
			with(map[string]string{"o/kustomization.yaml": `resources: [../base]
patches:
- path: p.yaml
vars:
- name: SVC
  objref: {kind: Service, name: web, apiVersion: v1}
`, "o/p.yaml": `apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  template:
    spec:
      containers:
      - name: web
        env:
        - name: MODE
          value: $(SVC)
`}),
			"o", dep, "spec.template.spec.containers[0].env[0].value", "web", "web2", "", "",
			"is \"$(SVC)\" in the patch file o/p.yaml (patches[0] of o/kustomization.yaml) but \"web\" in the build: the vars: of o/kustomization.yaml"},
		{"a name kustomize rewrites after the resource file (a namePrefix on the Secret it names) is refused",
			with(map[string]string{
				"o/kustomization.yaml": "resources: [../base, s.yaml]\nnamePrefix: p-\n",
				"o/s.yaml":             "apiVersion: v1\nkind: Secret\nmetadata: {name: data}\n",
				"base/web.yaml":        strings.Replace(deploy, "      - name: run\n        emptyDir: {}\n", "      - name: run\n        secret: {secretName: data}\n", 1),
			}),
			"o", "apps/v1|Deployment||p-web", "spec.template.spec.volumes[1].secret.secretName", "p-data", "p-data2", "", "",
			"is \"data\" in the resource file base/web.yaml but \"p-data\" in the build"},
	} {
		before, err := Run(tc.files, tc.dir)
		if err != nil {
			t.Fatalf("%s: %v", tc.why, err)
		}
		s, err := Locate(tc.files, before, tc.object, tc.field)
		if tc.refused != "" {
			if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), tc.refused) {
				t.Errorf("%s: %v, want a refusal saying %q", tc.why, err, tc.refused)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.why, err)
			continue
		}
		if s.File != tc.file || s.Path != tc.path {
			t.Errorf("%s: located %s %s, want %s %s", tc.why, s.File, s.Path, tc.file, tc.path)
			continue
		}
		w, err := Write(tc.files[s.File], s, tc.old, tc.live)
		if err != nil {
			t.Errorf("%s: %v", tc.why, err)
			continue
		}
		if n := changedLines(tc.files[s.File], w.Data); n != 1 {
			t.Errorf("%s: %d lines changed, want 1:\n%s", tc.why, n, w.Data)
		}
		after := edited(t, tc.files, tc.dir, w)
		if m := Witness(before, after, []witness.Accepted{{Object: tc.object, Field: tc.field, Live: tc.live}}); len(m) > 0 {
			t.Errorf("%s: the witness denies: %v", tc.why, m)
		}
	}
}
