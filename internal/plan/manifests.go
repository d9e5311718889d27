package plan

import (
	"fmt"
	"maps"
	"slices"

	"github.com/backflow-dev/backflow/internal/observe"
	"github.com/backflow-dev/backflow/internal/repoconfig"
	"github.com/backflow-dev/backflow/internal/values"
)

// docIndex finds, in a unit of plain manifests, the document that applies
// each object: the field maps to itself, so the object's document is where
// its fields are read and written.
type docIndex struct {
	// index maps an object's key to the unit's files entry of its
	// document.
	index map[observe.ObjectKey]int
	// twice names the files of an object that two documents define.
	twice map[observe.ObjectKey]string
}

// missing says why the object has no one document to write, or "".
func (d *docIndex) missing(object observe.ObjectKey) string {
	if where, ok := d.twice[object]; ok {
		return fmt.Sprintf(
			"two documents of its manifests are %s (%s): which one the controller applies last is not backflow's to guess",
			object,
			where,
		)
	}
	if _, ok := d.index[object]; !ok {
		return fmt.Sprintf(
			"no document of its manifests is %s (matched by apiVersion, kind, metadata.namespace and metadata.name)",
			object,
		)
	}
	return ""
}

// readManifests reads a unit of plain manifests: every document of every
// manifest file its entries name, each one of the unit's files (a
// document of a multi-document file is edited alone, the other documents
// left as they are), indexed by the object it applies.
func (p *planner) readManifests(u *repoconfig.Unit) *unitValues {
	paths, missing := repoconfig.ManifestsOf(u.Manifests, p.manifestPaths())
	if missing != "" {
		return &unitValues{err: fmt.Errorf(
			"manifests %s of unit %s (%s) could not be read: no such file, or a folder holding no .yaml, .yml or .json file",
			missing,
			u.Name,
			u.Environment,
		)}
	}
	return p.readDocuments(paths)
}

// readDocuments reads every document of the manifest files at paths (in
// the snapshot), each one of the unit's files, indexed by the object it
// applies.
func (p *planner) readDocuments(paths []string) *unitValues {
	uv := &unitValues{docs: &docIndex{index: map[observe.ObjectKey]int{}}}
	where := map[observe.ObjectKey]string{}
	for _, path := range paths {
		data := p.snap.Files[path]
		docs, err := values.ReadDocuments(data, values.Options{Readings: p.readings})
		if err != nil {
			uv.err = fmt.Errorf("%s: %w", path, err)
			return uv
		}
		for i, doc := range docs {
			m, ok := doc.(map[string]any)
			if !ok {
				// An empty document, or one that is not an object, applies
				// nothing.
				continue
			}
			key, ok := documentKey(m)
			if !ok {
				continue
			}
			at := fmt.Sprintf("%s document %d", path, i)
			if prev, dup := where[key]; dup {
				if uv.docs.twice == nil {
					uv.docs.twice = map[observe.ObjectKey]string{}
				}
				uv.docs.twice[key] = prev + " and " + at
				continue
			}
			where[key] = at
			idx := i
			uv.docs.index[key] = len(uv.files)
			uv.files = append(
				uv.files,
				&valuesFile{path: path, data: data, tree: m, opts: values.Options{Document: &idx, Readings: p.readings}},
			)
		}
	}
	return uv
}

// manifestPaths are the snapshot's files, sorted: the manifests of every
// unit are among them.
func (p *planner) manifestPaths() []string {
	p.pathsOnce.Do(func() { p.files = slices.Sorted(maps.Keys(p.snap.Files)) })
	return p.files
}

// ObjectKey is apiVersion|Kind|namespace|name of a manifest document, ""
// when it names no kind or name: the object it applies, as observations
// name it.
func ObjectKey(m map[string]any) string {
	key, ok := documentKey(m)
	if !ok {
		return ""
	}
	return key.String()
}

// documentKey is the key of the object a manifest document applies; ok is
// false when it names no kind or name.
func documentKey(m map[string]any) (key observe.ObjectKey, ok bool) {
	str := func(v any) string { s, _ := v.(string); return s }
	md, _ := m["metadata"].(map[string]any)
	kind, name := str(m["kind"]), str(md["name"])
	if kind == "" || name == "" {
		return observe.ObjectKey{}, false
	}
	key = observe.ObjectKey{APIVersion: str(m["apiVersion"]), Kind: kind, Namespace: str(md["namespace"]), Name: name}
	return key, true
}
