package values

import (
	"fmt"
	"strings"

	yaml "go.yaml.in/yaml/v3"
	kyaml "sigs.k8s.io/kustomize/kyaml/yaml"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/backflow-dev/backflow/internal/yamlnode"
)

// located is the result of following a path through a document.
type located struct {
	node    *yaml.Node // the node at the path; nil when missing
	parent  *yaml.Node // the deepest node on the path that exists
	pkey    *yaml.Node // the parent's key, when the parent is a mapping value
	pindent int        // indentation of the parent's key or dash
	depth   int        // how many segments exist
	flow    bool       // the node (or the parent, when missing) is in a flow collection
	indent  int        // indentation of the node's key or dash
}

// locate follows path through the document with kyaml's path functions
// (RNode.Field for a key, GetElementByIndex for an index), refusing paths
// that go through aliases or anchors that aliases reuse. A mapping whose
// keys YAML 1.1 reads as something other than their text, or that merges
// another with <<, is searched as Helm reads keys: kyaml compares key text.
// The path must not hold list selectors: resolveSelectors replaces them.
func (d *document) locate(path []yamlnode.Segment) (located, error) {
	loc := located{parent: nil, pindent: -1}
	cur := d.root
	var curKey *yaml.Node
	indent := -1
	flow := false
	for i, seg := range path {
		if cur == nil {
			loc.depth = i
			return loc, nil
		}
		where := yamlnode.FormatPath(path[:i])
		if where == "" {
			where = "the document root"
		}
		if cur.Kind == yaml.AliasNode || d.aliased[cur] {
			return loc, fmt.Errorf("%s (line %d): %w", where, d.line(cur), ErrAlias)
		}
		loc.parent, loc.pkey, loc.pindent, loc.flow = cur, curKey, indent, flow
		switch cur.Kind {
		case yaml.MappingNode:
			if seg.IsIndex || seg.AnyIndex {
				return loc, fmt.Errorf("%s (line %d) is a mapping, not a list: %w", where, d.line(cur), ErrThroughScalar)
			}
			next, nextKey, err := d.field(cur, seg.Key, where)
			if err != nil {
				return loc, err
			}
			if next == nil {
				loc.depth = i
				return loc, nil
			}
			flow = flow || cur.Style&yaml.FlowStyle != 0
			indent = nextKey.Column - 1
			cur, curKey = next, nextKey
		case yaml.SequenceNode:
			if !seg.IsIndex {
				return loc, fmt.Errorf("%s (line %d) is a list; use [N]: %w", where, d.line(cur), ErrThroughScalar)
			}
			var list kyaml.RNode // on the stack: SetYNode of an empty RNode only points it at the node
			list.SetYNode(cur)
			item, err := kyaml.GetElementByIndex(seg.Index).Filter(&list)
			if err != nil {
				return loc, fmt.Errorf("%s (line %d): %v: %w", where, d.line(cur), err, ErrUnsupported)
			}
			if item == nil {
				loc.depth = i
				return loc, nil
			}
			flow = flow || cur.Style&yaml.FlowStyle != 0
			indent = cur.Column - 1
			if flow {
				indent = loc.pindent
			}
			cur, curKey = item.YNode(), nil
		case yaml.ScalarNode:
			if cur.Tag == "!!null" {
				loc.depth = i
				return loc, nil
			}
			return loc, fmt.Errorf("%s (line %d) is a scalar: %w", where, d.line(cur), ErrThroughScalar)
		default:
			return loc, fmt.Errorf("%s (line %d): %w", where, d.line(cur), ErrUnsupported)
		}
	}
	if cur != nil && (cur.Kind == yaml.AliasNode || d.aliased[cur]) {
		return loc, fmt.Errorf("%s (line %d): %w", yamlnode.FormatPath(path), d.line(cur), ErrAlias)
	}
	loc.node, loc.depth, loc.flow, loc.indent = cur, len(path), flow, indent
	return loc, nil
}

// field finds the value and key node of key in mapping m. kyaml's Field
// finds it by the key's text; that is how Helm names it unless some key of
// m is a YAML 1.1 look-alike (`on`, `0755`), is tagged or is not a scalar,
// or m merges another mapping: then the keys are read one by one as Helm
// reads them, since kyaml knows nothing of YAML 1.1.
func (d *document) field(m *yaml.Node, key, where string) (value, keyNode *yaml.Node, err error) {
	var twice *yaml.Node
	same := 0
	for j := 0; j+1 < len(m.Content); j += 2 {
		k := m.Content[j]
		if !textKey(k) {
			return d.helmField(m, key, where)
		}
		if k.Value == key {
			if same++; same == 2 {
				twice = k
			}
		}
	}
	if twice != nil {
		return nil, nil, fmt.Errorf(
			"%s (line %d): two keys that Helm reads as %q: %w",
			where,
			d.line(twice),
			key,
			ErrNonStringKey,
		)
	}
	var rn kyaml.RNode // on the stack: SetYNode of an empty RNode only points it at the node
	rn.SetYNode(m)
	f := rn.Field(key)
	if f == nil {
		return nil, nil, nil
	}
	return f.Value.YNode(), f.Key.YNode(), nil
}

// textKey says both readers name key k by its text: a scalar, untagged or
// tagged !!str, quoted or plain text that YAML 1.1 cannot read as another
// type, and not the merge key.
func textKey(k *yaml.Node) bool {
	if k.Kind != yaml.ScalarNode {
		return false
	}
	if k.Style&yaml.TaggedStyle != 0 {
		return k.Tag == "!!str"
	}
	if k.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle|yaml.LiteralStyle|yaml.FoldedStyle) != 0 {
		return true
	}
	return !maybeNotText(k.Value) && k.Value != "<<"
}

// helmField searches mapping m for key as Helm reads keys (YAML 1.1),
// refusing keys the two readers name differently and merged mappings.
func (d *document) helmField(m *yaml.Node, key, where string) (value, keyNode *yaml.Node, err error) {
	merge := false
	for j := 0; j+1 < len(m.Content); j += 2 {
		k := m.Content[j]
		if k.Kind == yaml.ScalarNode && k.Value == "<<" && k.Style == 0 {
			merge = true
		}
		if hk, ok := helmKeyOf(k); ok && hk == key {
			if !sameKeyForBoth(k, hk) {
				// yaml.v3 and Helm would name this key differently
				// (`on`, `0755`): the edit could not be verified.
				return nil, nil, fmt.Errorf("%s (line %d): key %s: %w", where, d.line(k), k.Value, ErrNonStringKey)
			}
			if value != nil {
				return nil, nil, fmt.Errorf(
					"%s (line %d): two keys that Helm reads as %q: %w",
					where,
					d.line(k),
					key,
					ErrNonStringKey,
				)
			}
			value, keyNode = m.Content[j+1], k
		}
	}
	if value == nil && merge {
		return nil, nil, fmt.Errorf("%s (line %d) merges another mapping with <<: %w", where, d.line(m), ErrAlias)
	}
	return value, keyNode, nil
}

func (d *document) line(n *yaml.Node) int { return d.sp.line + n.Line - 1 }

// helmKeyOf is the key as Helm sees it: YAML 1.1 reads a plain `on:` as
// the bool true and `0755:` as 493, and sigs.k8s.io/yaml turns such keys into
// the strings "true" and "493". A path names keys as Helm sees them.
func helmKeyOf(k *yaml.Node) (string, bool) {
	if k.Kind != yaml.ScalarNode {
		return "", false
	}
	if k.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle|yaml.LiteralStyle|yaml.FoldedStyle) != 0 {
		return k.Value, true
	}
	if k.Style&yaml.TaggedStyle != 0 && k.Tag != "!!str" {
		return "", false
	}
	if k.Style&yaml.TaggedStyle != 0 || !maybeNotText(k.Value) {
		return k.Value, true
	}
	var m map[string]any
	if err := sigsyaml.Unmarshal([]byte(k.Value+": 0\n"), &m); err != nil || len(m) != 1 {
		return "", false
	}
	for hk := range m {
		return hk, true
	}
	return "", false
}

// maybeNotText is a cheap filter for plain scalars that YAML 1.1 might read
// as something other than a string: numbers, bools, nulls, timestamps.
func maybeNotText(s string) bool {
	if s == "" {
		return true
	}
	switch s[0] {
	case '0', '1', '2', '3', '4', '5', '6', '7', '8', '9', '+', '-', '.', '~':
		return true
	}
	switch strings.ToLower(s) {
	case "y", "n", "yes", "no", "on", "off", "true", "false", "null":
		return true
	}
	return false
}

// sameKeyForBoth says yaml.v3 reads key k as the text hk that Helm reads,
// so that both readers' trees name the edited path alike.
func sameKeyForBoth(k *yaml.Node, hk string) bool {
	if hk == k.Value && !maybeNotText(k.Value) || k.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle) != 0 {
		return true
	}
	var v any
	if err := k.Decode(&v); err != nil {
		return false
	}
	return fmt.Sprint(v) == hk
}
