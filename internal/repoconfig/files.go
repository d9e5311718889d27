package repoconfig

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	sigsyaml "sigs.k8s.io/yaml"

	"github.com/backflow-dev/backflow/internal/values"
	"github.com/backflow-dev/backflow/internal/yamlnode"
)

// MaxValuesSize caps a values file read by this package.
const MaxValuesSize = 4 << 20

// ErrSymlink is returned for a repository path that is or passes through a
// symlink: backflow reads and writes only files the repository itself holds.
var ErrSymlink = errors.New("is or passes through a symlink")

// Load reads and parses the repo config of the checkout at repoDir. A config
// that cannot be read wraps ErrUnreadable; an invalid one is an *Error.
func Load(repoDir string) (*Config, error) {
	data, err := ReadRepoFile(repoDir, Path, MaxSize)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUnreadable, err)
	}
	return Parse(Path, data)
}

// ReadRepoFile reads the file at rel (a repository path) inside the checkout
// at root, refusing paths that leave the repository, symlinks anywhere on the
// way, anything but a regular file, and files larger than limit bytes.
func ReadRepoFile(root, rel string, limit int64) ([]byte, error) {
	if err := checkRepoPath(rel); err != nil {
		return nil, err
	}
	cur := root
	parts := strings.Split(rel, "/")
	for i, part := range parts {
		cur = filepath.Join(cur, part)
		info, err := os.Lstat(cur)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil, fmt.Errorf("%s: %w", rel, fs.ErrNotExist)
			}
			return nil, fmt.Errorf("%s: %w", rel, err)
		}
		if info.Mode()&fs.ModeSymlink != 0 {
			return nil, fmt.Errorf("%s: %w", rel, ErrSymlink)
		}
		if i < len(parts)-1 && !info.IsDir() {
			return nil, fmt.Errorf("%s: %s is not a directory", rel, strings.Join(parts[:i+1], "/"))
		}
		if i == len(parts)-1 && !info.Mode().IsRegular() {
			return nil, fmt.Errorf("%s: not a regular file", rel)
		}
	}
	f, err := os.Open(cur)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", rel, err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", rel, err)
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("%s: larger than %d bytes", rel, limit)
	}
	return data, nil
}

var useNumber = func(d *json.Decoder) *json.Decoder { d.UseNumber(); return d }

// Values reads the values a unit's values file holds, as Helm reads them
// (YAML 1.1, numbers as json.Number). Without root the file is one values
// document; with root, the values are at root.Path inside the one document
// of the file whose kind and metadata.name are root.Document (Kind/name).
// file names the file in errors. A file (or a document of it) that Helm's
// reader cannot parse is an error for which
// errors.Is(err, yamlnode.ErrUnparseable) holds.
func Values(file string, data []byte, root *ValuesRoot) (map[string]any, error) {
	return ValuesRead(file, data, root, nil)
}

// ValuesRead is Values with Helm's reading of a plain values file taken
// from readings (nil reads afresh), which keeps it for the values editor
// to take when it edits the same bytes.
func ValuesRead(file string, data []byte, root *ValuesRoot, readings *values.Readings) (map[string]any, error) {
	// A values file over the cap is refused before Helm's reader builds the
	// whole tree of it, as ReadRepoFile refuses one on disk.
	if len(data) > MaxValuesSize {
		return nil, fmt.Errorf("%s: larger than %d bytes", file, MaxValuesSize)
	}
	docs := splitYAML(data)
	if root == nil {
		if len(docs) > 1 {
			return nil, fmt.Errorf(
				"%s: %d YAML documents: a values file has one (set valuesRoot for a manifest)",
				file,
				len(docs),
			)
		}
		if len(docs) == 0 {
			return map[string]any{}, nil
		}
		v, err := readings.HelmUnmarshal(docs[0].data)
		if err != nil {
			return nil, notYAML(file, docs[0].line, err)
		}
		switch m := v.(type) {
		case nil:
			return map[string]any{}, nil
		case map[string]any:
			return m, nil
		}
		return nil, fmt.Errorf("%s: values must be a mapping", file)
	}
	found, line, err := manifestDocument(file, docs, root)
	if err != nil {
		return nil, err
	}
	v, ok := Lookup(found, root.Path)
	if !ok {
		return nil, fmt.Errorf("%s:%d: %s has no %s (valuesRoot.path)", file, line, root.Document, root.Path)
	}
	if err := argoOverrides(found, root); err != nil {
		return nil, fmt.Errorf("%s:%d: %s: %w", file, line, root.Document, err)
	}
	m, ok := v.(map[string]any)
	if !ok {
		if v == nil {
			return map[string]any{}, nil
		}
		return nil, fmt.Errorf("%s:%d: %s of %s is not a mapping", file, line, root.Path, root.Document)
	}
	return m, nil
}

// notYAML is the error for a values file, or a document of one, that Helm's
// reader cannot parse at line: errors.Is(err, yamlnode.ErrUnparseable)
// tells it from a file that is YAML but not the values it should hold.
func notYAML(file string, line int, err error) error {
	return fmt.Errorf("%s:%d: %w", file, line, &yamlnode.SyntaxError{Line: line, Err: err})
}

// manifestDocument decodes every document of a manifest as Helm's reader
// does and returns the one document whose kind and metadata.name are
// root.Document, with its line.
func manifestDocument(file string, docs []yamlDoc, root *ValuesRoot) (map[string]any, int, error) {
	kind, name, _ := strings.Cut(root.Document, "/")
	var found map[string]any
	var foundLine int
	for _, d := range docs {
		var m map[string]any
		if err := sigsyaml.Unmarshal(d.data, &m, useNumber); err != nil {
			return nil, 0, notYAML(file, d.line, err)
		}
		md, _ := m["metadata"].(map[string]any)
		if m["kind"] != kind || md == nil || md["name"] != name {
			continue
		}
		if found != nil {
			return nil, 0, fmt.Errorf("%s: two documents are %s (lines %d and %d)", file, root.Document, foundLine, d.line)
		}
		found, foundLine = m, d.line
	}
	if found == nil {
		return nil, 0, fmt.Errorf("%s: no document is %s (valuesRoot.document)", file, root.Document)
	}
	return found, foundLine, nil
}

// argoOverrides refuses an Argo CD Application whose Helm source gives
// values beside valuesObject that backflow does not read: its values string
// (which valuesObject overrides, but which may hold paths valuesObject does
// not) and its parameters and file parameters (which override valuesObject).
// The desired state read without them would not be what Argo CD renders.
func argoOverrides(doc map[string]any, root *ValuesRoot) error {
	segs, err := yamlnode.ParsePath(root.Path)
	if err != nil || len(segs) < 2 || segs[len(segs)-1].Key != "valuesObject" {
		return nil
	}
	parent, _ := yamlnode.Lookup(doc, segs[:len(segs)-1])
	helm, _ := parent.(map[string]any)
	at := yamlnode.FormatPath(segs[:len(segs)-1])
	for _, k := range []string{"values", "parameters", "fileParameters"} {
		switch v := helm[k].(type) {
		case nil:
		case string:
			if strings.TrimSpace(v) != "" {
				return fmt.Errorf(
					"%s.%s is set: backflow reads %s alone, so the desired state would not be what Argo CD renders",
					at,
					k,
					root.Path,
				)
			}
		case []any:
			if len(v) > 0 {
				return fmt.Errorf("%s.%s is set: Argo CD applies them over %s, which backflow reads alone", at, k, root.Path)
			}
		default:
			return fmt.Errorf("%s.%s is set: backflow reads %s alone", at, k, root.Path)
		}
	}
	return nil
}

// OutsideValues reads a manifest that holds a unit's inline values as Helm's
// reader does, every document of it, with the values at root.Path of
// root.Document taken out: what a write-back of those values must leave as
// it was. The file must be a manifest Values reads with root.
func OutsideValues(file string, data []byte, root *ValuesRoot) ([]any, error) {
	if _, err := Values(file, data, root); err != nil {
		return nil, err
	}
	docs := splitYAML(data)
	found, _, err := manifestDocument(file, docs, root)
	if err != nil {
		return nil, err
	}
	segs, err := yamlnode.ParsePath(root.Path)
	if err != nil {
		return nil, fmt.Errorf("%s: valuesRoot.path: %w", file, err)
	}
	parent, ok := yamlnode.Lookup(found, segs[:len(segs)-1])
	if !ok {
		return nil, fmt.Errorf("%s: %s has no %s (valuesRoot.path)", file, root.Document, root.Path)
	}
	switch last := segs[len(segs)-1]; x := parent.(type) {
	case map[string]any:
		delete(x, last.Key)
	case []any:
		x[last.Index] = nil
	}
	out := make([]any, 0, len(docs))
	kind, name, _ := strings.Cut(root.Document, "/")
	for _, d := range docs {
		var v any
		if err := sigsyaml.Unmarshal(d.data, &v, useNumber); err != nil {
			return nil, fmt.Errorf("%s:%d: %v", file, d.line, err)
		}
		if m, ok := v.(map[string]any); ok {
			if md, _ := m["metadata"].(map[string]any); m["kind"] == kind && md != nil && md["name"] == name {
				v = found
			}
		}
		out = append(out, v)
	}
	return out, nil
}

// Lookup follows a value path (Helm's --set syntax) through decoded values.
func Lookup(tree any, path string) (any, bool) {
	segs, err := yamlnode.ParsePath(path)
	if err != nil {
		return nil, false
	}
	return yamlnode.Lookup(tree, segs)
}

type yamlDoc struct {
	data []byte
	line int
}

// splitYAML splits a stream with the splitter every reader of the project
// shares, dropping documents that hold only comments.
func splitYAML(data []byte) []yamlDoc {
	var docs []yamlDoc
	for _, d := range yamlnode.SplitDocuments(data) {
		if !d.Empty {
			docs = append(docs, yamlDoc{data: data[d.Start:d.End], line: d.Line})
		}
	}
	return docs
}
