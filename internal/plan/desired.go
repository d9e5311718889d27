package plan

import (
	"errors"
	"fmt"
	"strings"

	"github.com/backflow-dev/backflow/internal/helmvalues"
	"github.com/backflow-dev/backflow/internal/repoconfig"
	"github.com/backflow-dev/backflow/internal/values"
	"github.com/backflow-dev/backflow/internal/yamlnode"
)

// unitValues is a unit's desired values at the snapshot: each values file
// read as Helm reads it, and their merge in Helm's order.
type unitValues struct {
	// err says why the unit's values could not be read; its decisions fail
	// closed.
	err   error
	files []*valuesFile
	// merged is read only: it may be the one file's tree itself.
	merged map[string]any
	// docs is set for a unit of plain manifests, whose files are its
	// documents and whose merged is nil.
	docs *docIndex
	// kust is set for a kustomize unit: its build at the snapshot.
	kust *kustUnit
}

// valuesFile is one of a unit's values files.
type valuesFile struct {
	path string
	data []byte
	// opts chooses the document holding the values (valuesRoot).
	opts values.Options
	// prefix is valuesRoot.path plus a dot, or empty: the editor's paths
	// are prefix + valuePath.
	prefix string
	tree   map[string]any
}

// readUnits reads the values of every unit the groups' objects belong to,
// on the planner's workers, before the decisions are made one by one.
func (p *planner) readUnits(groups []*group) {
	var units []*repoconfig.Unit
	seen := map[*repoconfig.Unit]bool{}
	for _, g := range groups {
		if g.env == "" {
			continue
		}
		if u := p.unitFor(g.env, g.object); u != nil && !seen[u] {
			seen[u] = true
			units = append(units, u)
		}
	}
	read := make([]*unitValues, len(units))
	each(len(units), p.workers, func(i int) { read[i] = p.readUnitValues(units[i]) })
	for i, u := range units {
		p.values[u] = read[i]
	}
}

// unitValues reads u's values files once per Plan call.
func (p *planner) unitValues(u *repoconfig.Unit) *unitValues {
	if uv, ok := p.values[u]; ok {
		return uv
	}
	uv := p.readUnitValues(u)
	p.values[u] = uv
	return uv
}

// readUnitValues reads u's values files and merges them; it only reads the
// planner, so units are read concurrently.
func (p *planner) readUnitValues(u *repoconfig.Unit) *unitValues {
	switch u.Source() {
	case repoconfig.SourceManifests:
		return p.readManifests(u)
	case repoconfig.SourceKustomize:
		return p.readKustomize(u)
	case repoconfig.SourceStore:
		return p.readStore(u)
	}
	uv := &unitValues{}
	var trees []map[string]any
	for _, path := range u.ValuesFiles {
		data, ok := p.snap.Files[path]
		if !ok {
			uv.err = fmt.Errorf("values file %s of unit %s (%s) could not be read", path, u.Name, u.Environment)
			return uv
		}
		vf, err := readValuesFile(path, data, u.RootOf(path), p.readings)
		if err != nil {
			uv.err = err
			return uv
		}
		uv.files = append(uv.files, vf)
		trees = append(trees, vf.tree)
	}
	uv.merged = mergeShared(trees)
	return uv
}

// readValuesFile reads one values file as Helm does; readings keeps that
// reading for the values editor, which takes it when it edits the same
// bytes.
func readValuesFile(
	path string,
	data []byte,
	root *repoconfig.ValuesRoot,
	readings *values.Readings,
) (*valuesFile, error) {
	tree, err := repoconfig.ValuesRead(path, data, root, readings)
	if err != nil {
		return nil, err
	}
	vf := &valuesFile{path: path, data: data, tree: tree, opts: values.Options{Readings: readings}}
	if root != nil {
		doc, err := findDocument(path, data, root.Document, readings)
		if err != nil {
			return nil, err
		}
		vf.opts.Document = &doc
		vf.prefix = root.Path + "."
	}
	return vf, nil
}

// findDocument returns the index, as the values editor counts documents, of
// the one document of data whose kind and metadata.name are doc (Kind/name).
func findDocument(path string, data []byte, doc string, readings *values.Readings) (int, error) {
	kind, name, _ := strings.Cut(doc, "/")
	found := -1
	for i := 0; ; i++ {
		idx := i
		f, err := values.Parse(data, values.Options{Document: &idx, Readings: readings})
		if errors.Is(err, values.ErrDocument) {
			break
		}
		if err != nil {
			return -1, fmt.Errorf("%s: document %d: %w", path, i, err)
		}
		k, _ := f.Get("kind")
		n, _ := f.Get("metadata.name")
		if k != kind || n != name {
			continue
		}
		if found >= 0 {
			return -1, fmt.Errorf("%s: documents %d and %d are both %s", path, found, i, doc)
		}
		found = i
	}
	if found < 0 {
		return -1, fmt.Errorf("%s: no document is %s (valuesRoot.document)", path, doc)
	}
	return found, nil
}

// MergeValues merges values trees as Helm does with several -f files and
// its coalescing (helmvalues.Merge): later trees override earlier ones,
// mappings merge key by key, and a null deletes its key at any depth. The
// inputs are not modified.
func MergeValues(trees []map[string]any) map[string]any {
	return helmvalues.Merge(trees...)
}

// mergeShared is MergeValues for a result that is only read
// (helmvalues.MergeShared): a single tree with no null is returned as it is
// rather than copied.
func mergeShared(trees []map[string]any) map[string]any {
	return helmvalues.MergeShared(trees)
}

// lookup returns the value at a value path with numbers made plain Go
// numbers (int64 or float64), so that receipts and the editor get the types
// they write.
func (p *planner) lookup(tree map[string]any, path string) (any, bool) {
	v, ok := p.lookupRaw(tree, path)
	if !ok {
		return nil, false
	}
	return helmvalues.Plain(v), true
}

// editedFile chooses the values file a write-back of path edits: the last
// file, unless the path is defined only in earlier ones, then the last of
// those (the one whose value Helm uses).
func (p *planner) editedFile(uv *unitValues, path string) int {
	for i := len(uv.files) - 1; i >= 0; i-- {
		if _, ok := p.lookupRaw(uv.files[i].tree, path); ok {
			return i
		}
	}
	return len(uv.files) - 1
}

// lookupRaw is repoconfig.Lookup with each value path parsed once per plan:
// the policy names a few paths, which are looked up for every field of
// every object. The policy's paths are parsed before the plan starts (see
// newPlanner) and p.paths is only read after, so units built concurrently
// share it; any other path is parsed on each lookup.
func (p *planner) lookupRaw(tree any, path string) (any, bool) {
	pp, ok := p.paths[path]
	if !ok {
		pp = parsePath(path)
	}
	if !pp.ok {
		return nil, false
	}
	return yamlnode.Lookup(tree, pp.segs)
}

// parsedPath is a value path parsed; ok is false when it does not parse.
type parsedPath struct {
	segs []yamlnode.Segment
	ok   bool
}

func parsePath(path string) parsedPath {
	segs, err := yamlnode.ParsePath(path)
	return parsedPath{segs, err == nil}
}
