package fluxdoc

import (
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"

	sigsyaml "sigs.k8s.io/yaml"

	"github.com/backflow-dev/backflow/internal/yamlnode"
)

// apiGroup is the API group of Flux's Kustomization.
const apiGroup = "kustomize.toolkit.fluxcd.io/"

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

// IsCandidate reports whether data may hold a Flux Kustomization, so
// that a reader of the repository keeps only those files.
func IsCandidate(data []byte) bool {
	return strings.Contains(string(data), apiGroup)
}

// Find is the Flux Kustomization among files whose spec.path is dir
// (nil when there is none). Two of them applying the same overlay are an
// error naming both: which one's variables apply is then not the
// repository's to say.
func Find(files map[string][]byte, dir string) (*Flux, error) {
	dir = path.Clean(dir)
	var found *Flux
	for _, file := range slices.Sorted(maps.Keys(files)) {
		data := files[file]
		if !IsCandidate(data) {
			continue
		}
		for i, d := range yamlnode.SplitDocuments(data) {
			var doc fluxDoc
			if sigsyaml.Unmarshal(data[d.Start:d.End], &doc) != nil {
				continue
			}
			if !strings.HasPrefix(doc.APIVersion, apiGroup) || doc.Kind != "Kustomization" ||
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
