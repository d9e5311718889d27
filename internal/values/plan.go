package values

import (
	"bytes"
	"fmt"
	"strings"

	yaml "go.yaml.in/yaml/v3"

	"github.com/backflow-dev/backflow/internal/yamlnode"
)

// plan computes the splices that set path to v in the document. newKey, when
// not empty, names the first key the edit creates.
func (d *document) plan(path []yamlnode.Segment, v any, helm any) ([]splice, string, error) {
	if old, found := lookupValue(helm, path); found && sameValue(old, v) {
		return nil, "", nil
	}
	loc, err := d.locate(path)
	if err != nil {
		return nil, "", err
	}
	if loc.node != nil {
		sp, err := d.replace(loc, v)
		return sp, "", err
	}
	sp, err := d.insert(loc, path, v)
	return sp, yamlnode.FormatPath(path[:loc.depth+1]), err
}

// replace swaps the token of an existing node for v.
func (d *document) replace(loc located, v any) ([]splice, error) {
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
func (d *document) insert(loc located, path []yamlnode.Segment, v any) ([]splice, error) {
	rest := path[loc.depth:]
	for _, s := range rest {
		if s.IsIndex {
			return nil, fmt.Errorf("%s: %w", yamlnode.FormatPath(path[:loc.depth+1]), ErrListItem)
		}
	}
	p := loc.parent
	step := d.indentStep()
	var at, indent int
	var sp []splice
	switch {
	case p == nil && d.root == nil,
		p != nil && p == d.root && p.Kind == yaml.ScalarNode && p.Tag == "!!null" && p.Value == "":
		// An empty document (or an empty file): the new keys start at
		// column 0 at its end.
		return d.appendToDocument(rest, v, step)
	case p == d.root && (p.Kind == yaml.MappingNode && p.Style&yaml.FlowStyle != 0 && len(p.Content) == 0 ||
		p.Kind == yaml.ScalarNode && p.Tag == "!!null"):
		// A document that is only `{}` or `~`: the keys replace it.
		return d.replaceEmptyRoot(rest, v, step)
	case p == nil:
		return nil, fmt.Errorf("the document root is not a mapping: %w", ErrThroughScalar)
	case p.Kind == yaml.SequenceNode:
		return nil, fmt.Errorf("%s (line %d): %w", yamlnode.FormatPath(path[:loc.depth+1]), d.line(p), ErrListItem)
	case p.Kind == yaml.MappingNode && p.Style&yaml.FlowStyle == 0 && len(p.Content) > 0:
		end, err := d.nodeEnd(p, loc.pindent, false)
		if err != nil {
			return nil, err
		}
		at, indent = end, p.Content[0].Column-1
	case loc.flow || (p.Kind == yaml.MappingNode && len(p.Content) > 0):
		return nil, fmt.Errorf("%s (line %d): %w", yamlnode.FormatPath(path[:loc.depth]), d.line(p), ErrFlowInsert)
	case loc.pkey == nil:
		return nil, fmt.Errorf(
			"%s (line %d): an empty value that is not a mapping value: %w",
			yamlnode.FormatPath(path[:loc.depth]),
			d.line(p),
			ErrUnsupported,
		)
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
				return nil, fmt.Errorf(
					"%s (line %d): a key %s exists that Helm reads as another key: %w",
					yamlnode.FormatPath(path[:loc.depth+1]),
					d.line(k),
					k.Value,
					ErrNonStringKey,
				)
			}
		}
	}
	lines, err := d.newKeyLines(rest, v, indent, step, lineEnd(d.src.data, at))
	if err != nil {
		return nil, err
	}
	eol := lineEnd(d.src.data, at)
	if eol < len(d.src.data) || at < eol {
		sp = append(sp, splice{start: eol, end: eol, text: lines, late: true, indent: indent})
		return sp, nil
	}
	// The end of the file: keep a missing final newline missing. An empty
	// document may end with a line break already.
	if eol > 0 && d.src.data[eol-1] == '\n' || eol == 0 {
		lines = strings.TrimPrefix(lines, d.src.nl) + d.src.nl
	}
	sp = append(sp, splice{start: eol, end: eol, text: lines, late: true, indent: indent})
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
func (d *document) newKeyLines(rest []yamlnode.Segment, v any, indent, step, after int) (string, error) {
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
func (d *document) appendToDocument(rest []yamlnode.Segment, v any, step int) ([]splice, error) {
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

// replaceEmptyRoot puts new keys at column 0 in place of a document root
// that is `{}` or `~`. Alone on its line, the token is replaced by the new
// lines; otherwise (after `---`, before a comment) it is removed and the new
// lines follow that line.
func (d *document) replaceEmptyRoot(rest []yamlnode.Segment, v any, step int) ([]splice, error) {
	p := d.root
	data := d.src.data
	start := d.src.offset(d.sp, p.Line, p.Column)
	var end int
	if p.Kind == yaml.ScalarNode {
		e, err := d.scanScalar(p, -1, false)
		if err != nil {
			return nil, err
		}
		start, end = e.propStart, e.end
	} else {
		fe, err := d.flowEnd(p)
		if err != nil {
			return nil, err
		}
		end = fe
	}
	ls := d.src.lineStarts[d.src.lineOf(start)-1]
	le := lineEnd(data, end)
	for start > ls && isBlank(data[start-1]) {
		start--
	}
	after := end
	for after < le && isBlank(data[after]) {
		after++
	}
	lines, err := d.newKeyLines(rest, v, 0, step, le)
	if err != nil {
		return nil, err
	}
	if start == ls && after == le {
		return []splice{{start: ls, end: le, text: strings.TrimPrefix(lines, d.src.nl)}}, nil
	}
	if start == ls {
		end = after // `{} # c` keeps `# c` at column 0
	}
	return []splice{{start: start, end: end, text: ""}, {start: le, end: le, text: lines, late: true}}, nil
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
// double-quoted otherwise. A plain `<<` is a merge key, not the text.
func renderKey(k string) string {
	if k != "<<" && plainSafe(k, false) && plainKeyReadsAsText(k) && !strings.Contains(k, ":") {
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
