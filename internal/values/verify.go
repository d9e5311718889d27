package values

import (
	"bytes"
	"fmt"
	"sort"

	yaml "go.yaml.in/yaml/v3"

	"github.com/backflow-dev/backflow/internal/yamlnode"
)

// verify checks an edited file against the original before it is returned:
// the other documents and everything outside the edited one are the same
// bytes; the edited document parses with yaml.v3 and with Helm's reader; both
// trees equal the originals except at the edited paths (yaml.v3's compared
// node by node, Helm's as decoded values); and each edited path reads back,
// in both, as the requested value and type. It returns the edited document
// as yaml.v3 and as Helm read it.
func verify(f *File, out []byte, edits []Edit, paths [][]yamlnode.Segment) (*document, any, error) {
	return verifyRead(f, newSource(out), edits, paths, nil)
}

// verifyRead is verify of the edited file osrc, which it reads with
// parseDocument and helmRead, or, given a speculation that spliced the
// same bytes, takes the speculation's readings of them, made so: every
// check is the same whoever reads.
func verifyRead(
	f *File,
	osrc *source,
	edits []Edit,
	paths [][]yamlnode.Segment,
	spec *speculation,
) (*document, any, error) {
	src, index, out := f.src, f.index, osrc.data
	fail := func(format string, a ...any) (*document, any, error) {
		return nil, nil, fmt.Errorf(format+": %w", append(a, ErrVerify)...)
	}
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
	// The last edit of a path wins.
	final := map[string]int{}
	for i, p := range paths {
		final[yamlnode.FormatPath(p)] = i
	}
	keys := make([]string, 0, len(final))
	for k := range final {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	// Each reader's side (parse the result, compare with the original,
	// read the edited paths back) runs on its own goroutine: they share
	// nothing but the original's trees, which nobody changes.
	var helmSide readerCheck
	done := make(chan struct{})
	go func() {
		defer close(done)
		if spec != nil {
			helmSide.tree, helmSide.readErr = spec.helm()
		} else {
			helmSide.tree, helmSide.readErr = helmRead(osrc, index, nil)
		}
		if helmSide.readErr == nil {
			helmSide.diffErr = diffExcept(f.helm, helmSide.tree, make([]yamlnode.Segment, 0, 32), paths)
			helmSide.pathErr = readsBackAll("Helm", helmSide.tree, edits, paths, final, keys)
		}
		// The Helm side is the shorter: it also checks the original
		// decodes with yaml.v3, when no earlier edit of this File has.
		_ = f.decodesV3()
	}()
	var v3Side readerCheck
	var after *document
	var err error
	if spec != nil {
		after, err = spec.v3()
	} else {
		after, err = parseDocument(osrc, index)
	}
	v3Side.readErr = err
	if err == nil {
		if err = f.decodesV3(); err != nil {
			<-done
			return nil, nil, fmt.Errorf("decoding the original: %v: %w", err, ErrParse)
		}
		// set parsed f.doc before it called verify.
		v3Side.diffErr = diffNodes(f.doc.root, after.root, make([]yamlnode.Segment, 0, 32), paths, map[[2]*yaml.Node]bool{})
		if v3Side.diffErr == nil {
			v3Side.pathErr = nodesReadBack(after.root, edits, paths, final, keys)
		}
	}
	<-done
	switch {
	case v3Side.readErr != nil:
		return fail("the edited file does not read back: %v", v3Side.readErr)
	case helmSide.readErr != nil:
		return fail("the edited file does not read back: %v", helmSide.readErr)
	case v3Side.diffErr != nil:
		return fail("yaml.v3 reads a change outside the edited paths: %v", v3Side.diffErr)
	case helmSide.diffErr != nil:
		return fail("Helm reads a change outside the edited paths: %v", helmSide.diffErr)
	case v3Side.pathErr != nil:
		return fail("%v", v3Side.pathErr)
	case helmSide.pathErr != nil:
		return fail("%v", helmSide.pathErr)
	}
	return after, helmSide.tree, nil
}

// readerCheck is one reader's verdict on an edited file.
type readerCheck struct {
	tree                      any
	readErr, diffErr, pathErr error
}

// nodesReadBack checks that each edited path (the last edit of each, in key
// order) decodes, with yaml.v3, as the requested value and type.
func nodesReadBack(
	root *yaml.Node,
	edits []Edit,
	paths [][]yamlnode.Segment,
	final map[string]int,
	keys []string,
) error {
	for _, k := range keys {
		i := final[k]
		want := edits[i].Value
		n, ok := nodeAt(root, paths[i])
		if !ok {
			return fmt.Errorf("%s: yaml.v3 finds nothing at the edited path", edits[i].Path)
		}
		var got any
		if err := n.Decode(&got); err != nil {
			return fmt.Errorf("%s: yaml.v3 cannot decode the new value: %v", edits[i].Path, err)
		}
		if !sameValue(got, want) {
			return fmt.Errorf(
				"%s: yaml.v3 reads %s (%s), want %s (%s)",
				edits[i].Path,
				Format(got),
				kindOf(normalize(got)),
				Format(want),
				kindOf(want),
			)
		}
	}
	return nil
}

// readsBackAll checks that each edited path (the last edit of each, in
// key order) reads back in tree as the requested value and type.
func readsBackAll(
	reader string,
	tree any,
	edits []Edit,
	paths [][]yamlnode.Segment,
	final map[string]int,
	keys []string,
) error {
	for _, k := range keys {
		i := final[k]
		want := edits[i].Value
		got, ok := lookupValue(tree, paths[i])
		if !ok {
			return fmt.Errorf("%s: %s finds nothing at the edited path", edits[i].Path, reader)
		}
		if !sameValue(got, want) {
			return fmt.Errorf(
				"%s: %s reads %s (%s), want %s (%s)",
				edits[i].Path,
				reader,
				Format(got),
				kindOf(normalize(got)),
				Format(want),
				kindOf(want),
			)
		}
	}
	return nil
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
// the walk does not copy a path per node; given spare capacity, it does not
// allocate one either. A key may be new in b only on the way to an edited path, and
// an empty mapping or null there may become a mapping.
func diffExcept(a, b any, at []yamlnode.Segment, edited [][]yamlnode.Segment) error {
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
		return yamlnode.FormatPath(at)
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
			if err := diffExcept(v, w, append(at, yamlnode.Segment{Key: k}), edited); err != nil {
				return err
			}
		}
		if len(y) == len(x) {
			return nil // every key of x is in y: none appeared
		}
		for k := range y {
			if _, ok := x[k]; !ok {
				child := append(at, yamlnode.Segment{Key: k})
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
			if err := diffExcept(x[i], y[i], append(at, yamlnode.Segment{Index: i, IsIndex: true}), edited); err != nil {
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
func appendSeg(p []yamlnode.Segment, s yamlnode.Segment) []yamlnode.Segment {
	out := make([]yamlnode.Segment, len(p), len(p)+1)
	copy(out, p)
	return append(out, s)
}
