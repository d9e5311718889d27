// Package schematest holds what tests of backflow's JSON Schemas share:
// compiling a schema the code publishes, and reading a YAML file into the
// JSON value a validator takes, as an editor or CI step checking a config
// against the schema would.
package schematest

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	yaml "go.yaml.in/yaml/v3"
)

// Compile compiles the JSON Schema raw, published under id, failing the
// test when it does not compile.
func Compile(t testing.TB, id string, raw []byte) *jsonschema.Schema {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		t.Fatalf("schema %s: %v", id, err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource(id, doc); err != nil {
		t.Fatalf("schema %s: %v", id, err)
	}
	s, err := c.Compile(id)
	if err != nil {
		t.Fatalf("schema %s does not compile: %v", id, err)
	}
	return s
}

// YAML reads YAML into the generic JSON value a validator takes.
func YAML(t testing.TB, data []byte) any {
	t.Helper()
	var v any
	if err := yaml.Unmarshal(data, &v); err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	out, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	return out
}
