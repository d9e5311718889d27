package receipt

import (
	"errors"
	"fmt"
	"reflect"
	"strings"

	yaml "go.yaml.in/yaml/v3"

	"github.com/backflow-dev/backflow/internal/yamlnode"
)

// ErrUnparseable marks a file that is not one YAML mapping (or is too large,
// or aliases excessively); a receipt whose values have the wrong shape is
// parseable and reports them as violations instead.
var ErrUnparseable = errors.New("unparseable receipt")

// maxNodes bounds the nodes the decoder visits, counting alias expansions.
const maxNodes = 100_000

// Parse reads a receipt; file names it in errors. Unknown keys come back as
// warnings (receipts written by other tools may carry more); values of the
// wrong shape are kept for Verify to report at their place.
func Parse(file string, data []byte) (*Receipt, []Violation, error) {
	if len(data) > MaxSize {
		return nil, nil, fmt.Errorf("%w: %s: larger than %d bytes", ErrUnparseable, file, MaxSize)
	}
	root, err := yamlnode.ParseMapping(data)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %s: %w", ErrUnparseable, file, err)
	}
	d := &decoder{Budget: yamlnode.NewBudget(maxNodes)}
	r := &Receipt{}
	d.decode(root, reflect.ValueOf(r).Elem(), "")
	if d.Exhausted() {
		return nil, nil, fmt.Errorf("%w: %s: %w", ErrUnparseable, file, yamlnode.ErrTooManyNodes)
	}
	r.decodeErrors = d.errs
	return r, d.warnings, nil
}

// decoder fills the receipt model from a node tree by reflection over the
// yaml tags, recording each place's problem instead of stopping at the first.
type decoder struct {
	yamlnode.Budget
	warnings []Violation
	errs     []Violation
}

var valueType = reflect.TypeFor[Value]()

// join builds a property path. The spec's properties are named without the
// `spec.` prefix, as the seed's verifier and table name them
// (`bounds.changedFields[0].to`).
func join(path, key string) string {
	if path == "" || path == "spec" {
		return key
	}
	return path + "." + key
}

func (d *decoder) fail(path, format string, a ...any) {
	d.errs = append(d.errs, Violation{Path: path, Message: fmt.Sprintf(format, a...)})
}

func (d *decoder) decode(n *yaml.Node, v reflect.Value, path string) {
	if n = d.Resolve(n); n == nil {
		return
	}
	if v.Type() == valueType {
		// yaml.v3 checks alias expansion itself when decoding a value.
		var x any
		if err := n.Decode(&x); err != nil {
			d.fail(path, "cannot read the value: %v", err)
			return
		}
		v.Set(reflect.ValueOf(ValueOf(x)))
		return
	}
	switch v.Kind() {
	case reflect.String:
		switch {
		case yamlnode.IsNull(n):
		case n.Kind == yaml.ScalarNode:
			v.SetString(n.Value)
		default:
			d.fail(path, "must be a string")
		}
	case reflect.Pointer:
		if v.Type().Elem().Kind() == reflect.Struct {
			if yamlnode.IsNull(n) {
				return
			}
			p := reflect.New(v.Type().Elem())
			d.decode(n, p.Elem(), path)
			v.Set(p)
			return
		}
		// *bool: nil tells a missing key from false.
		var b bool
		switch {
		case yamlnode.IsNull(n):
		case n.Kind == yaml.ScalarNode && n.ShortTag() == "!!bool" && n.Decode(&b) == nil:
			v.Set(reflect.ValueOf(&b))
		default:
			d.fail(path, "must be true or false")
		}
	case reflect.Bool:
		var b bool
		switch {
		case yamlnode.IsNull(n):
		case n.Kind == yaml.ScalarNode && n.ShortTag() == "!!bool" && n.Decode(&b) == nil:
			v.SetBool(b)
		default:
			d.fail(path, "must be true or false")
		}
	case reflect.Interface:
		var x any
		if err := n.Decode(&x); err != nil {
			d.fail(path, "cannot read the value: %v", err)
			return
		}
		if x != nil {
			v.Set(reflect.ValueOf(x))
		}
	case reflect.Slice:
		switch {
		case yamlnode.IsNull(n):
		case n.Kind == yaml.SequenceNode:
			s := reflect.MakeSlice(v.Type(), len(n.Content), len(n.Content))
			for i, item := range n.Content {
				d.decode(item, s.Index(i), yamlnode.Index(path, i))
			}
			v.Set(s)
		default:
			d.fail(path, "must be a list")
		}
	case reflect.Struct:
		switch {
		case yamlnode.IsNull(n):
		case n.Kind == yaml.MappingNode:
			d.decodeStruct(n, v, path)
		default:
			d.fail(path, "must be a mapping")
		}
	}
}

func (d *decoder) decodeStruct(n *yaml.Node, v reflect.Value, path string) {
	fields := map[string]int{}
	for i := range v.NumField() {
		if tag := v.Type().Field(i).Tag.Get("yaml"); tag != "" {
			fields[strings.Split(tag, ",")[0]] = i
		}
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := d.Resolve(n.Content[i])
		if k == nil {
			return
		}
		if k.Kind != yaml.ScalarNode {
			d.fail(path, "keys must be strings")
			continue
		}
		p := join(path, k.Value)
		idx, known := fields[k.Value]
		switch {
		case !known:
			d.warnings = append(d.warnings, Violation{Path: p, Message: "unknown key, ignored"})
		case seen[k.Value]:
			d.fail(p, "duplicate key")
		default:
			seen[k.Value] = true
			d.decode(n.Content[i+1], v.Field(idx), p)
		}
	}
}
