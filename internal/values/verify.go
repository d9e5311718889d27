package values

import (
	"bytes"
	"fmt"
	"sort"
)

// verify checks an edited file against the original before it is returned:
// the other documents and everything outside the edited one are the same
// bytes; the edited document parses with yaml.v3 and with Helm's reader; both
// trees equal the originals except at the edited paths; and each edited path
// reads back, in both, as the requested value and type.
func verify(f *File, out []byte, edits []Edit, paths [][]Segment) (*document, error) {
	src, index := f.src, f.index
	fail := func(format string, a ...any) (*document, error) {
		return nil, fmt.Errorf(format+": %w", append(a, ErrVerify)...)
	}
	osrc := newSource(out)
	switch {
	case len(src.docs) == 0:
		// Keys added to an empty file make its first document; the old
		// bytes (comments) must all stay in front.
		if len(osrc.docs) != 1 || !bytes.HasPrefix(out, src.data) {
			return fail("keys added to an empty file did not make one document after it")
		}
	case len(osrc.docs) != len(src.docs):
		return fail("the edit changed the number of documents from %d to %d", len(src.docs), len(osrc.docs))
	}
	if len(src.docs) > 0 {
		b, a := src.docs[index], osrc.docs[index]
		if !bytes.Equal(src.data[:b.start], out[:a.start]) || !bytes.Equal(src.data[b.end:], out[a.end:]) {
			return fail("bytes outside the edited document changed")
		}
	}
	after, helmAfter, err := readBoth(osrc, index)
	var v3After any
	if err == nil {
		v3After, err = after.decode()
	}
	if err != nil {
		return fail("the edited file does not read back: %v", err)
	}
	// The last edit of a path wins.
	final := map[string]int{}
	for i, p := range paths {
		final[FormatPath(p)] = i
	}
	if err := diffExcept(f.v3, v3After, nil, paths); err != nil {
		return fail("yaml.v3 reads a change outside the edited paths: %v", err)
	}
	if err := diffExcept(f.helm, helmAfter, nil, paths); err != nil {
		return fail("Helm reads a change outside the edited paths: %v", err)
	}
	keys := make([]string, 0, len(final))
	for k := range final {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		i := final[k]
		want := edits[i].Value
		for reader, tree := range map[string]any{"yaml.v3": v3After, "Helm": helmAfter} {
			got, ok := lookupValue(tree, paths[i])
			if !ok {
				return fail("%s: %s finds nothing at the edited path", edits[i].Path, reader)
			}
			if !sameValue(got, want) {
				return fail("%s: %s reads %s (%s), want %s (%s)", edits[i].Path, reader, Format(got), kindOf(normalize(got)), Format(want), kindOf(want))
			}
		}
	}
	return after, nil
}

// decode reads the document's node tree into plain values (YAML 1.2 types).
func (d *document) decode() (any, error) {
	if d.root == nil {
		return nil, nil
	}
	var v any
	if err := d.root.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}

// diffExcept reports the first difference between a and b outside the
// edited paths. It appends to at in place (the callee never keeps it), so
// the walk does not copy a path per node. A key may be new in b only on the way to an edited path, and
// an empty mapping or null there may become a mapping.
func diffExcept(a, b any, at []Segment, edited [][]Segment) error {
	onWay := false
	for _, p := range edited {
		if hasPrefix(p, at) {
			if len(p) == len(at) {
				return nil
			}
			onWay = true
		}
	}
	a, b = normalize(a), normalize(b)
	where := func() string {
		if len(at) == 0 {
			return "the document root"
		}
		return FormatPath(at)
	}
	if onWay {
		if m, ok := a.(map[string]any); a == nil || ok && len(m) == 0 {
			if _, ok := b.(map[string]any); ok {
				a = map[string]any{}
			}
		}
	}
	switch x := a.(type) {
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok {
			return fmt.Errorf("%s: a mapping became %s", where(), kindOf(b))
		}
		for k, v := range x {
			w, ok := y[k]
			if !ok {
				return fmt.Errorf("%s: key %q disappeared", where(), k)
			}
			if err := diffExcept(v, w, append(at, Segment{Key: k}), edited); err != nil {
				return err
			}
		}
		for k := range y {
			if _, ok := x[k]; !ok {
				child := append(at, Segment{Key: k})
				allowed := false
				for _, p := range edited {
					if hasPrefix(p, child) {
						allowed = true
					}
				}
				if !allowed {
					return fmt.Errorf("%s: key %q appeared", where(), k)
				}
			}
		}
		return nil
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return fmt.Errorf("%s: a list changed length or type", where())
		}
		for i := range x {
			if err := diffExcept(x[i], y[i], append(at, Segment{Index: i, IsIndex: true}), edited); err != nil {
				return err
			}
		}
		return nil
	}
	if !sameValue(a, b) {
		return fmt.Errorf("%s: %s became %s", where(), Format(a), Format(b))
	}
	return nil
}

// appendSeg returns p with s added, never sharing p's array: paths are kept
// by callers.
func appendSeg(p []Segment, s Segment) []Segment {
	out := make([]Segment, len(p), len(p)+1)
	copy(out, p)
	return append(out, s)
}
