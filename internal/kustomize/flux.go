package kustomize

import (
	"encoding/json"
	"fmt"
	"maps"
	"path"
	"regexp"
	"slices"
	"strings"

	"github.com/fluxcd/pkg/envsubst"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/backflow-dev/backflow/internal/fluxdoc"
)

// KindPostBuild is a source that is a variable of a Flux Kustomization's
// spec.postBuild.substitute.
const KindPostBuild = "postBuild"

// substituteKey is the label or annotation that turns Flux's substitution
// off for one object.
const substituteKey = "kustomize.toolkit.fluxcd.io/substitute"

// varName is the name Flux accepts for a postBuild variable.
var varName = regexp.MustCompile(`^[_[:alpha:]][_[:alpha:][:digit:]]*$`)

// Flux is the repository's Flux Kustomization applying an overlay, as
// fluxdoc reads it.
type Flux = fluxdoc.Flux

// substitute is obj as the kustomize-controller substitutes it after the
// build (fluxcd/pkg/kustomize's SubstituteVariables): the object's YAML
// through Flux's envsubst with the inline variables, unless the object
// turns substitution off or there is nothing to substitute. A variable
// only spec.postBuild.substituteFrom can define (in the cluster) is left
// as its reference, ${NAME}, so the build never claims its value.
func substitute(f *Flux, obj map[string]any) (map[string]any, error) {
	if f == nil || !f.PostBuild {
		return obj, nil
	}
	md := meta(obj)
	for _, k := range []string{"labels", "annotations"} {
		if m, _ := md[k].(map[string]any); str(m[substituteKey]) == "disabled" {
			return obj, nil
		}
	}
	if len(f.Substitute) == 0 && len(f.From) == 0 && !f.Always {
		return obj, nil
	}
	for _, k := range slices.Sorted(maps.Keys(f.Substitute)) {
		if !varName.MatchString(k) {
			return nil, fmt.Errorf("%s: spec.postBuild.substitute: %q is not a valid variable name", f.File, k)
		}
	}
	text, err := sigsyaml.Marshal(obj)
	if err != nil {
		return nil, err
	}
	out, err := envsubst.Eval(string(text), func(name string) (string, bool) {
		if v, ok := f.Substitute[name]; ok {
			return v, true
		}
		if len(f.From) > 0 {
			return "${" + name + "}", true
		}
		return "", true
	})
	if err != nil {
		return nil, fmt.Errorf("%s: Flux postBuild substitution: %w", f.File, err)
	}
	raw, err := sigsyaml.YAMLToJSON([]byte(out))
	if err != nil {
		return nil, fmt.Errorf("%s: Flux postBuild substitution: %w", f.File, err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("%s: Flux postBuild substitution: %w", f.File, err)
	}
	return m, nil
}

// locateVariable is the source of a built field whose value in the
// unsubstituted build, raw, holds a Flux postBuild variable: the
// variable's entry in the Flux Kustomization's spec.postBuild.substitute,
// when that is where its value is defined. A variable defined only by
// substituteFrom (a ConfigMap or Secret in the cluster) or by its
// default, and a value holding more than one variable, are refused.
func locateVariable(b *Build, object, field, raw string) (Source, error) {
	refs := substitution.FindAllStringIndex(raw, -1)
	ref := raw[refs[0][0]:refs[0][1]]
	name := ref[2 : len(ref)-1]
	if i := strings.IndexAny(name, ":="); i >= 0 {
		name = name[:i]
	}
	refuse := func(why string, args ...any) (Source, error) {
		return Source{}, fmt.Errorf("%s %s is %q, which holds the Flux postBuild variable %s: %s: %w",
			object, field, raw, ref, fmt.Sprintf(why, args...), ErrRefused)
	}
	f := b.Flux
	switch {
	case f == nil || !f.PostBuild:
		return refuse("its value is substituted by the Flux Kustomization that applies %s, and none with a "+
			"postBuild among the files read does (the repository is searched for one only by a reader that can "+
			"list it), so it is not written in the overlay", b.Dir)
	case len(refs) > 1:
		return refuse("the value holds more than one variable, so which one to write is not said")
	}
	if _, ok := f.Substitute[name]; !ok {
		if len(f.From) > 0 {
			return refuse("%s is not in spec.postBuild.substitute of the Flux Kustomization %s (%s), so it comes from "+
				"its substituteFrom (%s), in the cluster, not in the repository",
				name, f.Name, f.File, strings.Join(f.From, ", "))
		}
		return refuse("%s is not in spec.postBuild.substitute of the Flux Kustomization %s (%s): "+
			"its default applies, and only a variable the repository defines is written", name, f.Name, f.File)
	}
	return Source{
		File:     f.File,
		Document: f.Document,
		Path:     "spec.postBuild.substitute." + name,
		Kind:     KindPostBuild,
		Dir:      path.Dir(f.File),
		Affix:    [2]string{raw[:refs[0][0]], raw[refs[0][1]:]},
		Why: fmt.Sprintf("the variable %s of spec.postBuild.substitute of the Flux Kustomization %s (%s)",
			name, f.Name, f.File),
	}, nil
}

// variableValue is the variable's new value that makes the substituted
// field live: live's text without the field's text around the variable
// (s.Affix).
func variableValue(s Source, live any) (string, error) {
	var text string
	switch v := live.(type) {
	case string:
		text = v
	case nil, map[string]any, []any:
		return "", fmt.Errorf("%s: the live value %v is not a scalar a variable can hold", s.Why, live)
	default:
		raw, err := json.Marshal(v)
		if err != nil {
			return "", err
		}
		text = string(raw)
	}
	pre, post := s.Affix[0], s.Affix[1]
	if !strings.HasPrefix(text, pre) || !strings.HasSuffix(text[len(pre):], post) {
		return "", fmt.Errorf(
			"%s: the live value %q does not keep the field's text around the variable (%q before, %q after)",
			s.Why,
			text,
			pre,
			post,
		)
	}
	return text[len(pre) : len(text)-len(post)], nil
}

// HasVariables reports whether any of files holds a Flux postBuild
// variable reference: only then is the repository searched for the Flux
// Kustomization applying the overlay.
func HasVariables(files map[string][]byte) bool {
	for _, data := range files {
		if substitution.Match(data) {
			return true
		}
	}
	return false
}

// FluxInputs reads, through list (the repository's manifest files below a
// folder) and read, the file holding the Flux Kustomization whose
// spec.path is dir, by repository path; none when no file has one.
func FluxInputs(
	read func(path string) ([]byte, error),
	list func(dir string) ([]string, error),
	dir string,
) (map[string][]byte, error) {
	names, err := list(".")
	if err != nil {
		return nil, fmt.Errorf("listing the repository for the Flux Kustomization applying %s: %w", dir, err)
	}
	candidates := map[string][]byte{}
	for _, n := range names {
		data, err := read(n)
		if err != nil {
			return nil, fmt.Errorf("reading %s for the Flux Kustomization applying %s: %w", n, dir, err)
		}
		if fluxdoc.IsCandidate(data) {
			candidates[n] = data
		}
	}
	f, err := fluxdoc.Find(candidates, dir)
	if err != nil || f == nil {
		return nil, err
	}
	return map[string][]byte{f.File: candidates[f.File]}, nil
}
