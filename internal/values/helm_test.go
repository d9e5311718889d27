package values

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"

	yamlv2 "go.yaml.in/yaml/v2"
	sigsyaml "sigs.k8s.io/yaml"
)

// sigsRead is the reading helmUnmarshal must reproduce exactly.
func sigsRead(doc []byte) (any, error) {
	var v any
	err := sigsyaml.Unmarshal(doc, &v, useNumber)
	return v, err
}

// sameAsSigs fails the test unless helmUnmarshal and sigs.k8s.io/yaml
// return deeply equal trees (same Go types, same json.Number spelling), or
// both fail with the same message.
func sameAsSigs(t *testing.T, name string, doc []byte) {
	t.Helper()
	want, wantErr := sigsRead(doc)
	got, err := HelmUnmarshal(doc)
	if (err == nil) != (wantErr == nil) || err != nil && err.Error() != wantErr.Error() {
		t.Fatalf("%s: error %v, sigs.k8s.io/yaml says %v", name, err, wantErr)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%s: read\n%#v\nsigs.k8s.io/yaml reads\n%#v", name, got, want)
	}
}

func TestHelmUnmarshalMatchesSigs(t *testing.T) {
	cases := []struct{ name, doc, why string }{
		{"ints", "a: 1\nb: -7\nc: 0x1F\nd: 0755\ne: 1_000\n", "YAML 1.1 ints of every base become json.Number in decimal"},
		{"big ints", "a: 9223372036854775807\nb: 18446744073709551615\nc: -9223372036854775808\n", "int64 and uint64 extremes keep every digit"},
		{"floats", "a: 1.5\nb: 1e3\nc: 1.10\nd: 1e21\ne: 1e-7\nf: 0.000001\ng: -0.0\nh: 123456789.123\ni: 6.8523015e+5\n", "floats spelled as encoding/json spells them, both notations"},
		{"non-finite", "a: .inf\n", "json.Marshal refuses infinities: the same error"},
		{"nan", "a: .nan\n", "json.Marshal refuses NaN: the same error"},
		{"bools and nulls", "a: yes\nb: off\nc: ~\nd: null\ne:\nf: y\ng: True\n", "YAML 1.1 bools and nulls"},
		{"timestamps", "a: 2001-12-14\nb: 2001-12-14t21:59:43.10-05:00\n", "timestamps stay strings"},
		{"keys of other types", "1: a\ntrue: b\n1.5: c\n0o7: d\non: e\n.inf: f\n", "non-string keys get sigs.k8s.io/yaml's text"},
		{"float key precision", "0.1: a\n3.14159265358979: b\n", "float keys are formatted at 32-bit precision"},
		{"null key", "~: a\n", "an unsupported key type: the same error"},
		{"binary", "a: !!binary gIGC\nb: !!binary aGVsbG8=\n", "invalid UTF-8 from !!binary is replaced by the JSON round trip"},
		{"invalid utf8 text", "a: \"\\xff\"\n", "an escape that makes invalid UTF-8"},
		{"html and separators", "a: \"<b>&amp;\u2028\"\n", "characters encoding/json escapes come back unchanged"},
		{"nested", "a:\n  - b: [1, {c: d}]\n  - []\n  - {}\nx: &y {k: 1}\nz: *y\nm:\n  <<: *y\n  j: 2\n", "lists, maps, aliases and merge keys"},
		{"scalar document", "just text\n", "a document that is one scalar"},
		{"comments only", "# nothing\n", "a document without content"},
		{"syntax error", "a: [1\n", "a parse error: the same message"},
		{"duplicate keys", "a: 1\na: 2\n", "yaml.v2 decides; both see the same"},
		{"duplicate keys, nested", "m:\n  a: 1\n  b: [x]\n  a: {c: 2}\n1.0: x\n1.00: y\n", "the last of equal keys wins, as in a map"},
		{"empty mappings", "a: {}\nb: []\nc: {d: {}}\n", "an empty mapping stays a mapping"},
		{"empty document", "{}\n", "a document that is an empty mapping"},
		{"null document", "~\n", "a document that is null"},
		{"list document", "- a: 1\n- b\n", "a document that is a list"},
		{"empty list document", "[]\n", "a document that is an empty list"},
		{"list of key-value items", "- key: a\n  value: b\n", "a list of mappings with the fields key and value"},
		{"tagged merge", "x: &y {k: 1}\nm:\n  !!merge \"\\x3c\\x3c\": *y\n  j: 2\n", "a merge key written with its tag"},
		{"merge tag in escapes", "x: &y {k: 1}\nm:\n  !<tag:yaml.org,2002:%6Derge> \"\\x3c\\x3c\": *y\n  j: 2\n", "a merge tag spelled with %-escapes"},
		{"merge through a handle", "%TAG !m! tag:yaml.org,2002:\n---\nx: &y {k: 1}\nm:\n  !m!merge \"\\x3c\\x3c\": *y\n", "a merge tag spelled through a %TAG handle"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sameAsSigs(t, c.why, []byte(c.doc))
		})
	}
}

// TestHelmUnmarshalCollidingKeys: with two keys of one text (1 and "1"),
// sigs.k8s.io/yaml keeps either value, by map iteration order; the reading
// is one of the two as well.
func TestHelmUnmarshalCollidingKeys(t *testing.T) {
	got, err := HelmUnmarshal([]byte("1: a\n\"1\": b\n"))
	if err != nil {
		t.Fatal(err)
	}
	m, ok := got.(map[string]any)
	if !ok || len(m) != 1 || (m["1"] != "a" && m["1"] != "b") {
		t.Fatalf("read %#v, want {1: a} or {1: b}", got)
	}
}

// keysCollide says some mapping of doc, as yaml.v2 reads it, has two keys
// that sigs.k8s.io/yaml gives the same text: its reading is then not
// deterministic.
func keysCollide(doc []byte) bool {
	var raw any
	if yamlv2.Unmarshal(doc, &raw) != nil {
		return false
	}
	var walk func(v any) bool
	walk = func(v any) bool {
		switch x := v.(type) {
		case []any:
			for _, e := range x {
				if walk(e) {
					return true
				}
			}
		case map[any]any:
			seen := map[string]bool{}
			for k, e := range x {
				ks, _ := jsonKey(k)
				if seen[ks] || walk(e) {
					return true
				}
				seen[ks] = true
			}
		}
		return false
	}
	return walk(raw)
}

// TestHelmUnmarshalCorpus compares every document of the corpus and of the
// golden cases, before and after their edits.
func TestHelmUnmarshalCorpus(t *testing.T) {
	var files []string
	for _, g := range []string{corpusDir + "/*.yaml", "testdata/golden/*/original", "testdata/golden/*/expected"} {
		m, err := filepath.Glob(g)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, m...)
	}
	if len(files) < 16 {
		t.Fatalf("only %d files found", len(files))
	}
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		src := newSource(data)
		for _, sp := range src.docs {
			sameAsSigs(t, file, data[sp.start:sp.end])
		}
	}
}

// FuzzHelmUnmarshal: on any input, the direct reading and sigs.k8s.io/yaml
// agree exactly, errors included.
func FuzzHelmUnmarshal(f *testing.F) {
	for _, s := range []string{"a: 1\n", "1.5: [1e21, .inf]\n", "a: !!binary gIGC\n", "? [a]\n: b\n", "x: &a {b: *a}\n", "- 0x10\n- 1_0\n- 1e-7\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, doc string) {
		if len(doc) > 1<<12 || keysCollide([]byte(doc)) {
			return
		}
		sameAsSigs(t, "fuzz", []byte(doc))
	})
}
