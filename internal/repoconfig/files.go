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
// way, anything but a regular file, and files larger than max bytes.
func ReadRepoFile(root, rel string, max int64) ([]byte, error) {
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
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", rel, err)
	}
	if int64(len(data)) > max {
		return nil, fmt.Errorf("%s: larger than %d bytes", rel, max)
	}
	return data, nil
}

var useNumber = func(d *json.Decoder) *json.Decoder { d.UseNumber(); return d }

// Values reads the values a unit's values file holds, as Helm reads them
// (YAML 1.1, numbers as json.Number). Without root the file is one values
// document; with root, the values are at root.Path inside the one document
// of the file whose kind and metadata.name are root.Document (Kind/name).
// file names the file in errors.
func Values(file string, data []byte, root *ValuesRoot) (map[string]any, error) {
	// A values file over the cap is refused before Helm's reader builds the
	// whole tree of it, as ReadRepoFile refuses one on disk.
	if len(data) > MaxValuesSize {
		return nil, fmt.Errorf("%s: larger than %d bytes", file, MaxValuesSize)
	}
	docs := splitYAML(data)
	if root == nil {
		if len(docs) > 1 {
			return nil, fmt.Errorf("%s: %d YAML documents: a values file has one (set valuesRoot for a manifest)", file, len(docs))
		}
		if len(docs) == 0 {
			return map[string]any{}, nil
		}
		var v any
		if err := sigsyaml.Unmarshal(docs[0].data, &v, useNumber); err != nil {
			return nil, fmt.Errorf("%s:%d: %v", file, docs[0].line, err)
		}
		switch m := v.(type) {
		case nil:
			return map[string]any{}, nil
		case map[string]any:
			return m, nil
		}
		return nil, fmt.Errorf("%s: values must be a mapping", file)
	}
	kind, name, _ := strings.Cut(root.Document, "/")
	var found map[string]any
	var foundLine int
	for _, d := range docs {
		var m map[string]any
		if err := sigsyaml.Unmarshal(d.data, &m, useNumber); err != nil {
			return nil, fmt.Errorf("%s:%d: %v", file, d.line, err)
		}
		md, _ := m["metadata"].(map[string]any)
		if m["kind"] != kind || md == nil || md["name"] != name {
			continue
		}
		if found != nil {
			return nil, fmt.Errorf("%s: two documents are %s (lines %d and %d)", file, root.Document, foundLine, d.line)
		}
		found, foundLine = m, d.line
	}
	if found == nil {
		return nil, fmt.Errorf("%s: no document is %s (valuesRoot.document)", file, root.Document)
	}
	v, ok := Lookup(found, root.Path)
	if !ok {
		return nil, fmt.Errorf("%s:%d: %s has no %s (valuesRoot.path)", file, foundLine, root.Document, root.Path)
	}
	m, ok := v.(map[string]any)
	if !ok {
		if v == nil {
			return map[string]any{}, nil
		}
		return nil, fmt.Errorf("%s:%d: %s of %s is not a mapping", file, foundLine, root.Path, root.Document)
	}
	return m, nil
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
