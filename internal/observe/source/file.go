package source

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/backflow-dev/backflow/internal/observe"
)

// inDirectory are the extensions read from a directory; a file named
// directly is read whatever its name, its format recognised by content.
var inDirectory = map[string]bool{".yaml": true, ".yml": true, ".json": true, ".jsonl": true}

// LoadPath reads a file, or every .yaml, .yml, .json and .jsonl file under a
// directory (recursively, in lexical order; hidden directories, symlinks and
// other non-regular files are skipped). Each file is named in messages by
// its path and capped at opts.MaxBytes; opts.Name is ignored.
func LoadPath(path string, opts observe.Options) observe.Result {
	info, err := os.Stat(path)
	if err != nil {
		return observe.Result{Errors: []error{observe.Unreadable(fmt.Errorf("reading observations: %w", err))}}
	}
	if !info.IsDir() {
		return loadFile(path, opts)
	}
	var files []string
	var res observe.Result
	err = filepath.WalkDir(path, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			res.Errors = append(res.Errors, observe.Unreadable(fmt.Errorf("reading observations: %w", err)))
			return nil
		}
		if d.IsDir() {
			if p != path && strings.HasPrefix(d.Name(), ".") {
				return filepath.SkipDir
			}
			return nil
		}
		if d.Type().IsRegular() && inDirectory[strings.ToLower(filepath.Ext(p))] {
			files = append(files, p)
		}
		return nil
	})
	if err != nil {
		res.Errors = append(res.Errors, observe.Unreadable(fmt.Errorf("reading observations in %s: %w", path, err)))
	}
	sort.Strings(files)
	for _, f := range files {
		res.Merge(loadFile(f, opts))
	}
	return res
}

func loadFile(path string, opts observe.Options) observe.Result {
	opts.Name = path
	f, err := os.Open(path)
	if err != nil {
		return observe.Result{Errors: []error{observe.Unreadable(fmt.Errorf("reading observations: %w", err))}}
	}
	defer f.Close()
	return observe.Parse(f, opts)
}
