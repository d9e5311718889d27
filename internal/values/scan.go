package values

import (
	"fmt"
	"strings"

	yaml "go.yaml.in/yaml/v3"
)

// extent is where a scalar sits in the file. The inline part [start, end)
// holds the token (for a block scalar, its header indicators); a block
// scalar's content lines follow the header line and end at bodyEnd, the end
// of its last content line. For other scalars bodyEnd is the end of the line
// holding end. propStart is where the node's tag begins, or start when the
// node has none.
type extent struct {
	propStart, start, end int
	eol, bodyEnd          int
	block                 bool
	contentIndent         int
}

// scanScalar finds the bytes of scalar node n. parentIndent is the
// indentation of the node's parent (the key's column for a mapping value, the
// dash's for a list item); flow says the node sits in a flow collection.
func (d *document) scanScalar(n *yaml.Node, parentIndent int, flow bool) (extent, error) {
	data := d.src.data
	pos := d.src.offset(d.sp, n.Line, n.Column)
	e := extent{propStart: pos}
	// Skip the node's properties (anchor, tag): the token follows them.
	for pos < len(data) && (data[pos] == '&' || data[pos] == '!') {
		if data[pos] == '!' {
			e.propStart = pos
		}
		for pos < len(data) && !isBlank(data[pos]) && !(flow && isFlowIndicator(data[pos])) {
			pos++
		}
		for pos < len(data) && (data[pos] == ' ' || data[pos] == '\t') {
			pos++
		}
	}
	if n.Style&yaml.TaggedStyle == 0 {
		e.propStart = pos
	}
	e.start = pos
	fail := func(what string) (extent, error) {
		return extent{}, fmt.Errorf("line %d: %s: %w", d.sp.line+n.Line-1, what, ErrUnsupported)
	}
	switch {
	case n.Style&yaml.DoubleQuotedStyle != 0:
		if pos >= len(data) || data[pos] != '"' {
			return fail("a double-quoted scalar not where the parser put it")
		}
		i := pos + 1
		for ; i < len(data) && data[i] != '"'; i++ {
			if data[i] == '\\' {
				i++
			}
		}
		if i >= len(data) {
			return fail("an unterminated double-quoted scalar")
		}
		e.end = i + 1
	case n.Style&yaml.SingleQuotedStyle != 0:
		if pos >= len(data) || data[pos] != '\'' {
			return fail("a single-quoted scalar not where the parser put it")
		}
		i := pos + 1
		for ; i < len(data); i++ {
			if data[i] == '\'' {
				if i+1 < len(data) && data[i+1] == '\'' {
					i++
					continue
				}
				break
			}
		}
		if i >= len(data) {
			return fail("an unterminated single-quoted scalar")
		}
		e.end = i + 1
	case n.Style&(yaml.LiteralStyle|yaml.FoldedStyle) != 0:
		return d.scanBlock(n, e, parentIndent)
	case n.Tag == "!!null" && n.Value == "":
		// An empty value: no token at all.
		e.end = pos
	default:
		end, ok := scanPlain(data, pos, n.Value, flow)
		if !ok {
			return fail("a plain scalar the editor cannot delimit")
		}
		e.end = end
	}
	e.eol = lineEnd(data, e.end)
	e.bodyEnd = e.eol
	return e, nil
}

// scanBlock finds a block scalar's header and content lines. The content is
// every following line that is blank or indented as deep as the text: the
// indentation indicator's, or else the first non-blank line's. A line less
// indented than that (a comment between the parent's column and the text's)
// ends the scalar, as it does for the parser.
func (d *document) scanBlock(n *yaml.Node, e extent, parentIndent int) (extent, error) {
	data := d.src.data
	i := e.start + 1
	keep := false
	textIndent := -1
	for i < len(data) && (data[i] == '+' || data[i] == '-' || (data[i] >= '1' && data[i] <= '9')) {
		switch {
		case data[i] == '+':
			keep = true
		case data[i] >= '1' && data[i] <= '9':
			textIndent = max(parentIndent, 0) + int(data[i]-'0')
		}
		i++
	}
	e.end = i
	e.block = true
	e.eol = lineEnd(data, i)
	e.bodyEnd = e.eol
	e.contentIndent = -1
	ls := nextLine(data, e.eol)
	for ls < len(data) && ls < d.sp.end {
		le := lineEnd(data, ls)
		line := data[ls:le]
		ind := 0
		for ind < len(line) && line[ind] == ' ' {
			ind++
		}
		blank := strings.TrimSpace(string(line)) == ""
		if !blank && (ind <= parentIndent || ind < textIndent) {
			break
		}
		if !blank {
			if e.contentIndent < 0 {
				e.contentIndent = ind
			}
			if textIndent < 0 {
				textIndent = ind
			}
			e.bodyEnd = le
		} else if keep {
			e.bodyEnd = le
		}
		ls = nextLine(data, le)
	}
	return e, nil
}

// scanPlain finds the end of a plain scalar starting at pos whose value is
// value. A one-line scalar ends before a comment or the end of the line; a
// scalar folded over several lines is followed line by line until the folded
// text equals the value.
func scanPlain(data []byte, pos int, value string, flow bool) (int, bool) {
	end := plainLineEnd(data, pos, flow)
	text := string(data[pos:end])
	if text == value {
		return end, true
	}
	if flow || !strings.HasPrefix(value, text) {
		return 0, false
	}
	folded := text
	blanks := 0
	ls := nextLine(data, lineEnd(data, end))
	for ls < len(data) && len(folded) < len(value) {
		le := lineEnd(data, ls)
		t := strings.TrimLeft(string(data[ls:le]), " \t")
		if strings.TrimSpace(t) == "" {
			blanks++
			ls = nextLine(data, le)
			continue
		}
		if t[0] == '#' {
			return 0, false
		}
		start := le - len(t)
		lend := plainLineEnd(data, start, false)
		if blanks > 0 {
			folded += strings.Repeat("\n", blanks)
		} else {
			folded += " "
		}
		folded += string(data[start:lend])
		blanks = 0
		if folded == value {
			return lend, true
		}
		ls = nextLine(data, le)
	}
	return 0, false
}

// plainLineEnd is where a plain scalar's text on this line ends: before ` #`,
// the line break, trailing blanks, and in flow context before `,`, `]`, `}`
// or `: `.
func plainLineEnd(data []byte, pos int, flow bool) int {
	i := pos
	for i < len(data) && data[i] != '\n' && data[i] != '\r' {
		c := data[i]
		if c == '#' && i > pos && isBlank(data[i-1]) {
			break
		}
		if flow {
			if c == ',' || c == ']' || c == '}' || c == '[' || c == '{' {
				break
			}
			if c == ':' &&
				(i+1 >= len(data) || isBlank(data[i+1]) || isFlowIndicator(data[i+1]) || data[i+1] == '\n' || data[i+1] == '\r') {
				break
			}
		}
		i++
	}
	for i > pos && isBlank(data[i-1]) {
		i--
	}
	return i
}

// lineEnd is the offset of the line break (CR of a CRLF) at or after off, or
// the end of the data.
func lineEnd(data []byte, off int) int {
	for i := off; i < len(data); i++ {
		if data[i] == '\n' {
			if i > off && data[i-1] == '\r' {
				return i - 1
			}
			return i
		}
	}
	return len(data)
}

// nextLine is the start of the line after the break at eol.
func nextLine(data []byte, eol int) int {
	if eol < len(data) && data[eol] == '\r' {
		eol++
	}
	if eol < len(data) && data[eol] == '\n' {
		eol++
	}
	return eol
}

func isBlank(c byte) bool { return c == ' ' || c == '\t' }

func isFlowIndicator(c byte) bool {
	return c == ',' || c == '[' || c == ']' || c == '{' || c == '}'
}

// nodeEnd is the offset just past the last byte of node n's text, used to
// place new keys after a mapping's last entry.
func (d *document) nodeEnd(n *yaml.Node, parentIndent int, flow bool) (int, error) {
	switch n.Kind {
	case yaml.ScalarNode:
		e, err := d.scanScalar(n, parentIndent, flow)
		if err != nil {
			return 0, err
		}
		if e.block {
			return e.bodyEnd, nil
		}
		return e.end, nil
	case yaml.AliasNode:
		pos := d.src.offset(d.sp, n.Line, n.Column)
		for pos < len(d.src.data) && !isBlank(d.src.data[pos]) && d.src.data[pos] != '\n' && d.src.data[pos] != '\r' &&
			!(flow && isFlowIndicator(d.src.data[pos])) {
			pos++
		}
		return pos, nil
	case yaml.MappingNode, yaml.SequenceNode:
		if n.Style&yaml.FlowStyle != 0 {
			return d.flowEnd(n)
		}
		if len(n.Content) == 0 {
			return 0, fmt.Errorf("line %d: an empty block collection: %w", d.sp.line+n.Line-1, ErrUnsupported)
		}
		last := n.Content[len(n.Content)-1]
		ind := n.Column - 1
		if n.Kind == yaml.MappingNode {
			ind = n.Content[len(n.Content)-2].Column - 1
		}
		return d.nodeEnd(last, ind, false)
	}
	return 0, fmt.Errorf("line %d: unexpected node: %w", d.sp.line+n.Line-1, ErrUnsupported)
}

// flowEnd finds the bracket that closes flow collection n.
func (d *document) flowEnd(n *yaml.Node) (int, error) {
	data := d.src.data
	pos := d.src.offset(d.sp, n.Line, n.Column)
	for pos < len(data) && data[pos] != '[' && data[pos] != '{' {
		pos++
	}
	depth := 0
	for i := pos; i < len(data); i++ {
		switch data[i] {
		case '[', '{':
			depth++
		case ']', '}':
			depth--
			if depth == 0 {
				return i + 1, nil
			}
		case '"', '\'':
			if !startsToken(data, pos, i) {
				continue
			}
			q := data[i]
			i++
			for i < len(data) && data[i] != q {
				if q == '"' && data[i] == '\\' {
					i++
				}
				if q == '\'' && data[i] == '\'' && i+1 < len(data) && data[i+1] == '\'' {
					i++
				}
				i++
			}
		case '#':
			if isBlank(data[i-1]) || data[i-1] == '\n' {
				i = lineEnd(data, i) - 1
			}
		}
	}
	return 0, fmt.Errorf("line %d: an unclosed flow collection: %w", d.sp.line+n.Line-1, ErrUnsupported)
}

// startsToken says the quote at i opens a quoted scalar: the last non-blank
// byte before it (after the collection's opening bracket at open) is a flow
// indicator or `:`, not part of a plain scalar.
func startsToken(data []byte, open, i int) bool {
	for j := i - 1; j >= open; j-- {
		switch data[j] {
		case ' ', '\t', '\n', '\r':
			continue
		case '[', '{', ',', ':', '?':
			return true
		}
		return false
	}
	return true
}
