package yamlnode

import (
	"errors"
	"strconv"

	yaml "go.yaml.in/yaml/v3"
)

// ErrTooManyNodes is a walk that ran out of its Budget: the document is too
// large, or its aliases nest so that expanding them would be exponential.
var ErrTooManyNodes = errors.New("document contains excessive aliasing or too many nodes")

// maxAliasChain bounds how many aliases in a row Resolve follows.
const maxAliasChain = 100

// Budget bounds the nodes a walk visits, counting every expansion of an
// alias, so that a small document whose aliases nest (an "alias bomb")
// cannot make the walk exponential. The zero Budget is already spent.
type Budget struct {
	left      int
	exhausted bool
}

// NewBudget is a budget of nodes visits.
func NewBudget(nodes int) Budget { return Budget{left: nodes} }

// Resolve follows aliases and charges the visit to the budget. It returns
// nil once the budget is spent (or n is nil); callers then stop descending.
func (b *Budget) Resolve(n *yaml.Node) *yaml.Node {
	for depth := 0; n != nil && n.Kind == yaml.AliasNode; depth++ {
		if depth > maxAliasChain {
			b.exhausted = true
			return nil
		}
		n = n.Alias
	}
	b.left--
	if b.left < 0 || n == nil {
		b.exhausted = true
		return nil
	}
	return n
}

// Exhausted reports whether a Resolve was refused: what the walk built is
// then incomplete and must not be used.
func (b *Budget) Exhausted() bool { return b.exhausted }

// IsNull reports whether n is a null scalar (null, ~ or an empty value).
func IsNull(n *yaml.Node) bool { return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null" }

// Join is the dotted path of key below path ("" is the document's root).
func Join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// Index is the path of the i-th item of the list at path (units[0]).
func Index(path string, i int) string { return path + "[" + strconv.Itoa(i) + "]" }
