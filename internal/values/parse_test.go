package values

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// TestParseNodeAgrees checks parseNode, which reads most documents with
// yaml.Unmarshal, gives the node tree or the error a Decoder gives, on the
// corpus and on streams where a second document hides.
func TestParseNodeAgrees(t *testing.T) {
	inputs := map[string]string{
		"empty":              "",
		"comments only":      "# a\n# b\n",
		"one":                "a: 1 # c\nb: [x]\n",
		"marked":             "---\na: 1\n",
		"ended":              "a: 1\n...\n",
		"ended, then more":   "a: 1\n...\nb: 2\n",
		"two":                "a: 1\n---\nb: 2\n",
		"directive":          "%YAML 1.1\n---\na: 1\n",
		"lone CR":            "a: 1\r---\rb: 2\r",
		"CRLF":               "a: 1\r\nb: 2\r\n",
		"CRLF, two":          "a: 1\r\n---\r\nb: 2\r\n",
		"NEL":                "a: 1\u0085---\u0085b: 2\n",
		"LS":                 "a: 1\u2028---\u2028b: 2\n",
		"marker in a scalar": "a: |\n  x\n---\n",
		"syntax error":       "a: [\n",
		"duplicate":          "a: 1\na: 2\n",
		"tab":                "a:\n\t- 1\n",
		"bom":                "\ufeffa: 1\n",
	}
	files, err := filepath.Glob("../../testdata/corpus/values/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("corpus: %v", err)
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		inputs[filepath.Base(f)] = string(data)
	}
	for name, in := range inputs {
		got, gotErr := parseNode([]byte(in))
		want, wantErr := decodeOne([]byte(in))
		if (gotErr == nil) != (wantErr == nil) || gotErr != nil && gotErr.Error() != wantErr.Error() {
			t.Errorf("%s: error %v, want %v", name, gotErr, wantErr)
			continue
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: parseNode and a Decoder read different trees", name)
		}
	}
}

func TestMayHoldMoreDocuments(t *testing.T) {
	for in, want := range map[string]bool{
		"a: 1\n":             false,
		"---\na: 1\n":        false,
		"a: 1\r\nb: 2\r\n":   false,
		"a: '---'\n":         false,
		"a: 1\n---\n":        true,
		"a: 1\n...\n":        true,
		"a: 1\n%YAML 1.1\n":  true,
		"a: 1\rb: 2\n":       true,
		"a: 1\r":             true,
		"a: 1\u0085b: 2\n":   true,
		"a: 1\u2029b: 2\n":   true,
		"a: 1\r\n---\r\nb\n": true,
	} {
		if got := mayHoldMoreDocuments([]byte(in)); got != want {
			t.Errorf("%q: %v, want %v", in, got, want)
		}
	}
}
