package yamlnode

import "bytes"

// Document is one document of a YAML stream: the bytes [Start, End) of the
// stream, where Start is the start of a line, and Line, the 1-based line
// number of Start. Empty marks an explicit document (one opened by `---`)
// that holds nothing but comments: it counts as a document of the stream,
// but has no values.
type Document struct {
	Start, End int
	Line       int
	Empty      bool
}

// utf8BOM is the byte-order mark a file may start with.
var utf8BOM = []byte("\ufeff")

// SplitDocuments finds the documents of a YAML stream without parsing it,
// so that a syntax error in one document cannot hide the next. A line that
// starts with `---` or `...` followed by a blank or the end of the line is
// always a document separator (the YAML spec forbids such lines inside
// content). Directives (`%YAML 1.1`) and comments before a `---` belong to
// the document it starts; a byte-order mark at the start is ignored. A
// stream of only comments and blank lines has no document.
func SplitDocuments(data []byte) []Document {
	var docs []Document
	cur := Document{Start: 0, Line: 1}
	explicit, content := false, false
	closeAt := func(end int) {
		if explicit || content {
			cur.End = end
			cur.Empty = !content
			docs = append(docs, cur)
		}
	}
	lineNo := 0
	for ls := 0; ls < len(data); {
		lineNo++
		le := len(data)
		if i := bytes.IndexByte(data[ls:], '\n'); i >= 0 {
			le = ls + i + 1
		}
		line := data[ls:le]
		if ls == 0 {
			line = bytes.TrimPrefix(line, utf8BOM)
		}
		switch {
		case len(line) > 0 && line[0] == '-' && isSeparator(line, "---"):
			if explicit || content {
				closeAt(ls)
				cur = Document{Start: ls, Line: lineNo}
				content = false
			}
			explicit = true
			rest := bytes.TrimSpace(line[3:])
			if len(rest) > 0 && rest[0] != '#' {
				content = true
			}
		case len(line) > 0 && line[0] == '.' && isSeparator(line, "..."):
			if explicit || content {
				closeAt(le)
				explicit, content = false, false
				cur = Document{Start: le, Line: lineNo + 1}
			}
		case content:
			// Only separators matter until the document ends.
		default:
			t := bytes.TrimSpace(line)
			if len(t) > 0 && t[0] != '#' && !(line[0] == '%' && !explicit) {
				content = true
			}
		}
		ls = le
	}
	closeAt(len(data))
	return docs
}

// isSeparator reports whether line starts with the three-character
// document separator m (`---` or `...`) followed by a blank or the end of
// the line.
func isSeparator(line []byte, m string) bool {
	if !bytes.HasPrefix(line, []byte(m)) {
		return false
	}
	if len(line) == len(m) {
		return true
	}
	switch line[len(m)] {
	case ' ', '\t', '\r', '\n':
		return true
	}
	return false
}
