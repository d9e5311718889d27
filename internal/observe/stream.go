package observe

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	yaml "go.yaml.in/yaml/v3"
	"sigs.k8s.io/kustomize/kyaml/kio"

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

// yamlDocuments splits data at document separators with the splitter every
// reader of the project shares: a `---` or `...` line at column 0 always
// ends a document in YAML (even inside a block or quoted scalar), so
// splitting on them before parsing is exact, and a syntax error in one
// document cannot hide the next one. Each document is then read with
// kyaml's kio.ByteReader on its own: read whole, the reader fails the
// stream at the first bad document. Documents of comments only are skipped.
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

// parseYAMLChunk reads one document, chunk, which starts on line startLine
// of the input, with kio: no reader annotations, and a List stays one
// document (kio would otherwise read its items in its place). Lines are
// counted from the start of the input, in the node tree and in errors.
func parseYAMLChunk(chunk []byte, startLine, index int) document {
	doc := document{line: startLine, index: index}
	in, bad := forKio(chunk)
	if bad >= 0 {
		doc.err = &placeError{
			line: startLine + bad,
			msg:  "a line that starts with --- inside a document: kio reads it as a document separator",
		}
		return doc
	}
	r := &kio.ByteReader{Reader: bytes.NewReader(in), OmitReaderAnnotations: true, DisableUnwrapping: true}
	nodes, err := r.Read()
	if err != nil {
		doc.err = chunkError(err, startLine)
		return doc
	}
	switch len(nodes) {
	case 0:
		// kio drops a document that is null (`~`, `null`) or holds
		// nothing; yaml.v3 tells which, and where the null is.
		var n yaml.Node
		if err := yaml.Unmarshal(in, &n); err != nil || n.Kind != yaml.DocumentNode || len(n.Content) != 1 {
			doc.err = errors.New("empty document")
			return doc
		}
		shiftLines(n.Content[0], startLine-1)
		doc.node, doc.line = n.Content[0], n.Content[0].Line
		return doc
	case 1:
	default:
		// The shared splitter leaves one document per chunk.
		doc.err = fmt.Errorf("%d documents where one was expected", len(nodes))
		return doc
	}
	n := nodes[0].YNode()
	shiftLines(n, startLine-1)
	doc.node = n
	doc.line = n.Line
	return doc
}

// forKio returns chunk as kio's reader reads it line for line as YAML
// does, or the 0-based line of a line kio would misread. kio splits its
// input again at every LF followed by `---`, and turns CR LF into LF first:
//   - a lone CR, which breaks a line in YAML as LF does (a scalar reads
//     either as LF), is written LF, or kio would join it with a CR LF after
//     it into one line break;
//   - the line break before the document's `---` line (after comments or
//     directives, which belong to the document) is written as a lone CR,
//     still a line break for YAML but none for kio's splitter, so the
//     directives stay with their document and lines keep their numbers;
//   - any other line that starts with `---` is content to YAML (`---x: 1`,
//     `---#`; the shared splitter split at every separator), which kio would
//     split at or refuse: its line is returned.
//
// A UTF-16 document (yaml.v3 tells it by its byte-order mark) is handed over
// as it is: its bytes hold neither an LF byte before `---` nor CR LF.
func forKio(chunk []byte) ([]byte, int) {
	if bytes.HasPrefix(chunk, []byte("\xfe\xff")) || bytes.HasPrefix(chunk, []byte("\xff\xfe")) {
		return chunk, -1
	}
	in := chunk
	if bytes.IndexByte(chunk, '\r') >= 0 {
		in = slices.Clone(chunk)
		for i := range in {
			if in[i] == '\r' && (i+1 == len(in) || in[i+1] != '\n') {
				in[i] = '\n'
			}
		}
	}
	for from := 0; ; {
		i := bytes.Index(in[from:], []byte("\n---"))
		if i < 0 {
			return in, -1
		}
		at := from + i + 1 // the start of the `---` line
		if rest := in[at+3:]; len(rest) > 0 && rest[0] != ' ' && rest[0] != '\t' && rest[0] != '\r' && rest[0] != '\n' {
			return nil, bytes.Count(in[:at], []byte("\n"))
		}
		brk := at - 1
		if brk > 0 && in[brk-1] == '\r' {
			brk--
		}
		in = slices.Concat(in[:brk], []byte("\r"), in[at:])
		from = brk + 1
	}
}

// chunkError is a YAML reader's error for a chunk that starts on line
// startLine of the input, with lines counted from the start of the input.
func chunkError(err error, startLine int) error {
	line := startLine
	msg := strings.TrimPrefix(err.Error(), "MalformedYAMLError: ")
	// yaml.v3 counts lines from the chunk; count them from the input.
	msg = yamlErrLine.ReplaceAllStringFunc(msg, func(m string) string {
		k, _ := strconv.Atoi(m[len("line "):])
		line = k + startLine - 1
		return "line " + strconv.Itoa(line)
	})
	return &placeError{line: line, msg: msg}
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
		return &yaml.Node{
			Kind: yaml.ScalarNode, Tag: "!!str", Value: t, Style: yaml.DoubleQuotedStyle, Line: line, Column: 1,
		}, nil
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
