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

// WriteFiles writes files (keyed as ReadFiles keys them) under dir, making
// the folders they need; with ReadFiles it copies a tree into a checkout a
// test may change. It fails the test when a file cannot be written.
func WriteFiles(tb testing.TB, dir string, files map[string]string) {
	tb.Helper()
	for rel, data := range files {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			tb.Fatal(err)
		}
	}
}

// WriteFile writes data to dir/name (a slash-separated path, its folders
// made as needed) and returns the file's path.
func WriteFile(tb testing.TB, dir, name, data string) string {
	tb.Helper()
	WriteFiles(tb, dir, map[string]string{name: data})
	return filepath.Join(dir, filepath.FromSlash(name))
}
