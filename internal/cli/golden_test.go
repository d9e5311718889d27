package cli

import (
	"os"
	"path/filepath"
	"testing"
)

// goldenFile is the absolute path of testdata/golden/name, taken before a
// test changes directory.
func goldenFile(t *testing.T, name string) string {
	t.Helper()
	abs, err := filepath.Abs(filepath.Join("testdata", "golden", name))
	if err != nil {
		t.Fatal(err)
	}
	return abs
}

// compareGolden compares got with the golden file at path; with
// UPDATE_GOLDEN=1 in the environment it rewrites the file instead.
func compareGolden(t *testing.T, path, got string) {
	t.Helper()
	if os.Getenv("UPDATE_GOLDEN") == "1" {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with UPDATE_GOLDEN=1 to create it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs:\n--- got\n%s\n--- want\n%s", filepath.Base(path), got, want)
	}
}
