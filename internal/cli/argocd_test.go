package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	yaml "go.yaml.in/yaml/v3"

	"github.com/backflow-dev/backflow/internal/schematest"
)

// seedArgoRepo is a checkout holding the seed's example repo config and
// policy (config/repo) where .github/backflow.yaml expects them.
func seedArgoRepo(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, ".github"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"backflow.yaml", "reverse-reconcile-policy.yaml"} {
		data, err := os.ReadFile(filepath.Join("..", "..", "config", "repo", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, ".github", f), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// applicationSchema is a JSON Schema for the patch document: Argo CD's own
// schema of spec.ignoreDifferences and spec.syncPolicy.syncOptions (the
// CRD fragment in testdata), every object closed, since the API server
// prunes a field the CRD does not declare and Argo CD would never see it.
func applicationSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "argocd", "application-crd.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var spec map[string]any
	if err := yaml.Unmarshal(data, &spec); err != nil {
		t.Fatal(err)
	}
	doc := map[string]any{
		"type":     "object",
		"required": []any{"apiVersion", "kind", "metadata", "spec"},
		"properties": map[string]any{
			"apiVersion": map[string]any{"const": "argoproj.io/v1alpha1"},
			"kind":       map[string]any{"const": "Application"},
			"metadata": map[string]any{"type": "object", "required": []any{"name"},
				"properties": map[string]any{"name": map[string]any{"type": "string", "minLength": 1}}},
			"spec": map[string]any{"type": "object", "properties": spec},
		},
	}
	closeObjects(doc)
	raw, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return schematest.Compile(t, "application.json", raw)
}

// closeObjects sets additionalProperties: false on every schema that lists
// properties.
func closeObjects(s any) {
	switch v := s.(type) {
	case map[string]any:
		if _, ok := v["properties"]; ok {
			v["additionalProperties"] = false
		}
		for _, c := range v {
			closeObjects(c)
		}
	case []any:
		for _, c := range v {
			closeObjects(c)
		}
	}
}

func TestArgoCDIgnoreDifferencesGolden(t *testing.T) {
	schema := applicationSchema(t)
	seed := seedArgoRepo(t)
	for _, tc := range []struct {
		why, golden string
		args        []string
		stderr      string
	}{
		{"the seed's example: spec.replicas of redis-replicas in both environments", "argocd-seed.yaml",
			[]string{"--repo", seed}, ""},
		{"--environment keeps one environment's units", "argocd-seed-eu.json",
			[]string{"--repo", seed, "--environment", "prod-eu-west", "--format", "json"}, ""},
		{"selectors, globs, escapes, bounds and terms; the Flux-held unit skipped", "argocd-cases.yaml",
			[]string{"--repo", "testdata/argocd"},
			"skipped: unit api (prod): it holds with flux-kustomize, whose per-object mark backflow places\n"},
		{"the same as JSON", "argocd-cases.json", []string{"--repo", "testdata/argocd", "--format", "json"},
			"skipped: unit api (prod): it holds with flux-kustomize, whose per-object mark backflow places\n"},
	} {
		code, out, errOut := runCLI(t, append([]string{"argocd", "ignore-differences"}, tc.args...)...)
		if code != 0 || errOut != tc.stderr {
			t.Fatalf("%s: exit %d, stderr %q, want %q", tc.why, code, errOut, tc.stderr)
		}
		compareGolden(t, goldenFile(t, tc.golden), out)
		// why: every document is an Application that Argo CD's CRD admits
		// with nothing pruned.
		var docs []any
		if strings.HasSuffix(tc.golden, ".json") {
			var units []struct {
				Application any `json:"application"`
			}
			if err := json.Unmarshal([]byte(out), &units); err != nil {
				t.Fatalf("%s: %v", tc.why, err)
			}
			for _, u := range units {
				docs = append(docs, u.Application)
			}
		} else {
			for _, d := range strings.Split(out, "\n---\n") {
				docs = append(docs, schematest.YAML(t, []byte(d)))
			}
		}
		if len(docs) == 0 {
			t.Fatalf("%s: no document", tc.why)
		}
		for i, d := range docs {
			if err := schema.Validate(d); err != nil {
				t.Errorf("%s: document %d does not conform to Argo CD's Application schema: %v", tc.why, i, err)
			}
		}
	}
}

func TestArgoCDSchemaRefuses(t *testing.T) {
	schema := applicationSchema(t)
	// why: the schema test can fail: a key Argo CD does not declare, a
	// missing kind and a pointer list that is no list are refused.
	for _, doc := range []string{
		`{apiVersion: argoproj.io/v1alpha1, kind: Application, metadata: {name: a}, spec: {ignoreDifferences: [{kind: A, jsonPointer: [/a]}]}}`,
		`{apiVersion: argoproj.io/v1alpha1, kind: Application, metadata: {name: a}, spec: {ignoreDifferences: [{group: apps, jsonPointers: [/a]}]}}`,
		`{apiVersion: argoproj.io/v1alpha1, kind: Application, metadata: {name: a}, spec: {ignoreDifferences: [{kind: A, jsonPointers: /a}]}}`,
		`{apiVersion: argoproj.io/v1alpha1, kind: Application, metadata: {name: a}, spec: {syncPolicy: {syncOption: [x]}}}`,
	} {
		if err := schema.Validate(schematest.YAML(t, []byte(doc))); err == nil {
			t.Errorf("accepted %s", doc)
		}
	}
}

func TestArgoCDIgnoreDifferencesErrors(t *testing.T) {
	write := func(t *testing.T, files map[string]string) string {
		t.Helper()
		dir := seedArgoRepo(t)
		for name, text := range files {
			path := filepath.Join(dir, ".github", name)
			if text == "" {
				if err := os.Remove(path); err != nil {
					t.Fatal(err)
				}
				continue
			}
			if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return dir
	}
	seedPolicyText := readFixture(t, filepath.Join("..", "..", "config", "repo", "reverse-reconcile-policy.yaml"))
	for _, tc := range []struct {
		why    string
		files  map[string]string
		args   []string
		code   int
		stderr []string
	}{
		{"no policy: the file the config names is said", map[string]string{"reverse-reconcile-policy.yaml": ""}, nil, 2,
			[]string{"names policy .github/reverse-reconcile-policy.yaml, which does not exist"}},
		{"a policy that is not YAML: the file is named",
			map[string]string{"reverse-reconcile-policy.yaml": "spec: [unclosed\n"}, nil, 2,
			[]string{".github/reverse-reconcile-policy.yaml"}},
		{"an invalid policy: its problems, exit 1",
			map[string]string{"reverse-reconcile-policy.yaml": strings.Replace(seedPolicyText, "default: deny", "default: allow", 1)},
			nil, 1, []string{`.github/reverse-reconcile-policy.yaml: spec.default: must be "deny"`}},
		{"no repo config: the file is named", map[string]string{"backflow.yaml": ""}, nil, 2,
			[]string{".github/backflow.yaml"}},
		{"an invalid repo config: its problems, exit 1", map[string]string{"backflow.yaml": "version: 1\nbogus: 1\n"}, nil, 1,
			[]string{".github/backflow.yaml", "bogus: unknown key"}},
		{"an environment the config does not have", nil, []string{"--environment", "prod-ap"}, 2,
			[]string{`--environment "prod-ap": not an environment of .github/backflow.yaml`}},
		{"an unknown format", nil, []string{"--format", "toml"}, 2, []string{`--format "toml": want yaml or json`}},
		{"a field that is no path: its entry named",
			map[string]string{"reverse-reconcile-policy.yaml": strings.Replace(seedPolicyText, "field: spec.replicas", "field: spec.replicas[", 1)},
			nil, 1, []string{".github/reverse-reconcile-policy.yaml: spec.rules[0].mayAccept[0].field"}},
	} {
		dir := write(t, tc.files)
		code, out, errOut := runCLI(t, append([]string{"argocd", "ignore-differences", "--repo", dir}, tc.args...)...)
		if code != tc.code || out != "" {
			t.Errorf("%s: exit %d, stdout %q; want exit %d and nothing on stdout", tc.why, code, out, tc.code)
		}
		for _, w := range tc.stderr {
			if !strings.Contains(errOut, w) {
				t.Errorf("%s: stderr %q lacks %q", tc.why, errOut, w)
			}
		}
	}
	// why: a repository that is not there cannot be read.
	if code, _, errOut := runCLI(t, "argocd", "ignore-differences", "--repo", filepath.Join(t.TempDir(), "none")); code != 2 ||
		!strings.Contains(errOut, "backflow.yaml") {
		t.Errorf("missing repo: exit %d, stderr %q", code, errOut)
	}
}
