package plan

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/backflow-dev/backflow/internal/receipt"
	"github.com/backflow-dev/backflow/internal/repoconfig"
	"github.com/backflow-dev/backflow/internal/values"
	"github.com/backflow-dev/backflow/internal/witness"
)

// restoreKustomize makes a kustomize unit's restoring write-back: each
// expired field's from written by the Kustomizer where kustomize says its
// value comes from, which must be the file and path the acceptance wrote
// (its receipt's writtenFile and writtenPath; a Flux postBuild variable is
// written back in its Flux Kustomization), and the overlay built again:
// only a build that differs exactly in the restored fields, each built as
// the value restored, is written. A shared base the acceptance edited is
// restored only when the rule it was edited under still holds: every other
// environment whose overlay builds it restores the same field to the same
// value in this plan.
func (p *planner) restoreKustomize(
	u *repoconfig.Unit,
	uv *unitValues,
	indexes []int,
	branch string,
	refuse func(string),
) {
	ku := uv.kust
	var (
		fields   []KustomizeField
		changes  []Change
		accepted []witness.Accepted
	)
	for _, i := range indexes {
		for _, c := range p.res.Expiries[i].Changes {
			fields = append(fields, KustomizeField{Object: c.Object, Field: c.Field, Old: c.To, Live: c.From})
			changes = append(changes, c)
			accepted = append(accepted, witness.Accepted{Object: c.Object.String(), Field: c.Field, Live: c.From})
		}
	}
	var notOwn, placed []string
	own := func(file string, f KustomizeField) bool {
		if strings.HasPrefix(file, ku.dir+"/") {
			return true
		}
		envs, lacking := p.baseRestored(u, file, f)
		if len(envs) == 0 || len(lacking) > 0 {
			why := "no other environment's unit builds it, so it was not edited under their agreement"
			if len(lacking) > 0 {
				why = strings.Join(lacking, "; ")
			}
			notOwn = append(notOwn, fmt.Sprintf(
				"%s sets %s of %s outside the overlay, a base restored only as it was edited, with every environment "+
					"building it restoring the same value in this plan: %s; restore by hand",
				file,
				f.Field,
				f.Object,
				why,
			))
			return false
		}
		why := fmt.Sprintf("Shared base: %s is also built by units of %s, each restoring the same value for this "+
			"field in this plan, so the base itself is restored.", file, strings.Join(envs, ", "))
		if !slices.Contains(placed, why) {
			placed = append(placed, why)
		}
		return true
	}
	written, edited, err := p.snap.Kustomizer.Write(ku.files, ku.dir, own, fields)
	if err != nil {
		refuse(fmt.Sprintf("kustomize: writing %s: %v", ku.dir, err))
		return
	}
	if len(notOwn) > 0 {
		refuse(strings.Join(notOwn, "; "))
		return
	}
	for k, kw := range written {
		c := changes[k]
		switch {
		case kw.Refused != "":
			refuse("kustomize: " + c.Field + ": " + kw.Refused)
			return
		case kw.File != c.WrittenFile || kw.Path != c.WrittenPath:
			refuse(fmt.Sprintf(
				"kustomize now sets %s of %s at %s in %s, not at %s in %s where the acceptance wrote it: restore by hand",
				c.Field,
				c.Object,
				kw.Path,
				kw.File,
				c.WrittenPath,
				c.WrittenFile,
			))
			return
		}
	}
	files := maps.Clone(ku.files)
	maps.Copy(files, edited)
	after, err := p.snap.Kustomizer.Build(files, ku.dir)
	if err != nil {
		refuse(fmt.Sprintf("kustomize: building %s with the restoring edits: %v", ku.dir, err))
		return
	}
	if mism := witness.Check(witness.Diff(ku.built, after), accepted, isSecret); len(mism) > 0 {
		refuse(strings.Replace(mismatchReason(mism), "rendering the chart with the edited values",
			"kustomize's build of "+ku.dir+" with the restoring edits", 1))
		return
	}
	rendered := &receipt.Render{Renderer: after.Renderer, Digest: after.Digest, Files: slices.Sorted(maps.Keys(files))}
	compared := map[string]bool{}
	for k := range ku.built.Objects {
		compared[k] = true
	}
	for k := range after.Objects {
		compared[k] = true
	}
	rendered.ObjectsCompared = slices.Sorted(maps.Keys(compared))
	for _, c := range witness.Diff(ku.built, after) {
		rendered.ChangedFields = append(rendered.ChangedFields, receipt.RenderedField{Object: c.Object, Field: c.Field,
			Before: renderedValue(c.Before, c.HasBefore), After: renderedValue(c.After, c.HasAfter)})
	}
	var out []File
	for _, f := range slices.Sorted(maps.Keys(edited)) {
		if string(edited[f]) != string(ku.files[f]) {
			out = append(out, File{Path: f, Data: edited[f]})
		}
	}
	desired := func(c Change) (any, bool) { return p.lookup(after.Objects[c.Object.String()], c.Field) }
	p.restoreWriteBack(u, indexes, branch, restored{desired: desired, rendered: rendered, files: out, placed: placed},
		refuse)
}

// baseRestored says whether file, a file kustomize unit u's overlay builds
// from outside the overlay, may be written back for f's restore on u's
// authority, under the rule it was edited by (baseAgreed): every other
// environment whose kustomize unit's overlay builds file has, in this
// plan, a due expiry restoring the same field of an object of the same
// apiVersion, kind and name to the same value, and there is at least one.
// It returns those environments, and why each other one does not agree.
func (p *planner) baseRestored(u *repoconfig.Unit, file string, f KustomizeField) (envs, lacking []string) {
	want := f.Object
	for i := range p.cfg.Units {
		o := &p.cfg.Units[i]
		if o.Environment == u.Environment || o.Kustomization == "" {
			continue
		}
		ov := p.unitValues(o)
		if ov.kust == nil {
			lacking = append(lacking, fmt.Sprintf("unit %s of %s could not be read, so whether it builds %s is unknown",
				o.Name, o.Environment, file))
			continue
		}
		if _, builds := ov.kust.files[file]; !builds {
			continue
		}
		same := slices.ContainsFunc(p.res.Expiries, func(x Expiry) bool {
			if x.State != Due || x.Environment != o.Environment || x.Unit != o.Name ||
				x.Object.APIVersion != want.APIVersion || x.Object.Kind != want.Kind || x.Object.Name != want.Name {
				return false
			}
			return slices.ContainsFunc(x.Changes, func(c Change) bool {
				return c.Field == f.Field && c.WrittenFile == file && values.Equal(c.From, f.Live)
			})
		})
		if !same {
			lacking = append(lacking, fmt.Sprintf("unit %s of %s builds it and has no acceptance of it due to be "+
				"restored to %s in this plan", o.Name, o.Environment, values.Format(f.Live)))
			continue
		}
		if !slices.Contains(envs, o.Environment) {
			envs = append(envs, o.Environment)
		}
	}
	return envs, lacking
}
