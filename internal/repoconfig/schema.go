package repoconfig

import (
	"bytes"
	"encoding/json"
	"reflect"

	"github.com/backflow-dev/backflow/internal/observe"
	"github.com/invopop/jsonschema"
)

// SchemaID is the $id of the repo config's JSON Schema.
const SchemaID = "https://backflow.dev/schemas/repo-config-v1.json"

// JSONSchema returns the JSON Schema of .github/backflow.yaml, generated from
// the Go types (so the two cannot drift apart) and indented for reading.
// It describes the shape; Parse also checks what a schema cannot say
// (paths stay in the repository, units do not overlap, ...).
func JSONSchema() ([]byte, error) {
	r := &jsonschema.Reflector{
		RequiredFromJSONSchemaTags: true,
		DoNotReference:             true,
		Mapper: func(t reflect.Type) *jsonschema.Schema {
			if t == reflect.TypeOf(observe.Attribution("")) {
				return &jsonschema.Schema{Type: "string", Enum: []any{
					string(observe.AttributionAsserted), string(observe.AttributionManagedFields),
					string(observe.AttributionAdmission), string(observe.AttributionAuditLog),
				}}
			}
			return nil
		},
	}
	s := r.Reflect(&Config{})
	s.ID = SchemaID
	s.Title = "backflow repository configuration (.github/backflow.yaml)"
	s.Description = "Strict: unknown keys are errors. Read from the default branch only."
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false) // descriptions show <branchPrefix>, not \u003c
	enc.SetIndent("", "  ")
	if err := enc.Encode(s); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}
