package values

import (
	"bytes"
	"slices"
	"strings"
	"sync/atomic"
	"unicode/utf8"

	yaml "go.yaml.in/yaml/v3"

	"github.com/backflow-dev/backflow/internal/yamlnode"
)

// A one-shot edit (Set) reads the file four times: yaml.v3 and Helm's
// reader, of the original and of the output. The output depends on the
// original's yaml.v3 parse (the editor locates the token in its nodes), so
// done in turn two yaml.v3 parses, the slowest of the four, follow each
// other. A speculation finds the token without the parse, by reading the
// lines of the common shape (block mappings, a path of plain keys, a
// scalar on its key's line), splices it with the editor's own replace,
// and starts reading that output while the original is parsed.
//
// Nothing of the result depends on it. The editor then locates and splices
// as always; only if its output is the speculation's, byte for byte, for
// the same paths, does verify take the speculation's readings of those
// bytes, which are what it would have read itself (parseDocument and
// helmRead of the same bytes and document), and make every check it makes
// otherwise. In every other case the speculation is dropped. So Set returns
// the same bytes, changes and errors with and without it.

// speculations counts what speculations came to, for tests and
// measurements: declined (the edits are not of the shape read by lines),
// confirmed (the editor spliced the same output) and missed.
var speculations struct {
	declined, confirmed, missed atomic.Int64
}

// speculation is an edit's output spliced before the original is parsed,
// and the two readers reading it.
type speculation struct {
	out   []byte
	paths [][]yamlnode.Segment
	src   *source // the output
	// The readings of the output, each ready when its channel closes.
	v3Done, helmDone chan struct{}
	after            *document
	v3Err            error
	tree             any
	helmErr          error
	confirmed        bool
}

// setSpeculating is setInTurn with a speculation: the same steps, in the
// same order, with the same errors. The speculation is made on a goroutine
// of its own, which then parses its output with yaml.v3 while Helm's
// reader reads it on another, beside the original's two readers.
func setSpeculating(data []byte, edits []Edit, opts Options) ([]byte, []Change, error) {
	if err := checkSize(data, opts); err != nil {
		return nil, nil, err
	}
	src := newSource(data)
	index, err := src.chooseDocument(opts)
	if err != nil {
		return nil, nil, err
	}
	made := make(chan *speculation, 1)
	go speculate(src, index, edits, made)
	f, err := parseSource(src, index, opts)
	spec := <-made
	if spec == nil {
		speculations.declined.Add(1)
	}
	if err != nil {
		spec.settle()
		return nil, nil, err
	}
	out, _, changes, err := f.setAfresh(edits, spec)
	spec.settle()
	return out, changes, err
}

// settle counts what the speculation came to. Its readers, when it was
// not confirmed, finish on their own (after Set has returned, perhaps) and
// nothing reads what they made.
func (s *speculation) settle() {
	switch {
	case s == nil:
	case s.confirmed:
		speculations.confirmed.Add(1)
	default:
		speculations.missed.Add(1)
	}
}

// confirms says out, spliced for paths, is the speculation's output, whose
// readings verify may then take. A nil speculation confirms nothing.
func (s *speculation) confirms(out []byte, paths [][]yamlnode.Segment) bool {
	if s == nil || !bytes.Equal(out, s.out) || !slices.EqualFunc(paths, s.paths, slices.Equal) {
		return false
	}
	s.confirmed = true
	return true
}

// v3 waits for the yaml.v3 parse of the output.
func (s *speculation) v3() (*document, error) {
	<-s.v3Done
	return s.after, s.v3Err
}

// helm waits for Helm's reading of the output.
func (s *speculation) helm() (any, error) {
	<-s.helmDone
	return s.tree, s.helmErr
}

// speculate splices edits into document index of src where every edit
// replaces a scalar found by reading lines (specLocate), sends the
// speculation on made (nil where any edit is of another shape), and reads
// the output: Helm's reader on a goroutine, yaml.v3 on this one.
func speculate(src *source, index int, edits []Edit, made chan<- *speculation) {
	out, paths, ok := safeSpeculativeOutput(src, index, edits)
	if !ok {
		made <- nil
		return
	}
	osrc := newSource(out)
	if len(osrc.docs) != len(src.docs) {
		made <- nil
		return
	}
	s := &speculation{out: out, paths: paths, src: osrc, v3Done: make(chan struct{}), helmDone: make(chan struct{})}
	made <- s
	go func() {
		defer close(s.helmDone)
		s.tree, s.helmErr = helmRead(osrc, index, nil)
	}()
	defer close(s.v3Done)
	s.after, s.v3Err = parseDocument(osrc, index)
}

// safeSpeculativeOutput is speculativeOutput that declines where the
// splice code, reading a node it did not parse, would panic: the editor's
// own result must not depend on the speculation, nor its failures.
func safeSpeculativeOutput(src *source, index int, edits []Edit) (out []byte, paths [][]yamlnode.Segment, ok bool) {
	defer func() {
		if recover() != nil {
			out, paths, ok = nil, nil, false
		}
	}()
	return speculativeOutput(src, index, edits)
}

// speculativeOutput is the output of edits on document index of src, and
// their paths, where every edit replaces a scalar specLocate finds.
func speculativeOutput(src *source, index int, edits []Edit) ([]byte, [][]yamlnode.Segment, bool) {
	if len(edits) == 0 || len(src.docs) == 0 || bytes.HasPrefix(src.data, utf8BOM) {
		return nil, nil, false
	}
	d := &document{src: src, sp: src.docs[index]}
	paths := make([][]yamlnode.Segment, len(edits))
	var all []splice
	for i, e := range edits {
		if s, ok := e.Value.(string); ok && strings.ContainsAny(s, "\r\n") {
			// A block scalar's indentation comes from the parsed tree.
			return nil, nil, false
		}
		p, err := parseEditPath(e.Path)
		if err != nil || len(p) == 0 {
			return nil, nil, false
		}
		for _, s := range p {
			if s.IsIndex || s.AnyIndex || !plainPathKey(s.Key) {
				return nil, nil, false
			}
		}
		paths[i] = p
		loc, ok := specLocate(d, p)
		if !ok {
			return nil, nil, false
		}
		sp, err := d.replace(loc, e.Value)
		if err != nil {
			return nil, nil, false
		}
		for _, s := range sp {
			s.order = len(all)
			all = append(all, s)
		}
	}
	if !independent(paths) || !orderSplices(all) {
		return nil, nil, false
	}
	return applySplices(src.data, all), paths, true
}

// plainPathKey says key is written plain as a mapping key and read as its
// text by both readers: no indicator first, no `:` or `#` that could end
// it, no blanks around it, nothing YAML 1.1 reads as another type.
func plainPathKey(key string) bool {
	if key == "" || key == "<<" || maybeNotText(key) || strings.TrimSpace(key) != key {
		return false
	}
	if strings.ContainsRune("-?:,[]{}#&*!|>'\"%@`", rune(key[0])) {
		return false
	}
	return !strings.ContainsAny(key, ":#\t\r\n")
}

// specLocate finds the scalar at path (plain keys) by reading the lines of
// document d: each key at the start of a line, at its mapping's
// indentation, each mapping on the lines after its key, deeper than the
// key, and the scalar a plain or quoted token without escapes on the last
// key's line, followed by nothing deeper. The node it returns carries what
// replace reads: the token's line, column, style and value. ok is false
// where the lines are of any other shape. It takes the first key that
// matches: a key given twice, which the editor refuses, only makes a
// speculation that is not confirmed.
func specLocate(d *document, path []yamlnode.Segment) (located, bool) {
	src := d.src
	data := src.data
	lo, hi := d.sp.line-1, len(src.lineStarts) // line indexes
	parent := -1                               // the indentation of the key whose mapping is searched
	for i, seg := range path {
		indent, at := -1, -1
	lines:
		for li := lo; li < hi; li++ {
			ls, le := src.lineBounds(li)
			if ls >= d.sp.end {
				break
			}
			n, kind := lineShape(data, ls, le)
			switch {
			case kind == lineOther:
				return located{}, false
			case kind == lineSkip:
			case n <= parent:
				break lines // the mapping ends
			case indent < 0:
				indent = n
				fallthrough
			default:
				if n < indent {
					return located{}, false
				}
				if n == indent && keyAt(data[ls+n:le], seg.Key) {
					at = li
					break lines
				}
			}
		}
		if at < 0 {
			return located{}, false
		}
		ls, le := src.lineBounds(at)
		pos := ls + indent + len(seg.Key) + 1
		for pos < le && isBlank(data[pos]) {
			pos++
		}
		if i < len(path)-1 {
			// A mapping below: nothing but a comment after the colon.
			if pos < le && data[pos] != '#' {
				return located{}, false
			}
			lo, parent = at+1, indent
			continue
		}
		n, ok := tokenAt(data, pos, le)
		if !ok || deeperLineFollows(d, at+1, indent) {
			return located{}, false
		}
		n.Line = at + 1 - d.sp.line + 1
		n.Column = utf8.RuneCount(data[ls:pos]) + 1
		return located{node: n, indent: indent, depth: len(path)}, true
	}
	return located{}, false
}

// lineBounds is where line li (from 0) starts and where its line break
// starts (as lineEnd finds it).
func (s *source) lineBounds(li int) (int, int) {
	ls, le := s.lineStarts[li], len(s.data)
	if li+1 < len(s.lineStarts) {
		le = s.lineStarts[li+1] - 1 // the \n
		if le > ls && s.data[le-1] == '\r' {
			le--
		}
	}
	return ls, le
}

// The shapes of a line specLocate reads.
const (
	lineContent = iota // indentation, then something other than a comment
	lineSkip           // blank, a comment, or a bare document separator
	lineOther          // a tab in the indentation, a separator with content
)

// lineShape is the indentation of the line [ls, le) and its shape.
func lineShape(data []byte, ls, le int) (int, int) {
	n := 0
	for ls+n < le && data[ls+n] == ' ' {
		n++
	}
	if ls+n == le || data[ls+n] == '#' {
		return n, lineSkip
	}
	rest := data[ls+n : le]
	switch {
	case rest[0] == '\t' || rest[0] == '\r':
		if len(bytes.TrimSpace(rest)) == 0 {
			return n, lineSkip
		}
		return n, lineOther
	case n == 0 && (bytes.HasPrefix(rest, []byte("---")) || bytes.HasPrefix(rest, []byte("..."))):
		if len(bytes.TrimSpace(rest)) == 3 {
			return n, lineSkip
		}
		return n, lineOther
	case n == 0 && rest[0] == '%':
		return n, lineSkip
	}
	return n, lineContent
}

// keyAt says line (from its first non-blank byte) starts with the plain
// key and its colon.
func keyAt(line []byte, key string) bool {
	if len(line) <= len(key) || string(line[:len(key)]) != key || line[len(key)] != ':' {
		return false
	}
	rest := line[len(key)+1:]
	return len(rest) == 0 || isBlank(rest[0])
}

// tokenAt reads the scalar token at pos on a line ending at le: a plain
// scalar, or a quoted one without escapes, followed by blanks and perhaps
// a comment. It returns the node as yaml.v3 would give its style and value.
func tokenAt(data []byte, pos, le int) (*yaml.Node, bool) {
	if pos >= le {
		return nil, false // an empty value, or a mapping or list below
	}
	n := &yaml.Node{Kind: yaml.ScalarNode}
	var end int
	switch c := data[pos]; {
	case c == '"' || c == '\'':
		j := bytes.IndexByte(data[pos+1:le], c)
		if j < 0 {
			return nil, false
		}
		end = pos + 1 + j + 1
		n.Value = string(data[pos+1 : end-1])
		if c == '"' {
			n.Style = yaml.DoubleQuotedStyle
			if strings.ContainsRune(n.Value, '\\') {
				return nil, false
			}
		} else {
			n.Style = yaml.SingleQuotedStyle
			if end < le && data[end] == '\'' {
				return nil, false // '' is an escaped quote
			}
		}
	case strings.ContainsRune("[]{}#&*!|>%@`,", rune(c)):
		return nil, false
	default:
		end = plainLineEnd(data, pos, false)
		n.Value = string(data[pos:end])
		if (c == '-' || c == '?' || c == ':') && (len(n.Value) == 1 || isBlank(n.Value[1])) {
			return nil, false
		}
		if strings.Contains(n.Value, ": ") || strings.HasSuffix(n.Value, ":") || strings.ContainsRune(n.Value, '\t') {
			return nil, false
		}
	}
	for end < le && isBlank(data[end]) {
		end++
	}
	if end < le && (data[end] != '#' || !isBlank(data[end-1])) {
		return nil, false
	}
	return n, true
}

// deeperLineFollows says a line from line index li to the end of the
// document, before the next one indented no deeper than indent, holds
// something other than a comment: the scalar would go on there, or the
// lines be something the editor must parse.
func deeperLineFollows(d *document, li, indent int) bool {
	for ; li < len(d.src.lineStarts); li++ {
		ls, le := d.src.lineBounds(li)
		if ls >= d.sp.end {
			break
		}
		n, kind := lineShape(d.src.data, ls, le)
		switch {
		case kind == lineOther:
			return true
		case kind == lineContent:
			return n > indent
		}
	}
	return false
}
