package yamlnode

import (
	"strconv"
	"strings"
	"testing"

	yaml "go.yaml.in/yaml/v3"
)

func TestParseMapping(t *testing.T) {
	cases := []struct {
		why, in, wantErr string
	}{
		{"one mapping is what every reader wants", "a: 1\n", ""},
		{"a root alias is followed to its mapping", "&m {a: 1}\n", ""},
		{"nothing at all is no document", "", "empty document"},
		{"comments alone are no document either", "# just a comment\n", "empty document"},
		{"a list is not a file of keys", "- a\n", "not a YAML mapping"},
		{"a bare scalar is not a file of keys", "hello\n", "not a YAML mapping"},
		{"a second document would be silently ignored", "a: 1\n---\nb: 2\n", "more than one YAML document"},
		{"a broken second document is reported as broken", "a: 1\n---\nb: [\n", "did not find expected"},
		{"a syntax error is the library's message", "a: [1\n", "did not find expected"},
	}
	for _, c := range cases {
		t.Run(c.why, func(t *testing.T) {
			root, err := ParseMapping([]byte(c.in))
			if c.wantErr == "" {
				if err != nil || root == nil {
					t.Fatalf("ParseMapping(%q) = %v, %v; want a mapping", c.in, root, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Fatalf("ParseMapping(%q) error = %v; want %q", c.in, err, c.wantErr)
			}
		})
	}
}

func TestBudget(t *testing.T) {
	root, err := ParseMapping([]byte("a: &x [1, 2]\nb: *x\n"))
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		why       string
		nodes     int
		exhausted bool
	}{
		{"enough for every node, the alias's expansion included", 9, false},
		{"one short: the expansion of the alias is charged too", 8, true},
		{"the zero budget refuses the first visit", 0, true},
	}
	for _, c := range cases {
		t.Run(c.why, func(t *testing.T) {
			b := NewBudget(c.nodes)
			var walk func(n *yaml.Node)
			walk = func(n *yaml.Node) {
				if n = b.Resolve(n); n == nil {
					return
				}
				for _, child := range n.Content {
					walk(child)
				}
			}
			walk(root)
			if b.Exhausted() != c.exhausted {
				t.Fatalf("Exhausted() = %v with %d nodes; want %v", b.Exhausted(), c.nodes, c.exhausted)
			}
		})
	}
}

func TestBudgetStopsAliasBomb(t *testing.T) {
	// Nine levels of ten aliases each expand to 10^9 nodes; the walk must stop
	// after the budget, not expand them.
	var doc strings.Builder
	doc.WriteString("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n")
	for i := 1; i < 10; i++ {
		name, prev := "a"+strconv.Itoa(i), "*a"+strconv.Itoa(i-1)
		doc.WriteString(name + ": &" + name + " [" + strings.Repeat(prev+", ", 9) + prev + "]\n")
	}
	root, err := ParseMapping([]byte(doc.String()))
	if err != nil {
		t.Fatal(err)
	}
	b := NewBudget(10_000)
	visits := 0
	var walk func(n *yaml.Node)
	walk = func(n *yaml.Node) {
		if n = b.Resolve(n); n == nil {
			return
		}
		visits++
		for _, child := range n.Content {
			walk(child)
		}
	}
	walk(root)
	if !b.Exhausted() || visits > 10_000 {
		t.Fatalf("Exhausted() = %v after %d visits; want the walk stopped at 10000", b.Exhausted(), visits)
	}
}

func TestPaths(t *testing.T) {
	cases := []struct{ why, got, want string }{
		{"a key at the root has no leading dot", Join("", "spec"), "spec"},
		{"a key below another is dotted", Join("spec", "rules"), "spec.rules"},
		{"a list item carries its index", Index("spec.rules", 2), "spec.rules[2]"},
		{"a key of a list item follows its index", Join(Index("units", 0), "name"), "units[0].name"},
	}
	for _, c := range cases {
		if c.got != c.want {
			t.Errorf("%s: got %q, want %q", c.why, c.got, c.want)
		}
	}
}
