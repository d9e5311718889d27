package repoconfig

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestManifestsOf(t *testing.T) {
	files := []string{"deploy/prod/a.yaml", "deploy/prod/sub/b.yml", "deploy/prod/c.json", "deploy/prod/README.md",
		"deploy/prod/.hidden/d.yaml", "deploy/prod/sub/.e.yaml", "deploy/production/f.yaml", "other.yaml"}
	for _, tc := range []struct {
		why     string
		entries []string
		want    []string
		missing string
	}{
		{"a folder reads every .yaml, .yml and .json below it, hidden entries skipped", []string{"deploy/prod"},
			[]string{"deploy/prod/a.yaml", "deploy/prod/c.json", "deploy/prod/sub/b.yml"}, ""},
		{"a file is itself, and a folder's name is not a prefix of another's", []string{"other.yaml", "deploy/prod/sub"},
			[]string{"deploy/prod/sub/b.yml", "other.yaml"}, ""},
		{"a missing file is named", []string{"deploy/prod/x.yaml"}, nil, "deploy/prod/x.yaml"},
		{"a folder without manifests is named", []string{"deploy/none"}, nil, "deploy/none"},
		{". is the whole repository, hidden entries skipped", []string{"."},
			[]string{"deploy/prod/a.yaml", "deploy/prod/c.json", "deploy/prod/sub/b.yml", "deploy/production/f.yaml", "other.yaml"}, ""},
	} {
		got, missing := ManifestsOf(tc.entries, files)
		if !slices.Equal(got, tc.want) || missing != tc.missing {
			t.Errorf("%s: got %v, missing %q; want %v, %q", tc.why, got, missing, tc.want, tc.missing)
		}
	}
}

func TestListRepoDir(t *testing.T) {
	root := t.TempDir()
	for _, f := range []string{"deploy/a.yaml", "deploy/sub/b.json", "deploy/.git/c.yaml", "deploy/.d.yaml", "deploy/notes.txt"} {
		p := filepath.Join(root, filepath.FromSlash(f))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("{}"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(filepath.Join(root, "deploy/a.yaml"), filepath.Join(root, "deploy/link.yaml")); err != nil {
		t.Fatal(err)
	}
	got, err := ListRepoDir(root, "deploy")
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"deploy/a.yaml", "deploy/sub/b.json"}; !slices.Equal(got, want) {
		t.Errorf("got %v, want %v (hidden entries, symlinks and other files skipped)", got, want)
	}
	if got, err := ListRepoDir(root, "."); err != nil || !slices.Equal(got, []string{"deploy/a.yaml", "deploy/sub/b.json"}) {
		t.Errorf(". lists %v, %v; want the whole repository's manifests", got, err)
	}
	if _, err := ListRepoDir(root, "../x"); err == nil {
		t.Error("a folder outside the repository was listed")
	}
}
