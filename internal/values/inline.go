package values

import (
	"errors"
	"fmt"
	"io"
	"strings"

	yaml "go.yaml.in/yaml/v3"
	kyaml "sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/backflow-dev/backflow/internal/yamlnode"
)

// Roots of inline Helm values in the manifests the editor recognises.
const (
	// FluxValuesRoot holds a Flux HelmRelease's inline values.
	FluxValuesRoot = "spec.values"
	// ArgoValuesRoot holds an Argo CD Application's inline values.
	ArgoValuesRoot = "spec.source.helm.valuesObject"
)

// Inline is a mapping of Helm values kept inside a manifest: a Flux
// HelmRelease's spec.values or an Argo CD Application's
// spec.source.helm.valuesObject.
type Inline struct {
	// Document is the manifest's index (from 0) among the file's documents,
	// as the shared splitter counts them.
	Document  int
	Kind      string
	Namespace string
	Name      string
	// Root is the path of the values mapping in the manifest.
	Root string
}

// inlineRoot is where a manifest of this apiVersion and kind keeps inline
// values; "" for any other manifest.
func inlineRoot(apiVersion, kind string) string {
	group, _, _ := strings.Cut(apiVersion, "/")
	switch {
	case kind == "HelmRelease" && group == "helm.toolkit.fluxcd.io":
		return FluxValuesRoot
	case kind == "Application" && group == "argoproj.io":
		return ArgoValuesRoot
	}
	return ""
}

// FindInline lists the manifests of data that carry inline values, read with
// kyaml one document at a time (the documents of the shared splitter, so
// that indexes agree with Options.Document). A manifest whose values root is
// missing, or is not a mapping, is not listed. A document that does not parse
// is ErrParse.
func FindInline(data []byte) ([]Inline, error) {
	var found []Inline
	for i, d := range yamlnode.SplitDocuments(data) {
		rn, err := kyaml.Parse(string(data[d.Start:d.End]))
		if errors.Is(err, io.EOF) {
			continue // comments only
		}
		if err != nil {
			return nil, fmt.Errorf("document %d (line %d): %v: %w", i, d.Line, err, ErrParse)
		}
		if rn.YNode().Kind != yaml.MappingNode {
			continue
		}
		root := inlineRoot(rn.GetApiVersion(), rn.GetKind())
		if root == "" {
			continue
		}
		// The roots are fixed key names without digits, so kyaml's Lookup
		// reads them as keys.
		v, err := rn.Pipe(kyaml.Lookup(strings.Split(root, ".")...))
		if err != nil || v == nil || v.YNode().Kind != yaml.MappingNode {
			continue
		}
		found = append(
			found,
			Inline{Document: i, Kind: rn.GetKind(), Namespace: rn.GetNamespace(), Name: rn.GetName(), Root: root},
		)
	}
	return found, nil
}

// chooseInline applies Options.Inline: the document is the one manifest
// with inline values, or the one Options.Document names, which must carry
// them.
func chooseInline(data []byte, opts Options) (Options, error) {
	found, err := FindInline(data)
	if err != nil {
		return opts, err
	}
	if opts.Document != nil {
		for _, in := range found {
			if in.Document == *opts.Document {
				opts.Root = in.Root
				return opts, nil
			}
		}
		return opts, fmt.Errorf(
			"document %d is no HelmRelease with %s nor Application with %s: %w",
			*opts.Document,
			FluxValuesRoot,
			ArgoValuesRoot,
			ErrInline,
		)
	}
	switch len(found) {
	case 0:
		return opts, fmt.Errorf(
			"no HelmRelease with %s nor Application with %s: %w",
			FluxValuesRoot,
			ArgoValuesRoot,
			ErrInline,
		)
	case 1:
		n := found[0].Document
		opts.Document, opts.Root = &n, found[0].Root
		return opts, nil
	}
	var names []string
	for _, in := range found {
		names = append(names, fmt.Sprintf("%d (%s %s)", in.Document, in.Kind, in.Name))
	}
	return opts, fmt.Errorf(
		"%d manifests carry inline values, documents %s; choose one by index: %w",
		len(found),
		strings.Join(names, ", "),
		ErrDocument,
	)
}

// rootOf parses Options.Root and checks that it names a mapping in the
// document: edits below it stay inside the values it holds.
func (d *document) rootOf(root string) ([]yamlnode.Segment, error) {
	if root == "" {
		return nil, nil
	}
	segs, err := yamlnode.ParsePath(root)
	if err != nil {
		return nil, fmt.Errorf("root: %w", err)
	}
	loc, err := d.locate(segs)
	if err != nil {
		return nil, err
	}
	if loc.node == nil || loc.node.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("root %s: no values mapping there: %w", root, ErrInline)
	}
	return segs, nil
}

// under prefixes path with the file's root.
func (f *File) under(path []yamlnode.Segment) []yamlnode.Segment {
	if len(f.root) == 0 {
		return path
	}
	return append(append([]yamlnode.Segment{}, f.root...), path...)
}
