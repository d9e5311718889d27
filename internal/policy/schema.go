package policy

import _ "embed"

// SchemaID is the $id of the policy's JSON Schema.
const SchemaID = "https://backflow.dev/schemas/reverse-reconcile-policy-v1alpha1.json"

// schema is written by hand: the policy is read by a decoder of its own
// (decode.go), whose keys a test compares with the schema's.
//
//go:embed schema.json
var schema []byte

// JSONSchema returns the JSON Schema of a ReverseReconcilePolicy file. It
// describes the shape; Parse also checks what a schema cannot say (object
// keys, environment globs, patterns, bounds that contradict each other).
func JSONSchema() []byte { return append([]byte(nil), schema...) }
