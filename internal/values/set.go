package values

import (
	"bytes"
	"fmt"
	"sort"
	"strings"

	yaml "go.yaml.in/yaml/v3"
	sigsyaml "sigs.k8s.io/yaml"
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
// same offset, new lines (late) go after a block scalar's new content, and
// otherwise the edits' order holds.
type splice struct {
	start, end int
	text       string
	late       bool
	order      int
}

// located is the result of following a path through a document.
type located struct {
	node    *yaml.Node // the node at the path; nil when missing
	parent  *yaml.Node // the deepest node on the path that exists
	pkey    *yaml.Node // the parent's key, when the parent is a mapping value
	pindent int        // indentation of the parent's key or dash
	depth   int        // how many segments exist
	flow    bool       // the node (or the parent, when missing) is in a flow collection
	indent  int        // indentation of the node's key or dash
}

// File is a values file read once: the chosen document parsed with yaml.v3
// and with Helm's reader. Several Set calls on one File share that work; a
// File never changes, each Set starts from the original bytes.
type File struct {
	src   *source
	index int
	doc   *document
	helm  any
	v3    any
	v3ok  bool
}

// Parse reads data and chooses document opts.Document. A file that does not
// parse is ErrParse; a file over the size cap, several documents with none
// chosen, or an alias bomb is a refusal.
func Parse(data []byte, opts Options) (*File, error) {
	if err := checkSize(data, opts); err != nil {
		return nil, err
	}
	src := newSource(data)
	index, err := src.chooseDocument(opts)
	if err != nil {
		return nil, err
	}
	doc, helm, err := readBoth(src, index)
	if err != nil {
		return nil, err
	}
	return &File{src: src, index: index, doc: doc, helm: helm}, nil
}

// readBoth parses document index with yaml.v3 nodes and with Helm's reader
// at the same time (the two parses are most of an edit's cost). The node
// parse decides: a syntax error is reported as such, and an alias bomb as a
// refusal. Helm's reader cannot blow up meanwhile: yaml.v2 stops on
// excessive aliasing by itself.
func readBoth(src *source, index int) (*document, any, error) {
	var helm any
	var helmErr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		helm, helmErr = helmRead(src, index)
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
	segs, err := ParsePath(path)
	if err != nil {
		return nil, err
	}
	v, ok := lookupValue(f.helm, segs)
	if !ok {
		return nil, fmt.Errorf("%s: %w", path, ErrNotFound)
	}
	return v, nil
}

// Set applies edits to document opts.Document of data; see File.Set.
func Set(data []byte, edits []Edit, opts Options) ([]byte, []Change, error) {
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
	if len(edits) == 0 {
		return nil, nil, fmt.Errorf("no edits: %w", ErrRefused)
	}
	paths := make([][]Segment, len(edits))
	for i, e := range edits {
		p, err := ParsePath(e.Path)
		if err != nil {
			return nil, nil, err
		}
		paths[i] = p
	}
	data := f.src.data
	var out []byte
	var err error
	if independent(paths) {
		out, err = applyTogether(f.doc, edits, paths, f.helm)
	} else {
		out, err = applyInTurn(f.doc, edits, paths, f.helm)
	}
	if err != nil {
		return nil, nil, err
	}
	if bytes.Equal(out, data) {
		return data, nil, nil
	}
	if !f.v3ok {
		if f.v3, err = f.doc.decode(); err != nil {
			return nil, nil, fmt.Errorf("decoding the original: %v: %w", err, ErrParse)
		}
		f.v3ok = true
	}
	after, err := verify(f, out, edits, paths)
	if err != nil {
		return nil, nil, err
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
	return out, changes, nil
}

// independent says no path is a prefix of (or equal to) another, so every
// edit can be planned against the original file.
func independent(paths [][]Segment) bool {
	for i := range paths {
		for j := range paths {
			if i != j && hasPrefix(paths[j], paths[i]) {
				return false
			}
		}
	}
	return true
}

func hasPrefix(p, prefix []Segment) bool {
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
func applyTogether(d *document, edits []Edit, paths [][]Segment, helm any) ([]byte, error) {
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
	sort.SliceStable(all, func(i, j int) bool {
		if all[i].start != all[j].start {
			return all[i].start < all[j].start
		}
		if all[i].late != all[j].late {
			return !all[i].late
		}
		return all[i].order < all[j].order
	})
	for i := 1; i < len(all); i++ {
		prev, cur := all[i-1], all[i]
		if cur.start < prev.end || (cur.start == prev.start && prev.end > prev.start) {
			return applyInTurn(d, edits, paths, helm)
		}
	}
	return applySplices(d.src.data, all), nil
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
func applyInTurn(d *document, edits []Edit, paths [][]Segment, helm any) ([]byte, error) {
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
		nextHelm, err := helmRead(src, index)
		if err != nil {
			return nil, fmt.Errorf("%s: the edited file does not parse: %v: %w", e.Path, err, ErrVerify)
		}
		cur, curHelm = next, nextHelm
	}
	return d.src.data, nil
}

// locate follows path through the document, refusing paths that go through
// aliases or anchors that aliases reuse.
func (d *document) locate(path []Segment) (located, error) {
	loc := located{parent: nil, pindent: -1}
	cur := d.root
	var curKey *yaml.Node
	indent := -1
	flow := false
	for i, seg := range path {
		where := FormatPath(path[:i])
		if where == "" {
			where = "the document root"
		}
		if cur == nil {
			loc.depth = i
			return loc, nil
		}
		if cur.Kind == yaml.AliasNode || d.aliased[cur] {
			return loc, fmt.Errorf("%s (line %d): %w", where, d.line(cur), ErrAlias)
		}
		loc.parent, loc.pkey, loc.pindent, loc.flow = cur, curKey, indent, flow
		switch cur.Kind {
		case yaml.MappingNode:
			if seg.IsIndex {
				return loc, fmt.Errorf("%s (line %d) is a mapping, not a list: %w", where, d.line(cur), ErrThroughScalar)
			}
			var next, nextKey *yaml.Node
			merge := false
			for j := 0; j+1 < len(cur.Content); j += 2 {
				k := cur.Content[j]
				if k.Kind == yaml.ScalarNode && k.Value == "<<" && k.Style == 0 {
					merge = true
				}
				if hk, ok := helmKeyOf(k); ok && hk == seg.Key {
					if !sameKeyForBoth(k, hk) {
						// yaml.v3 and Helm would name this key differently
						// (`on`, `0755`): the edit could not be verified.
						return loc, fmt.Errorf("%s (line %d): key %s: %w", where, d.line(k), k.Value, ErrNonStringKey)
					}
					if next != nil {
						return loc, fmt.Errorf("%s (line %d): two keys that Helm reads as %q: %w", where, d.line(k), seg.Key, ErrNonStringKey)
					}
					next, nextKey = cur.Content[j+1], k
				}
			}
			if next == nil {
				if merge {
					return loc, fmt.Errorf("%s (line %d) merges another mapping with <<: %w", where, d.line(cur), ErrAlias)
				}
				loc.depth = i
				return loc, nil
			}
			flow = flow || cur.Style&yaml.FlowStyle != 0
			indent = nextKey.Column - 1
			cur, curKey = next, nextKey
		case yaml.SequenceNode:
			if !seg.IsIndex {
				return loc, fmt.Errorf("%s (line %d) is a list; use [N]: %w", where, d.line(cur), ErrThroughScalar)
			}
			if seg.Index >= len(cur.Content) {
				loc.depth = i
				return loc, nil
			}
			flow = flow || cur.Style&yaml.FlowStyle != 0
			indent = cur.Column - 1
			if flow {
				indent = loc.pindent
			}
			cur, curKey = cur.Content[seg.Index], nil
		case yaml.ScalarNode:
			if cur.Tag == "!!null" {
				loc.depth = i
				return loc, nil
			}
			return loc, fmt.Errorf("%s (line %d) is a scalar: %w", where, d.line(cur), ErrThroughScalar)
		default:
			return loc, fmt.Errorf("%s (line %d): %w", where, d.line(cur), ErrUnsupported)
		}
	}
	if cur != nil && (cur.Kind == yaml.AliasNode || d.aliased[cur]) {
		return loc, fmt.Errorf("%s (line %d): %w", FormatPath(path), d.line(cur), ErrAlias)
	}
	loc.node, loc.depth, loc.flow, loc.indent = cur, len(path), flow, indent
	return loc, nil
}

func (d *document) line(n *yaml.Node) int { return d.sp.line + n.Line - 1 }

// helmKeyOf is the key as Helm sees it: YAML 1.1 reads a plain `on:` as
// the bool true and `0755:` as 493, and sigs.k8s.io/yaml turns such keys into
// the strings "true" and "493". A path names keys as Helm sees them.
func helmKeyOf(k *yaml.Node) (string, bool) {
	if k.Kind != yaml.ScalarNode {
		return "", false
	}
	if k.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle|yaml.LiteralStyle|yaml.FoldedStyle) != 0 {
		return k.Value, true
	}
	if k.Style&yaml.TaggedStyle != 0 && k.Tag != "!!str" {
		return "", false
	}
	if k.Style&yaml.TaggedStyle != 0 || !maybeNotText(k.Value) {
		return k.Value, true
	}
	var m map[string]any
	if err := sigsyaml.Unmarshal([]byte(k.Value+": 0\n"), &m); err != nil || len(m) != 1 {
		return "", false
	}
	for hk := range m {
		return hk, true
	}
	return "", false
}

// maybeNotText is a cheap filter for plain scalars that YAML 1.1 might read
// as something other than a string: numbers, bools, nulls, timestamps.
func maybeNotText(s string) bool {
	if s == "" {
		return true
	}
	switch s[0] {
	case '0', '1', '2', '3', '4', '5', '6', '7', '8', '9', '+', '-', '.', '~':
		return true
	}
	switch strings.ToLower(s) {
	case "y", "n", "yes", "no", "on", "off", "true", "false", "null":
		return true
	}
	return false
}

// plan computes the splices that set path to v in the document. newKey, when
// not empty, names the first key the edit creates.
func (d *document) plan(path []Segment, v any, helm any) ([]splice, string, error) {
	if old, found := lookupValue(helm, path); found && sameValue(old, v) {
		return nil, "", nil
	}
	loc, err := d.locate(path)
	if err != nil {
		return nil, "", err
	}
	if loc.node != nil {
		sp, err := d.replace(loc, path, v)
		return sp, "", err
	}
	sp, err := d.insert(loc, path, v)
	return sp, FormatPath(path[:loc.depth+1]), err
}

// replace swaps the token of an existing node for v.
func (d *document) replace(loc located, path []Segment, v any) ([]splice, error) {
	n := loc.node
	if n.Kind != yaml.ScalarNode {
		if n.Style&yaml.FlowStyle == 0 || len(n.Content) > 0 {
			return nil, fmt.Errorf("line %d: %w", d.line(n), ErrNotScalar)
		}
		return d.replaceEmptyFlow(loc, v)
	}
	e, err := d.scanScalar(n, loc.indent, loc.flow)
	if err != nil {
		return nil, err
	}
	c := renderCtx{oldStyle: n.Style, oldValue: n.Value, flow: loc.flow, parentIndent: loc.indent, nl: d.src.nl}
	c.indent = loc.indent + d.indentStep()
	if e.block && e.contentIndent > loc.indent {
		c.indent = e.contentIndent
	}
	c.noBlock = d.deeperLinesFollow(e.bodyEnd, loc.indent)
	t, err := renderValue(v, c)
	if err != nil {
		return nil, fmt.Errorf("line %d: %w", d.line(n), err)
	}
	inline := t.inline
	start := e.propStart
	if e.end == e.start && e.start > 0 && (d.src.data[e.start-1] == ':' || d.src.data[e.start-1] == '-') {
		// An empty value right after the colon or the dash: `key:` becomes
		// `key: v`, `-` becomes `- v`.
		inline = " " + inline
	}
	if !loc.flow && e.end == e.start && e.start < len(d.src.data) && d.src.data[e.start] == '#' {
		inline += " "
	}
	sp := []splice{{start: start, end: e.end, text: inline}}
	if e.block || t.body != "" {
		sp = append(sp, splice{start: e.eol, end: e.bodyEnd, text: t.body})
	}
	return sp, nil
}

// replaceEmptyFlow replaces a `[]` or `{}` value by a scalar.
func (d *document) replaceEmptyFlow(loc located, v any) ([]splice, error) {
	n := loc.node
	start := d.src.offset(d.sp, n.Line, n.Column)
	end, err := d.flowEnd(n)
	if err != nil {
		return nil, err
	}
	c := renderCtx{flow: loc.flow, parentIndent: loc.indent, indent: loc.indent + d.indentStep(), nl: d.src.nl}
	c.noBlock = d.deeperLinesFollow(lineEnd(d.src.data, end), loc.indent)
	t, err := renderValue(v, c)
	if err != nil {
		return nil, fmt.Errorf("line %d: %w", d.line(n), err)
	}
	sp := []splice{{start: start, end: end, text: t.inline}}
	if t.body != "" {
		eol := lineEnd(d.src.data, end)
		sp = append(sp, splice{start: eol, end: eol, text: t.body})
	}
	return sp, nil
}

// insert adds the missing keys of path under loc.parent.
func (d *document) insert(loc located, path []Segment, v any) ([]splice, error) {
	rest := path[loc.depth:]
	for _, s := range rest {
		if s.IsIndex {
			return nil, fmt.Errorf("%s: %w", FormatPath(path[:loc.depth+1]), ErrListItem)
		}
	}
	p := loc.parent
	step := d.indentStep()
	var at, indent int
	var sp []splice
	switch {
	case p == nil && d.root == nil, p != nil && p == d.root && p.Kind == yaml.ScalarNode && p.Tag == "!!null" && p.Value == "":
		// An empty document (or an empty file): the new keys start at
		// column 0 at its end.
		return d.appendToDocument(rest, v, step)
	case p == nil:
		return nil, fmt.Errorf("the document root is not a mapping: %w", ErrThroughScalar)
	case p.Kind == yaml.SequenceNode:
		return nil, fmt.Errorf("%s (line %d): %w", FormatPath(path[:loc.depth+1]), d.line(p), ErrListItem)
	case p.Kind == yaml.MappingNode && p.Style&yaml.FlowStyle == 0 && len(p.Content) > 0:
		end, err := d.nodeEnd(p, loc.pindent, false)
		if err != nil {
			return nil, err
		}
		at, indent = end, p.Content[0].Column-1
	case loc.flow || (p.Kind == yaml.MappingNode && len(p.Content) > 0):
		return nil, fmt.Errorf("%s (line %d): %w", FormatPath(path[:loc.depth]), d.line(p), ErrFlowInsert)
	case loc.pkey == nil:
		return nil, fmt.Errorf("%s (line %d): an empty value that is not a mapping value: %w", FormatPath(path[:loc.depth]), d.line(p), ErrUnsupported)
	default:
		// `key:`, `key: ~`, `key: null` or `key: {}`: drop the value token,
		// keep the comment, and put the new lines under the key.
		rw, err := d.emptyValueRewrite(loc)
		if err != nil {
			return nil, err
		}
		sp = append(sp, rw)
		at, indent = rw.end, loc.pkey.Column-1+step
	}
	if p != nil && p.Kind == yaml.MappingNode {
		for j := 0; j+1 < len(p.Content); j += 2 {
			if k := p.Content[j]; k.Kind == yaml.ScalarNode && k.Value == rest[0].Key {
				// `on:` is there, but Helm names it "true": a new "on" key
				// would be a duplicate to yaml.v3.
				return nil, fmt.Errorf("%s (line %d): a key %s exists that Helm reads as another key: %w", FormatPath(path[:loc.depth+1]), d.line(k), k.Value, ErrNonStringKey)
			}
		}
	}
	lines, err := d.newKeyLines(rest, v, indent, step, lineEnd(d.src.data, at))
	if err != nil {
		return nil, err
	}
	eol := lineEnd(d.src.data, at)
	if eol < len(d.src.data) || at < eol {
		sp = append(sp, splice{start: eol, end: eol, text: lines, late: true})
		return sp, nil
	}
	// The end of the file: keep a missing final newline missing. An empty
	// document may end with a line break already.
	if eol > 0 && d.src.data[eol-1] == '\n' || eol == 0 {
		lines = strings.TrimPrefix(lines, d.src.nl) + d.src.nl
	}
	sp = append(sp, splice{start: eol, end: eol, text: lines, late: true})
	return sp, nil
}

// deeperLinesFollow says the lines right after the line ending at eol hold
// something (a comment, usually) indented deeper than indent before a line
// that is not: a block scalar written there would take those lines in.
func (d *document) deeperLinesFollow(eol, indent int) bool {
	data := d.src.data
	for ls := nextLine(data, eol); ls < len(data); {
		le := lineEnd(data, ls)
		line := data[ls:le]
		if len(bytes.TrimSpace(line)) > 0 {
			ind := 0
			for ind < len(line) && line[ind] == ' ' {
				ind++
			}
			return ind > indent
		}
		ls = nextLine(data, le)
	}
	return false
}

// newKeyLines writes the lines for keys rest (the last one holding v),
// each starting with a line break, the first at indent.
func (d *document) newKeyLines(rest []Segment, v any, indent, step, after int) (string, error) {
	var b strings.Builder
	for i, s := range rest {
		ind := indent + i*step
		b.WriteString(d.src.nl)
		b.WriteString(strings.Repeat(" ", ind))
		b.WriteString(renderKey(s.Key))
		b.WriteString(":")
		if i < len(rest)-1 {
			continue
		}
		c := renderCtx{parentIndent: ind, indent: ind + step, nl: d.src.nl}
		c.noBlock = d.deeperLinesFollow(after, ind)
		t, err := renderValue(v, c)
		if err != nil {
			return "", err
		}
		b.WriteString(" ")
		b.WriteString(t.inline)
		b.WriteString(t.body)
	}
	return b.String(), nil
}

// appendToDocument adds keys at column 0 at the end of an empty document.
func (d *document) appendToDocument(rest []Segment, v any, step int) ([]splice, error) {
	at := d.sp.end
	lines, err := d.newKeyLines(rest, v, 0, step, len(d.src.data))
	if err != nil {
		return nil, err
	}
	lines = strings.TrimPrefix(lines, d.src.nl) + d.src.nl
	if at > 0 && d.src.data[at-1] != '\n' {
		lines = d.src.nl + lines
	}
	return []splice{{start: at, end: at, text: lines}}, nil
}

// sameKeyForBoth says yaml.v3 reads key k as the text hk that Helm reads,
// so that both readers' trees name the edited path alike.
func sameKeyForBoth(k *yaml.Node, hk string) bool {
	if hk == k.Value && !maybeNotText(k.Value) || k.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle) != 0 {
		return true
	}
	var v any
	if err := k.Decode(&v); err != nil {
		return false
	}
	return fmt.Sprint(v) == hk
}

// emptyValueRewrite turns the line `key: {}` (or `key: ~`, `key: null`,
// `key:`) into `key:` with its comment, returning the splice; its end is the
// offset after which new lines go.
func (d *document) emptyValueRewrite(loc located) (splice, error) {
	p := loc.parent
	data := d.src.data
	var start, end int
	if p.Kind == yaml.ScalarNode {
		e, err := d.scanScalar(p, loc.pindent, false)
		if err != nil {
			return splice{}, err
		}
		if e.block {
			return splice{}, fmt.Errorf("line %d: %w", d.line(p), ErrThroughScalar)
		}
		start, end = d.src.offset(d.sp, p.Line, p.Column), e.end
	} else {
		start = d.src.offset(d.sp, p.Line, p.Column)
		fe, err := d.flowEnd(p)
		if err != nil {
			return splice{}, err
		}
		end = fe
	}
	// Remove the blanks between the colon and the token too.
	for start > 0 && isBlank(data[start-1]) {
		start--
	}
	if start == 0 || data[start-1] != ':' || d.src.lineOf(start) != d.src.lineOf(end) {
		return splice{}, fmt.Errorf("line %d: a value not on its key's line: %w", d.line(p), ErrUnsupported)
	}
	return splice{start: start, end: end, text: ""}, nil
}

// indentStep is the file's indentation unit: how much deeper the first
// nested block mapping is than its parent; 2 when there is none.
func (d *document) indentStep() int {
	var find func(n *yaml.Node) int
	find = func(n *yaml.Node) int {
		if n == nil || n.Kind != yaml.MappingNode || n.Style&yaml.FlowStyle != 0 {
			return 0
		}
		for j := 1; j < len(n.Content); j += 2 {
			c := n.Content[j]
			if c.Kind == yaml.MappingNode && c.Style&yaml.FlowStyle == 0 && len(c.Content) > 0 && c.Column > n.Column {
				return c.Column - n.Column
			}
		}
		for j := 1; j < len(n.Content); j += 2 {
			if s := find(n.Content[j]); s > 0 {
				return s
			}
		}
		return 0
	}
	if s := find(d.root); s > 0 {
		return s
	}
	return 2
}

// renderKey writes a new key plain when both readers read it as that text,
// double-quoted otherwise.
func renderKey(k string) string {
	if plainSafe(k, false) && plainKeyReadsAsText(k) && !strings.Contains(k, ":") {
		return k
	}
	return doubleQuote(k)
}

// plainKeyReadsAsText says a plain scalar reads as the string k in YAML 1.2
// and in YAML 1.1.
func plainKeyReadsAsText(k string) bool {
	v, err := ParseScalar(k)
	if err != nil {
		return false
	}
	if s, ok := v.(string); !ok || s != k {
		return false
	}
	return readsBack(token{inline: k}, k, renderCtx{})
}
