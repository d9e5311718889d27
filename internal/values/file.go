package values

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"unicode/utf8"

	"github.com/backflow-dev/backflow/internal/yamlnode"
	yaml "go.yaml.in/yaml/v3"
)

// DefaultMaxBytes is the size cap applied when Options.MaxBytes is zero:
// values files are kilobytes; megabytes of YAML are a mistake or an attack.
const DefaultMaxBytes = 4 << 20

// maxExpandedNodes bounds the node count after alias expansion, so that a
// small file cannot make the YAML 1.1 reader build an enormous tree.
const maxExpandedNodes = 1_000_000

// Options choose the document and bound the work.
type Options struct {
	// Document is the index (from 0) of the document to read or edit. Nil
	// chooses the only document; with several documents nil is refused.
	Document *int
	// MaxBytes caps the file size; zero means DefaultMaxBytes.
	MaxBytes int
	// Root is the path (Helm syntax) of a values mapping inside the
	// document, such as a HelmRelease's spec.values: paths are read below
	// it. Empty means the document is the values.
	Root string
	// Inline finds the root itself: the document must be a Flux
	// HelmRelease (spec.values) or an Argo CD Application
	// (spec.source.helm.valuesObject); with several, Document chooses.
	Inline bool
	// Readings, when not nil, supplies Helm's reading of the original
	// document where one was already made of exactly the same bytes, and
	// keeps the one Parse makes. It also remembers each verified edit of
	// the File, which the same edits of the same bytes then return without
	// verifying again; otherwise the edited bytes are read afresh.
	Readings *Readings
}

// span is one document's bytes: [start, end) of the file, starting at a line
// start; line is the 1-based line number of start.
type span struct {
	start, end int
	line       int
}

// source is a file split into lines and documents.
type source struct {
	data       []byte
	lineStarts []int
	docs       []span
	nl         string
}

func newSource(data []byte) *source {
	s := &source{data: data, nl: "\n"}
	if bytes.Contains(data, []byte("\r\n")) {
		s.nl = "\r\n"
	}
	s.lineStarts = make([]int, 1, bytes.Count(data, []byte("\n"))+1)
	for i := 0; ; {
		j := bytes.IndexByte(data[i:], '\n')
		if j < 0 {
			break
		}
		i += j + 1
		s.lineStarts = append(s.lineStarts, i)
	}
	s.docs = splitDocuments(data)
	return s
}

// splitDocuments finds the documents of a YAML stream with the splitter
// every reader of the project shares, so that the editor and the planner
// count the same documents. An explicit document of comments only counts.
func splitDocuments(data []byte) []span {
	var docs []span
	for _, d := range yamlnode.SplitDocuments(data) {
		docs = append(docs, span{start: d.Start, end: d.End, line: d.Line})
	}
	return docs
}

// offset converts a node position of document d (1-based line and column,
// the column counting runes) to a byte offset in the file.
func (s *source) offset(d span, line, col int) int {
	li := d.line - 1 + line - 1
	if li >= len(s.lineStarts) {
		return len(s.data)
	}
	off := s.lineStarts[li]
	if li == 0 && bytes.HasPrefix(s.data, utf8BOM) {
		// The parser reads a byte-order mark as no column at all.
		off += len(utf8BOM)
	}
	for c := 1; c < col && off < len(s.data); c++ {
		_, n := utf8.DecodeRune(s.data[off:])
		off += n
	}
	return off
}

// utf8BOM is the byte-order mark a file may start with.
var utf8BOM = []byte("\ufeff")

// lineOf is the 1-based line number of a byte offset.
func (s *source) lineOf(off int) int {
	lo, hi := 0, len(s.lineStarts)-1
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if s.lineStarts[mid] <= off {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return lo + 1
}

// chooseDocument applies Options.Document to the file's documents.
func (s *source) chooseDocument(opts Options) (int, error) {
	if opts.Document != nil {
		n := *opts.Document
		if n < 0 || n >= len(s.docs) {
			return 0, fmt.Errorf("document %d: the file has %d: %w", n, len(s.docs), ErrDocument)
		}
		return n, nil
	}
	switch len(s.docs) {
	case 0, 1:
		return 0, nil
	}
	return 0, fmt.Errorf("the file has %d documents; choose one by index: %w", len(s.docs), ErrDocument)
}

// document is one parsed document of a source.
type document struct {
	src  *source
	sp   span
	root *yaml.Node // the document's content node; nil for an empty document
	// aliased holds the anchored nodes that some alias refers to: editing
	// them or anything under them would change the aliases too.
	aliased map[*yaml.Node]bool
}

func checkSize(data []byte, opts Options) error {
	limit := opts.MaxBytes
	if limit == 0 {
		limit = DefaultMaxBytes
	}
	if len(data) > limit {
		return fmt.Errorf("%d bytes, cap %d: %w", len(data), limit, ErrTooLarge)
	}
	return nil
}

// parseDocument parses document index of s with the yaml.v3 node API.
func parseDocument(s *source, index int) (*document, error) {
	d := &document{src: s, aliased: map[*yaml.Node]bool{}}
	if len(s.docs) == 0 {
		d.sp = span{start: len(s.data), end: len(s.data), line: len(s.lineStarts)}
		// An empty file or one of comments only: still check it parses.
		var n yaml.Node
		if err := yaml.Unmarshal(s.data, &n); err != nil {
			return nil, fmt.Errorf("%v: %w", err, ErrParse)
		}
		return d, nil
	}
	d.sp = s.docs[index]
	n, err := parseNode(s.data[d.sp.start:d.sp.end])
	if err != nil {
		if errors.Is(err, errMoreDocuments) {
			return nil, fmt.Errorf(
				"document %d (line %d): document markers the editor cannot split: %w",
				index,
				d.sp.line,
				ErrUnsupported,
			)
		}
		return nil, fmt.Errorf("document %d (line %d): %v: %w", index, d.sp.line, shiftLines(err, d.sp.line), ErrParse)
	}
	if n == nil {
		return d, nil
	}
	if len(n.Content) > 0 {
		d.root = n.Content[0]
	}
	if err := d.checkAliases(); err != nil {
		return nil, err
	}
	return d, nil
}

// errMoreDocuments is a span the splitter took for one document in which
// yaml.v3 finds more.
var errMoreDocuments = errors.New("more than one document")

// parseNode parses one document's bytes with yaml.v3 into its document
// node; nil when the bytes hold no document. yaml.Unmarshal reads the
// first document of its input only, so where a separator could start another
// one (`---`, `...` or a directive at the start of a line after the first,
// or a line break other than LF and CRLF) the bytes are read with a
// Decoder, which finds the next; elsewhere there is none to find, and
// Unmarshal reads the bytes in place, without a reader in between.
func parseNode(b []byte) (*yaml.Node, error) {
	if !mayHoldMoreDocuments(b) {
		var n yaml.Node
		if err := yaml.Unmarshal(b, &n); err != nil {
			return nil, err
		}
		if n.Kind == 0 {
			return nil, nil
		}
		return &n, nil
	}
	return decodeOne(b)
}

// decodeOne parses b with a Decoder, which also finds a second document
// (errMoreDocuments): nil for a stream of no document.
func decodeOne(b []byte) (*yaml.Node, error) {
	dec := yaml.NewDecoder(bytes.NewReader(b))
	var n yaml.Node
	if err := dec.Decode(&n); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, nil
		}
		return nil, err
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		return nil, errMoreDocuments
	}
	return &n, nil
}

// mayHoldMoreDocuments says b has a line after its first that starts as a
// document separator or a directive does, or a line break that is not LF or
// CRLF (a lone CR, NEL, LS, PS), after which the same could start.
func mayHoldMoreDocuments(b []byte) bool {
	starts := [][]byte{
		[]byte("\n---"), []byte("\n..."), []byte("\n%"), []byte("\u0085"), []byte("\u2028"), []byte("\u2029"),
	}
	for _, m := range starts {
		if bytes.Contains(b, m) {
			return true
		}
	}
	for rest := b; ; {
		i := bytes.IndexByte(rest, '\r')
		if i < 0 {
			return false
		}
		if i+1 == len(rest) || rest[i+1] != '\n' {
			return true
		}
		rest = rest[i+2:]
	}
}

// shiftLines keeps a parser error readable when the document does not start
// on line 1: it says which line the document starts on.
func shiftLines(err error, firstLine int) string {
	if firstLine == 1 {
		return err.Error()
	}
	return fmt.Sprintf("%v (lines counted from the document's first line)", err)
}

// checkAliases records which anchors aliases reuse and refuses documents
// whose aliases expand to more nodes than maxExpandedNodes.
func (d *document) checkAliases() error {
	if d.root == nil || !hasAlias(d.root) {
		// Without aliases nothing expands and no anchor is reused.
		return nil
	}
	memo := map[*yaml.Node]int{}
	busy := map[*yaml.Node]bool{}
	var size func(n *yaml.Node) (int, error)
	size = func(n *yaml.Node) (int, error) {
		if v, ok := memo[n]; ok {
			return v, nil
		}
		if busy[n] {
			return 0, fmt.Errorf("line %d: an alias refers to its own anchor: %w", n.Line, ErrAliasBomb)
		}
		busy[n] = true
		defer delete(busy, n)
		total := 1
		if n.Kind == yaml.AliasNode && n.Alias != nil {
			d.aliased[n.Alias] = true
			v, err := size(n.Alias)
			if err != nil {
				return 0, err
			}
			total += v
		}
		for _, c := range n.Content {
			v, err := size(c)
			if err != nil {
				return 0, err
			}
			total += v
			if total > maxExpandedNodes {
				return 0, fmt.Errorf("more than %d nodes after alias expansion: %w", maxExpandedNodes, ErrAliasBomb)
			}
		}
		memo[n] = total
		return total, nil
	}
	_, err := size(d.root)
	return err
}

// hasAlias says whether an alias occurs under n: most values files have
// none, and then checkAliases has nothing to count.
func hasAlias(n *yaml.Node) bool {
	if n.Kind == yaml.AliasNode {
		return true
	}
	for _, c := range n.Content {
		if hasAlias(c) {
			return true
		}
	}
	return false
}
