package values

import (
	"bytes"
	"fmt"
	"slices"
	"sort"
	"sync"

	"github.com/backflow-dev/backflow/internal/yamlnode"
)

// Edit sets the value at Path (Helm's --set syntax) to Value: nil, a bool,
// a number, or a string, as ParseScalar returns them.
type Edit struct {
	Path  string
	Value any
}

// Change records one edit that changed the file: the value before (nil when
// the path did not exist; Inserted says so), the value after, and the 1-based
// line of the new value in the output.
type Change struct {
	Path     string
	Old      any
	New      any
	Line     int
	Inserted bool
}

// splice replaces data[start:end] with text. Where splices start at the
// same offset, new lines (late) go after a block scalar's new content, the
// new lines of a deeper mapping (indent) before those of the mappings that
// end with it, and otherwise the edits' order holds.
type splice struct {
	start, end int
	text       string
	late       bool
	indent     int
	order      int
}

// File is a values file read once: the chosen document parsed with yaml.v3
// and with Helm's reader. Several Set calls on one File share that work; a
// File never changes, each Set starts from the original bytes, and it is
// safe for concurrent use.
type File struct {
	// src is the file's bytes, lines and documents; nil, until document
	// makes it, in a File whose parse Readings remembered.
	src   *source
	index int
	// doc is the yaml.v3 parse, made by Parse or, where Readings knows the
	// bytes parse, by document when first needed.
	doc     *document
	docErr  error
	docOnce sync.Once
	helm    any
	// root is Options.Root parsed: every path is read below it.
	root []yamlnode.Segment
	// v3Err says whether the original decodes with yaml.v3, found out
	// once, when the first edit needs it.
	v3Err  error
	v3Once sync.Once
	// readings, when not nil, remembers verified edits; fileKey is the
	// file's bytes as the key of its edits.
	readings *Readings
	fileKey  string
}

// document returns the yaml.v3 parse of the chosen document, and makes
// f.src where Parse left it to be made here.
func (f *File) document() (*document, error) {
	f.docOnce.Do(func() {
		if f.src == nil {
			f.src = newSource([]byte(f.fileKey))
		}
		if f.doc == nil {
			f.doc, f.docErr = parseDocument(f.src, f.index)
		}
	})
	return f.doc, f.docErr
}

// decodesV3 checks the original document decodes with yaml.v3 (duplicate
// keys, for one, do not): verification compares node trees, and trusts
// what it does not compare to decode as the original did.
func (f *File) decodesV3() error {
	f.v3Once.Do(func() {
		// set has the document already: a File whose parse failed
		// makes no edit.
		d, _ := f.document()
		_, f.v3Err = d.decode()
	})
	return f.v3Err
}

// Parse reads data and chooses document opts.Document. A file that does not
// parse is ErrParse; a file over the size cap, several documents with none
// chosen, or an alias bomb is a refusal. With opts.Readings, bytes that
// parsed before with the same options are not parsed with yaml.v3 again
// until an edit or a Get needs the nodes, and the File keeps a copy of
// data: what Readings remembers of it outlives the caller's slice.
func Parse(data []byte, opts Options) (*File, error) {
	if err := checkSize(data, opts); err != nil {
		return nil, err
	}
	r := opts.Readings
	if r == nil {
		return parse(data, opts)
	}
	if p, ok := r.parsed(data, opts); ok {
		// The bytes are the key's; the File makes its source of them
		// when it needs the nodes.
		helm, err := helmReadDoc(data[p.doc.start:p.doc.end], p.index, p.doc.line, p.hasDoc, r)
		if err != nil {
			return nil, err
		}
		return &File{index: p.index, helm: helm, root: p.root, readings: r, fileKey: p.key}, nil
	}
	if !r.fits(entryOverhead + int64(len(data)+len(opts.Root))) {
		// Too large to be remembered: read as without Readings, but for
		// Helm's reading, which Readings may hold already.
		return parse(data, opts)
	}
	key := string(data)
	f, err := parse([]byte(key), opts)
	if err != nil {
		return nil, err
	}
	f.readings, f.fileKey = r, key
	p := parsedFile{key: key, index: f.index, root: f.root, hasDoc: len(f.src.docs) > 0}
	if p.hasDoc {
		p.doc = f.src.docs[f.index]
	}
	r.keepParsed(opts, p)
	return f, nil
}

func parse(data []byte, opts Options) (*File, error) {
	if opts.Inline {
		var err error
		if opts, err = chooseInline(data, opts); err != nil {
			return nil, err
		}
	}
	src := newSource(data)
	index, err := src.chooseDocument(opts)
	if err != nil {
		return nil, err
	}
	return parseSource(src, index, opts)
}

// parseSource is parse of document index of src, once chosen.
func parseSource(src *source, index int, opts Options) (*File, error) {
	doc, helm, err := readBoth(src, index, opts.Readings)
	if err != nil {
		return nil, err
	}
	root, err := doc.rootOf(opts.Root)
	if err != nil {
		return nil, err
	}
	return &File{src: src, index: index, doc: doc, helm: helm, root: root}, nil
}

// readBoth parses document index with yaml.v3 nodes and with Helm's reader
// at the same time (the two parses are most of an edit's cost). The node
// parse decides: a syntax error is reported as such, and an alias bomb as a
// refusal. Helm's reader cannot blow up meanwhile: yaml.v2 stops on
// excessive aliasing by itself.
func readBoth(src *source, index int, readings *Readings) (*document, any, error) {
	var helm any
	var helmErr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		helm, helmErr = helmRead(src, index, readings)
	}()
	doc, err := parseDocument(src, index)
	<-done
	if err != nil {
		return nil, nil, err
	}
	return doc, helm, helmErr
}

// Get returns the value at path, typed as Helm reads it.
func (f *File) Get(path string) (any, error) {
	segs, err := parseEditPath(path)
	if err != nil {
		return nil, err
	}
	segs = f.under(segs)
	// Only a selector ([key=value]) needs the yaml.v3 nodes: a File whose
	// parse Readings remembered would otherwise parse its bytes again for
	// each Get (the planner reads kind and metadata.name of every document
	// of a manifest each plan).
	if slices.ContainsFunc(segs, func(s yamlnode.Segment) bool { return s.AnyIndex }) {
		d, err := f.document()
		if err != nil {
			return nil, err
		}
		if segs, err = d.resolveSelectors(segs, f.helm); err != nil {
			return nil, err
		}
	}
	v, ok := lookupValue(f.helm, segs)
	if !ok {
		return nil, fmt.Errorf("%s: %w", path, ErrNotFound)
	}
	return v, nil
}

// Set applies edits to document opts.Document of data; see File.Set.
// Without Readings, Root or Inline it speculates (see setSpeculating): the
// result is the same, sooner.
func Set(data []byte, edits []Edit, opts Options) ([]byte, []Change, error) {
	if opts.Readings == nil && opts.Root == "" && !opts.Inline {
		return setSpeculating(data, edits, opts)
	}
	return setInTurn(data, edits, opts)
}

// setInTurn is Set as Parse and File.Set make it, one after the other.
func setInTurn(data []byte, edits []Edit, opts Options) ([]byte, []Change, error) {
	f, err := Parse(data, opts)
	if err != nil {
		return nil, nil, err
	}
	return f.Set(edits)
}

// Set returns the file with edits applied and a Change for every edit that
// changed something. Only the bytes of the edited tokens change (or new lines
// are added for missing keys); the result is verified before it is returned.
// An edit the editor cannot make safely is refused with an error wrapping
// ErrRefused, and nothing is returned.
func (f *File) Set(edits []Edit) ([]byte, []Change, error) {
	out, _, changes, err := f.set(edits, true)
	return out, changes, err
}

// SetRead is Set that also returns the edited document as Helm reads it:
// the reading the verification made, so a caller that needs the new values
// does not read the file again. It is the original's reading when the
// edits change nothing. The tree is shared (with the File, and with other
// callers through Options.Readings): nobody may change it.
func (f *File) SetRead(edits []Edit) ([]byte, any, error) {
	out, helm, _, err := f.set(edits, false)
	return out, helm, err
}

// set is Set and SetRead. With Options.Readings, the result of edits that
// were verified before on the same bytes, document and root is taken from
// there; the bytes returned are a copy each time, since Set's callers own
// them, and so are the changes when the caller wants them.
func (f *File) set(edits []Edit, wantChanges bool) ([]byte, any, []Change, error) {
	if f.readings == nil || len(edits) == 0 {
		return f.setAfresh(edits, nil)
	}
	k, ok := f.editKeyOf(edits)
	if !ok {
		return f.setAfresh(edits, nil)
	}
	if e, ok := f.readings.edit(k); ok {
		var changes []Change
		if wantChanges {
			changes = slices.Clone(e.changes)
		}
		return bytes.Clone(e.out), e.helm, changes, nil
	}
	out, helm, changes, err := f.setAfresh(edits, nil)
	if err == nil && f.readings.fits(entryOverhead+int64(len(k.file)+len(k.rest)+len(out))) {
		f.readings.keepEdit(k, bytes.Clone(out), helm, slices.Clone(changes))
	}
	return out, helm, changes, err
}

// setAfresh plans, splices and verifies edits. spec, when not nil, is a
// speculation on the same edits of the same bytes: where it spliced the
// same output for the same paths, its reading of that output is the one
// verify makes; otherwise it is dropped and verify reads the output itself.
func (f *File) setAfresh(edits []Edit, spec *speculation) ([]byte, any, []Change, error) {
	if len(edits) == 0 {
		return nil, nil, nil, fmt.Errorf("no edits: %w", ErrRefused)
	}
	d, err := f.document()
	if err != nil {
		return nil, nil, nil, err
	}
	paths := make([][]yamlnode.Segment, len(edits))
	for i, e := range edits {
		p, err := parseEditPath(e.Path)
		if err != nil {
			return nil, nil, nil, err
		}
		if p, err = d.resolveSelectors(f.under(p), f.helm); err != nil {
			return nil, nil, nil, err
		}
		paths[i] = p
	}
	data := f.src.data
	var out []byte
	if independent(paths) {
		out, err = applyTogether(d, edits, paths, f.helm)
	} else {
		out, err = applyInTurn(d, edits, paths, f.helm)
	}
	if err != nil {
		return nil, nil, nil, err
	}
	if bytes.Equal(out, data) {
		// A copy: data is the File's own (and, with Readings, every
		// later edit's starting point); the bytes returned are the
		// caller's to change.
		return bytes.Clone(data), f.helm, nil, nil
	}
	var after *document
	var helm any
	if spec.confirms(out, paths) {
		after, helm, err = verifyRead(f, spec.src, edits, paths, spec)
	} else {
		after, helm, err = verify(f, out, edits, paths)
	}
	if err != nil {
		return nil, nil, nil, err
	}
	var changes []Change
	for i, e := range edits {
		old, found := lookupValue(f.helm, paths[i])
		if found && sameValue(old, e.Value) {
			continue
		}
		line := 0
		if loc, err := after.locate(paths[i]); err == nil && loc.node != nil {
			line = after.sp.line + loc.node.Line - 1
		}
		changes = append(changes, Change{Path: e.Path, Old: old, New: e.Value, Line: line, Inserted: !found})
	}
	return out, helm, changes, nil
}

// independent says no path is a prefix of (or equal to) another, so every
// edit can be planned against the original file.
func independent(paths [][]yamlnode.Segment) bool {
	for i := range paths {
		for j := range paths {
			if i != j && hasPrefix(paths[j], paths[i]) {
				return false
			}
		}
	}
	return true
}

func hasPrefix(p, prefix []yamlnode.Segment) bool {
	if len(prefix) > len(p) {
		return false
	}
	for i := range prefix {
		if p[i] != prefix[i] {
			return false
		}
	}
	return true
}

// applyTogether plans every edit against the original and applies the
// splices at once; when two edits touch the same bytes (two new keys under
// the same `key: {}`), it falls back to applying them in turn.
func applyTogether(d *document, edits []Edit, paths [][]yamlnode.Segment, helm any) ([]byte, error) {
	var all []splice
	created := map[string]bool{}
	for i, e := range edits {
		sp, newKey, err := d.plan(paths[i], e.Value, helm)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", e.Path, err)
		}
		if newKey != "" {
			if created[newKey] {
				return applyInTurn(d, edits, paths, helm)
			}
			created[newKey] = true
		}
		for _, s := range sp {
			s.order = len(all)
			all = append(all, s)
		}
	}
	if !orderSplices(all) {
		return applyInTurn(d, edits, paths, helm)
	}
	return applySplices(d.src.data, all), nil
}

// orderSplices sorts the splices of several edits by offset (see splice)
// and says whether they leave each other's bytes alone.
func orderSplices(all []splice) bool {
	sort.SliceStable(all, func(i, j int) bool {
		if all[i].start != all[j].start {
			return all[i].start < all[j].start
		}
		if all[i].late != all[j].late {
			return !all[i].late
		}
		if all[i].late && all[i].indent != all[j].indent {
			return all[i].indent > all[j].indent
		}
		return all[i].order < all[j].order
	})
	for i := 1; i < len(all); i++ {
		prev, cur := all[i-1], all[i]
		if cur.start < prev.end || (cur.start == prev.start && prev.end > prev.start) {
			return false
		}
	}
	return true
}

func applySplices(data []byte, sp []splice) []byte {
	var b bytes.Buffer
	b.Grow(len(data) + 256)
	last := 0
	for _, s := range sp {
		b.Write(data[last:s.start])
		b.WriteString(s.text)
		last = s.end
	}
	b.Write(data[last:])
	return b.Bytes()
}

// applyInTurn applies the edits one after the other, parsing the file again
// between them; verification then compares the last result with the
// original.
func applyInTurn(d *document, edits []Edit, paths [][]yamlnode.Segment, helm any) ([]byte, error) {
	index := 0
	for i, sp := range d.src.docs {
		if sp == d.sp {
			index = i
		}
	}
	cur := d
	curHelm := helm
	for i, e := range edits {
		sp, _, err := cur.plan(paths[i], e.Value, curHelm)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", e.Path, err)
		}
		sort.SliceStable(sp, func(a, b int) bool { return sp[a].start < sp[b].start })
		out := applySplices(cur.src.data, sp)
		if i == len(edits)-1 {
			return out, nil
		}
		src := newSource(out)
		if len(src.docs) != len(d.src.docs) {
			return nil, fmt.Errorf("%s: the edit changed the number of documents: %w", e.Path, ErrVerify)
		}
		next, err := parseDocument(src, index)
		if err != nil {
			return nil, fmt.Errorf("%s: the edited file does not parse: %v: %w", e.Path, err, ErrVerify)
		}
		nextHelm, err := helmRead(src, index, nil)
		if err != nil {
			return nil, fmt.Errorf("%s: the edited file does not parse: %v: %w", e.Path, err, ErrVerify)
		}
		cur, curHelm = next, nextHelm
	}
	return d.src.data, nil
}
