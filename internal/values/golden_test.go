package values

import (
	"bytes"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"testing"

	yaml "go.yaml.in/yaml/v3"
)

var update = flag.Bool("update", false, "write the golden expected files from the editor's output")

// goldenSpec is a case's edits.yaml: the edits as the command line gives
// them (values read with ParseScalar), the document, and for a refusal the
// sentinel it must wrap.
type goldenSpec struct {
	Why      string `yaml:"why"`
	Document *int   `yaml:"document"`
	Edits    []struct {
		Path  string `yaml:"path"`
		Value string `yaml:"value"`
	} `yaml:"edits"`
	Error    string `yaml:"error"`
	MaxBytes int    `yaml:"maxBytes"`
}

var sentinels = map[string]error{
	"ErrParse": ErrParse, "ErrNotFound": ErrNotFound, "ErrRefused": ErrRefused,
	"ErrAlias": ErrAlias, "ErrFlowInsert": ErrFlowInsert, "ErrListItem": ErrListItem,
	"ErrThroughScalar": ErrThroughScalar, "ErrTooLarge": ErrTooLarge, "ErrAliasBomb": ErrAliasBomb,
	"ErrDocument": ErrDocument, "ErrNotScalar": ErrNotScalar, "ErrNonStringKey": ErrNonStringKey,
}

// TestGolden runs every case under testdata/golden: the output must equal
// `expected` byte for byte, or the edit must be refused with the named error.
func TestGolden(t *testing.T) {
	dirs, err := filepath.Glob("testdata/golden/*")
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no golden cases: %v", err)
	}
	for _, dir := range dirs {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			raw, err := os.ReadFile(filepath.Join(dir, "edits.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			var spec goldenSpec
			dec := yaml.NewDecoder(bytes.NewReader(raw))
			dec.KnownFields(true)
			if err := dec.Decode(&spec); err != nil {
				t.Fatalf("edits.yaml: %v", err)
			}
			if spec.Why == "" {
				t.Fatalf("edits.yaml: why is required")
			}
			original, err := os.ReadFile(filepath.Join(dir, "original"))
			if err != nil {
				t.Fatal(err)
			}
			var edits []Edit
			for _, e := range spec.Edits {
				v, err := ParseScalar(e.Value)
				if err != nil {
					t.Fatal(err)
				}
				edits = append(edits, Edit{Path: e.Path, Value: v})
			}
			out, changes, err := Set(original, edits, Options{Document: spec.Document, MaxBytes: spec.MaxBytes})
			if spec.Error != "" {
				want, ok := sentinels[spec.Error]
				if !ok {
					t.Fatalf("unknown error %q", spec.Error)
				}
				if !errors.Is(err, want) || out != nil {
					t.Fatalf("%s: got %v (output %d bytes), want %s", spec.Why, err, len(out), spec.Error)
				}
				return
			}
			if err != nil {
				t.Fatalf("%s: %v", spec.Why, err)
			}
			expectedPath := filepath.Join(dir, "expected")
			if *update {
				if err := os.WriteFile(expectedPath, out, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			expected, err := os.ReadFile(expectedPath)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(out, expected) {
				t.Fatalf("%s:\n--- got\n%s\n--- want\n%s", spec.Why, out, expected)
			}
			if bytes.Equal(original, expected) && len(changes) != 0 {
				t.Errorf("no change expected, got change records %+v", changes)
			}
			for _, c := range changes {
				if c.Line < 1 {
					t.Errorf("change %+v has no line", c)
				}
			}
		})
	}
}
