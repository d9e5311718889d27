package values

import (
	"errors"
	"strings"
	"testing"
)

const manifests = `# releases of the platform
apiVersion: v1
kind: ConfigMap
metadata:
  name: other
data:
  replicas: "9"
---
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: podinfo
  namespace: apps
spec:
  chart:
    spec:
      chart: podinfo
  values:
    replicaCount: 2 # scaled by hand
    env:
      - name: TZ
        value: UTC

---
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: web
spec:
  source:
    helm:
      valuesObject:
        image:
          tag: "1.2"
`

func TestFindInline(t *testing.T) {
	got, err := FindInline([]byte(manifests))
	if err != nil {
		t.Fatal(err)
	}
	want := []Inline{
		{Document: 1, Kind: "HelmRelease", Namespace: "apps", Name: "podinfo", Root: FluxValuesRoot},
		{Document: 2, Kind: "Application", Name: "web", Root: ArgoValuesRoot},
	}
	if len(got) != len(want) {
		t.Fatalf("got %+v", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("%d: got %+v, want %+v", i, got[i], want[i])
		}
	}
	if _, err := FindInline([]byte("a: 1\n---\nb: [\n")); !errors.Is(err, ErrParse) {
		t.Errorf("a broken document: %v", err)
	}
}

func TestInlineSet(t *testing.T) {
	one, two := 1, 2
	cases := []struct {
		opts     Options
		path     string
		value    any
		old, new string
		why      string
	}{
		{Options{Inline: true, Document: &one}, "replicaCount", int64(3), "    replicaCount: 2 # scaled by hand\n", "    replicaCount: 3 # scaled by hand\n", "a HelmRelease's spec.values, found by kind"},
		{Options{Inline: true, Document: &one}, "env[name=TZ].value", "CET", "        value: UTC\n", "        value: CET\n", "selectors work below the root"},
		{Options{Inline: true, Document: &two}, "image.tag", "1.3", "          tag: \"1.2\"\n", "          tag: \"1.3\"\n", "an Application's valuesObject"},
		{Options{Root: "spec.values", Document: &one}, "replicaCount", int64(4), "    replicaCount: 2 # scaled by hand\n", "    replicaCount: 4 # scaled by hand\n", "an explicit root"},
		{Options{Inline: true, Document: &one}, "resources.limits.cpu", "1", "        value: UTC\n", "        value: UTC\n    resources:\n      limits:\n        cpu: \"1\"\n", "a missing key goes into the values mapping"},
	}
	for _, c := range cases {
		out, changes, err := Set([]byte(manifests), []Edit{{Path: c.path, Value: c.value}}, c.opts)
		if err != nil {
			t.Errorf("%s (%s): %v", c.path, c.why, err)
			continue
		}
		if want := strings.Replace(manifests, c.old, c.new, 1); string(out) != want {
			t.Errorf("%s (%s): got\n%s", c.path, c.why, out)
		}
		if len(changes) != 1 || changes[0].Path != c.path {
			t.Errorf("%s (%s): changes %+v", c.path, c.why, changes)
		}
		if got, err := Get(out, c.path, c.opts); err != nil || !sameValue(got, c.value) {
			t.Errorf("%s (%s): reads back %#v, %v", c.path, c.why, got, err)
		}
	}
}

func TestInlineRefusals(t *testing.T) {
	zero := 0
	cases := []struct {
		data string
		opts Options
		want error
		why  string
	}{
		{manifests, Options{Inline: true}, ErrDocument, "two manifests carry values: choose one"},
		{manifests, Options{Inline: true, Document: &zero}, ErrInline, "a ConfigMap has no inline values"},
		{"kind: Deployment\napiVersion: apps/v1\n", Options{Inline: true}, ErrInline, "no HelmRelease nor Application"},
		{"apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nspec: {}\n", Options{Inline: true}, ErrInline, "a HelmRelease without values"},
		{"spec:\n  values: [1]\n", Options{Root: "spec.values"}, ErrInline, "a root that is not a mapping"},
		{"spec: {}\n", Options{Root: "spec.values"}, ErrInline, "a root that is not there"},
	}
	for _, c := range cases {
		_, _, err := Set([]byte(c.data), []Edit{{Path: "a", Value: "b"}}, c.opts)
		if !errors.Is(err, c.want) {
			t.Errorf("%s: got %v, want %v", c.why, err, c.want)
		}
	}
}
