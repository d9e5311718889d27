package checkout

import (
	"fmt"
	"os"

	"github.com/backflow-dev/backflow/internal/repoconfig"
)

// ReadFileError is a values file that could not be read (missing, not a
// file, over the size cap), as opposed to one that does not parse.
type ReadFileError struct {
	Path string
	Err  error
}

func (e *ReadFileError) Error() string { return e.Path + ": " + e.Err.Error() }

func (e *ReadFileError) Unwrap() error { return e.Err }

// ReadValuesFiles reads values files given on the command line, in Helm's
// override order, each at most repoconfig.MaxValuesSize bytes. A file that
// cannot be read is a *ReadFileError; one that does not parse is
// repoconfig.Values's error, naming the file.
func ReadValuesFiles(paths []string) ([]map[string]any, error) {
	var trees []map[string]any
	for _, f := range paths {
		data, err := ReadLimited(f, repoconfig.MaxValuesSize)
		if err != nil {
			return nil, &ReadFileError{Path: f, Err: err}
		}
		t, err := repoconfig.Values(f, data, nil)
		if err != nil {
			return nil, err
		}
		trees = append(trees, t)
	}
	return trees, nil
}

// ReadLimited reads a file of at most limit bytes.
func ReadLimited(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if info.Size() > limit {
		return nil, fmt.Errorf("larger than %d bytes", limit)
	}
	return os.ReadFile(path)
}
