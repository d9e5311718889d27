package repoconfig

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/backflow-dev/backflow/internal/schematest"
)

func compileSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	raw, err := JSONSchema()
	if err != nil {
		t.Fatal(err)
	}
	return schematest.Compile(t, SchemaID, raw)
}

func TestExampleMatchesSchemaAndLoader(t *testing.T) {
	data, err := os.ReadFile(examplePath)
	if err != nil {
		t.Fatal(err)
	}
	if err := compileSchema(t).Validate(schematest.YAML(t, data)); err != nil {
		t.Errorf("the example config does not match the schema: %v", err)
	}
	if _, err := Parse(Path, data); err != nil {
		t.Errorf("the example config does not load: %v", err)
	}
	copyInRepo, err := os.ReadFile(filepath.Join("testdata", "repo", ".github", "backflow.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(data, copyInRepo) {
		t.Error("testdata/repo/.github/backflow.yaml must be a copy of config/repo/backflow.yaml")
	}
}

func TestSchemaAgreesWithLoader(t *testing.T) {
	s := compileSchema(t)
	tests := []struct {
		why    string
		config string
		valid  bool
	}{
		{"the base config", base, true},
		{"unknown keys are refused by both", base + "colour: red\n", false},
		{"nested unknown keys too", strings.Replace(base, "valuesFiles:", "valuesFile:", 1), false},
		{"the version is an enum of one", strings.Replace(base, "version: 1", "version: 2", 1), false},
		{"modes are an enum", base + "mode: yolo\n", false},
		{"merge methods are an enum", base + "autoMerge: {method: ff}\n", false},
		{"attribution levels are an enum without unknown", base + "    attribution: [unknown]\n", false},
		{"durations are Go durations", base + "followUp: {gracePeriod: 1h30m}\n", true},
		{"durations are Go durations, not prose", base + "followUp: {gracePeriod: ten minutes}\n", false},
		{"units need objects", strings.Replace(base, "    objects: [\"apps/v1|StatefulSet|redis|*\"]\n", "", 1), false},
		{"every documented key at once", base + "requireClusterAgreement: true\nidentities: {alice: alice-gh}\npullRequests: {branchPrefix: bf/, labels: [a], reviewers: [bob], teamReviewers: [org/sre], draft: true}\nautoMerge: {enabled: true, method: rebase}\nreceipts: {dir: receipts}\nignoreFields: [status.**]\nignoreManagers: [hpa]\nfollowUp: {gracePeriod: 5m}\ndriftReport: {trackingIssue: true}\nmode: observe-only\npaused: false\n", true},
	}
	for _, tt := range tests {
		schemaOK := s.Validate(schematest.YAML(t, []byte(tt.config))) == nil
		_, err := Parse(Path, []byte(tt.config))
		if schemaOK != tt.valid || (err == nil) != tt.valid {
			t.Errorf("%s: schema valid %v, loader error %v; want valid %v", tt.why, schemaOK, err, tt.valid)
		}
	}
}

func TestEverySchemaPropertyIsDescribed(t *testing.T) {
	raw, err := JSONSchema()
	if err != nil {
		t.Fatal(err)
	}
	var root map[string]any
	if err := json.Unmarshal(raw, &root); err != nil {
		t.Fatal(err)
	}
	var walk func(path string, s map[string]any)
	count := 0
	walk = func(path string, s map[string]any) {
		if props, ok := s["properties"].(map[string]any); ok {
			for name, p := range props {
				ps := p.(map[string]any)
				count++
				if d, _ := ps["description"].(string); d == "" {
					t.Errorf("why: every key is documented in the schema: %s%s has no description", path, name)
				}
				walk(path+name+".", ps)
			}
		}
		for _, k := range []string{"items", "additionalProperties"} {
			if sub, ok := s[k].(map[string]any); ok {
				walk(path, sub)
			}
		}
	}
	walk("", root)
	if count < 30 {
		t.Errorf("only %d properties found; the walk is broken", count)
	}
}
