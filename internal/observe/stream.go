package observe

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strconv"

	yaml "go.yaml.in/yaml/v3"

	"github.com/backflow-dev/backflow/internal/yamlnode"
)

// This file splits an input into documents: a YAML stream (documents
// separated by `---`), or a JSON stream (one value, concatenated values or
// JSON Lines; a top-level array is a list of documents). Every document is
// read into a yaml.Node tree whose lines count from the start of the input,
// so a malformed document can be named by its line and skipped while the
// others are still used.

// maxJSONDepth bounds the nesting of a JSON document; YAML's parser has its
// own bound.
const maxJSONDepth = 256

// document is one document of a stream.
type document struct {
	node  *yaml.Node // nil when err is set
	line  int        // first line, 1-based
	index int        // 0-based position in the stream
	err   error
}

// splitDocuments reads every document of data.
func splitDocuments(data []byte) []document {
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	trimmed := bytes.TrimLeft(data, " \t\r\n")
	if len(trimmed) > 0 && (trimmed[0] == '{' || trimmed[0] == '[') {
		return jsonDocuments(data)
	}
	return yamlDocuments(data)
}

// yamlDocuments splits data at document markers with the splitter every
// reader of the project shares: a `---` or `...` line at column 0 always
// ends a document in YAML (even inside a block or quoted scalar), so
// splitting on them before parsing is exact, and a syntax error in one
// document cannot hide the next one. Documents of comments only are skipped.
func yamlDocuments(data []byte) []document {
	var docs []document
	for _, d := range yamlnode.SplitDocuments(data) {
		if !d.Empty {
			docs = append(docs, parseYAMLChunk(data[d.Start:d.End], d.Line, len(docs)))
		}
	}
	return docs
}

var yamlErrLine = regexp.MustCompile(`line (\d+)`)

func parseYAMLChunk(chunk []byte, startLine, index int) document {
	doc := document{line: startLine, index: index}
	var n yaml.Node
	if err := yaml.Unmarshal(chunk, &n); err != nil {
		// yaml.v3 counts lines from the chunk; count them from the input.
		line := startLine
		msg := yamlErrLine.ReplaceAllStringFunc(err.Error(), func(m string) string {
			k, _ := strconv.Atoi(m[len("line "):])
			line = k + startLine - 1
			return "line " + strconv.Itoa(line)
		})
		doc.err = &placeError{line: line, msg: msg}
		return doc
	}
	shiftLines(&n, startLine-1)
	if n.Kind == yaml.DocumentNode && len(n.Content) == 1 {
		doc.node = n.Content[0]
		doc.line = doc.node.Line
	} else {
		doc.err = errors.New("empty document")
	}
	return doc
}

func shiftLines(n *yaml.Node, by int) {
	n.Line += by
	for _, c := range n.Content {
		shiftLines(c, by)
	}
}

// jsonDocuments reads a stream of JSON values. After a syntax error it
// resumes at the next line that opens a value at column 0, which is where
// the next document of JSON Lines or of concatenated pretty-printed JSON
// starts.
func jsonDocuments(data []byte) []document {
	lines := lineStarts(data)
	var docs []document
	base := 0
	for base < len(data) {
		b := &jsonBuilder{data: data, base: base, lines: lines}
		b.dec = json.NewDecoder(bytes.NewReader(data[base:]))
		b.dec.UseNumber()
		for {
			start := b.skip(int(b.dec.InputOffset()))
			if start >= len(data) {
				return docs
			}
			n, err := b.value(0)
			if err != nil {
				docs = append(docs, document{line: b.lineAt(start), index: len(docs), err: err})
				base = nextColumnZeroValue(data, start+1)
				break
			}
			if n.Kind == yaml.SequenceNode {
				// A top-level array is a list of documents.
				for _, item := range n.Content {
					docs = append(docs, document{node: item, line: item.Line, index: len(docs)})
				}
				continue
			}
			docs = append(docs, document{node: n, line: n.Line, index: len(docs)})
		}
	}
	return docs
}

func nextColumnZeroValue(data []byte, from int) int {
	for i := from; i < len(data); i++ {
		if data[i] == '\n' && i+1 < len(data) && (data[i+1] == '{' || data[i+1] == '[') {
			return i + 1
		}
	}
	return len(data)
}

func lineStarts(data []byte) []int {
	starts := []int{0}
	for i, c := range data {
		if c == '\n' {
			starts = append(starts, i+1)
		}
	}
	return starts
}

// jsonBuilder turns JSON tokens into a yaml.Node tree with lines, so that
// JSON and YAML documents are decoded by the same code.
type jsonBuilder struct {
	dec   *json.Decoder
	data  []byte
	base  int // offset of the decoder's input in data
	lines []int
}

// skip returns the offset in data of the next token after rel, a decoder
// offset: whitespace, commas and colons are not tokens.
func (b *jsonBuilder) skip(rel int) int {
	i := b.base + rel
	for i < len(b.data) {
		switch b.data[i] {
		case ' ', '\t', '\r', '\n', ',', ':':
			i++
			continue
		}
		break
	}
	return i
}

func (b *jsonBuilder) lineAt(off int) int {
	return sort.Search(len(b.lines), func(i int) bool { return b.lines[i] > off })
}

func (b *jsonBuilder) token() (json.Token, int, error) {
	start := b.skip(int(b.dec.InputOffset()))
	tok, err := b.dec.Token()
	if err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			// se.Offset counts from the start of the value for a bad
			// literal, not from the input; a JSON token holds no newline, so
			// the line the token starts on is the line of the error.
			return nil, 0, fmt.Errorf("line %d: %s", b.lineAt(start), se.Error())
		}
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, 0, fmt.Errorf("line %d: unexpected end of JSON input", b.lineAt(len(b.data)))
		}
		return nil, 0, fmt.Errorf("line %d: %w", b.lineAt(start), err)
	}
	return tok, b.lineAt(start), nil
}

func (b *jsonBuilder) value(depth int) (*yaml.Node, error) {
	if depth > maxJSONDepth {
		return nil, fmt.Errorf("nested deeper than %d levels", maxJSONDepth)
	}
	tok, line, err := b.token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			n := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Line: line, Column: 1}
			for b.dec.More() {
				ktok, kline, err := b.token()
				if err != nil {
					return nil, err
				}
				key, _ := ktok.(string)
				n.Content = append(n.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: key, Line: kline, Column: 1})
				v, err := b.value(depth + 1)
				if err != nil {
					return nil, err
				}
				n.Content = append(n.Content, v)
			}
			if _, _, err := b.token(); err != nil { // '}'
				return nil, err
			}
			return n, nil
		case '[':
			n := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq", Line: line, Column: 1}
			for b.dec.More() {
				v, err := b.value(depth + 1)
				if err != nil {
					return nil, err
				}
				n.Content = append(n.Content, v)
			}
			if _, _, err := b.token(); err != nil { // ']'
				return nil, err
			}
			return n, nil
		}
		return nil, fmt.Errorf("line %d: unexpected %q", line, t)
	case string:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: t, Style: yaml.DoubleQuotedStyle, Line: line, Column: 1}, nil
	case json.Number:
		tag := "!!float"
		if _, err := strconv.ParseInt(t.String(), 10, 64); err == nil {
			tag = "!!int"
		} else if _, err := strconv.ParseFloat(t.String(), 64); err != nil {
			return nil, fmt.Errorf("line %d: number %s out of range", line, t)
		}
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: tag, Value: t.String(), Line: line, Column: 1}, nil
	case bool:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: strconv.FormatBool(t), Line: line, Column: 1}, nil
	case nil:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null", Value: "null", Line: line, Column: 1}, nil
	}
	return nil, fmt.Errorf("line %d: unexpected token", line)
}
