package kustomize

import (
	"fmt"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"sigs.k8s.io/kustomize/api/types"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/backflow-dev/backflow/internal/yamlnode"
)

// Source is where a built field's value is set, and so where a write-back
// writes it.
type Source struct {
	// File is the repository path of the file to edit; Document the index
	// of its document holding the value (as the values editor counts),
	// and Path the value's path in that document (Helm's --set syntax).
	File     string
	Document int
	Path     string
	// Inline is set when the value is inside an inline patch: Path is the
	// patch's string in File, and InlinePath the value's path inside the
	// patch's text.
	InlinePath string
	// Kind says which kind of source it is: replicas, images, patch,
	// resource.
	Kind string
	// Dir is the kustomization folder whose file sets the value.
	Dir string
	// Why names the source for receipts and reasons.
	Why string
	// Affix is, for a postBuild variable, the field's text before and
	// after the variable's reference.
	Affix [2]string
	// Name is the object's name in its resource file, before namePrefix
	// and nameSuffix: kustomize matches replicas: entries and patch
	// targets of every kustomization of the build against it.
	Name string
}

// Sources kinds.
const (
	KindReplicas = "replicas"
	KindImages   = "images"
	KindPatch    = "patch"
	KindResource = "resource"
)

// substitution finds a Flux postBuild variable (${NAME}, ${NAME:=default}).
var substitution = regexp.MustCompile(`\$\{[A-Za-z_][A-Za-z0-9_]*(:?=[^}]*)?\}`)

// imageField is a container's image field.
var imageField = regexp.MustCompile(
	`^spec\.template\.spec\.(init)?[cC]ontainers\[[0-9]+\]\.image$|^spec\.(init)?[cC]ontainers\[[0-9]+\]\.image$`,
)

// Locate finds which source of the build of dir from files sets field of
// object (a witness.Key): the last writer, as kustomize applies a
// kustomization (its resources and their kustomizations first, then its
// patchesStrategicMerge, its patches, its namespace:, namePrefix: and
// nameSuffix:, its patchesJson6902, then its replicas: and images:
// entries). The object's document in its resource file is the one the
// chain's renaming turns into the built name and namespace, and entries
// and patch targets are matched as kustomize matches them (identity.go).
// A value made by a generator, a replacement or a component is refused
// (ErrRefused) with a reason naming where it comes from.
func Locate(files map[string][]byte, b *Build, object, field string) (Source, error) {
	obj, ok := b.Rendering.Objects[object]
	if !ok {
		return Source{}, fmt.Errorf("kustomize build %s makes no %s", b.Dir, object)
	}
	o := b.Origin[object]
	if o.GeneratedBy != "" {
		return Source{}, fmt.Errorf(
			"%s %s is made by %s: a generated value has no place to be written: %w",
			object,
			field,
			o.GeneratedBy,
			ErrRefused,
		)
	}
	segs, err := yamlnode.ParsePath(field)
	if err != nil {
		return Source{}, err
	}
	live, _ := yamlnode.Lookup(obj, segs)
	if raw, ok := b.Raw[object]; ok {
		live, _ = yamlnode.Lookup(raw, segs)
		// Kustomize's names and labels are those before substitution.
		obj = raw
	}
	if substitution.MatchString(str(live)) {
		return locateVariable(b, object, field, str(live))
	}
	if o.Path == "" {
		return Source{}, fmt.Errorf("kustomize does not say which file %s comes from: %w", object, ErrRefused)
	}
	// The chain of kustomizations from dir down to the resource file.
	chain, err := chainTo(files, b.Dir, o.Path)
	if err != nil {
		return Source{}, err
	}
	doc, levels, err := original(files[o.Path], o.Path, chain, obj)
	if err != nil {
		return Source{}, err
	}
	for i, k := range chain {
		s, found, err := atLevel(files, k, levels[i], field, segs, live)
		if err != nil || found {
			s.Name = levels[i].before.org().Name
			return s, err
		}
	}
	return Source{File: o.Path, Document: doc, Path: field, Kind: KindResource, Dir: path.Dir(o.Path),
		Name: levels[0].before.org().Name, Why: fmt.Sprintf("the resource file %s", o.Path)}, nil
}

// chainTo lists the kustomizations from dir to the one whose resources
// list file, outermost first, following resources and components into
// the kustomizations they name wherever they are in the repository.
func chainTo(files map[string][]byte, dir, file string) ([]*Kustomization, error) {
	read := func(p string) ([]byte, error) {
		if d, ok := files[p]; ok {
			return d, nil
		}
		return nil, fmt.Errorf("%s: not among the build's files", p)
	}
	seen := map[string]bool{}
	var walk func(dir string) ([]*Kustomization, error)
	walk = func(dir string) ([]*Kustomization, error) {
		if seen[dir] {
			return nil, nil
		}
		seen[dir] = true
		k, err := readKustomization(read, dir, map[string][]byte{})
		if err != nil {
			return nil, err
		}
		for _, r := range append(slices.Clone(k.Resources), k.Components...) {
			p := path.Clean(path.Join(k.Dir, r))
			var below []*Kustomization
			switch {
			case p == file:
			case isKustomization(files, p):
				if below, err = walk(p); err != nil {
					return nil, err
				}
				if below == nil {
					continue
				}
			default:
				continue
			}
			if slices.Contains(k.Components, r) {
				return nil, fmt.Errorf(
					"%s comes from the component %s: a component is shared by the overlays that include it: %w",
					file,
					p,
					ErrRefused,
				)
			}
			return append([]*Kustomization{k}, below...), nil
		}
		return nil, nil
	}
	chain, err := walk(dir)
	if err != nil {
		return nil, err
	}
	if chain == nil {
		return nil, fmt.Errorf("kustomize build %s: no kustomization lists %s", dir, file)
	}
	return chain, nil
}

// isKustomization reports whether dir holds a kustomization file among
// files.
func isKustomization(files map[string][]byte, dir string) bool {
	_, err := OverlayFile(files, dir)
	return err == nil
}

// atLevel finds the source of field among k's own transformers, the last
// writer first: replacements, images:, replicas:, then its patches in
// reverse of kustomize's order (patchesStrategicMerge, patches, then
// patchesJson6902 after the kustomization's renaming).
func atLevel(
	files map[string][]byte,
	k *Kustomization,
	id seen,
	field string,
	segs []yamlnode.Segment,
	live any,
) (Source, bool, error) {
	kind, name := id.after.cur().Kind, id.after.cur().Name
	for _, r := range k.Replacements {
		for _, t := range r.Targets {
			if t == nil || t.Select == nil || !selects(t.Select, id.after) ||
				slices.ContainsFunc(t.Reject, func(s *types.Selector) bool { return s != nil && selects(s, id.after) }) {
				continue
			}
			for _, fp := range t.FieldPaths {
				if fp == field || strings.HasPrefix(field, fp+".") {
					return Source{}, false, fmt.Errorf(
						"%s of %s/%s is set by a replacement in %s: its value is another object's, not to be written here: %w",
						field,
						kind,
						name,
						k.File,
						ErrRefused,
					)
				}
			}
		}
	}
	if imageField.MatchString(field) {
		if s := str(live); s != "" {
			img := imageName(s)
			for i := len(k.Images) - 1; i >= 0; i-- {
				im := k.Images[i]
				if im.Name == img || im.NewName == img {
					return Source{File: k.File, Path: fmt.Sprintf("images[%d]", i), Kind: KindImages, Dir: k.Dir,
						Why: fmt.Sprintf("the images: entry for %s in %s", im.Name, k.File)}, true, nil
				}
			}
		}
	}
	if field == "spec.replicas" && slices.Contains(replicasKinds, kind) {
		for i := len(k.Replicas) - 1; i >= 0; i-- {
			if named(id.after, k.Replicas[i].Name) {
				return Source{File: k.File, Path: fmt.Sprintf("replicas[%d].count", i), Kind: KindReplicas, Dir: k.Dir,
					Why: fmt.Sprintf("the replicas: entry for %s in %s", k.Replicas[i].Name, k.File)}, true, nil
			}
		}
	}
	type patchAt struct {
		p   types.Patch
		key string
		// as is the object as the patch sees it.
		as identity
	}
	var patches []patchAt
	for i, p := range k.PatchesStrategicMerge {
		s := string(p)
		pa := patchAt{key: fmt.Sprintf("patchesStrategicMerge[%d]", i), as: id.before}
		if strings.Contains(s, "\n") {
			pa.p.Patch = s
		} else {
			pa.p.Path = s
		}
		patches = append(patches, pa)
	}
	for i, p := range k.Patches {
		patches = append(patches, patchAt{p: p, key: fmt.Sprintf("patches[%d]", i), as: id.before})
	}
	for i, p := range k.PatchesJson6902 {
		patches = append(patches, patchAt{p: p, key: fmt.Sprintf("patchesJson6902[%d]", i), as: id.after})
	}
	for i := len(patches) - 1; i >= 0; i-- {
		pa := patches[i]
		text, file, where := pa.p.Patch, k.File, pa.key+".patch"
		if pa.p.Path != "" {
			file = path.Clean(path.Join(k.Dir, pa.p.Path))
			text, where = string(files[file]), ""
		}
		if pa.p.Target != nil && !selects(pa.p.Target, pa.as) {
			continue
		}
		inner, doc, ok := inPatch(text, pa.as, field, segs, pa.p.Target != nil)
		if !ok {
			continue
		}
		s := Source{
			File:     file,
			Document: doc,
			Path:     inner,
			Kind:     KindPatch,
			Dir:      k.Dir,
			Why:      fmt.Sprintf("the patch %s of %s", pa.key, k.File),
		}
		if pa.p.Path != "" {
			s.Why = fmt.Sprintf("the patch file %s (%s of %s)", file, pa.key, k.File)
		} else {
			s.Path, s.InlinePath = where, inner
		}
		return s, true, nil
	}
	return Source{}, false, nil
}

// inPatch finds field in a patch's text: a JSON 6902 operation list (an
// add or replace of the field's pointer) or a strategic-merge patch of the
// object (the field's own path, without list indices, whose merge by key
// backflow does not redo); an untargeted strategic-merge document patches
// the object when kustomize would match it to the object seen as id. It
// returns the path of the value in the patch and the document holding it.
func inPatch(text string, id identity, field string, segs []yamlnode.Segment, targeted bool) (string, int, bool) {
	var ops []struct {
		Op   string `json:"op"`
		Path string `json:"path"`
	}
	if targeted && sigsyaml.Unmarshal([]byte(text), &ops) == nil && len(ops) > 0 && ops[0].Op != "" {
		ptr := pointer(segs)
		for i := len(ops) - 1; i >= 0; i-- {
			if ops[i].Path == ptr && (ops[i].Op == "replace" || ops[i].Op == "add") {
				return fmt.Sprintf("[%d].value", i), 0, true
			}
		}
		return "", 0, false
	}
	if slices.ContainsFunc(segs, func(s yamlnode.Segment) bool { return s.IsIndex }) {
		return "", 0, false
	}
	for i, d := range yamlnode.SplitDocuments([]byte(text)) {
		var m map[string]any
		if sigsyaml.Unmarshal([]byte(text[d.Start:d.End]), &m) != nil || m == nil {
			continue
		}
		if !targeted && !patches(m, id) {
			continue
		}
		if _, ok := yamlnode.Lookup(m, segs); ok {
			return field, i, true
		}
	}
	return "", 0, false
}

// pointer is the JSON pointer of a path.
func pointer(segs []yamlnode.Segment) string {
	var b strings.Builder
	for _, s := range segs {
		b.WriteByte('/')
		if s.IsIndex {
			b.WriteString(strconv.Itoa(s.Index))
			continue
		}
		b.WriteString(strings.NewReplacer("~", "~0", "/", "~1").Replace(s.Key))
	}
	return b.String()
}

// imageName is an image reference without its tag or digest.
func imageName(ref string) string {
	if i := strings.Index(ref, "@"); i >= 0 {
		ref = ref[:i]
	}
	if i := strings.LastIndex(ref, ":"); i > strings.LastIndex(ref, "/") {
		ref = ref[:i]
	}
	return ref
}

func str(v any) string { s, _ := v.(string); return s }

func meta(m map[string]any) map[string]any {
	md, _ := m["metadata"].(map[string]any)
	return md
}

// KindName is the kind and name of a built object.
func KindName(b *Build, object string) (string, string) {
	obj := b.Rendering.Objects[object]
	return str(obj["kind"]), str(meta(obj)["name"])
}

// OverlayFile is the repository path of dir's kustomization file among
// files.
func OverlayFile(files map[string][]byte, dir string) (string, error) {
	for _, n := range kustomizationNames {
		if _, ok := files[path.Join(dir, n)]; ok {
			return path.Join(dir, n), nil
		}
	}
	return "", fmt.Errorf("%s: no kustomization.yaml, kustomization.yml or Kustomization", dir)
}
