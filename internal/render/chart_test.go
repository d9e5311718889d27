package render

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLoadRefusesMissingDependency(t *testing.T) {
	// why: a chart rendered without a dependency its Chart.yaml names is
	// not what the GitOps controller renders (helm refuses it too), so
	// the witness must not compare against it.
	files := map[string][]byte{
		"Chart.yaml":        []byte("apiVersion: v2\nname: app\nversion: 1.0.0\ndependencies:\n  - name: common\n    version: 2.x.x\n    repository: oci://registry-1.docker.io/bitnamicharts\n"),
		"templates/cm.yaml": []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\n"),
	}
	_, err := LoadFiles("chart app", files)
	if !errors.Is(err, ErrChart) || !strings.Contains(err.Error(), "dependencies common are named in Chart.yaml but missing in charts/") {
		t.Fatalf("got %v", err)
	}
	files["charts/common/Chart.yaml"] = []byte("apiVersion: v2\nname: common\nversion: 2.1.0\ntype: library\n")
	if _, err := LoadFiles("chart app", files); err != nil {
		t.Fatalf("with the dependency in charts/: %v", err)
	}
}

func TestDefaultCacheDir(t *testing.T) {
	// why: in a container whose root file system is read-only the user's
	// cache folder cannot be made; the chart cache then lives in /tmp.
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	if got := DefaultCacheDir(); !strings.HasPrefix(got, os.Getenv("XDG_CACHE_HOME")) {
		t.Errorf("cache %s, want it in XDG_CACHE_HOME", got)
	}
	// A file where the cache folder would go: no folder can be made
	// under it, by any user.
	blocked := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(blocked, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("XDG_CACHE_HOME", blocked)
	t.Setenv("TMPDIR", t.TempDir())
	if got, want := DefaultCacheDir(), filepath.Join(os.Getenv("TMPDIR"), "backflow", "charts"); got != want {
		t.Errorf("cache %s, want %s", got, want)
	}
}
