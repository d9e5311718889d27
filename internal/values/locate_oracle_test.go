package values

import (
	"fmt"

	yaml "go.yaml.in/yaml/v3"

	"github.com/backflow-dev/backflow/internal/yamlnode"
)

// locateByHand is the editor's locate as it was before it located through
// kyaml: a walk over the yaml.v3 nodes by hand. It is kept here as the
// oracle the kyaml locate is fuzzed against.
func (d *document) locateByHand(path []yamlnode.Segment) (located, error) {
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
