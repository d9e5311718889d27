package yamlnode

import (
	"errors"
	"reflect"
	"testing"
)

func TestParsePath(t *testing.T) {
	k := func(s string) Segment { return Segment{Key: s} }
	ix := func(n int) Segment { return Segment{Index: n, IsIndex: true} }
	cases := []struct {
		in   string
		want []Segment
		why  string
	}{
		{"a.b.c", []Segment{k("a"), k("b"), k("c")}, "dots separate keys"},
		{"a[0].b", []Segment{k("a"), ix(0), k("b")}, "brackets index a list"},
		{"a[1][2]", []Segment{k("a"), ix(1), ix(2)}, "lists of lists"},
		{`podAnnotations.prometheus\.io/scrape`, []Segment{k("podAnnotations"), k("prometheus.io/scrape")}, "an escaped dot is part of the key"},
		{`a\[0\]`, []Segment{k("a[0]")}, "escaped brackets are part of the key"},
		{"ports.80", []Segment{k("ports"), k("80")}, "digits without brackets are a key"},
		{`a\\b`, []Segment{k(`a\b`)}, "an escaped backslash"},
		{"[0]", []Segment{ix(0)}, "an index at the root"},
		{"a=b,c", []Segment{k("a=b,c")}, "other characters are literal"},
	}
	for _, c := range cases {
		got, err := ParsePath(c.in)
		if err != nil {
			t.Errorf("%q (%s): %v", c.in, c.why, err)
			continue
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%q (%s): got %+v, want %+v", c.in, c.why, got, c.want)
		}
	}
}

func TestParsePathErrors(t *testing.T) {
	cases := []struct {
		in     string
		offset int
		why    string
	}{
		{"", 0, "an empty path"},
		{"a..b", 2, "an empty key between dots"},
		{".a", 0, "a leading dot"},
		{"a.", 2, "a trailing dot"},
		{`a\`, 1, "a trailing backslash"},
		{"a[", 1, "an unclosed bracket"},
		{"a[x]", 2, "an index that is not digits"},
		{"a[]", 2, "an empty index"},
		{"a[0]b", 4, "text right after an index"},
		{"a]", 1, "a closing bracket alone"},
		{"a.[0]", 2, "an empty key before an index"},
		{"a[99999999999]", 2, "an index too large"},
	}
	for _, c := range cases {
		_, err := ParsePath(c.in)
		var pe *PathError
		if !errors.As(err, &pe) {
			t.Errorf("%q (%s): got %v, want a PathError", c.in, c.why, err)
			continue
		}
		if pe.Offset != c.offset {
			t.Errorf("%q (%s): offset %d, want %d (%v)", c.in, c.why, pe.Offset, c.offset, err)
		}
	}
}

func TestFormatPathRoundTrip(t *testing.T) {
	cases := [][]Segment{
		{{Key: "a.b"}, {Key: "c[0]"}, {Index: 3, IsIndex: true}, {Key: `x\y`}},
		{{Key: "80"}, {Key: "prometheus.io/scrape"}},
		{{Index: 0, IsIndex: true}, {Key: "]"}},
	}
	for _, segs := range cases {
		p := FormatPath(segs)
		back, err := ParsePath(p)
		if err != nil || !reflect.DeepEqual(back, segs) {
			t.Errorf("%+v -> %q -> %+v, %v", segs, p, back, err)
		}
	}
}

func FuzzParsePath(f *testing.F) {
	for _, s := range []string{"a.b", "a[0].b", `a\.b`, `a\[0\]`, "a..b", "[1][2]", `\`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		segs, err := ParsePath(s)
		if err != nil {
			var pe *PathError
			if !errors.As(err, &pe) || pe.Offset < 0 || pe.Offset > len(s) {
				t.Fatalf("%q: bad error %v", s, err)
			}
			return
		}
		for _, seg := range segs {
			if !seg.IsIndex && seg.Key == "" {
				t.Fatalf("%q: empty key in %+v", s, segs)
			}
		}
		back, err := ParsePath(FormatPath(segs))
		if err != nil || !reflect.DeepEqual(back, segs) {
			t.Fatalf("%q: round trip %q gave %+v, %v", s, FormatPath(segs), back, err)
		}
	})
}

func TestLookup(t *testing.T) {
	tree := map[string]any{
		"a":    map[string]any{"b": []any{"x", map[string]any{"c": 4}}},
		"v2":   map[any]any{80: "http", "k": nil},
		"null": nil,
	}
	tests := []struct {
		path string
		want any
		ok   bool
		why  string
	}{
		{"a.b[1].c", 4, true, "keys and indexes together"},
		{"a.b[0]", "x", true, "a list item"},
		{"a.b[2]", nil, false, "an index past the end names nothing"},
		{"a.b.c", nil, false, "a key of a list names nothing"},
		{"a[0]", nil, false, "an index of a mapping names nothing"},
		{"a.b[0].c", nil, false, "a step into a scalar names nothing"},
		{"v2.80", "http", true, "yaml.v2 mappings are read by the key as written"},
		{"v2.k", nil, true, "a null value is found"},
		{"null.x", nil, false, "a step into null names nothing"},
		{"missing", nil, false, "a missing key names nothing"},
	}
	for _, tt := range tests {
		segs, err := ParsePath(tt.path)
		if err != nil {
			t.Fatal(err)
		}
		got, ok := Lookup(tree, segs)
		if ok != tt.ok || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s: Lookup(%q) = %v, %v; want %v, %v", tt.why, tt.path, got, ok, tt.want, tt.ok)
		}
	}
}

func TestParseSelectorPath(t *testing.T) {
	k := func(s string) Segment { return Segment{Key: s} }
	sel := func(key, val string) Segment { return Segment{AnyIndex: true, MergeKey: key, MergeValue: val} }
	cases := []struct {
		in   string
		want []Segment
		why  string
	}{
		{"env[name=TZ].value", []Segment{k("env"), sel("name", "TZ"), k("value")}, "a selector names a list item by a field"},
		{"a[0].b", []Segment{k("a"), {Index: 0, IsIndex: true}, k("b")}, "indexes still read as indexes"},
		{"env[name=a=b]", []Segment{k("env"), sel("name", "a=b")}, "the first = splits key from value"},
		{"env[name=]", []Segment{k("env"), sel("name", "")}, "an empty value matches an empty string"},
		{"[name=x][k=v]", []Segment{sel("name", "x"), sel("k", "v")}, "selectors at the root and in a row"},
	}
	for _, c := range cases {
		got, err := ParseSelectorPath(c.in)
		if err != nil {
			t.Errorf("%q (%s): %v", c.in, c.why, err)
			continue
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%q (%s): got %+v, want %+v", c.in, c.why, got, c.want)
		}
		if back := FormatPath(got); back != c.in {
			t.Errorf("%q (%s): formats back as %q", c.in, c.why, back)
		}
	}
	for _, bad := range []struct{ in, why string }{
		{"env[=TZ]", "a selector needs a key"},
		{"env[name=TZ]x", "a selector ends a segment"},
		{"env[name=TZ", "an unclosed selector"},
	} {
		if _, err := ParseSelectorPath(bad.in); err == nil {
			t.Errorf("%q (%s): parsed", bad.in, bad.why)
		}
	}
	// Policy and config paths keep Helm's syntax alone.
	if _, err := ParsePath("env[name=TZ]"); err == nil {
		t.Error("ParsePath accepted a list selector")
	}
}
