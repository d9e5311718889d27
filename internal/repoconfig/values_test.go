package repoconfig

import (
	"strings"
	"testing"

	"github.com/backflow-dev/backflow/internal/values"
)

func TestValues(t *testing.T) {
	helmRelease := `apiVersion: v1
kind: Namespace
metadata: {name: redis}
---
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: redis
spec:
  values:
    replica:
      replicaCount: 3
    enabled: yes
`
	root := &ValuesRoot{Document: "HelmRelease/redis", Path: "spec.values"}
	application := func(extra string) string {
		return "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {name: redis}\nspec:\n  source:\n    helm:\n" + extra +
			"      valuesObject:\n        replica:\n          replicaCount: 3\n"
	}
	argo := &ValuesRoot{Document: "Application/redis", Path: "spec.source.helm.valuesObject"}
	tests := []struct {
		why  string
		data string
		root *ValuesRoot
		path string
		want string // the value found, as text; or an error substring prefixed with "!"
	}{
		{"a plain values file", "replica:\n  replicaCount: 3\n", nil, "replica.replicaCount", "3"},
		{"values are read as Helm reads them (YAML 1.1)", "enabled: yes\n", nil, "enabled", "true"},
		{"an empty values file holds nothing", "# nothing\n", nil, "x", "!"},
		{"a HelmRelease's spec.values", helmRelease, root, "replica.replicaCount", "3"},
		{"YAML 1.1 inside a manifest too", helmRelease, root, "enabled", "true"},
		{"the document must exist", helmRelease, &ValuesRoot{Document: "HelmRelease/other", Path: "spec.values"}, "", "!no document is HelmRelease/other"},
		{"the path must exist in the document", helmRelease, &ValuesRoot{Document: "HelmRelease/redis", Path: "spec.valuesObject"}, "", "!has no spec.valuesObject"},
		{"two matching documents are ambiguous", helmRelease + "---\n" + strings.SplitN(helmRelease, "---\n", 2)[1], root, "", "!two documents are HelmRelease/redis"},
		{"an Application's parameters override valuesObject, which is read alone", application("      parameters:\n        - {name: replica.replicaCount, value: \"5\"}\n"), argo, "", "!spec.source.helm.parameters is set"},
		{"an Application's values string is not read", application("      values: |\n        replica: {replicaCount: 5}\n"), argo, "", "!spec.source.helm.values is set"},
		{"an Application with valuesObject alone", application(""), argo, "replica.replicaCount", "3"},
		{"a plain values file has one document", "a: 1\n---\nb: 2\n", nil, "", "!set valuesRoot"},
		{"values are a mapping", "- 1\n", nil, "", "!must be a mapping"},
	}
	for _, tt := range tests {
		v, err := Values("v.yaml", []byte(tt.data), tt.root)
		if strings.HasPrefix(tt.want, "!") {
			if tt.path != "" && err == nil {
				if _, ok := Lookup(v, tt.path); ok {
					t.Errorf("%s: %s found", tt.why, tt.path)
				}
				continue
			}
			if err == nil || !strings.Contains(err.Error(), tt.want[1:]) {
				t.Errorf("%s: error %v, want %q", tt.why, err, tt.want[1:])
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", tt.why, err)
		}
		got, ok := Lookup(v, tt.path)
		if !ok || values.Format(got) != tt.want {
			t.Errorf("%s: %s = %v (%v)", tt.why, tt.path, got, ok)
		}
	}
}
