package forgetest

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// ReadFiles reads every file under dir into a map keyed by its slash-separated
// path relative to dir: the shape localhub.RepoOptions.Files takes.
// It fails the test when the folder cannot be read.
func ReadFiles(tb testing.TB, dir string) map[string]string {
	tb.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		out[filepath.ToSlash(rel)] = string(data)
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
	return out
}
