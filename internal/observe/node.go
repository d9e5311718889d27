package observe

import (
	"fmt"
	"strings"
	"time"

	yaml "go.yaml.in/yaml/v3"

	"github.com/backflow-dev/backflow/internal/yamlnode"
)

// placeError is a problem at a place inside one document.
type placeError struct {
	line int
	path string
	msg  string
}

func (e *placeError) Error() string {
	if e.path == "" {
		return e.msg
	}
	return e.path + ": " + e.msg
}

func errAt(n *yaml.Node, path, format string, a ...any) error {
	line := 0
	if n != nil {
		line = n.Line
	}
	return &placeError{line: line, path: path, msg: fmt.Sprintf(format, a...)}
}

// mapping is a YAML mapping node read as keys to value nodes.
type mapping struct {
	node *yaml.Node
	path string
	keys []string
	vals map[string]*yaml.Node
	knot map[string]*yaml.Node // key nodes, for their lines
}

// asMapping reads n as a mapping with distinct string keys. Aliases are
// refused anywhere below it: observations are machine-written, and refusing
// aliases is what keeps an alias bomb from expanding.
func asMapping(n *yaml.Node, path string) (*mapping, error) {
	if n == nil || n.Kind != yaml.MappingNode {
		return nil, errAt(n, path, "want a mapping")
	}
	m := &mapping{node: n, path: path, vals: map[string]*yaml.Node{}, knot: map[string]*yaml.Node{}}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind != yaml.ScalarNode {
			return nil, errAt(k, path, "keys must be strings")
		}
		if _, dup := m.vals[k.Value]; dup {
			return nil, errAt(k, yamlnode.Join(path, k.Value), "duplicate key")
		}
		if err := refuseAliases(v, yamlnode.Join(path, k.Value)); err != nil {
			return nil, err
		}
		m.keys = append(m.keys, k.Value)
		m.vals[k.Value] = v
		m.knot[k.Value] = k
	}
	return m, nil
}

func refuseAliases(n *yaml.Node, path string) error {
	if n.Kind == yaml.AliasNode {
		return errAt(n, path, "aliases are not allowed")
	}
	for _, c := range n.Content {
		if err := refuseAliases(c, path); err != nil {
			return err
		}
	}
	return nil
}

// strict fails on the first key that is not in known.
func (m *mapping) strict(known ...string) error {
	for _, k := range m.keys {
		ok := false
		for _, want := range known {
			if k == want {
				ok = true
				break
			}
		}
		if !ok {
			return errAt(m.knot[k], yamlnode.Join(m.path, k), "unknown key")
		}
	}
	return nil
}

func (m *mapping) has(key string) bool { _, ok := m.vals[key]; return ok }

// str reads a scalar as its text. A null or absent value is "" (and an
// error when required).
func (m *mapping) str(key string, required bool) (string, error) {
	n, ok := m.vals[key]
	if !ok || yamlnode.IsNull(n) {
		if required {
			return "", errAt(m.node, yamlnode.Join(m.path, key), "required")
		}
		return "", nil
	}
	if n.Kind != yaml.ScalarNode {
		return "", errAt(n, yamlnode.Join(m.path, key), "want a string")
	}
	if required && strings.TrimSpace(n.Value) == "" {
		return "", errAt(n, yamlnode.Join(m.path, key), "required")
	}
	return n.Value, nil
}

func (m *mapping) strs(key string) ([]string, error) {
	n, ok := m.vals[key]
	if !ok || yamlnode.IsNull(n) {
		return nil, nil
	}
	if n.Kind != yaml.SequenceNode {
		return nil, errAt(n, yamlnode.Join(m.path, key), "want a list of strings")
	}
	out := make([]string, 0, len(n.Content))
	for i, c := range n.Content {
		if c.Kind != yaml.ScalarNode || yamlnode.IsNull(c) {
			return nil, errAt(c, yamlnode.Index(yamlnode.Join(m.path, key), i), "want a string")
		}
		out = append(out, c.Value)
	}
	return out, nil
}

func (m *mapping) boolean(key string) (bool, bool, error) {
	n, ok := m.vals[key]
	if !ok || yamlnode.IsNull(n) {
		return false, false, nil
	}
	var b bool
	if n.Kind != yaml.ScalarNode || n.Decode(&b) != nil {
		return false, true, errAt(n, yamlnode.Join(m.path, key), "want true or false")
	}
	return b, true, nil
}

func (m *mapping) time(key string, required bool) (time.Time, error) {
	s, err := m.str(key, required)
	if err != nil || s == "" {
		return time.Time{}, err
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, errAt(
			m.vals[key],
			yamlnode.Join(m.path, key),
			"want an RFC 3339 time such as 2026-06-18T12:00:00Z",
		)
	}
	return t, nil
}

func (m *mapping) sub(key string, required bool) (*mapping, error) {
	n, ok := m.vals[key]
	if !ok || yamlnode.IsNull(n) {
		if required {
			return nil, errAt(m.node, yamlnode.Join(m.path, key), "required")
		}
		return nil, nil
	}
	return asMapping(n, yamlnode.Join(m.path, key))
}

// anyValue decodes a value node as YAML reads it (JSON-built nodes carry
// their JSON type as a tag), except that a timestamp stays the string it
// is spelt as: Kubernetes and Helm's values files hold it as that string,
// and a time.Time would never equal it.
func anyValue(n *yaml.Node, path string) (any, error) {
	timestampsAsStrings(n)
	var v any
	if err := n.Decode(&v); err != nil {
		return nil, errAt(n, path, "unreadable value")
	}
	return v, nil
}

func timestampsAsStrings(n *yaml.Node) {
	if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!timestamp" {
		n.Tag = "!!str"
	}
	for _, c := range n.Content {
		timestampsAsStrings(c)
	}
}
