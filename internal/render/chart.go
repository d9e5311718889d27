package render

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
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
// cannot exhaust memory. They count what the loader holds: the chart's
// files, and every archive under charts/ (nested ones included) both as
// its bytes and as the files it unpacks to, counted as they are read.
const (
	// MaxChartFiles is the most files a chart (with its dependencies,
	// their archives' entries included) may have.
	MaxChartFiles = 5000
	// MaxChartBytes is the most bytes a chart's files, and what its
	// dependency archives unpack to, may hold in all.
	MaxChartBytes = 64 << 20
)

// ErrChart marks a chart that cannot be loaded.
var ErrChart = errors.New("invalid chart")

// ErrChartTooLarge marks a chart over MaxChartFiles or MaxChartBytes.
var ErrChartTooLarge = errors.New("over the chart bound")

// Chart is a loaded chart: its files, kept so that every rendering starts
// from a fresh copy (rendering prunes disabled dependencies in place), and
// what identifies it.
type Chart struct {
	// Name and Version are Chart.yaml's.
	Name, Version string
	// Digest is sha256:<hex> over the chart's files (path, size and bytes,
	// sorted by path), or of the archive it was fetched as.
	Digest string
	// files are the chart's files with every dependency archive unpacked
	// (see unpackDependencies), so that a rendering never unpacks one.
	files []*archive.BufferedFile
}

// LoadFiles loads a chart from its files, keyed by slash-separated paths
// relative to the chart's folder (Chart.yaml, templates/..., charts/...).
// where names the chart in errors. Every dependency Chart.yaml names must be
// in charts/. It depends on nothing but its arguments (no file system, no
// network), so it may run in any process.
func LoadFiles(where string, files map[string][]byte) (*Chart, error) {
	return loadFiles(context.Background(), where, files, nil)
}

// loadFiles is LoadFiles that, given a fetcher, fetches the dependencies
// charts/ lacks as the chart's Chart.lock pins them.
func loadFiles(ctx context.Context, where string, files map[string][]byte, fetch *Fetcher) (*Chart, error) {
	b := newChartBudget()
	for _, n := range slices.Sorted(maps.Keys(files)) {
		if err := b.take(where, n, 1, int64(len(files[n]))); err != nil {
			return nil, err
		}
	}
	return loadWithin(ctx, where, files, fetch, b)
}

// loadWithin loads the chart of files, which b already counts, unpacking
// its dependency archives within what b has left.
func loadWithin(
	ctx context.Context,
	where string,
	files map[string][]byte,
	fetch *Fetcher,
	b *chartBudget,
) (*Chart, error) {
	names := slices.Sorted(maps.Keys(files))
	h := sha256.New()
	for _, n := range names {
		data := files[n]
		fmt.Fprintf(h, "%s\x00%d\x00", n, len(data))
		h.Write(data)
	}
	if err := notYAML(names, files); err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrChart, where, err)
	}
	// Every archive is measured, nested ones included, before any is
	// unpacked; unpacking counts again, against a copy of the budget as it
	// was, so that what it holds stays within the bound whatever the
	// measuring could not see.
	again := *b
	if err := measureDependencies(where, files, b); err != nil {
		return nil, err
	}
	unpacked, err := unpackDependencies(where, "", files, &again)
	if err != nil {
		return nil, err
	}
	var bf []*archive.BufferedFile
	for _, n := range slices.Sorted(maps.Keys(unpacked)) {
		bf = append(bf, &archive.BufferedFile{Name: n, Data: unpacked[n]})
	}
	c := &Chart{Digest: "sha256:" + hex.EncodeToString(h.Sum(nil)), files: bf}
	ch, err := c.load()
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrChart, where, err)
	}
	if missing := missingDependencies(ch); len(missing) > 0 {
		if fetch == nil {
			return nil, fmt.Errorf(
				"%w: %s: dependencies %s are named in Chart.yaml but missing in charts/",
				ErrChart,
				where,
				strings.Join(missing, ", "),
			)
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

// chartBudget is what one chart may still hold, in files and bytes.
type chartBudget struct{ files, bytes int64 }

func newChartBudget() *chartBudget { return &chartBudget{files: MaxChartFiles, bytes: MaxChartBytes} }

// take counts files and bytes of what (a file, or an archive's entry)
// against the budget, and refuses them beyond it, naming the chart, what
// went over and the bound.
func (b *chartBudget) take(where, what string, files, bytes int64) error {
	if b.files -= files; b.files < 0 {
		return fmt.Errorf("%w: %s: %s: %w: more than %d files", ErrChart, where, what, ErrChartTooLarge, MaxChartFiles)
	}
	if b.bytes -= bytes; b.bytes < 0 {
		return fmt.Errorf(
			"%w: %s: %s: %w: more than %d bytes (archives counted unpacked)",
			ErrChart,
			where,
			what,
			ErrChartTooLarge,
			MaxChartBytes,
		)
	}
	return nil
}

// unpackedSuffix names the folder a dependency archive is unpacked into,
// beside it in charts/ (the chart loader reads a folder there as it reads
// an archive).
const unpackedSuffix = ".unpacked"

// unpackDependencies returns files with every dependency archive (a .tgz
// directly in a charts/ folder, as the chart loader reads them) replaced
// by its files under charts/<archive>.unpacked/, the archives in those
// unpacked in turn, each archive read within b. in names the archive
// files come from, for errors ("" for the chart's own files).
func unpackDependencies(where, in string, files map[string][]byte, b *chartBudget) (map[string][]byte, error) {
	out := make(map[string][]byte, len(files))
	for _, n := range slices.Sorted(maps.Keys(files)) {
		if !isDependencyArchive(n) {
			out[n] = files[n]
			continue
		}
		name := strings.TrimPrefix(in+": "+n, ": ")
		inner, err := readArchive(where, name, files[n], b)
		if err != nil {
			return nil, err
		}
		if inner, err = unpackDependencies(where, name, inner, b); err != nil {
			return nil, err
		}
		dir := n + unpackedSuffix + "/"
		for m := range files {
			if strings.HasPrefix(m, dir) {
				return nil, fmt.Errorf("%w: %s: %s: it would be unpacked into %s, which holds %s", ErrChart, where, name, dir, m)
			}
		}
		for m, data := range inner {
			out[dir+m] = data
		}
	}
	return out, nil
}

// isDependencyArchive reports whether n is an archive the chart loader
// reads as a dependency: charts/<name>.tgz of the chart or of a dependency
// folder (charts/a/charts/<name>.tgz), its name not starting with _ or .
// (which the loader skips).
func isDependencyArchive(n string) bool {
	parts := strings.Split(n, "/")
	if len(parts)%2 != 0 || path.Ext(n) != ".tgz" || strings.IndexAny(parts[len(parts)-1], "_.") == 0 {
		return false
	}
	for i := 0; i < len(parts); i += 2 {
		if parts[i] != "charts" {
			return false
		}
	}
	return true
}

// readArchive reads a chart archive's files (relative to its top folder)
// within b. The archive is first read through without keeping anything,
// counting its entries and unpacked bytes as they are read and stopping at
// the bound; only then does Helm's reader (with its checks of the
// entries' paths) unpack it.
func readArchive(where, name string, data []byte, b *chartBudget) (map[string][]byte, error) {
	if err := measureArchive(where, name, bytes.NewReader(data), b, false); err != nil {
		return nil, err
	}
	bf, err := archive.LoadArchiveFiles(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %s: %w", ErrChart, where, name, err)
	}
	out := make(map[string][]byte, len(bf))
	for _, f := range bf {
		out[f.Name] = f.Data
	}
	return out, nil
}

// measureDependencies counts, against b, what every dependency archive of
// files unpacks to, nested archives included, reading each through as a
// stream and keeping nothing: a chart whose archives unpack to more than
// the bound is refused before any of them is unpacked.
func measureDependencies(where string, files map[string][]byte, b *chartBudget) error {
	for _, n := range slices.Sorted(maps.Keys(files)) {
		if isDependencyArchive(n) {
			if err := measureArchive(where, n, bytes.NewReader(files[n]), b, true); err != nil {
				return err
			}
		}
	}
	return nil
}

// measureArchive reads the archive r through, counting its entries and the
// bytes they unpack to against b as they are read, and stops as soon as
// either passes the bound. With nested, an entry that is itself a
// dependency archive is measured in turn, as it streams past.
func measureArchive(where, name string, r io.Reader, b *chartBudget, nested bool) error {
	fail := func(err error) error { return fmt.Errorf("%w: %s: %s: %w", ErrChart, where, name, err) }
	zr, err := gzip.NewReader(r)
	if err != nil {
		return fail(err)
	}
	defer zr.Close()
	tr := tar.NewReader(zr)
	for {
		hd, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fail(err)
		}
		if err := b.take(where, name, 1, 0); err != nil {
			return err
		}
		if hd.Size > b.bytes {
			return b.take(where, name, 0, hd.Size)
		}
		entry := &countingReader{r: io.LimitReader(tr, b.bytes+1)}
		_, rel, _ := strings.Cut(hd.Name, "/")
		if nested && hd.Typeflag == tar.TypeReg && isDependencyArchive(rel) {
			if err := measureArchive(where, name+": "+rel, entry, b, true); err != nil {
				return err
			}
		}
		if _, err := io.Copy(io.Discard, entry); err != nil {
			return fail(err)
		}
		if err := b.take(where, name, 0, entry.n); err != nil {
			return err
		}
	}
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
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
	b := newChartBudget()
	if err := b.take(where, "its archive", 1, int64(len(data))); err != nil {
		return nil, err
	}
	files, err := readArchive(where, "its archive", data, b)
	if err != nil {
		return nil, err
	}
	c, err := loadWithin(ctx, where, files, fetch, b)
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
