package policy

import (
	"errors"
	"fmt"
	"math"
	"regexp"

	yaml "go.yaml.in/yaml/v3"

	"github.com/backflow-dev/backflow/internal/values"
	"github.com/backflow-dev/backflow/internal/yamlnode"
)

// maxNodes bounds the nodes the loader visits, counting every expansion of
// an alias.
const maxNodes = 100_000

// loader walks a policy's node tree, collecting every error with its place.
type loader struct {
	yamlnode.Budget
	errs []FieldError
}

func (l *loader) fail(path, format string, a ...any) {
	l.errs = append(l.errs, FieldError{Path: path, Message: fmt.Sprintf(format, a...)})
}

// mapping calls each for every key of the mapping n, in document order.
// Non-string keys, merge keys and duplicate keys are errors; so is a node
// that is not a mapping (null counts as an empty mapping).
func (l *loader) mapping(n *yaml.Node, path string, each func(key string, val *yaml.Node, path string)) {
	if n = l.Resolve(n); n == nil || yamlnode.IsNull(n) {
		return
	}
	if n.Kind != yaml.MappingNode {
		l.fail(path, "must be a mapping")
		return
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := l.Resolve(n.Content[i])
		if k == nil {
			return
		}
		if k.Kind != yaml.ScalarNode {
			l.fail(path, "keys must be strings")
			continue
		}
		if k.ShortTag() == "!!merge" {
			l.fail(yamlnode.Join(path, k.Value), "merge keys are not supported")
			continue
		}
		if seen[k.Value] {
			l.fail(yamlnode.Join(path, k.Value), "duplicate key")
			continue
		}
		seen[k.Value] = true
		each(k.Value, n.Content[i+1], yamlnode.Join(path, k.Value))
	}
}

// sequence calls each for every item of the list n; null is an empty list.
func (l *loader) sequence(n *yaml.Node, path string, each func(i int, item *yaml.Node, path string)) {
	if n = l.Resolve(n); n == nil || yamlnode.IsNull(n) {
		return
	}
	if n.Kind != yaml.SequenceNode {
		l.fail(path, "must be a list")
		return
	}
	for i, item := range n.Content {
		each(i, item, yamlnode.Index(path, i))
	}
}

// str reads a scalar as a string, as yaml.v3 does for string fields; null
// reads as empty, so that required checks report it.
func (l *loader) str(n *yaml.Node, path string) string {
	if n = l.Resolve(n); n == nil || yamlnode.IsNull(n) {
		return ""
	}
	if n.Kind != yaml.ScalarNode {
		l.fail(path, "must be a string")
		return ""
	}
	return n.Value
}

func (l *loader) strList(n *yaml.Node, path string) []string {
	var out []string
	l.sequence(n, path, func(_ int, item *yaml.Node, p string) {
		out = append(out, l.str(item, p))
	})
	return out
}

func (l *loader) boolean(n *yaml.Node, path string) bool {
	if n = l.Resolve(n); n == nil {
		return false
	}
	var b bool
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!bool" || n.Decode(&b) != nil {
		l.fail(path, "must be true or false")
		return false
	}
	return b
}

func (l *loader) number(n *yaml.Node, path string) *float64 {
	if n = l.Resolve(n); n == nil {
		return nil
	}
	var v any
	if n.Kind != yaml.ScalarNode || (n.ShortTag() != "!!int" && n.ShortTag() != "!!float") || n.Decode(&v) != nil {
		l.fail(path, "must be a number")
		return nil
	}
	f, ok := values.AsNumber(v)
	if !ok || math.IsNaN(f) {
		l.fail(path, "must be a number")
		return nil
	}
	return &f
}

// scalarValue decodes a scalar as the typing table reads receipt values.
func (l *loader) scalarValue(n *yaml.Node, path string) (any, bool) {
	if n = l.Resolve(n); n == nil {
		return nil, false
	}
	var v any
	if n.Kind != yaml.ScalarNode || n.Decode(&v) != nil {
		l.fail(path, "must be a scalar")
		return nil, false
	}
	return v, true
}

func (l *loader) required(s, path string) {
	if s == "" {
		l.fail(path, "required")
	}
}

func (l *loader) policy(root *yaml.Node) *Policy {
	p := &Policy{}
	var hasAPIVersion, hasKind, hasSpec bool
	// Values are checked where they are read, so that errors come in the
	// order of the document; what is missing is reported at the end.
	l.mapping(root, "", func(key string, v *yaml.Node, path string) {
		switch key {
		case "apiVersion":
			hasAPIVersion = true
			p.APIVersion = l.str(v, path)
			if p.APIVersion != SeedAPIVersion && p.APIVersion != APIVersion {
				l.fail(path, "must be %s or %s, got %q", SeedAPIVersion, APIVersion, p.APIVersion)
			}
		case "kind":
			hasKind = true
			p.Kind = l.str(v, path)
			if p.Kind != Kind {
				l.fail(path, "must be %s, got %q", Kind, p.Kind)
			}
		case "metadata":
			l.metadata(p, v, path)
		case "spec":
			hasSpec = true
			l.spec(p, v, path)
		default:
			l.fail(path, "unknown key")
		}
	})
	if !hasAPIVersion {
		l.fail("apiVersion", "required")
	}
	if !hasKind {
		l.fail("kind", "required: must be %s", Kind)
	}
	if !hasSpec {
		l.fail("spec", "required")
	}
	return p
}

func (l *loader) metadata(p *Policy, n *yaml.Node, path string) {
	l.mapping(n, path, func(key string, v *yaml.Node, path string) {
		switch key {
		case "name":
			p.Name = l.str(v, path)
		case "labels", "annotations":
			l.mapping(v, path, func(_ string, v *yaml.Node, path string) { l.str(v, path) })
		default:
			l.fail(path, "unknown key")
		}
	})
}

func (l *loader) spec(p *Policy, n *yaml.Node, path string) {
	var hasDefault bool
	l.mapping(n, path, func(key string, v *yaml.Node, path string) {
		switch key {
		case "chart":
			p.Chart = l.str(v, path)
		case "default":
			hasDefault = true
			p.Default = l.str(v, path)
			if p.Default != "deny" {
				l.fail(path, `must be "deny" (the policy is default-deny), got %q`, p.Default)
			}
		case "rules":
			l.sequence(v, path, func(i int, item *yaml.Node, path string) {
				p.Rules = append(p.Rules, l.rule(item, path))
			})
		default:
			l.fail(path, "unknown key")
		}
	})
	if !hasDefault {
		l.fail(yamlnode.Join(path, "default"), `required: must be "deny"`)
	}
}

func (l *loader) rule(n *yaml.Node, path string) Rule {
	var r Rule
	if rn := l.Resolve(n); rn == nil || rn.Kind != yaml.MappingNode {
		l.fail(path, "must be a mapping")
		return r
	}
	l.mapping(n, path, func(key string, v *yaml.Node, path string) {
		switch key {
		case "role":
			r.Role = l.str(v, path)
		case "reason":
			r.Reason = l.str(v, path)
		case "mayAccept":
			l.sequence(v, path, func(i int, item *yaml.Node, path string) {
				r.MayAccept = append(r.MayAccept, l.accept(item, path))
			})
		default:
			l.fail(path, "unknown key")
		}
	})
	l.required(r.Role, yamlnode.Join(path, "role"))
	return r
}

func (l *loader) accept(n *yaml.Node, path string) Accept {
	var a Accept
	if an := l.Resolve(n); an == nil || an.Kind != yaml.MappingNode {
		l.fail(path, "must be a mapping")
		return a
	}
	var hasOneOf bool
	l.mapping(n, path, func(key string, v *yaml.Node, path string) {
		switch key {
		case "valuePath":
			a.ValuePath = l.str(v, path)
		case "field":
			a.Field = l.str(v, path)
		case "objects":
			a.Objects = l.strList(v, path)
			for i, o := range a.Objects {
				if msg := ObjectPatternError(o); msg != "" {
					l.fail(yamlnode.Index(path, i), "%s", msg)
				}
			}
		case "environments":
			a.Environments = l.strList(v, path)
			for i, e := range a.Environments {
				if msg := globError(e); msg != "" {
					l.fail(yamlnode.Index(path, i), "%s", msg)
				}
			}
		case "autoMerge":
			a.AutoMerge = l.boolean(v, path)
		case "minimum":
			a.Minimum = l.number(v, path)
		case "maximum":
			a.Maximum = l.number(v, path)
		case "pattern":
			a.Pattern = l.str(v, path)
			re, err := compilePattern(a.Pattern)
			if err != nil {
				l.fail(path, "%v", err)
			}
			a.pattern = re
		case "oneOf":
			hasOneOf = true
			a.OneOf = []any{}
			l.sequence(v, path, func(_ int, item *yaml.Node, p string) {
				if v, ok := l.scalarValue(item, p); ok {
					a.OneOf = append(a.OneOf, v)
				}
			})
		default:
			l.fail(path, "unknown key")
		}
	})
	l.required(a.ValuePath, yamlnode.Join(path, "valuePath"))
	l.required(a.Field, yamlnode.Join(path, "field"))
	if len(a.Objects) == 0 {
		l.fail(yamlnode.Join(path, "objects"), "required: list at least one object")
	}
	if len(a.Environments) == 0 {
		l.fail(yamlnode.Join(path, "environments"), "required: list at least one environment")
	}
	if hasOneOf && len(a.OneOf) == 0 {
		l.fail(yamlnode.Join(path, "oneOf"), "must list at least one value")
	}
	if a.Minimum != nil && a.Maximum != nil && *a.Minimum > *a.Maximum {
		l.fail(yamlnode.Join(path, "minimum"), "is greater than maximum (%s > %s)", values.Format(*a.Minimum), values.Format(*a.Maximum))
	}
	if a.Pattern != "" && (a.Minimum != nil || a.Maximum != nil) {
		// pattern applies to strings and minimum/maximum to numbers: no value
		// could satisfy both, so the entry would silently authorize nothing.
		l.fail(yamlnode.Join(path, "pattern"), "cannot be combined with minimum or maximum")
	}
	return a
}

// compilePattern compiles a pattern bound so that it must match the whole
// value: an unanchored expression would let `[0-9]+Mi` accept any string that
// merely contains a size. The expression is checked alone first, so that a
// pattern like `a)|(b` cannot escape the anchoring group.
func compilePattern(p string) (*regexp.Regexp, error) {
	if p == "" {
		return nil, errors.New("must not be empty")
	}
	if _, err := regexp.Compile(p); err != nil {
		return nil, fmt.Errorf("invalid RE2 expression: %w", err)
	}
	re, err := regexp.Compile(`^(?:` + p + `)$`)
	if err != nil {
		return nil, fmt.Errorf("invalid RE2 expression: %w", err)
	}
	return re, nil
}
