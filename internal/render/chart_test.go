package render

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/backflow-dev/backflow/internal/render/charttest"
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

// tgz packs files under the folder top, as helm package does.
func tgz(t testing.TB, top string, files map[string][]byte) []byte {
	return charttest.Package(t, top, files)
}

func chartYAML(name string) []byte {
	return []byte("apiVersion: v2\nname: " + name + "\nversion: 1.0.0\n")
}

func TestLoadBoundsArchivesUnpacked(t *testing.T) {
	zeros := make([]byte, 20<<20)
	sub := func(name string, extra map[string][]byte) []byte {
		files := map[string][]byte{"Chart.yaml": chartYAML(name)}
		maps.Copy(files, extra)
		return tgz(t, name, files)
	}
	bomb := map[string][]byte{"Chart.yaml": chartYAML("bomb")}
	for _, n := range []string{"a", "b", "c", "d", "e"} {
		bomb["charts/"+n+".tgz"] = sub(n, map[string][]byte{"files/zeros": zeros})
	}
	nested := map[string][]byte{
		"Chart.yaml": chartYAML("nested"),
		"charts/outer.tgz": sub("outer", map[string][]byte{
			"charts/inner.tgz": sub("inner", map[string][]byte{"files/zeros": make([]byte, 80<<20)}),
		}),
	}
	many := map[string][]byte{"Chart.yaml": chartYAML("many")}
	entries := map[string][]byte{"Chart.yaml": chartYAML("entries")}
	for i := range MaxChartFiles {
		entries[fmt.Sprintf("files/%d", i)] = nil
	}
	many["charts/entries.tgz"] = tgz(t, "entries", entries)
	for _, tc := range []struct {
		name, chart string
		files       map[string][]byte
		want        string
	}{
		// why: five small archives that each unpack to 20 MiB passed a
		// bound that counted compressed bytes, and Helm's own bound is per
		// archive (100 MiB each).
		{"five archives of 20 MiB unpacked", "bomb", bomb, "chart bomb: charts/d.tgz: over the chart bound: more than 67108864 bytes"},
		// why: an archive inside an archive is unpacked by Helm when the
		// outer one is loaded; its size counts too.
		{"an archive in an archive", "nested", nested, "chart nested: charts/outer.tgz: charts/inner.tgz: over the chart bound: more than 67108864 bytes"},
		// why: empty entries hold no bytes but each costs a file.
		{"more entries than files allowed", "many", many, "chart many: charts/entries.tgz: over the chart bound: more than 5000 files"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			_, err := LoadFiles("chart "+tc.chart, tc.files)
			runtime.ReadMemStats(&after)
			if err == nil || !errors.Is(err, ErrChartTooLarge) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error naming %q", err, tc.want)
			}
			// Refused while measuring: nothing of what the archives unpack
			// to was kept.
			if grew := after.TotalAlloc - before.TotalAlloc; grew > 32<<20 {
				t.Errorf("refusing it allocated %d bytes", grew)
			}
		})
	}
}

func TestLoadUnpackedDependencyRenders(t *testing.T) {
	// why: dependency archives are unpacked once at load; the rendering
	// must be what Helm renders from the archive itself, nested ones too.
	cm := func(name string) []byte {
		return []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + name + "\ndata:\n  v: {{ .Values.v | quote }}\n")
	}
	inner := tgz(t, "inner", map[string][]byte{"Chart.yaml": chartYAML("inner"), "values.yaml": []byte("v: in\n"), "templates/cm.yaml": cm("inner")})
	outer := tgz(t, "outer", map[string][]byte{"Chart.yaml": chartYAML("outer"), "values.yaml": []byte("v: out\n"), "templates/cm.yaml": cm("outer"), "charts/inner-1.0.0.tgz": inner})
	c, err := LoadFiles("chart app", map[string][]byte{"Chart.yaml": chartYAML("app"), "charts/outer-1.0.0.tgz": outer})
	if err != nil {
		t.Fatal(err)
	}
	r, err := c.Render(context.Background(), Options{Release: "r", Namespace: "ns"}, []map[string]any{{"outer": map[string]any{"v": "set", "inner": map[string]any{"v": "deep"}}}})
	if err != nil {
		t.Fatal(err)
	}
	for key, want := range map[string]string{"v1|ConfigMap|ns|outer": "set", "v1|ConfigMap|ns|inner": "deep"} {
		if got := fmt.Sprint(r.Objects[key]["data"]); got != "map[v:"+want+"]" {
			t.Errorf("%s data %s, want v: %s (objects %v)", key, got, want, slices.Collect(maps.Keys(r.Objects)))
		}
	}
}

func TestDependencyWithoutHost(t *testing.T) {
	// why: a chart in the repository names no host, so a Chart.lock URL
	// without one must not pass as "the unit's chart's host".
	f := NewFetcher(FetchOptions{CacheDir: t.TempDir()})
	lock := []byte("dependencies:\n  - {name: lib, version: 0.1.0, repository: \"https:///charts\"}\n")
	if _, err := f.dependencies(context.Background(), lock, []string{"lib"}); !errors.Is(err, ErrFetchHost) {
		t.Fatalf("got %v, want ErrFetchHost", err)
	}
}
