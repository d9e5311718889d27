package kustomize

import (
	"fmt"
	"path"
	"reflect"
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
// A list item is found in a strategic-merge patch or the resource file by
// the key kustomize merges it by (inDocument). A value made by a
// generator, a replacement or a component, a label or annotation
// commonLabels, labels or commonAnnotations set, a list item's merge key
// that a patch names the item by, a source the overlay builds more than
// once, and a source whose value is not the built one (vars:, a reference
// to a renamed object) are refused (ErrRefused) with a reason naming where
// the value comes from.
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
	live, built := yamlnode.Lookup(obj, segs)
	if raw, ok := b.Raw[object]; ok {
		live, built = yamlnode.Lookup(raw, segs)
		// Kustomize's names and labels are those before substitution.
		obj = raw
	}
	if substitution.MatchString(str(live)) {
		return locateVariable(b, object, field, str(live))
	}
	if o.Path == "" {
		return Source{}, fmt.Errorf("kustomize does not say which file %s comes from: %w", object, ErrRefused)
	}
	// The chains of kustomizations from dir down to the resource file: the
	// one whose renaming makes the object's name is the object's.
	chains, err := chainsTo(files, b.Dir, o.Path)
	if err != nil {
		return Source{}, err
	}
	var chain []*Kustomization
	var doc int
	var levels []seen
	for _, c := range chains {
		if doc, levels, err = original(files[o.Path], o.Path, c, obj); err == nil {
			chain = c
			break
		}
	}
	if chain == nil {
		return Source{}, err
	}
	what := fmt.Sprintf("%s of %s %s", field, str(obj["kind"]), str(meta(obj)["name"]))
	var found patchFound
	s := Source{File: o.Path, Document: doc, Path: field, Kind: KindResource, Dir: path.Dir(o.Path),
		Name: levels[0].before.org().Name, Why: fmt.Sprintf("the resource file %s", o.Path)}
	at := len(chain)
	for i, k := range chain {
		ls, f, ok, err := atLevel(files, k, levels[i], field, segs, live, obj)
		if err != nil {
			return Source{}, err
		}
		if ok {
			s, found, at = ls, f, i
			s.Name = levels[i].before.org().Name
			break
		}
		// The components a kustomization includes apply before its own
		// transformers and after what it builds on.
		if err := byComponent(files, k, levels[i], what, field, segs, live, obj); err != nil {
			return Source{}, err
		}
	}
	if at == len(chain) {
		found, err = inResource(files[o.Path], doc, obj, segs)
		if err != nil {
			return Source{}, fmt.Errorf("%s: %w", o.Path, err)
		}
		if found.path != nil {
			s.Path = yamlnode.FormatPath(found.path)
		}
	}
	if err := sharedSource(chains, chain, at, what, s.Why); err != nil {
		return Source{}, err
	}
	if found.key != "" && s.Kind == KindResource && !itemPatched(files, chain, levels, obj, segs[:len(segs)-1]) {
		// No patch names the item by its key: the key is a value as any.
		found.key = ""
	}
	if s.Kind != KindPatch && s.Kind != KindResource || !built {
		return s, nil
	}
	return s, found.check(what, s.Why, live, chain)
}

// byComponent refuses field when a component that k includes (or one
// that such a component includes) sets it: a patch, an images: or
// replicas: entry, a label of the component's. A component is shared by
// the overlays that include it.
func byComponent(files map[string][]byte, k *Kustomization, id seen, what, field string, segs []yamlnode.Segment,
	live any, obj map[string]any) error {
	for _, c := range components(files, k) {
		_, _, ok, err := atLevel(files, c, id, field, segs, live, obj)
		if err != nil {
			return err
		}
		if ok {
			return fmt.Errorf("%s is set by the component %s, which %s includes: a component is shared by the "+
				"overlays that include it: %w", what, c.Dir, k.File, ErrRefused)
		}
	}
	return nil
}

// components are the components k includes, and those they include, read
// from files; a component not among them is left out (Inputs reads every
// component a build includes).
func components(files map[string][]byte, k *Kustomization) []*Kustomization {
	read := func(p string) ([]byte, error) {
		if d, ok := files[p]; ok {
			return d, nil
		}
		return nil, fmt.Errorf("%s: not among the build's files", p)
	}
	var out []*Kustomization
	seen := map[string]bool{k.Dir: true}
	var walk func(k *Kustomization)
	walk = func(k *Kustomization) {
		for _, r := range k.Components {
			dir := path.Clean(path.Join(k.Dir, r))
			if seen[dir] {
				continue
			}
			seen[dir] = true
			c, err := readKustomization(read, dir, map[string][]byte{})
			if err != nil {
				continue
			}
			out = append(out, c)
			walk(c)
		}
	}
	walk(k)
	return out
}

// itemPatched reports whether a strategic-merge patch of the chain (or of
// a component it includes) holds the built list item at item (its merge
// key matched).
func itemPatched(files map[string][]byte, chain []*Kustomization, levels []seen, obj map[string]any,
	item []yamlnode.Segment) bool {
	for i, k := range chain {
		if slices.ContainsFunc(components(files, k), func(c *Kustomization) bool {
			return itemPatched(files, []*Kustomization{c}, levels[i:i+1], obj, item)
		}) {
			return true
		}
		var texts []string
		var targeted []bool
		for _, p := range k.PatchesStrategicMerge {
			t := string(p)
			if !strings.Contains(t, "\n") {
				t = string(files[path.Clean(path.Join(k.Dir, t))])
			}
			texts, targeted = append(texts, t), append(targeted, false)
		}
		for _, p := range k.Patches {
			if p.Target != nil && !selects(p.Target, levels[i].before) {
				continue
			}
			t := p.Patch
			if p.Path != "" {
				t = string(files[path.Clean(path.Join(k.Dir, p.Path))])
			}
			texts, targeted = append(texts, t), append(targeted, p.Target != nil)
		}
		for n, t := range texts {
			if _, _, ok := inPatch(t, levels[i].before, obj, item, targeted[n]); ok {
				return true
			}
		}
	}
	return false
}

// patchFound is a field found in a patch's or a resource file's document:
// its path and value there, and the merge key when the field is one.
type patchFound struct {
	path  []yamlnode.Segment
	value any
	key   string
	// missing: the document does not hold the field.
	missing bool
}

// check refuses a source that kustomize does not take the built value
// (live) from as it is: a list item's merge key (a patch would no longer
// match the item it merges into), a field the document does not hold, or
// a value another of kustomize's transformers changes after it (vars:, a
// reference to a renamed or generated object's name).
func (f patchFound) check(what, why string, live any, chain []*Kustomization) error {
	switch {
	case f.key != "":
		return fmt.Errorf(
			"%s is the key kustomize merges the list item by (%s): written in %s, the patches that name the item "+
				"would no longer match it: %w", what, f.key, why, ErrRefused)
	case f.missing:
		return fmt.Errorf(
			"%s is not in %s: kustomize adds it after (a patch adding a list item, a transformer backflow does "+
				"not follow): %w", what, why, ErrRefused)
	case reflect.DeepEqual(normal(f.value), normal(live)):
		return nil
	}
	by := "another of kustomize's transformers (a reference to an object it renames or generates, vars:)"
	if sv := str(f.value); strings.Contains(sv, "$(") {
		for _, k := range chain {
			if len(k.Vars) > 0 {
				by = "the vars: of " + k.File
				break
			}
		}
	}
	return fmt.Errorf("%s is %s in %s but %s in the build: %s changes it, and writing %s would drop that: %w",
		what, short(f.value), why, short(live), by, why, ErrRefused)
}

// short is a value for a reason, cut to a line.
func short(v any) string {
	s := fmt.Sprintf("%q", fmt.Sprint(v))
	if len(s) > 80 {
		s = s[:77] + `..."`
	}
	return s
}

// inResource finds the built field in the object's document (index doc)
// of its resource file.
func inResource(data []byte, doc int, obj map[string]any, segs []yamlnode.Segment) (patchFound, error) {
	docs := yamlnode.SplitDocuments(data)
	if doc >= len(docs) {
		return patchFound{}, fmt.Errorf("no document %d", doc)
	}
	var m map[string]any
	if err := sigsyaml.Unmarshal(data[docs[doc].Start:docs[doc].End], &m); err != nil {
		return patchFound{}, err
	}
	p, v, key, ok := inDocument(m, obj, segs)
	if !ok {
		return patchFound{missing: true}, nil
	}
	return patchFound{path: p, value: v, key: key}, nil
}

// sharedSource refuses a source that the build builds more than once: a
// kustomization (or the resource file) that several of the overlay's
// chains reach, as an overlay building two overlays of one base does.
// Written there, the value moves every copy.
func sharedSource(chains [][]*Kustomization, chain []*Kustomization, at int, what, why string) error {
	if len(chains) < 2 {
		return nil
	}
	var via []string
	for _, c := range chains {
		if at < len(chain) && !slices.Contains(c, chain[at]) {
			continue
		}
		// The route to the source differs from the object's own: the
		// source is built once per route.
		n := len(c)
		if at < len(chain) {
			n = slices.Index(c, chain[at])
		}
		route := make([]string, 0, n)
		for _, k := range c[:n] {
			route = append(route, k.Dir)
		}
		via = append(via, strings.Join(route, " > "))
	}
	slices.Sort(via)
	via = slices.Compact(via)
	if len(via) < 2 {
		return nil
	}
	return fmt.Errorf("%s comes from %s, which the overlay builds %d times (through %s): written there, it moves "+
		"every copy: %w", what, why, len(via), strings.Join(via, "; "), ErrRefused)
}

// chainsTo lists the chains of kustomizations from dir to one whose
// resources list file, each outermost first, following resources and
// components into the kustomizations they name wherever they are in the
// repository: more than one when the build reaches the file by more than
// one route. A kustomization is read once: the chains share it.
func chainsTo(files map[string][]byte, dir, file string) ([][]*Kustomization, error) {
	read := func(p string) ([]byte, error) {
		if d, ok := files[p]; ok {
			return d, nil
		}
		return nil, fmt.Errorf("%s: not among the build's files", p)
	}
	kusts := map[string]*Kustomization{}
	onPath := map[string]bool{}
	var walk func(dir string) ([][]*Kustomization, error)
	walk = func(dir string) ([][]*Kustomization, error) {
		if onPath[dir] || len(kusts) > maxKustomizations {
			return nil, nil
		}
		onPath[dir] = true
		defer delete(onPath, dir)
		k := kusts[dir]
		if k == nil {
			var err error
			if k, err = readKustomization(read, dir, map[string][]byte{}); err != nil {
				return nil, err
			}
			kusts[dir] = k
		}
		var out [][]*Kustomization
		for _, r := range append(slices.Clone(k.Resources), k.Components...) {
			p := path.Clean(path.Join(k.Dir, r))
			below := [][]*Kustomization{nil}
			switch {
			case p == file:
			case isKustomization(files, p):
				var err error
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
			for _, b := range below {
				if len(out) < maxChains {
					out = append(out, append([]*Kustomization{k}, b...))
				}
			}
		}
		return out, nil
	}
	chains, err := walk(dir)
	if err != nil {
		return nil, err
	}
	if chains == nil {
		return nil, fmt.Errorf("kustomize build %s: no kustomization lists %s", dir, file)
	}
	return chains, nil
}

// maxKustomizations bounds the kustomizations chainsTo reads, and
// maxChains the routes it lists from one kustomization.
const (
	maxKustomizations = 1000
	maxChains         = 64
)

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
	obj map[string]any,
) (Source, patchFound, bool, error) {
	kind, name := id.after.cur().Kind, id.after.cur().Name
	for _, r := range k.Replacements {
		for _, t := range r.Targets {
			if t == nil || t.Select == nil || !selects(t.Select, id.after) ||
				slices.ContainsFunc(t.Reject, func(s *types.Selector) bool { return s != nil && selects(s, id.after) }) {
				continue
			}
			for _, fp := range t.FieldPaths {
				if fp == field || strings.HasPrefix(field, fp+".") {
					return Source{}, patchFound{}, false, fmt.Errorf(
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
						Why: fmt.Sprintf("the images: entry for %s in %s", im.Name, k.File)}, patchFound{}, true, nil
				}
			}
		}
	}
	if field == "spec.replicas" && slices.Contains(replicasKinds, kind) {
		for i := len(k.Replicas) - 1; i >= 0; i-- {
			if named(id.after, k.Replicas[i].Name) {
				return Source{File: k.File, Path: fmt.Sprintf("replicas[%d].count", i), Kind: KindReplicas, Dir: k.Dir,
					Why: fmt.Sprintf("the replicas: entry for %s in %s", k.Replicas[i].Name, k.File)}, patchFound{}, true, nil
			}
		}
	}
	if by := setByLabels(k, segs); by != "" {
		return Source{}, patchFound{}, false, fmt.Errorf(
			"%s of %s/%s is set by the %s of %s on every object it builds: %w", field, kind, name, by, k.File, ErrRefused)
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
		found, doc, ok := inPatch(text, pa.as, obj, segs, pa.p.Target != nil)
		if !ok {
			continue
		}
		s := Source{
			File:     file,
			Document: doc,
			Path:     yamlnode.FormatPath(found.path),
			Kind:     KindPatch,
			Dir:      k.Dir,
			Why:      fmt.Sprintf("the patch %s of %s", pa.key, k.File),
		}
		if pa.p.Path != "" {
			s.Why = fmt.Sprintf("the patch file %s (%s of %s)", file, pa.key, k.File)
		} else {
			s.Path, s.InlinePath = where, s.Path
		}
		return s, found, true, nil
	}
	return Source{}, patchFound{}, false, nil
}

// setByLabels names the kustomization's field that sets field on every
// object (commonLabels, labels, commonAnnotations), or "": a label key it
// sets, in an object's or a template's labels or in a selector (a labels:
// entry's in the object's own labels, in a template's with
// includeTemplates or includeSelectors, in a selector with
// includeSelectors), or an annotation key it sets, in an object's or a
// template's annotations.
func setByLabels(k *Kustomization, segs []yamlnode.Segment) string {
	if len(segs) < 2 || segs[len(segs)-1].IsIndex || segs[len(segs)-2].IsIndex {
		return ""
	}
	key, parent := segs[len(segs)-1].Key, segs[len(segs)-2].Key
	switch parent {
	case "labels", "matchLabels", "selector":
		if _, ok := k.CommonLabels[key]; ok {
			return "commonLabels"
		}
		own := len(segs) == 3 && segs[0].Key == "metadata"
		for _, l := range k.Labels {
			_, ok := l.Pairs[key]
			switch {
			case !ok:
			case own, l.IncludeSelectors, l.IncludeTemplates && parent == "labels":
				return "labels"
			}
		}
	case "annotations":
		if _, ok := k.CommonAnnotations[key]; ok {
			return "commonAnnotations"
		}
	}
	return ""
}

// inPatch finds a built field of obj in a patch's text: a JSON 6902
// operation list (an add or replace of the field's pointer) or a
// strategic-merge patch of the object (its list items matched as kustomize
// merges them, inDocument); an untargeted strategic-merge document patches
// the object when kustomize would match it to the object seen as id. It
// returns the field's path and value in the patch and the document holding
// it.
func inPatch(text string, id identity, obj map[string]any, segs []yamlnode.Segment, targeted bool) (
	patchFound, int, bool,
) {
	var ops []struct {
		Op    string `json:"op"`
		Path  string `json:"path"`
		Value any    `json:"value"`
	}
	if targeted && sigsyaml.Unmarshal([]byte(text), &ops) == nil && len(ops) > 0 && ops[0].Op != "" {
		ptr := pointer(segs)
		for i := len(ops) - 1; i >= 0; i-- {
			if ops[i].Path == ptr && (ops[i].Op == "replace" || ops[i].Op == "add") {
				return patchFound{path: []yamlnode.Segment{{Index: i, IsIndex: true}, {Key: "value"}},
					value: ops[i].Value}, 0, true
			}
		}
		return patchFound{}, 0, false
	}
	for i, d := range yamlnode.SplitDocuments([]byte(text)) {
		var m map[string]any
		if sigsyaml.Unmarshal([]byte(text[d.Start:d.End]), &m) != nil || m == nil {
			continue
		}
		if !targeted && !patches(m, id) {
			continue
		}
		if p, v, key, ok := inDocument(m, obj, segs); ok {
			return patchFound{path: p, value: v, key: key}, i, true
		}
	}
	return patchFound{}, 0, false
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
