package values

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestGetTypedAsHelm(t *testing.T) {
	data := []byte("flag: yes\nmode: 0755\nversion: 1.10\nquoted: \"1.10\"\nnone: ~\nlist: [a, 1]\nkey.with.dots: x\n\"y\": z\n")
	cases := []struct {
		path string
		want any
		why  string
	}{
		{"flag", true, "YAML 1.1 reads yes as true"},
		{"mode", json.Number("493"), "YAML 1.1 reads 0755 as octal"},
		{"version", json.Number("1.1"), "YAML 1.1 reads 1.10 as a float"},
		{"quoted", "1.10", "a quoted scalar is a string"},
		{"none", nil, "~ is null"},
		{"list[1]", json.Number("1"), "a list item"},
		{`key\.with\.dots`, "x", "escaped dots name one key"},
		{"y", "z", "a quoted key is the text"},
	}
	for _, c := range cases {
		got, err := Get(data, c.path, Options{})
		if err != nil {
			t.Errorf("%s (%s): %v", c.path, c.why, err)
			continue
		}
		if !sameValue(got, c.want) {
			t.Errorf("%s (%s): got %#v, want %#v", c.path, c.why, got, c.want)
		}
	}
	for _, p := range []string{"missing", "flag.x", "list[2]", "list.a"} {
		if _, err := Get(data, p, Options{}); !errors.Is(err, ErrNotFound) {
			t.Errorf("%s: got %v, want ErrNotFound", p, err)
		}
	}
}

func TestSetChanges(t *testing.T) {
	data := []byte("# top\na: 1\nb:\n  c: x\nd: {}\n")
	out, changes, err := Set(data, []Edit{
		{Path: "a", Value: int64(2)},
		{Path: "b.c", Value: "x"},
		{Path: "b.e", Value: true},
		{Path: "d.f", Value: nil},
	}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := "# top\na: 2\nb:\n  c: x\n  e: true\nd:\n  f: null\n"
	if string(out) != want {
		t.Fatalf("got\n%s\nwant\n%s", out, want)
	}
	// b.c was already x: no record. The lines are those of the output.
	wantChanges := []Change{
		{Path: "a", Old: json.Number("1"), New: int64(2), Line: 2},
		{Path: "b.e", Old: nil, New: true, Line: 5, Inserted: true},
		{Path: "d.f", Old: nil, New: nil, Line: 7, Inserted: true},
	}
	if len(changes) != len(wantChanges) {
		t.Fatalf("changes %+v, want %+v", changes, wantChanges)
	}
	for i, c := range changes {
		w := wantChanges[i]
		if c.Path != w.Path || !sameValue(c.Old, w.Old) || !sameValue(c.New, w.New) || c.Line != w.Line || c.Inserted != w.Inserted {
			t.Errorf("change %d: %+v, want %+v", i, c, w)
		}
	}
}

func TestSetSeveralEdits(t *testing.T) {
	cases := []struct {
		in    string
		edits []Edit
		want  string
		why   string
	}{
		{"a: 1\n", []Edit{{"a", int64(2)}, {"a", int64(3)}}, "a: 3\n", "the same path twice: the last edit wins"},
		{"x: 1\n", []Edit{{"a.b.c", int64(1)}, {"a.b.d", int64(2)}}, "x: 1\na:\n  b:\n    c: 1\n    d: 2\n", "two edits creating the same missing parent"},
		{"a: {}\n", []Edit{{"a.b", "x"}, {"a.c", "z"}}, "a:\n  b: x\n  c: z\n", "two new keys under one {}"},
		{"m:\n  a: x\n", []Edit{{"m.b", int64(1)}, {"m.a", "p\nq"}}, "m:\n  a: |-\n    p\n    q\n  b: 1\n", "a new key after a value that becomes a block scalar"},
		{"a:\n  b:\n    c: 1\nd: 1\n", []Edit{{"a.new", int64(1)}, {"a.b.new", int64(2)}}, "a:\n  b:\n    c: 1\n    new: 2\n  new: 1\nd: 1\n", "new keys under nested mappings that end together: the deeper ones first, whatever the edits' order"},
		{"a:\n  b:\n    c: 1\n", []Edit{{"new", int64(0)}, {"a.b.new", int64(2)}, {"a.x.y", int64(1)}}, "a:\n  b:\n    c: 1\n    new: 2\n  x:\n    \"y\": 1\nnew: 0\n", "three levels ending at the end of the file"},
		{"a:\n  b: {}\n", []Edit{{"a.new", int64(1)}, {"a.b.x", int64(2)}}, "a:\n  b:\n    x: 2\n  new: 1\n", "a key under a rewritten {} and one after it"},
	}
	for _, c := range cases {
		out, _, err := Set([]byte(c.in), c.edits, Options{})
		if err != nil || string(out) != c.want {
			t.Errorf("%s: got %q, %v; want %q", c.why, out, err, c.want)
		}
	}
}

func TestSetRefusals(t *testing.T) {
	big := append([]byte("a: 1\n"), bytes.Repeat([]byte("# padding line\n"), DefaultMaxBytes/15+1)...)
	one := 1
	cases := []struct {
		in   []byte
		edit Edit
		opts Options
		want error
		why  string
	}{
		{big, Edit{"a", int64(2)}, Options{}, ErrTooLarge, "the default cap is 4 MiB"},
		{[]byte("a: 1\n"), Edit{"a", int64(2)}, Options{Document: &one}, ErrDocument, "no such document"},
		{[]byte("base: &b {x: 1}\nuse:\n  <<: *b\n  y: 2\n"), Edit{"use.x", int64(3)}, Options{}, ErrAlias, "a key that comes from a << merge"},
		{[]byte("l: [1, 2]\n"), Edit{"l.a", int64(3)}, Options{}, ErrThroughScalar, "a key in a list"},
		{[]byte("a: 1\n"), Edit{"a[0]", int64(3)}, Options{}, ErrThroughScalar, "an index into a scalar"},
		{[]byte("m:\n  a: 1\n"), Edit{"m[0]", int64(3)}, Options{}, ErrThroughScalar, "an index into a mapping"},
		{[]byte("00: a\n0: b\n"), Edit{"0", "c"}, Options{}, ErrNonStringKey, "two keys that Helm reads as the same"},
		{[]byte("a: [ {b: 1} ]\n"), Edit{"a[0].c", int64(3)}, Options{}, ErrFlowInsert, "a mapping inside a flow list"},
	}
	for _, c := range cases {
		out, _, err := Set(c.in, []Edit{c.edit}, c.opts)
		if !errors.Is(err, c.want) || !errors.Is(err, ErrRefused) || out != nil {
			t.Errorf("%s: got %v (output %d bytes), want %v", c.why, err, len(out), c.want)
		}
	}
}

func TestSetKeepsLayout(t *testing.T) {
	cases := []struct {
		in, path string
		v        any
		want     string
		why      string
	}{
		{"a: 1", "a", int64(2), "a: 2", "no final newline stays missing"},
		{"a: 'it''s'\n", "a", "x'y", "a: 'x''y'\n", "single quotes kept, quote doubled"},
		{"a: \"x\"\n", "a", "tab\there", "a: \"tab\\there\"\n", "double quotes kept, escapes written"},
		{"a: x\n", "a", "#hash", "a: \"#hash\"\n", "a leading # would start a comment"},
		{"a: x\n", "a", 1.0, "a: 1.0\n", "a float stays a float"},
		{"a: x\n", "a", 1e21, "a: 1.0e+21\n", "an exponent gets the dot YAML 1.1 needs"},
		{"a: 1\n", "a", "2001-12-14", "a: \"2001-12-14\"\n", "a timestamp look-alike is quoted"},
		{"a: |-\n  x\n  y\nb: 1\n", "a", "z", "a: |-\n  z\nb: 1\n", "a one-line string keeps the block style"},
		{"- a\n- b\n", "[1]", "c", "- a\n- c\n", "a list at the root"},
		{"a:\n  - x\n  -\n", "a[1]", "w", "a:\n  - x\n  - w\n", "an empty list item"},
		{"\ufeffa: 1\nb: x\n", "a", int64(2), "\ufeffa: 2\nb: x\n", "a byte-order mark stays and does not shift the first line"},
		{"\ufeffa: x\n", "a", "p\nq", "\ufeffa: |-\n  p\n  q\n", "a byte-order mark before a value that becomes a block scalar"},
		{"\ufeff# comment\n---\na: 1\n", "a", int64(2), "\ufeff# comment\n---\na: 2\n", "a comment after a byte-order mark does not make a document of its own"},
		{"\ufeff%YAML 1.1\n---\na: 1\n", "a", int64(2), "\ufeff%YAML 1.1\n---\na: 2\n", "nor does a directive after a byte-order mark"},
		{"{}\n", "a", "x", "a: x\n", "a document that is only {} gets its first key"},
		{"# values\n{}\n", "a.b", int64(1), "# values\na:\n  b: 1\n", "several levels under a root {}, the comment above kept"},
		{"~\n", "a", int64(1), "a: 1\n", "a document that is only ~"},
		{"--- {}\n", "a", int64(1), "---\na: 1\n", "a root {} on the document marker's line"},
		{"{}", "a", int64(1), "a: 1", "a root {} without a final newline"},
		{"{} # c\n", "a", int64(1), "# c\na: 1\n", "a root {} before a comment"},
		{"--- {} # c\n", "a", int64(1), "--- # c\na: 1\n", "a root {} between the document marker and a comment"},
		{"a: 1\n", "<<", int64(3), "a: 1\n\"<<\": 3\n", "a new key << is quoted: plain, it would merge"},
		{"a: 1\n", "m.<<", "x", "a: 1\nm:\n  \"<<\": x\n", "a new nested key << is quoted too"},
	}
	for _, c := range cases {
		out, _, err := Set([]byte(c.in), []Edit{{c.path, c.v}}, Options{})
		if err != nil || string(out) != c.want {
			t.Errorf("%s: got %q, %v; want %q", c.why, out, err, c.want)
		}
	}
}

func TestErrorsNamePlace(t *testing.T) {
	_, _, err := Set([]byte("a:\n  b: x\n"), []Edit{{"a.b.c", int64(1)}}, Options{})
	if err == nil || !strings.Contains(err.Error(), "a.b.c") || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("error %v must name the path and the line", err)
	}
}
