package policy

import _ "embed"

// schema is written by hand: the policy's decoding types (decode.go) read
// every scalar string as its text, which a generated schema would not say;
// a test compares the schema's keys with what the loader accepts.
//
//go:embed schema.json
var schema []byte

// JSONSchema returns the JSON Schema of a ReverseReconcilePolicy file. It
// describes the shape; Parse also checks what a schema cannot say (object
// keys, environment globs, patterns, bounds that contradict each other).
func JSONSchema() []byte { return append([]byte(nil), schema...) }
