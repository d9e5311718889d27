package render

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path"
	"slices"
	"strings"

	"helm.sh/helm/v4/pkg/chart/loader/archive"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/backflow-dev/backflow/internal/yamlnode"
)

// Bounds on what one chart may hold, so that a hostile or broken chart
// cannot exhaust memory.
const (
	// MaxChartFiles is the most files a chart (with its dependencies) may have.
	MaxChartFiles = 5000
	// MaxChartBytes is the most bytes a chart's files may hold in all.
	MaxChartBytes = 64 << 20
)

// ErrChart marks a chart that cannot be loaded.
var ErrChart = errors.New("invalid chart")

// Chart is a loaded chart: its files, kept so that every rendering starts
// from a fresh copy (rendering prunes disabled dependencies in place), and
// what identifies it.
type Chart struct {
	// Name and Version are Chart.yaml's.
	Name, Version string
	// Digest is sha256:<hex> over the chart's files (path, size and bytes,
	// sorted by path), or of the archive it was fetched as.
	Digest string
	files  []*archive.BufferedFile
}

// LoadFiles loads a chart from its files, keyed by slash-separated paths
// relative to the chart's folder (Chart.yaml, templates/..., charts/...).
// where names the chart in errors. Every dependency Chart.yaml names must be
// in charts/.
func LoadFiles(where string, files map[string][]byte) (*Chart, error) {
	return loadFiles(context.Background(), where, files, nil)
}

// loadFiles is LoadFiles that, given a fetcher, fetches the dependencies
// charts/ lacks as the chart's Chart.lock pins them.
func loadFiles(ctx context.Context, where string, files map[string][]byte, fetch *Fetcher) (*Chart, error) {
	if len(files) > MaxChartFiles {
		return nil, fmt.Errorf("%w: %s: more than %d files", ErrChart, where, MaxChartFiles)
	}
	names := slices.Sorted(func(yield func(string) bool) {
		for n := range files {
			if !yield(n) {
				return
			}
		}
	})
	h := sha256.New()
	total := 0
	var bf []*archive.BufferedFile
	for _, n := range names {
		data := files[n]
		total += len(data)
		if total > MaxChartBytes {
			return nil, fmt.Errorf("%w: %s: more than %d bytes", ErrChart, where, MaxChartBytes)
		}
		fmt.Fprintf(h, "%s\x00%d\x00", n, len(data))
		h.Write(data)
		bf = append(bf, &archive.BufferedFile{Name: n, Data: data})
	}
	if err := notYAML(names, files); err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrChart, where, err)
	}
	c := &Chart{Digest: "sha256:" + hex.EncodeToString(h.Sum(nil)), files: bf}
	ch, err := c.load()
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrChart, where, err)
	}
	if missing := missingDependencies(ch); len(missing) > 0 {
		if fetch == nil {
			return nil, fmt.Errorf("%w: %s: dependencies %s are named in Chart.yaml but missing in charts/", ErrChart, where, strings.Join(missing, ", "))
		}
		more, err := fetch.dependencies(ctx, files["Chart.lock"], missing)
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %w", ErrChart, where, err)
		}
		with := maps.Clone(files)
		maps.Copy(with, more)
		return loadFiles(ctx, where, with, nil)
	}
	c.Name, c.Version = ch.Metadata.Name, ch.Metadata.Version
	return c, nil
}

// notYAML returns the error for the first of a chart's YAML files (its own
// or a vendored dependency's Chart.yaml, Chart.lock or values.yaml) that is
// not YAML at all, marked with yamlnode.ErrUnparseable: a chart whose files
// cannot be read is told from one that is read but invalid.
func notYAML(names []string, files map[string][]byte) error {
	for _, n := range names {
		switch path.Base(n) {
		case "Chart.yaml", "Chart.lock", "values.yaml":
		default:
			continue
		}
		var v any
		if err := sigsyaml.Unmarshal(files[n], &v); err != nil {
			return fmt.Errorf("%s: %w", n, &yamlnode.SyntaxError{Err: err})
		}
	}
	return nil
}

// missingDependencies are the dependencies a chart's Chart.yaml names that
// its charts/ folder lacks: helm template refuses such a chart, and
// rendering without them would not be what the GitOps controller renders.
func missingDependencies(ch *chart.Chart) []string {
	var missing []string
	for _, d := range ch.Metadata.Dependencies {
		if d == nil || slices.ContainsFunc(ch.Dependencies(), func(sub *chart.Chart) bool { return sub.Name() == d.Name }) {
			continue
		}
		missing = append(missing, d.Name)
	}
	return missing
}

// load builds a fresh chart from the files.
func (c *Chart) load() (*chart.Chart, error) {
	files := make([]*archive.BufferedFile, len(c.files))
	for i, f := range c.files {
		files[i] = &archive.BufferedFile{Name: f.Name, Data: f.Data}
	}
	return loader.LoadFiles(files)
}

// loadArchive loads a packaged chart (.tgz); its digest is the archive's.
func loadArchive(ctx context.Context, where string, data []byte, fetch *Fetcher) (*Chart, error) {
	if len(data) > MaxChartBytes {
		return nil, fmt.Errorf("%w: %s: more than %d bytes", ErrChart, where, MaxChartBytes)
	}
	bf, err := archive.LoadArchiveFiles(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrChart, where, err)
	}
	files := make(map[string][]byte, len(bf))
	for _, f := range bf {
		files[f.Name] = f.Data
	}
	c, err := loadFiles(ctx, where, files, fetch)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(data)
	c.Digest = "sha256:" + hex.EncodeToString(sum[:])
	return c, nil
}

// Source reads a repository's files at one commit.
type Source interface {
	// ReadFile returns a regular file's bytes.
	ReadFile(path string) ([]byte, error)
	// ListFiles returns the regular files under dir, recursively, as
	// slash-separated paths from the repository root.
	ListFiles(dir string) ([]string, error)
}

// LoadFromSource loads the chart in the repository folder dir.
func LoadFromSource(src Source, dir string) (*Chart, error) {
	return loadFromSource(context.Background(), src, dir, nil)
}

func loadFromSource(ctx context.Context, src Source, dir string, fetch *Fetcher) (*Chart, error) {
	dir = path.Clean(dir)
	names, err := src.ListFiles(dir)
	if err != nil {
		return nil, fmt.Errorf("%w: chart %s: %w", ErrChart, dir, err)
	}
	if len(names) > MaxChartFiles {
		return nil, fmt.Errorf("%w: chart %s: more than %d files", ErrChart, dir, MaxChartFiles)
	}
	files := map[string][]byte{}
	total := 0
	for _, n := range names {
		rel, ok := strings.CutPrefix(n, dir+"/")
		if !ok {
			continue
		}
		data, err := src.ReadFile(n)
		if err != nil {
			return nil, fmt.Errorf("%w: chart %s: %w", ErrChart, dir, err)
		}
		if total += len(data); total > MaxChartBytes {
			return nil, fmt.Errorf("%w: chart %s: more than %d bytes", ErrChart, dir, MaxChartBytes)
		}
		files[rel] = data
	}
	return loadFiles(ctx, "chart "+dir, files, fetch)
}

// DirSource reads files from a working tree, never outside its root (a
// symbolic link out of the tree is refused).
type DirSource struct{ Root string }

// ReadFile reads path relative to the root.
func (d DirSource) ReadFile(p string) ([]byte, error) {
	r, err := os.OpenRoot(d.Root)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	info, err := r.Lstat(p)
	if err != nil {
		return nil, err
	}
	if !info.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: not a regular file", p)
	}
	if info.Size() > MaxChartBytes {
		return nil, fmt.Errorf("%s: larger than %d bytes", p, MaxChartBytes)
	}
	return r.ReadFile(p)
}

// ListFiles lists the regular files under dir.
func (d DirSource) ListFiles(dir string) ([]string, error) {
	r, err := os.OpenRoot(d.Root)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	var out []string
	err = fs.WalkDir(r.FS(), path.Clean(dir), func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if e.Type().IsRegular() {
			out = append(out, p)
			if len(out) > MaxChartFiles {
				return fmt.Errorf("more than %d files", MaxChartFiles)
			}
		}
		return nil
	})
	return out, err
}

// FSSource reads files from an fs.FS (an embedded sample repository).
type FSSource struct{ FS fs.FS }

// ReadFile reads path from the file system.
func (f FSSource) ReadFile(p string) ([]byte, error) { return fs.ReadFile(f.FS, p) }

// ListFiles lists the regular files under dir.
func (f FSSource) ListFiles(dir string) ([]string, error) {
	var out []string
	err := fs.WalkDir(f.FS, path.Clean(dir), func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if e.Type().IsRegular() {
			out = append(out, p)
		}
		return nil
	})
	return out, err
}
