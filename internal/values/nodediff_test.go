package values

import (
	"strings"
	"testing"

	yaml "go.yaml.in/yaml/v3"

	"github.com/backflow-dev/backflow/internal/yamlnode"
)

// TestDiffNodes compares node trees the way verification does, on pairs
// of documents the editor never produces as well as ones it does.
func TestDiffNodes(t *testing.T) {
	cases := []struct {
		before, after, path, wantErr, why string
	}{
		{"a: 1\nb: x\n", "a: 2\nb: x\n", "a", "", "only the edited value changed"},
		{"a: 1\nb: x\n", "a: 2\nb: y\n", "a", "b:", "a value outside the edited path changed"},
		{"a: 1\nb: x\n", "a: 1\nb: \"x\"\n", "a", "", "quoting alone changes nothing decoded"},
		{"a: 1\nb: 1\n", "a: 1\nb: \"1\"\n", "a", "b:", "quoting that changes the type is a change"},
		{"a: {}\n", "a:\n  b: 1\n", "a.b", "", "an empty mapping on the way became a mapping"},
		{"a: ~\n", "a:\n  b:\n    c: 1\n", "a.b.c", "", "a null on the way became a mapping"},
		{"a: 1\n", "a: 1\nc: 2\n", "b", "key \"c\" appeared", "a key off the edited path appeared"},
		{"a: 1\n", "a: 1\n\"a\": 2\n", "a", "already defined", "a new key equal to an old one does not decode"},
		{"a: 1\nb: 2\n", "a: 1\n", "b", "disappeared", "a key disappeared"},
		{"a: [1, 2]\n", "a: [1, 2, 3]\n", "a[2]", "changed length", "lists do not grow"},
		{"x: &r 1\ny: *r\nz: 2\n", "x: &r 1\ny: *r\nz: 3\n", "z", "", "aliases naming the same anchor"},
		{"x: &r 1\nw: &s 2\ny: *r\n", "x: &r 1\nw: &s 2\ny: *s\n", "w", "alias", "an alias naming another anchor"},
		{"x: &r 1\ny: *r\n", "x: &r 2\ny: *r\n", "q", "x:", "an anchored value changed"},
		{"1: a\nk: 0\n", "1: a\nk: 5\n", "k", "", "a key of another type keeps its place"},
		{"", "a: 1\n", "a", "", "keys added to an empty document"},
		{"", "b: 1\n", "a", "appeared", "a key added to an empty document off the path"},
	}
	for _, c := range cases {
		t.Run(c.why, func(t *testing.T) {
			a, b := parseRoot(t, c.before), parseRoot(t, c.after)
			p, err := yamlnode.ParsePath(c.path)
			if err != nil {
				t.Fatal(err)
			}
			err = diffNodes(a, b, nil, [][]yamlnode.Segment{p}, map[[2]*yaml.Node]bool{})
			switch {
			case c.wantErr == "" && err != nil:
				t.Fatalf("unexpected difference: %v", err)
			case c.wantErr != "" && (err == nil || !strings.Contains(err.Error(), c.wantErr)):
				t.Fatalf("got %v, want an error with %q", err, c.wantErr)
			}
		})
	}
}

func parseRoot(t *testing.T, doc string) *yaml.Node {
	t.Helper()
	var n yaml.Node
	if err := yaml.Unmarshal([]byte(doc), &n); err != nil {
		t.Fatal(err)
	}
	if len(n.Content) == 0 {
		return nil
	}
	return n.Content[0]
}
