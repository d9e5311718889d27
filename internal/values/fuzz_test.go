package values

import (
	"errors"
	"testing"

	"github.com/backflow-dev/backflow/internal/yamlnode"
)

// FuzzSet edits arbitrary YAML at arbitrary paths: Set must not panic, and
// any output it returns must read back, with Helm's reader and yaml.v3, as
// the original with only the edited path changed to the requested value.
func FuzzSet(f *testing.F) {
	seeds := []struct{ data, path, value string }{
		{"a: 1 # c\nb: x\n", "a", "2"},
		{"a:\n  b: |\n    x\n  c: 'q'\n", "a.b", "yes"},
		{"a: {b: 1}\nl: [1, 2]\n", "l[1]", "x y"},
		{"a: &x 1\nb: *x\n", "a", "2"},
		{"a: {}\n", "a.b.c", "\"multi\\nline\""},
		{"a: 1\r\nb:\r\n  c: 2\r\n", "b.d", "0755"},
		{"%YAML 1.1\n---\na: 1\n...\n", "a", "~"},
		{"- a\n- b\n", "[0]", "1"},
		{"a:\n- b: 1\n  c: 2\n", "a[0].d", "on"},
		{"a: plain\n  continued\nb: 1\n", "a", "x"},
		{"env:\n- name: TZ\n  value: UTC\n- name: X\n", "env[name=TZ].value", "CET"},
	}
	for _, s := range seeds {
		f.Add(s.data, s.path, s.value)
	}
	f.Fuzz(func(t *testing.T, data, path, value string) {
		v, err := ParseScalar(value)
		if err != nil {
			return
		}
		zero := 0
		out, _, err := Set([]byte(data), []Edit{{Path: path, Value: v}}, Options{Document: &zero, MaxBytes: 1 << 16})
		if err != nil {
			var pe *yamlnode.PathError
			if !errors.Is(err, ErrRefused) && !errors.Is(err, ErrParse) && !errors.Is(err, ErrVerify) && !errors.As(err, &pe) {
				t.Fatalf("unclassified error: %v", err)
			}
			if out != nil {
				t.Fatalf("output returned with an error: %v", err)
			}
			return
		}
		if string(out) == data {
			return // a no-op: the value was already there
		}
		before, err := Parse([]byte(data), Options{Document: &zero})
		if err != nil {
			t.Fatalf("Set accepted a file Parse rejects: %v", err)
		}
		after, err := Parse(out, Options{Document: &zero})
		if err != nil {
			t.Fatalf("output does not parse: %v\n%s", err, out)
		}
		segs, _ := parseEditPath(path)
		if segs, err = before.doc.resolveSelectors(segs, before.helm); err != nil {
			t.Fatalf("Set resolved a selector that resolves no more: %v", err)
		}
		got, ok := lookupValue(after.helm, segs)
		if !ok || !sameValue(got, v) {
			t.Fatalf("Helm reads %#v at %s, want %#v\n%s", got, path, v, out)
		}
		if err := diffExcept(before.helm, after.helm, nil, [][]yamlnode.Segment{segs}); err != nil {
			t.Fatalf("Helm reads another change: %v\n--- before\n%s\n--- after\n%s", err, data, out)
		}
		b3, err1 := before.doc.decode()
		a3, err2 := after.doc.decode()
		if err1 != nil || err2 != nil {
			t.Fatalf("decode: %v %v", err1, err2)
		}
		if err := diffExcept(b3, a3, nil, [][]yamlnode.Segment{segs}); err != nil {
			t.Fatalf("yaml.v3 reads another change: %v\n%s", err, out)
		}
	})
}

// FuzzLocate runs the kyaml locate against the walk by hand it replaced, on
// arbitrary documents and paths: both must find the same nodes, the same
// parent and indentation, and fail with the same error.
func FuzzLocate(f *testing.F) {
	seeds := []struct{ data, path string }{
		{"a: 1 # c\nb: x\n", "a"},
		{"a: {b: 1}\nl: [1, 2]\n", "l[1]"},
		{"a: &x 1\nb: *x\n", "b"},
		{"a: {}\n", "a.b.c"},
		{"on: 1\n'on': 2\n", "on"},
		{"0755: x\n", "493"},
		{"a: 1\na: 2\n", "a"},
		{"b: &m {c: 1}\nd:\n  <<: *m\n  e: 2\n", "d.c"},
		{"- a\n- b\n", "[1]"},
		{"a:\n- b: 1\n  c: 2\n", "a[0].c"},
		{"? [x]\n: 1\ny: 2\n", "y"},
		{"!!str 1: a\n\"2\": b\n", "1"},
		{"a:\n  b: ~\n", "a.b.c"},
		{"1: x\n", "1"},
	}
	for _, s := range seeds {
		f.Add(s.data, s.path)
	}
	f.Fuzz(func(t *testing.T, data, path string) {
		segs, err := yamlnode.ParsePath(path)
		if err != nil {
			return
		}
		zero := 0
		file, err := Parse([]byte(data), Options{Document: &zero, MaxBytes: 1 << 16})
		if err != nil {
			return
		}
		got, gotErr := file.doc.locate(segs)
		want, wantErr := file.doc.locateByHand(segs)
		if (gotErr == nil) != (wantErr == nil) || gotErr != nil && gotErr.Error() != wantErr.Error() {
			t.Fatalf("path %q: kyaml locate error %v, by hand %v\n%s", path, gotErr, wantErr, data)
		}
		if got != want {
			t.Fatalf("path %q: kyaml locate %+v, by hand %+v\n%s", path, got, want, data)
		}
	})
}
