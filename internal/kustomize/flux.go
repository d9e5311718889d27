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

	"github.com/backflow-dev/backflow/internal/yamlnode"
)

// KindPostBuild is a source that is a variable of a Flux Kustomization's
// spec.postBuild.substitute.
const KindPostBuild = "postBuild"

// fluxAPIGroup is the API group of Flux's Kustomization.
const fluxAPIGroup = "kustomize.toolkit.fluxcd.io/"

// substituteKey is the label or annotation that turns Flux's substitution
// off for one object.
const substituteKey = "kustomize.toolkit.fluxcd.io/substitute"

// varName is the name Flux accepts for a postBuild variable.
var varName = regexp.MustCompile(`^[_[:alpha:]][_[:alpha:][:digit:]]*$`)

// Flux is the repository's Flux Kustomization that applies an overlay:
// the variables its postBuild substitutes in the built objects, as the
// kustomize-controller does after kustomize build.
type Flux struct {
	// File is its repository path and Document its document's index.
	File     string
	Document int
	// Name is its namespace/name.
	Name string
	// PostBuild says it has a spec.postBuild: without one nothing is
	// substituted.
	PostBuild bool
	// Substitute is spec.postBuild.substitute.
	Substitute map[string]string
	// From names spec.postBuild.substituteFrom's ConfigMaps and Secrets
	// ("ConfigMap/cluster-vars"): their variables are in the cluster, not
	// in the repository.
	From []string
	// Always is substituteStrategy: Always.
	Always bool
}

// fluxDoc is the part of a Flux Kustomization backflow reads.
type fluxDoc struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name      string `json:"name"`
		Namespace string `json:"namespace"`
	} `json:"metadata"`
	Spec struct {
		Path      string `json:"path"`
		PostBuild *struct {
			SubstituteStrategy string         `json:"substituteStrategy"`
			Substitute         map[string]any `json:"substitute"`
			SubstituteFrom     []struct {
				Kind string `json:"kind"`
				Name string `json:"name"`
			} `json:"substituteFrom"`
		} `json:"postBuild"`
	} `json:"spec"`
}

// IsFluxCandidate reports whether data may hold a Flux Kustomization, so
// that a reader of the repository keeps only those files.
func IsFluxCandidate(data []byte) bool {
	return strings.Contains(string(data), fluxAPIGroup)
}

// FindFlux is the Flux Kustomization among files whose spec.path is dir
// (nil when there is none). Two of them applying the same overlay are an
// error naming both: which one's variables apply is then not the
// repository's to say.
func FindFlux(files map[string][]byte, dir string) (*Flux, error) {
	dir = path.Clean(dir)
	var found *Flux
	for _, file := range sortedKeys(files) {
		data := files[file]
		if !IsFluxCandidate(data) {
			continue
		}
		for i, d := range yamlnode.SplitDocuments(data) {
			var doc fluxDoc
			if sigsyaml.Unmarshal(data[d.Start:d.End], &doc) != nil {
				continue
			}
			if !strings.HasPrefix(doc.APIVersion, fluxAPIGroup) || doc.Kind != "Kustomization" ||
				doc.Spec.Path == "" || path.Clean(strings.TrimPrefix(doc.Spec.Path, "/")) != dir {
				continue
			}
			f := &Flux{File: file, Document: i, Name: doc.Metadata.Namespace + "/" + doc.Metadata.Name}
			if pb := doc.Spec.PostBuild; pb != nil {
				f.PostBuild, f.Always = true, pb.SubstituteStrategy == "Always"
				f.Substitute = map[string]string{}
				for _, k := range slices.Sorted(maps.Keys(pb.Substitute)) {
					v, ok := pb.Substitute[k].(string)
					if !ok {
						return nil, fmt.Errorf(
							"%s: document %d: spec.postBuild.substitute.%s is %v, not a string: Flux takes only strings there",
							file,
							i,
							k,
							pb.Substitute[k],
						)
					}
					f.Substitute[k] = strings.ReplaceAll(v, "\n", "")
				}
				for _, r := range pb.SubstituteFrom {
					f.From = append(f.From, r.Kind+"/"+r.Name)
				}
			}
			if found != nil {
				return nil, fmt.Errorf(
					"the Flux Kustomizations %s (%s) and %s (%s) both apply %s: "+
						"which one's postBuild variables are the overlay's is not said",
					found.Name,
					found.File,
					f.Name,
					f.File,
					dir,
				)
			}
			found = f
		}
	}
	return found, nil
}

// substitute is obj as the kustomize-controller substitutes it after the
// build (fluxcd/pkg/kustomize's SubstituteVariables): the object's YAML
// through Flux's envsubst with the inline variables, unless the object
// turns substitution off or there is nothing to substitute. A variable
// only spec.postBuild.substituteFrom can define (in the cluster) is left
// as its reference, ${NAME}, so the build never claims its value.
func (f *Flux) substitute(obj map[string]any) (map[string]any, error) {
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
		if IsFluxCandidate(data) {
			candidates[n] = data
		}
	}
	f, err := FindFlux(candidates, dir)
	if err != nil || f == nil {
		return nil, err
	}
	return map[string][]byte{f.File: candidates[f.File]}, nil
}
