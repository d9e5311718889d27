package yamlnode

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	yaml "go.yaml.in/yaml/v3"
)

type duration struct{ time.Duration }

func (d *duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	if err != nil {
		return errors.New("want a duration")
	}
	d.Duration = v
	return nil
}

type item struct {
	Name string `yaml:"name"`
	On   bool   `yaml:"on,omitempty"`
}

type sample struct {
	Name    string            `yaml:"name"`
	Count   int               `yaml:"count"`
	ID      int64             `yaml:"id"`
	Items   []item            `yaml:"items"`
	Labels  map[string]string `yaml:"labels"`
	Wait    duration          `yaml:"wait"`
	Limit   *int              `yaml:"limit"`
	Raw     yaml.Node         `yaml:"raw"`
	Float   float64           `yaml:"float"`
	Any     []any             `yaml:"any"`
	Bound   *float64          `yaml:"bound,notnull"`
	Complex complex128        `yaml:"complex"`
	Ignored string            `yaml:"-"`
}

func parse(t *testing.T, doc string) *yaml.Node {
	t.Helper()
	root, err := ParseMapping([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	return root
}

func TestDecodeValues(t *testing.T) {
	root := parse(t, "name: a\ncount: 0x10\nid: 7\nitems: [{name: x, on: true}]\nlabels: {k: v}\nwait: 10m\nlimit: 3\nraw: {any: [thing]}\nfloat: 0x10\nany: [a, 1, 1.5, true, ~]\nbound: 2.5\n")
	var s sample
	if errs := Decode(root, &s, Options{MaxNodes: 100}); errs != nil {
		t.Fatalf("Decode: %v", errs)
	}
	limit, bound := 3, 2.5
	want := sample{Name: "a", Count: 16, ID: 7, Items: []item{{Name: "x", On: true}}, Labels: map[string]string{"k": "v"}, Wait: duration{10 * time.Minute}, Limit: &limit,
		Float: 16, Any: []any{"a", 1, 1.5, true, nil}, Bound: &bound}
	raw := s.Raw
	s.Raw = yaml.Node{}
	if !reflect.DeepEqual(s, want) {
		t.Errorf("Decode = %+v\nwant     %+v", s, want)
	}
	if raw.Kind != yaml.MappingNode || raw.Line != 8 {
		t.Errorf("raw = kind %v line %d; want the section's mapping as written, at line 8", raw.Kind, raw.Line)
	}
}

func TestDecodeErrors(t *testing.T) {
	cases := []struct {
		why  string
		doc  string
		opts Options
		want []string // "path:line: message"
	}{
		{"an unknown key is named, not ignored", "nme: a\n", Options{}, []string{"nme:1: unknown key"}},
		{"a key yaml:\"-\" is not a key of the file", "Ignored: a\n", Options{}, []string{"Ignored:1: unknown key"}},
		{"a duplicate key would hide the first value", "name: a\nname: b\n", Options{}, []string{"name:2: duplicate key"}},
		{"a number is not a string: the file says what it means", "name: 4\n", Options{}, []string{"name:1: want a string"}},
		{"yes is a string in YAML 1.2, not a bool", "items: [{on: yes}]\n", Options{}, []string{"items[0].on:1: want true or false"}},
		{"an integer field refuses a float", "count: 1.5\n", Options{}, []string{"count:1: want an integer"}},
		{"a list where a mapping is wanted", "labels: [a]\n", Options{}, []string{"labels:1: want a mapping"}},
		{"a mapping where a list is wanted", "items: {a: 1}\n", Options{}, []string{"items:1: want a list"}},
		{"a text type says what text it wants", "wait: soon\n", Options{}, []string{"wait:1: want a duration"}},
		{"a text type wants a scalar", "wait: [1]\n", Options{}, []string{"wait:1: want a string"}},
		{"a field type the decoder does not read is an error, not a zero", "complex: 1.5\n", Options{}, []string{"complex:1: cannot be decoded"}},
		{"a number field refuses a quoted number, a list and NaN", "float: \"4\"\nany: [[1]]\nbound: .nan\n", Options{}, []string{"float:1: want a number", "any[0]:2: want a scalar", "bound:3: want a number"}},
		{"a notnull field refuses a null as a wrong value", "bound: ~\n", Options{}, []string{"bound:1: want a number"}},
		{"a notnull field refuses an alias of a null", "name: &n\nbound: *n\n", Options{Aliases: true}, []string{"bound:2: want a number"}},
		{"every wrong place is listed, in document order", "name: [a]\ncount: x\n", Options{}, []string{"name:1: want a string", "count:2: want an integer"}},
		{"refused aliases name their place", "name: &n a\nlabels: {k: *n}\n", Options{}, []string{"labels.k:2: aliases are not allowed"}},
		{"followed aliases read their anchor", "name: &n a\nlabels: {k: *n}\n", Options{Aliases: true}, nil},
		{"past MaxErrors one line says more follow", "a: 1\nb: 1\nc: 1\n", Options{MaxErrors: 2}, []string{"a:1: unknown key", "b:2: unknown key", ":0: more errors follow; fix these first"}},
		{"a spent budget stops decoding and says why once", "items: [{name: a}, {name: b}, {name: c}]\n", Options{MaxNodes: 6}, []string{"items[1]:1: too many nodes (alias expansion?): more than 6"}},
	}
	for _, c := range cases {
		t.Run(c.why, func(t *testing.T) {
			if c.opts.MaxNodes == 0 {
				c.opts.MaxNodes = 1000
			}
			var s sample
			var got []string
			for _, e := range Decode(parse(t, c.doc), &s, c.opts) {
				got = append(got, fmt.Sprintf("%s:%d: %s", e.Path, e.Line, e.Message))
			}
			if strings.Join(got, "\n") != strings.Join(c.want, "\n") {
				t.Errorf("errors:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(c.want, "\n"))
			}
		})
	}
}

func TestSpentBudgetIsErrTooManyNodes(t *testing.T) {
	errs := Decode(parse(t, "items: [{name: a}, {name: b}]\nname: x\n"), &sample{}, Options{MaxNodes: 4})
	if len(errs) != 1 || !errors.Is(errs[0], ErrTooManyNodes) {
		t.Fatalf("errors %v: want one that is ErrTooManyNodes", errs)
	}
	if errs := Decode(parse(t, "nme: a\n"), &sample{}, Options{MaxNodes: 100}); len(errs) != 1 || errors.Is(errs[0], ErrTooManyNodes) {
		t.Fatalf("errors %v: an unknown key is not a spent budget", errs)
	}
}

func TestDecodeNullKeepsDefault(t *testing.T) {
	s := sample{Name: "default", Count: 3}
	if errs := Decode(parse(t, "name: null\ncount: ~\n"), &s, Options{MaxNodes: 100}); errs != nil {
		t.Fatalf("Decode: %v", errs)
	}
	if s.Name != "default" || s.Count != 3 {
		t.Errorf("got name %q count %d; a null must leave the defaults (default, 3)", s.Name, s.Count)
	}
}

func TestFieldErrorText(t *testing.T) {
	cases := []struct {
		why  string
		err  FieldError
		want string
	}{
		{"a place is named before its problem", FieldError{Path: "units[0].name", Line: 3, Message: "required"}, "units[0].name: required"},
		{"the document as a whole has no place to name", FieldError{Message: "empty file"}, "empty file"},
	}
	for _, c := range cases {
		if got := c.err.Error(); got != c.want {
			t.Errorf("%s: got %q, want %q", c.why, got, c.want)
		}
	}
}
