package values

import (
	"fmt"
	"strings"

	yaml "go.yaml.in/yaml/v3"
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

// locate follows path through the document, refusing paths that go through
// aliases or anchors that aliases reuse.
func (d *document) locate(path []yamlnode.Segment) (located, error) {
	loc := located{parent: nil, pindent: -1}
	cur := d.root
	var curKey *yaml.Node
	indent := -1
	flow := false
	for i, seg := range path {
		where := yamlnode.FormatPath(path[:i])
		if where == "" {
			where = "the document root"
		}
		if cur == nil {
			loc.depth = i
			return loc, nil
		}
		if cur.Kind == yaml.AliasNode || d.aliased[cur] {
			return loc, fmt.Errorf("%s (line %d): %w", where, d.line(cur), ErrAlias)
		}
		loc.parent, loc.pkey, loc.pindent, loc.flow = cur, curKey, indent, flow
		switch cur.Kind {
		case yaml.MappingNode:
			if seg.IsIndex {
				return loc, fmt.Errorf("%s (line %d) is a mapping, not a list: %w", where, d.line(cur), ErrThroughScalar)
			}
			var next, nextKey *yaml.Node
			merge := false
			for j := 0; j+1 < len(cur.Content); j += 2 {
				k := cur.Content[j]
				if k.Kind == yaml.ScalarNode && k.Value == "<<" && k.Style == 0 {
					merge = true
				}
				if hk, ok := helmKeyOf(k); ok && hk == seg.Key {
					if !sameKeyForBoth(k, hk) {
						// yaml.v3 and Helm would name this key differently
						// (`on`, `0755`): the edit could not be verified.
						return loc, fmt.Errorf("%s (line %d): key %s: %w", where, d.line(k), k.Value, ErrNonStringKey)
					}
					if next != nil {
						return loc, fmt.Errorf("%s (line %d): two keys that Helm reads as %q: %w", where, d.line(k), seg.Key, ErrNonStringKey)
					}
					next, nextKey = cur.Content[j+1], k
				}
			}
			if next == nil {
				if merge {
					return loc, fmt.Errorf("%s (line %d) merges another mapping with <<: %w", where, d.line(cur), ErrAlias)
				}
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
			if seg.Index >= len(cur.Content) {
				loc.depth = i
				return loc, nil
			}
			flow = flow || cur.Style&yaml.FlowStyle != 0
			indent = cur.Column - 1
			if flow {
				indent = loc.pindent
			}
			cur, curKey = cur.Content[seg.Index], nil
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
