// Package builder is the planner's Kustomizer (plan.Kustomizer) over
// internal/kustomize: it reads a kustomization's inputs, builds it with
// builds kept by the digest of their inputs, and writes accepted fields
// where kustomize says their values come from.
//
// It must not know GitHub, git or a cluster.
package builder

import (
	"errors"
	"fmt"
	"maps"

	"github.com/backflow-dev/backflow/internal/kustomize"
	"github.com/backflow-dev/backflow/internal/plan"
	"github.com/backflow-dev/backflow/internal/witness"
)

// Builder implements plan.Kustomizer; its zero value is ready, and it is
// safe for concurrent use.
type Builder struct {
	// Builds keeps builds by their inputs' digest: a tick whose inputs did
	// not change builds nothing.
	Builds kustomize.Builder
}

var _ plan.Kustomizer = (*Builder)(nil)

// Inputs reads the files the kustomization in dir builds from and, when
// they hold a Flux postBuild variable and list can list the repository,
// the file of the Flux Kustomization applying dir, whose variables the
// build substitutes.
func (b *Builder) Inputs(
	read func(string) ([]byte, error),
	list func(string) ([]string, error),
	dir string,
) (map[string][]byte, error) {
	files, err := kustomize.Inputs(read, dir)
	if err != nil || list == nil || !kustomize.HasVariables(files) {
		return files, err
	}
	flux, err := kustomize.FluxInputs(read, list, dir)
	if err != nil {
		return nil, err
	}
	maps.Copy(files, flux)
	return files, nil
}

// Build builds dir from files, or takes the build of the same inputs.
func (b *Builder) Build(files map[string][]byte, dir string) (*witness.Rendering, error) {
	got, err := b.build(files, dir)
	if err != nil {
		return nil, err
	}
	return got.Rendering, nil
}

func (b *Builder) build(files map[string][]byte, dir string) (*kustomize.Build, error) {
	got, err := b.Builds.Build(files, dir)
	if err != nil {
		return nil, err
	}
	got.Rendering.Digest = "sha256:" + got.Digest
	return got, nil
}

// Write writes each field at its source, or as an override into dir's own
// kustomization when own refuses the source's file (an image other
// containers of the build also run as a patch of the one object); fields
// whose value kustomize makes elsewhere (a generator, a replacement, a
// component) are refused with the reason. Edits of one file are made in
// turn.
func (b *Builder) Write(
	files map[string][]byte,
	dir string,
	own func(string, plan.KustomizeField) bool,
	fields []plan.KustomizeField,
) ([]plan.KustomizeWritten, map[string][]byte, error) {
	built, err := b.build(files, dir)
	if err != nil {
		return nil, nil, err
	}
	cur := maps.Clone(files)
	edited := map[string][]byte{}
	out := make([]plan.KustomizeWritten, len(fields))
	overlay, err := kustomize.OverlayFile(files, dir)
	if err != nil {
		return nil, nil, err
	}
	for i, f := range fields {
		// The build's objects are keyed by their text.
		object := f.Object.String()
		src, err := kustomize.Locate(files, built, object, f.Field)
		if errors.Is(err, kustomize.ErrRefused) {
			out[i].Refused = err.Error()
			continue
		}
		if err != nil {
			return nil, nil, err
		}
		var w kustomize.Written
		// The Flux Kustomization applying the unit's overlay is the
		// environment's own, as the overlay is.
		mine := src.Kind == kustomize.KindPostBuild || own(src.File, f)
		if mine {
			w, err = kustomize.Write(cur[src.File], src, f.Old, f.Live)
		} else {
			// The name in the resource file: the overlay's patches run
			// before its namePrefix and nameSuffix, and kustomize matches
			// a replicas: entry or a patch target by the original name too.
			kind, _ := kustomize.KindName(built, object)
			name := src.Name
			why := fmt.Sprintf("Not claimed: %s sets this field, but other environments' overlays build it too; "+
				"the value is written as an override into %s, and the shared file is left as it is.", src.Why, overlay)
			if kustomize.SharedImage(built, object, f.Field) {
				// An images: entry would change the other containers of
				// that image too.
				w, err = kustomize.OverridePatch(cur[overlay], overlay, kind, name, f.Field, f.Live, why)
			} else {
				w, err = kustomize.Override(cur[overlay], overlay, kind, name, f.Field, f.Old, f.Live, why)
			}
		}
		if err != nil {
			out[i].Refused = err.Error()
			continue
		}
		cur[w.File], edited[w.File] = w.Data, w.Data
		out[i] = plan.KustomizeWritten{File: w.File, Path: w.Path}
		if !mine {
			out[i].Why = w.Why
		}
	}
	return out, edited, nil
}
