package kustomize

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"
	"sync"

	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/backflow-dev/backflow/internal/fluxdoc"
	"github.com/backflow-dev/backflow/internal/witness"
)

// Renderer names kustomize in receipts' render sections.
const Renderer = "sigs.k8s.io/kustomize/api v0.21.2 (krusty)"

// ErrRefused marks a kustomization backflow does not build or write: a
// remote base, a file outside the repository, a Helm chart inflated by
// kustomize, a plugin.
var ErrRefused = errors.New("refused")

// Annotations kustomize adds with buildMetadata, removed from built objects.
const (
	originAnnotation      = "config.kubernetes.io/origin"
	transformerAnnotation = "alpha.config.kubernetes.io/transformations"
)

// kustomizationNames are the file names kustomize reads a folder's
// kustomization from, in its order.
var kustomizationNames = []string{"kustomization.yaml", "kustomization.yml", "Kustomization"}

// Kustomization is one kustomization file as read, with the repository
// path of its file and folder.
type Kustomization struct {
	File, Dir string
	types.Kustomization
}

// Inputs reads the kustomization in dir and everything it builds from,
// recursively, through read (repository paths): its resources, bases and
// components and their kustomizations, patch files, generators' files,
// replacement files. It returns every file read, by repository path. A
// remote resource (a URL, a git reference), a path that leaves the
// repository, kustomize's Helm chart inflation and plugins (generators,
// transformers, validators) are refused (ErrRefused) with the file naming
// them: kustomize would reach the network or run code.
func Inputs(read func(path string) ([]byte, error), dir string) (map[string][]byte, error) {
	files := map[string][]byte{}
	seen := map[string]bool{}
	var visit func(dir string) error
	visit = func(dir string) error {
		if seen[dir] {
			return nil
		}
		seen[dir] = true
		k, err := readKustomization(read, dir, files)
		if err != nil {
			return err
		}
		if len(k.HelmCharts) > 0 || len(k.HelmChartInflationGenerator) > 0 {
			return fmt.Errorf("%s: helmCharts: kustomize's Helm inflation is not built by backflow: %w", k.File, ErrRefused)
		}
		for _, plug := range [][]string{k.Generators, k.Transformers, k.Validators} {
			if len(plug) > 0 {
				return fmt.Errorf(
					"%s: generators, transformers and validators run plugins, which backflow does not: %w",
					k.File,
					ErrRefused,
				)
			}
		}
		var refs []string
		refs = append(refs, k.Resources...)
		refs = append(refs, k.Bases...)
		refs = append(refs, k.Components...)
		for _, r := range refs {
			p, err := within(k, r)
			if err != nil {
				return err
			}
			if data, err := read(p); err == nil {
				files[p] = data
				continue
			}
			if err := visit(p); err != nil {
				return err
			}
		}
		var named []string
		for _, p := range append(slices.Clone(k.Patches), k.PatchesJson6902...) {
			if p.Path != "" {
				named = append(named, p.Path)
			}
		}
		for _, p := range k.PatchesStrategicMerge {
			if s := string(p); !strings.Contains(s, "\n") {
				named = append(named, s)
			}
		}
		for _, r := range k.Replacements {
			if r.Path != "" {
				named = append(named, r.Path)
			}
		}
		for _, g := range k.ConfigMapGenerator {
			named = append(named, generatorFiles(g.GeneratorArgs)...)
		}
		for _, g := range k.SecretGenerator {
			named = append(named, generatorFiles(g.GeneratorArgs)...)
		}
		named = append(named, k.Crds...)
		named = append(named, k.Configurations...)
		for _, n := range named {
			p, err := within(k, n)
			if err != nil {
				return err
			}
			data, err := read(p)
			if err != nil {
				return fmt.Errorf("%s: reading %s: %w", k.File, p, err)
			}
			files[p] = data
		}
		return nil
	}
	if err := visit(path.Clean(dir)); err != nil {
		return nil, err
	}
	return files, nil
}

func generatorFiles(g types.GeneratorArgs) []string {
	var out []string
	for _, f := range g.FileSources {
		// key=path names the file after the =.
		if _, p, ok := strings.Cut(f, "="); ok {
			f = p
		}
		out = append(out, f)
	}
	out = append(out, g.EnvSources...)
	if g.EnvSource != "" {
		out = append(out, g.EnvSource)
	}
	return out
}

// within resolves ref, named by k, to a repository path, refusing a
// remote reference and a path that leaves the repository.
func within(k *Kustomization, ref string) (string, error) {
	if remote(ref) {
		return "", fmt.Errorf(
			"%s: %s is a remote base: backflow builds only from the repository's own files: %w",
			k.File,
			ref,
			ErrRefused,
		)
	}
	p := path.Clean(path.Join(k.Dir, ref))
	if path.IsAbs(ref) || p == ".." || strings.HasPrefix(p, "../") {
		return "", fmt.Errorf("%s: %s is outside the repository: %w", k.File, ref, ErrRefused)
	}
	return p, nil
}

// remote reports a reference kustomize would fetch: a URL, a git or
// GitHub reference.
func remote(ref string) bool {
	return strings.Contains(ref, "://") || strings.HasPrefix(ref, "git@") || strings.HasPrefix(ref, "github.com/") ||
		strings.Contains(ref, "?ref=") || strings.Contains(ref, ".git//")
}

// readKustomization reads dir's kustomization file into files.
func readKustomization(read func(string) ([]byte, error), dir string, files map[string][]byte) (*Kustomization, error) {
	for _, name := range kustomizationNames {
		p := path.Join(dir, name)
		data, err := read(p)
		if err != nil {
			continue
		}
		files[p] = data
		k := &Kustomization{File: p, Dir: dir}
		if err := sigsyaml.UnmarshalStrict(data, &k.Kustomization); err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		k.FixKustomization()
		return k, nil
	}
	return nil, fmt.Errorf("%s: no kustomization.yaml, kustomization.yml or Kustomization", dir)
}

// Build is a kustomization built.
type Build struct {
	// Dir is the kustomization's folder.
	Dir string
	// Files are the repository paths of the files it was built from.
	Files []string
	// Digest is the hex SHA-256 of Dir and every input file's path and
	// bytes: a build is made again only when it changes.
	Digest string
	// Rendering holds the built objects by witness.Key, without the
	// annotations kustomize added for backflow.
	Rendering *witness.Rendering
	// Origin is each object's origin as kustomize recorded it: the
	// repository path of the resource file, or the generator that made it.
	Origin map[string]Origin
	// Flux is the repository's Flux Kustomization applying Dir, among the
	// files, whose postBuild variables Rendering is substituted with; Raw
	// holds the objects as kustomize built them, before substitution.
	Flux *Flux
	Raw  map[string]map[string]any
}

// Origin is where kustomize says an object comes from.
type Origin struct {
	// Path is the repository path of the resource file; empty for a
	// generated object.
	Path string
	// GeneratedBy names the generator and the kustomization configuring
	// it ("ConfigMapGenerator in overlays/prod/kustomization.yaml").
	GeneratedBy string
}

// Digest is the key of a build of dir from files.
func Digest(files map[string][]byte, dir string) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00", dir)
	for _, p := range sortedKeys(files) {
		fmt.Fprintf(h, "%s\x00%d\x00", p, len(files[p]))
		h.Write(files[p])
	}
	return hex.EncodeToString(h.Sum(nil))
}

func sortedKeys(m map[string][]byte) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// Run builds the kustomization in dir from files (repository paths; no
// other file exists for kustomize) with buildMetadata originAnnotations,
// in memory.
func Run(files map[string][]byte, dir string) (*Build, error) {
	dir = path.Clean(dir)
	fs := filesys.MakeFsInMemory()
	for p, data := range files {
		if err := fs.WriteFile("/"+p, data); err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
	}
	top, err := annotate(files, dir)
	if err != nil {
		return nil, err
	}
	if err := fs.WriteFile("/"+top.name, top.data); err != nil {
		return nil, err
	}
	opts := krusty.MakeDefaultOptions()
	// path.Join: the repository's root is "." and kustomize's "/".
	res, err := krusty.MakeKustomizer(opts).Run(fs, path.Join("/", dir))
	if err != nil {
		return nil, fmt.Errorf("kustomize build %s: %w", dir, err)
	}
	flux, err := fluxdoc.Find(files, dir)
	if err != nil {
		return nil, err
	}
	b := &Build{Dir: dir, Files: sortedKeys(files), Digest: Digest(files, dir), Origin: map[string]Origin{},
		Rendering: &witness.Rendering{Renderer: Renderer, Objects: map[string]map[string]any{}},
		Flux:      flux, Raw: map[string]map[string]any{}}
	for _, r := range res.Resources() {
		m, err := r.Map()
		if err != nil {
			return nil, fmt.Errorf("kustomize build %s: %w", dir, err)
		}
		o, err := origin(r.GetAnnotations()[originAnnotation], dir, top.file)
		if err != nil {
			return nil, fmt.Errorf("kustomize build %s: %s/%s: %w", dir, r.GetKind(), r.GetName(), err)
		}
		strip(m)
		raw := m
		if m, err = substitute(flux, m); err != nil {
			return nil, fmt.Errorf("kustomize build %s: %s/%s: %w", dir, r.GetKind(), r.GetName(), err)
		}
		// The key is the substituted object's, as Flux applies it.
		key := witness.Key(str(m["apiVersion"]), str(m["kind"]), str(meta(m)["namespace"]), str(meta(m)["name"]))
		b.Raw[key] = raw
		b.Rendering.Objects[key] = m
		b.Origin[key] = o
	}
	return b, nil
}

type annotated struct {
	name, file string
	data       []byte
}

// annotate is dir's kustomization file with originAnnotations added to its
// buildMetadata, so kustomize records where each object comes from.
func annotate(files map[string][]byte, dir string) (annotated, error) {
	for _, name := range kustomizationNames {
		p := path.Join(dir, name)
		data, ok := files[p]
		if !ok {
			continue
		}
		var m map[string]any
		if err := sigsyaml.Unmarshal(data, &m); err != nil {
			return annotated{}, fmt.Errorf("%s: %w", p, err)
		}
		if m == nil {
			m = map[string]any{}
		}
		bm, _ := m["buildMetadata"].([]any)
		if !slices.Contains(bm, any("originAnnotations")) {
			bm = append(bm, "originAnnotations")
		}
		m["buildMetadata"] = bm
		out, err := sigsyaml.Marshal(m)
		if err != nil {
			return annotated{}, err
		}
		return annotated{name: p, file: p, data: out}, nil
	}
	return annotated{}, fmt.Errorf("%s: no kustomization.yaml, kustomization.yml or Kustomization", dir)
}

// origin reads kustomize's origin annotation: a path relative to dir, or
// the generator that configured the object.
func origin(text, dir, file string) (Origin, error) {
	if text == "" {
		return Origin{}, nil
	}
	var a struct {
		Path         string `json:"path"`
		Repo         string `json:"repo"`
		ConfiguredIn string `json:"configuredIn"`
		ConfiguredBy struct {
			Kind string `json:"kind"`
			Name string `json:"name"`
		} `json:"configuredBy"`
	}
	if err := sigsyaml.Unmarshal([]byte(text), &a); err != nil {
		return Origin{}, err
	}
	switch {
	case a.Repo != "":
		return Origin{}, fmt.Errorf("comes from the remote repository %s: %w", a.Repo, ErrRefused)
	case a.ConfiguredBy.Kind != "":
		in := path.Clean(path.Join(dir, a.ConfiguredIn))
		return Origin{GeneratedBy: a.ConfiguredBy.Kind + " in " + in}, nil
	}
	return Origin{Path: path.Clean(path.Join(dir, a.Path))}, nil
}

// strip removes the annotations kustomize added for backflow, and the
// annotations mapping when nothing else is in it.
func strip(m map[string]any) {
	md, _ := m["metadata"].(map[string]any)
	ann, _ := md["annotations"].(map[string]any)
	if ann == nil {
		return
	}
	delete(ann, originAnnotation)
	delete(ann, transformerAnnotation)
	if len(ann) == 0 {
		delete(md, "annotations")
	}
}

// Builder builds kustomizations, keeping each build by the digest of its
// inputs: a tick whose inputs did not change builds nothing. It is safe
// for concurrent use.
type Builder struct {
	mu    sync.Mutex
	kept  map[string]*Build
	order []string
	// Max bounds the builds kept (oldest dropped first); 0 is 64.
	Max int
	// Runs counts the builds made (not taken from the kept ones).
	Runs int
}

// Build returns the build of dir from files, kept or made.
func (b *Builder) Build(files map[string][]byte, dir string) (*Build, error) {
	d := Digest(files, path.Clean(dir))
	b.mu.Lock()
	if got, ok := b.kept[d]; ok {
		b.mu.Unlock()
		return got, nil
	}
	b.mu.Unlock()
	got, err := Run(files, dir)
	if err != nil {
		return nil, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.Runs++
	if b.kept == nil {
		b.kept = map[string]*Build{}
	}
	if _, ok := b.kept[d]; !ok {
		b.kept[d] = got
		b.order = append(b.order, d)
		if limit := cmpOr(b.Max, 64); len(b.order) > limit {
			delete(b.kept, b.order[0])
			b.order = b.order[1:]
		}
	}
	return got, nil
}

func cmpOr(a, b int) int {
	if a != 0 {
		return a
	}
	return b
}

// Witness checks that the build after a write-back differs from the build
// before it exactly in the accepted fields, each to its observed live
// value: kustomize itself is the witness that the edit writes what was
// accepted and nothing else.
func Witness(before, after *Build, accepted []witness.Accepted) []witness.Mismatch {
	return witness.Check(witness.Diff(before.Rendering, after.Rendering), accepted, nil)
}
