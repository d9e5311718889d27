package values

import (
	"fmt"

	yaml "go.yaml.in/yaml/v3"

	"github.com/backflow-dev/backflow/internal/yamlnode"
)

// diffNodes reports the first difference between the original's yaml.v3
// node tree a and the edited one b outside the edited paths, without
// decoding either. Outside the edited paths the two must be the same
// nodes: same kind, tag, value, anchor and children, aliases naming the
// same anchors with the same content. Equal nodes decode to equal values, so
// this is at least as strict as comparing decoded trees. What the edit may
// have made is decoded where it is: a mapping that gained keys (yaml.v3
// refuses duplicate keys there), and each edited value (see nodeAt).
// Decoding errors elsewhere were the original's, and File.Set has checked
// the original decodes. As in diffExcept, at is appended to in place.
func diffNodes(a, b *yaml.Node, at []yamlnode.Segment, edited [][]yamlnode.Segment, seen map[[2]*yaml.Node]bool) error {
	onWay := false
	for _, p := range edited {
		if hasPrefix(p, at) {
			if len(p) == len(at) {
				return nil
			}
			onWay = true
		}
	}
	where := func() string {
		if len(at) == 0 {
			return "the document root"
		}
		return yamlnode.FormatPath(at)
	}
	if a == nil || b == nil {
		switch {
		case a == nil && b == nil:
			return nil
		case a == nil && onWay && b.Kind == yaml.MappingNode:
			// Keys added to an empty document.
			return newKeys(nil, b, at, edited, where)
		}
		return fmt.Errorf("%s: the document became %s", where(), nodeKind(b))
	}
	if onWay && b.Kind == yaml.MappingNode && (isNull(a) || a.Kind == yaml.MappingNode && len(a.Content) == 0) {
		// A `key:`, `key: ~` or `key: {}` on the way to a new key became a
		// mapping.
		return newKeys(nil, b, at, edited, where)
	}
	if a.Kind != b.Kind || a.Tag != b.Tag || a.Anchor != b.Anchor {
		return fmt.Errorf("%s: %s became %s", where(), nodeKind(a), nodeKind(b))
	}
	switch a.Kind {
	case yaml.ScalarNode:
		if a.Value != b.Value {
			return fmt.Errorf("%s: %q became %q", where(), a.Value, b.Value)
		}
	case yaml.AliasNode:
		if a.Value != b.Value {
			return fmt.Errorf("%s: alias *%s became *%s", where(), a.Value, b.Value)
		}
		if a.Alias == nil || b.Alias == nil {
			if a.Alias != b.Alias {
				return fmt.Errorf("%s: alias *%s resolves differently", where(), a.Value)
			}
			return nil
		}
		pair := [2]*yaml.Node{a.Alias, b.Alias}
		if seen[pair] {
			return nil
		}
		seen[pair] = true
		// Nothing under an alias is edited (editing through one is
		// refused), so its target is compared with no edited paths.
		if err := diffNodes(a.Alias, b.Alias, at, nil, seen); err != nil {
			return fmt.Errorf("%s: alias *%s: %w", where(), a.Value, err)
		}
	case yaml.SequenceNode:
		if len(a.Content) != len(b.Content) {
			return fmt.Errorf("%s: a list changed length", where())
		}
		for i := range a.Content {
			seg := yamlnode.Segment{Index: i, IsIndex: true}
			if err := diffNodes(a.Content[i], b.Content[i], append(at, seg), edited, seen); err != nil {
				return err
			}
		}
	case yaml.MappingNode:
		if len(b.Content) < len(a.Content) {
			return fmt.Errorf("%s: a key disappeared", where())
		}
		for i := 0; i+1 < len(a.Content); i += 2 {
			ka, kb := a.Content[i], b.Content[i]
			if err := diffNodes(ka, kb, at, nil, seen); err != nil {
				return fmt.Errorf("%s: a key changed: %w", where(), err)
			}
			text, err := keyText(ka)
			if err != nil {
				return fmt.Errorf("%s: key %q: %v", where(), ka.Value, err)
			}
			seg := yamlnode.Segment{Key: text}
			if err := diffNodes(a.Content[i+1], b.Content[i+1], append(at, seg), edited, seen); err != nil {
				return err
			}
		}
		if len(b.Content) > len(a.Content) {
			return newKeys(a, b, at, edited, where)
		}
	default:
		return fmt.Errorf("%s: unexpected node kind %d", where(), a.Kind)
	}
	return nil
}

// newKeys checks the keys b has after those of a (all of b's when a is
// nil): each must lead to an edited path, and b must still decode (a new
// key equal to an old one does not).
func newKeys(a, b *yaml.Node, at []yamlnode.Segment, edited [][]yamlnode.Segment, where func() string) error {
	from := 0
	if a != nil {
		from = len(a.Content)
	}
	for i := from; i+1 < len(b.Content); i += 2 {
		text, err := keyText(b.Content[i])
		if err != nil {
			return fmt.Errorf("%s: new key %q: %v", where(), b.Content[i].Value, err)
		}
		child := append(at, yamlnode.Segment{Key: text})
		allowed := false
		for _, p := range edited {
			if hasPrefix(p, child) {
				allowed = true
			}
		}
		if !allowed {
			return fmt.Errorf("%s: key %q appeared", where(), text)
		}
	}
	var v any
	if err := b.Decode(&v); err != nil {
		return fmt.Errorf("%s: %v", where(), err)
	}
	return nil
}

// keyText is a mapping key as the decoded trees name it: yaml.v3's decoded
// key, printed (see normalize).
func keyText(k *yaml.Node) (string, error) {
	if k.Kind == yaml.ScalarNode && k.ShortTag() == "!!str" {
		return k.Value, nil
	}
	if k.Kind == yaml.ScalarNode && k.ShortTag() == "!!merge" {
		return k.Value, nil
	}
	var v any
	if err := k.Decode(&v); err != nil {
		return "", err
	}
	return fmt.Sprint(v), nil
}

// nodeAt follows path through a yaml.v3 node tree as lookupValue follows a
// decoded tree.
func nodeAt(n *yaml.Node, path []yamlnode.Segment) (*yaml.Node, bool) {
	for _, s := range path {
		for n != nil && n.Kind == yaml.AliasNode {
			n = n.Alias
		}
		if n == nil {
			return nil, false
		}
		switch n.Kind {
		case yaml.MappingNode:
			if s.IsIndex {
				return nil, false
			}
			var next *yaml.Node
			for i := 0; i+1 < len(n.Content); i += 2 {
				if text, err := keyText(n.Content[i]); err == nil && text == s.Key {
					next = n.Content[i+1]
				}
			}
			if next == nil {
				return nil, false
			}
			n = next
		case yaml.SequenceNode:
			if !s.IsIndex || s.Index >= len(n.Content) {
				return nil, false
			}
			n = n.Content[s.Index]
		default:
			return nil, false
		}
	}
	return n, n != nil
}

func isNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null"
}

func nodeKind(n *yaml.Node) string {
	switch {
	case n == nil:
		return "empty"
	case n.Kind == yaml.MappingNode:
		return "a mapping"
	case n.Kind == yaml.SequenceNode:
		return "a list"
	case n.Kind == yaml.AliasNode:
		return "an alias"
	}
	return fmt.Sprintf("%s %q", n.ShortTag(), n.Value)
}
