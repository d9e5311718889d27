package plan

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/backflow-dev/backflow/internal/observe"
	"github.com/backflow-dev/backflow/internal/receipt"
	"github.com/backflow-dev/backflow/internal/repoconfig"
	"github.com/backflow-dev/backflow/internal/witness"
)

// Kustomizer builds and writes the units whose desired state is a
// kustomization (internal/kustomize implements it; the caller wires it, as
// it wires the chart renderer: the planner does not build).
type Kustomizer interface {
	// Inputs reads, through read, every file the kustomization in dir
	// builds from, by repository path, and the Flux Kustomization applying
	// dir that list (the repository's manifest files below a folder; nil
	// when the reader cannot list) finds.
	Inputs(
		read func(path string) ([]byte, error),
		list func(dir string) ([]string, error),
		dir string,
	) (map[string][]byte, error)
	// Build builds dir from files alone.
	Build(files map[string][]byte, dir string) (*witness.Rendering, error)
	// Write writes each field's live value where kustomize says its built
	// value comes from, or as an override into dir's own kustomization
	// when that source is a file own says the unit may not write for that
	// field on its own authority. It returns, per field, what was written
	// or why not, and the edited files' new bytes.
	Write(
		files map[string][]byte,
		dir string,
		own func(file string, f KustomizeField) bool,
		fields []KustomizeField,
	) ([]KustomizeWritten, map[string][]byte, error)
}

// KustomizeField is one accepted field of a kustomize unit: the built
// object's field, its value before and the live value to write.
type KustomizeField struct {
	Object    observe.ObjectKey
	Field     string
	Old, Live any
}

// KustomizeWritten is where a KustomizeField was written: the file and the
// path in it, and why there; Refused says why it cannot be written.
type KustomizeWritten struct {
	File, Path, Why string
	Refused         string
}

// kustUnit is a kustomize unit's desired state at the snapshot.
type kustUnit struct {
	dir   string
	files map[string][]byte
	built *witness.Rendering
}

// readKustomize builds a kustomize unit from the snapshot's files.
func (p *planner) readKustomize(u *repoconfig.Unit) *unitValues {
	uv := &unitValues{}
	k := p.snap.Kustomizer
	if k == nil {
		uv.err = fmt.Errorf(
			"unit %s (%s) is the kustomization %s, but no kustomize builder is available, so nothing can be read or witnessed",
			u.Name,
			u.Environment,
			u.Kustomization,
		)
		return uv
	}
	files, err := k.Inputs(p.snapRead, p.snapList, u.Kustomization)
	if err != nil {
		uv.err = fmt.Errorf("unit %s (%s): %w", u.Name, u.Environment, err)
		return uv
	}
	built, err := k.Build(files, u.Kustomization)
	if err != nil {
		uv.err = fmt.Errorf("unit %s (%s): %w", u.Name, u.Environment, err)
		return uv
	}
	uv.kust = &kustUnit{dir: u.Kustomization, files: files, built: built}
	// One entry stands for the overlay in the decisions' changes; the
	// file written is known once the write-back is built.
	uv.files = []*valuesFile{{path: u.Kustomization}}
	return uv
}

// snapList lists the snapshot's files below dir: the files read are the
// repository as far as the planner knows it.
func (p *planner) snapList(dir string) ([]string, error) {
	var out []string
	for _, f := range slices.Sorted(maps.Keys(p.snap.Files)) {
		if dir == "." || strings.HasPrefix(f, dir+"/") {
			out = append(out, f)
		}
	}
	return out, nil
}

// snapRead reads a snapshot file.
func (p *planner) snapRead(path string) ([]byte, error) {
	if d, ok := p.snap.Files[path]; ok {
		return d, nil
	}
	return nil, fmt.Errorf("%s: not in the snapshot", path)
}

// writeKustomize builds a kustomize unit's write-back: the fields written
// where kustomize says their values come from (an override in the unit's
// own overlay for a base other environments build), the overlay built
// again with the edits, and the builds compared: only a build that
// differs exactly in the accepted fields, to the live values, is written.
func (p *planner) writeKustomize(w *unitWork, pend []*pending) {
	u, uv := w.u, w.uv
	ku := uv.kust
	// Only the unit's own overlay is written on its authority: a value
	// from a base is written as an override into the overlay unless every
	// other environment whose overlay builds the base allowed the same
	// change in this plan, and the pull request check holds a receipt to
	// the same rule.
	type objectField struct {
		object observe.ObjectKey
		field  string
	}
	baseEdits := map[objectField]string{}
	own := func(file string, f KustomizeField) bool {
		if strings.HasPrefix(file, ku.dir+"/") {
			return true
		}
		envs, ok := p.baseAgreed(u, file, f)
		if ok {
			baseEdits[objectField{f.Object, f.Field}] = baseWhy(file, envs)
		}
		return ok
	}
	var edited map[string][]byte
	var after *witness.Rendering
	for len(pend) > 0 {
		var fields []KustomizeField
		for _, pd := range pend {
			for _, fs := range pd.fields {
				fields = append(
					fields,
					KustomizeField{Object: pd.obs.Object, Field: fs.f.Path, Old: fs.repo, Live: fs.live},
				)
			}
		}
		written, out, err := p.snap.Kustomizer.Write(ku.files, ku.dir, own, fields)
		if err != nil {
			pend = p.drop(w, pend, blameAll(pend, fmt.Sprintf("kustomize: writing %s: %v", ku.dir, err)))
			continue
		}
		refused := map[*pending]string{}
		i := 0
		for _, pd := range pend {
			for _, fs := range pd.fields {
				kw := written[i]
				i++
				if kw.Refused != "" {
					refused[pd] = "kustomize: " + fs.f.Path + ": " + kw.Refused
					continue
				}
				fs.writtenFile, fs.writtenPath, fs.placedWhy = kw.File, kw.Path, kw.Why
				if why, ok := baseEdits[objectField{pd.obs.Object, fs.f.Path}]; ok &&
					!strings.HasPrefix(kw.File, ku.dir+"/") && kw.Why == "" {
					fs.placedWhy = why
				}
			}
		}
		if len(refused) > 0 {
			pend = p.deny(pend, refused)
			continue
		}
		files := maps.Clone(ku.files)
		maps.Copy(files, out)
		after, err = p.snap.Kustomizer.Build(files, ku.dir)
		if err != nil {
			pend = p.drop(w, pend, blameAll(pend, fmt.Sprintf("kustomize: building %s with the edits: %v", ku.dir, err)))
			continue
		}
		var accepted []witness.Accepted
		for _, pd := range pend {
			for _, fs := range pd.fields {
				accepted = append(accepted, witness.Accepted{Object: pd.object, Field: fs.f.Path, Live: fs.live})
			}
		}
		if mism := witness.Check(witness.Diff(ku.built, after), accepted, isSecret); len(mism) > 0 {
			why := strings.Replace(
				mismatchReason(mism),
				"rendering the chart with the edited values",
				"kustomize's build of "+ku.dir+" with the edits",
				1,
			)
			pend = p.deny(pend, blameAll(pend, why))
			continue
		}
		bad := map[*pending]string{}
		for _, pd := range pend {
			for _, fs := range pd.fields {
				fs.after = after.Objects[pd.object]
			}
			if err := p.attachReceipt(u, uv, pd, nil, nil, w.branch, kustomizeRender(ku, files, after, pd)); err != nil {
				bad[pd] = err.Error()
			}
		}
		if len(bad) > 0 {
			pend = p.drop(w, pend, bad)
			continue
		}
		edited = out
		break
	}
	if len(pend) == 0 {
		return
	}
	wb := p.finish(w, pend)
	if wb == nil {
		return
	}
	for _, f := range slices.Sorted(maps.Keys(edited)) {
		if string(edited[f]) != string(ku.files[f]) {
			wb.Files = append(wb.Files, File{Path: f, Data: edited[f]})
		}
	}
	slices.SortFunc(wb.Files, func(a, b File) int { return cmp.Compare(a.Path, b.Path) })
}

func blameAll(pend []*pending, why string) map[*pending]string {
	out := map[*pending]string{}
	for _, pd := range pend {
		out[pd] = why
	}
	return out
}

// kustomizeRender is a receipt's render section for a kustomize build.
func kustomizeRender(ku *kustUnit, files map[string][]byte, after *witness.Rendering, pd *pending) *receipt.Render {
	r := &receipt.Render{
		Renderer:  after.Renderer,
		Digest:    after.Digest,
		Files:     slices.Sorted(maps.Keys(files)),
		Namespace: pd.obs.Object.Namespace,
	}
	r.ObjectsCompared = slices.Sorted(maps.Keys(after.Objects))
	for _, k := range slices.Sorted(maps.Keys(ku.built.Objects)) {
		if _, ok := after.Objects[k]; !ok {
			r.ObjectsCompared = append(r.ObjectsCompared, k)
		}
	}
	slices.Sort(r.ObjectsCompared)
	for _, c := range witness.Diff(ku.built, after) {
		if c.Object != pd.object {
			continue
		}
		r.ChangedFields = append(r.ChangedFields, receipt.RenderedField{Object: c.Object, Field: c.Field,
			Before: renderedValue(c.Before, c.HasBefore), After: renderedValue(c.After, c.HasAfter)})
	}
	return r
}
