package botconfig

import (
	"bytes"
	"encoding/json"
	"reflect"
	"time"

	"github.com/invopop/jsonschema"
	yaml "go.yaml.in/yaml/v3"

	"github.com/backflow-dev/backflow/internal/observe"
	"github.com/backflow-dev/backflow/internal/server"
)

// BotSchemaID is the $id of the bot config's JSON Schema.
const BotSchemaID = "https://backflow.dev/schemas/bot-config-v1.json"

// BotJSONSchema returns the JSON Schema of the bot config that backflow run
// and backflow serve read, server: section included, generated from the Go
// types the strict decoder fills (so the two cannot drift apart). It
// describes the shape; LoadConfig and LoadServeConfig also check what a
// schema cannot say (exclusive keys, URLs, secrets that must exist).
func BotJSONSchema() ([]byte, error) {
	r := &jsonschema.Reflector{
		FieldNameTag:   "yaml",
		DoNotReference: true,
		// Every key is optional to the schema: which ones a config needs
		// depends on the others, which the loader checks.
		RequiredFromJSONSchemaTags: true,
		Mapper: func(t reflect.Type) *jsonschema.Schema {
			switch t {
			case reflect.TypeFor[time.Duration]():
				return durationSchema()
			case reflect.TypeFor[observe.Attribution]():
				return &jsonschema.Schema{Type: "string", Enum: attributionEnum()}
			case reflect.TypeFor[yaml.Node]():
				// The server section, kept as written; replaced below by
				// the schema of what serve decodes it into.
				return &jsonschema.Schema{Type: "object"}
			}
			return nil
		},
	}
	s := r.Reflect(&Config{})
	server := r.Reflect(&server.FileConfig{})
	server.Version, server.ID = "", ""
	server.Description = "backflow serve's section: listen address, schedule, webhook secret, observation pushes."
	if p, ok := s.Properties.Get("server"); ok && p != nil {
		s.Properties.Set("server", server)
	}
	s.ID = BotSchemaID
	s.Title = "backflow bot configuration (backflow run --config, backflow serve --config)"
	s.Description = "Strict: unknown keys are errors. Relative paths are read from the config file's folder."
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(s); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

func durationSchema() *jsonschema.Schema {
	return &jsonschema.Schema{Description: "A Go duration: 30s, 5m, 1h30m; a bare 0 is none.", OneOf: []*jsonschema.Schema{
		{Type: "string", Pattern: `^(0|([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+)$`},
		{Enum: []any{0}},
	}}
}

func attributionEnum() []any {
	return []any{
		string(observe.AttributionUnknown), string(observe.AttributionAsserted), string(observe.AttributionManagedFields),
		string(observe.AttributionAdmission), string(observe.AttributionAuditLog),
	}
}
