package yamlnode

import (
	"bytes"
	"errors"
	"fmt"
	"io"

	yaml "go.yaml.in/yaml/v3"
)

// ParseMapping parses data as exactly one YAML document whose root is a
// mapping, and returns that mapping. yaml.v3 keeps aliases as pointers in
// the node tree, so parsing is linear in the input; a walk over the tree
// bounds their expansion with a Budget.
func ParseMapping(data []byte) (root *yaml.Node, err error) {
	// The YAML library is third-party code fed untrusted input: a panic in it
	// must surface as a parse error, not bring the process down.
	defer func() {
		if r := recover(); r != nil {
			root, err = nil, fmt.Errorf("invalid YAML: %v", r)
		}
	}()
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, errors.New("empty document")
		}
		return nil, err
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		if err != nil {
			return nil, err
		}
		return nil, errors.New("more than one YAML document")
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 {
		return nil, errors.New("empty document")
	}
	root = doc.Content[0]
	if root.Kind == yaml.AliasNode {
		root = root.Alias
	}
	if root == nil || root.Kind != yaml.MappingNode {
		return nil, errors.New("not a YAML mapping")
	}
	return root, nil
}
