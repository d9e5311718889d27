package values

import (
	"bytes"
	"fmt"

	"github.com/backflow-dev/backflow/internal/yamlnode"
)

// Get returns the value at path in document opts.Document of data, typed as
// Helm reads it (YAML 1.1): a nil, bool, json.Number, string,
// map[string]any or []any. A path that names nothing is ErrNotFound.
func Get(data []byte, path string, opts Options) (any, error) {
	f, err := Parse(data, opts)
	if err != nil {
		return nil, err
	}
	return f.Get(path)
}

// helmRead reads document index as Helm does, as sigs.k8s.io/yaml would.
// Numbers are json.Number so that large integers stay exact. With
// readings, a reading of the same bytes made before is taken.
func helmRead(src *source, index int, readings *Readings) (any, error) {
	if len(src.docs) == 0 {
		return nil, nil
	}
	sp := src.docs[index]
	return helmReadDoc(src.data[sp.start:sp.end], index, sp.line, true, readings)
}

// helmReadDoc is helmRead of document index's bytes, which start on line;
// a file without documents (exists false) reads as nil.
func helmReadDoc(doc []byte, index, line int, exists bool, readings *Readings) (any, error) {
	if !exists || len(bytes.TrimSpace(doc)) == 0 {
		return nil, nil
	}
	v, err := readings.HelmUnmarshal(doc)
	if err != nil {
		return nil, fmt.Errorf("document %d (line %d): %v: %w", index, line, err, ErrParse)
	}
	return v, nil
}

// lookupValue follows path through a decoded tree; a mapping it returns
// has string keys.
func lookupValue(tree any, path []yamlnode.Segment) (any, bool) {
	v, ok := yamlnode.Lookup(tree, path)
	return normalize(v), ok
}

// ReadDocuments reads every document of data as Helm does, indexed as
// Options.Document counts them (an empty document reads as nil), so a
// caller finds the document to edit by what it holds (a manifest's kind
// and name) and edits it by its index.
func ReadDocuments(data []byte, opts Options) ([]any, error) {
	if err := checkSize(data, opts); err != nil {
		return nil, err
	}
	src := newSource(data)
	out := make([]any, len(src.docs))
	for i := range src.docs {
		v, err := helmRead(src, i, opts.Readings)
		if err != nil {
			return nil, err
		}
		out[i] = v
	}
	return out, nil
}
