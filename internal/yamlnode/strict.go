package yamlnode

import (
	"encoding"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
	"time"

	yaml "go.yaml.in/yaml/v3"
)

// FieldError is one wrong place of a document.
type FieldError struct {
	// Path is the dotted place with list indexes (units[0].valuesFiles[1]);
	// empty for the document as a whole.
	Path string
	// Line is the 1-based line of the place, 0 when unknown.
	Line int
	// Message says what is wrong there.
	Message string

	// err is the sentinel the error stands for (ErrTooManyNodes), if any.
	err error
}

// Unwrap makes errors.Is(e, ErrTooManyNodes) true for the error of a spent
// node budget: a reader may treat such a document as unparseable.
func (e FieldError) Unwrap() error { return e.err }

// Error writes "<place>: <message>", or the message alone for the whole
// document.
func (e FieldError) Error() string {
	if e.Path == "" {
		return e.Message
	}
	return e.Path + ": " + e.Message
}

// Options tunes Decode for the file it reads.
type Options struct {
	// MaxNodes bounds the nodes visited, keys and alias expansions included.
	MaxNodes int
	// Aliases follows aliases; without it an alias is an error at its place,
	// which is what keeps an alias bomb from expanding at all.
	Aliases bool
	// MaxErrors bounds the errors listed (zero: no bound); past it one error
	// says that more follow.
	MaxErrors int
}

// Decode fills the value out points to from the node tree n, strictly: an
// unknown key, a duplicate key or a value of the wrong type is an error
// named by its dotted path and line, and decoding goes on so that every
// wrong place is listed. A null leaves the Go value as it was.
//
// Struct fields are named by their yaml tag; a field tagged ",notnull"
// refuses a null as a value of the wrong type, for a field whose absence and
// emptiness mean different things. A yaml.Node field keeps its section as
// written; a type with UnmarshalText reads a scalar's text (any scalar, as
// written); a float64 reads an integer or a float, never NaN; an interface
// (any) reads a scalar as yaml does (string, int, float, bool).
func Decode(n *yaml.Node, out any, opts Options) []FieldError {
	d := &decoder{opts: opts, budget: opts.MaxNodes}
	d.decode(n, reflect.ValueOf(out).Elem(), "")
	return d.errs
}

type decoder struct {
	opts Options
	errs []FieldError
	// failed counts the errors found, listed or not.
	failed    int
	budget    int
	exhausted bool
}

func (d *decoder) fail(n *yaml.Node, path, format string, a ...any) {
	d.failed++
	switch limit := d.opts.MaxErrors; {
	case limit == 0 || len(d.errs) < limit:
		d.errs = append(d.errs, FieldError{Path: path, Line: n.Line, Message: fmt.Sprintf(format, a...)})
	case len(d.errs) == limit:
		d.errs = append(d.errs, FieldError{Message: "more errors follow; fix these first"})
	}
}

// charge spends one node of the budget; false once it is spent, after
// saying so once.
func (d *decoder) charge(n *yaml.Node, path string) bool {
	if d.exhausted {
		return false
	}
	if d.budget--; d.budget < 0 {
		d.exhausted = true
		// Listed past MaxErrors too: it explains why decoding stopped.
		d.errs = append(
			d.errs,
			FieldError{
				Path:    path,
				Line:    n.Line,
				Message: fmt.Sprintf("too many nodes (alias expansion?): more than %d", d.opts.MaxNodes),
				err:     ErrTooManyNodes,
			},
		)
		return false
	}
	return true
}

var (
	textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()
	nodeType        = reflect.TypeFor[yaml.Node]()
	durationType    = reflect.TypeFor[time.Duration]()
)

// decode fills v from n at path: an alias is followed where aliases are
// allowed, a null leaves v as it was, a yaml.Node keeps its section as
// written, and otherwise n is read as v's type asks. Every node read is
// charged to the budget.
func (d *decoder) decode(n *yaml.Node, v reflect.Value, path string) {
	if !d.charge(n, path) {
		return
	}
	if n.Kind == yaml.AliasNode {
		d.decodeAlias(n, v, path)
		return
	}
	if IsNull(n) {
		return // an empty value leaves the default
	}
	if v.Type() == nodeType {
		v.Set(reflect.ValueOf(*n))
		return
	}
	if v.Kind() != reflect.Pointer && reflect.PointerTo(v.Type()).Implements(textUnmarshaler) {
		d.decodeText(n, v, path)
		return
	}
	if v.Type() == durationType {
		d.decodeDuration(n, v, path)
		return
	}
	switch v.Kind() {
	case reflect.Pointer:
		d.decodePointer(n, v, path)
	case reflect.Struct:
		d.decodeStruct(n, v, path)
	case reflect.Map:
		d.decodeMap(n, v, path)
	case reflect.Slice:
		d.decodeList(n, v, path)
	default:
		d.decodeScalar(n, v, path)
	}
}

// decodeAlias reads the node an alias names in the alias's place, or refuses
// the alias when aliases are not allowed.
func (d *decoder) decodeAlias(n *yaml.Node, v reflect.Value, path string) {
	if !d.opts.Aliases {
		d.fail(n, path, "aliases are not allowed")
		return
	}
	d.decode(n.Alias, v, path)
}

// decodeText hands a scalar's text, as written, to the UnmarshalText of v's
// type; its error is the message at path.
func (d *decoder) decodeText(n *yaml.Node, v reflect.Value, path string) {
	if n.Kind != yaml.ScalarNode {
		d.fail(n, path, "want a string")
		return
	}
	if err := v.Addr().Interface().(encoding.TextUnmarshaler).UnmarshalText([]byte(n.Value)); err != nil {
		d.fail(n, path, "%v", err)
	}
}

// decodeDuration reads a Go duration string (30s, 10m, 1h30m) into a
// time.Duration; a bare 0 is none.
func (d *decoder) decodeDuration(n *yaml.Node, v reflect.Value, path string) {
	dur, err := time.ParseDuration(n.Value)
	if n.Kind != yaml.ScalarNode || (n.ShortTag() != "!!str" && n.Value != "0") || err != nil {
		d.fail(n, path, "want a duration such as 30s, 5m or 1h")
		return
	}
	v.SetInt(int64(dur))
}

// decodePointer reads n into a new value and points v at it. A wrong scalar
// leaves the pointer as it was, nil most often: a reader that checks for a
// value must not see a zero it never read. A section is kept with what of it
// could be read.
func (d *decoder) decodePointer(n *yaml.Node, v reflect.Value, path string) {
	p := reflect.New(v.Type().Elem())
	failed := d.failed
	d.decode(n, p.Elem(), path)
	switch p.Elem().Kind() {
	case reflect.Struct, reflect.Map, reflect.Slice:
	default:
		if d.failed != failed {
			return
		}
	}
	v.Set(p)
}

// hasOption says whether a yaml tag's options (what follows the name)
// include want, without splitting them into a new slice for every field.
func hasOption(opts, want string) bool {
	for o := range strings.SplitSeq(opts, ",") {
		if o == want {
			return true
		}
	}
	return false
}

// decodeStruct reads a mapping into the fields of v named by their yaml tag:
// a key no field is named by is an unknown key, and a null for a field tagged
// ",notnull" is a value of the wrong type.
func (d *decoder) decodeStruct(n *yaml.Node, v reflect.Value, path string) {
	if n.Kind != yaml.MappingNode {
		d.fail(n, path, "want a mapping")
		return
	}
	fields := map[string]int{}
	notNull := map[string]bool{}
	for i := 0; i < v.NumField(); i++ {
		name, opts, _ := strings.Cut(v.Type().Field(i).Tag.Get("yaml"), ",")
		if name != "" && name != "-" {
			fields[name] = i
			notNull[name] = hasOption(opts, "notnull")
		}
	}
	d.mapping(n, path, func(key string, kn, vn *yaml.Node) {
		i, ok := fields[key]
		if !ok {
			d.fail(kn, Join(path, key), "unknown key")
			return
		}
		if r := vn; notNull[key] {
			if r.Kind == yaml.AliasNode && d.opts.Aliases && r.Alias != nil {
				r = r.Alias
			}
			if IsNull(r) {
				d.fail(vn, Join(path, key), "%s", want(v.Field(i).Type()))
				return
			}
		}
		d.decode(vn, v.Field(i), Join(path, key))
	})
}

// decodeMap reads a mapping into the Go map v, one entry per key, making the
// map if it is nil.
func (d *decoder) decodeMap(n *yaml.Node, v reflect.Value, path string) {
	if n.Kind != yaml.MappingNode {
		d.fail(n, path, "want a mapping")
		return
	}
	if v.IsNil() {
		v.Set(reflect.MakeMap(v.Type()))
	}
	d.mapping(n, path, func(key string, _, vn *yaml.Node) {
		e := reflect.New(v.Type().Elem()).Elem()
		d.decode(vn, e, Join(path, key))
		v.SetMapIndex(reflect.ValueOf(key).Convert(v.Type().Key()), e)
	})
}

// decodeList reads a sequence into the slice v, which it replaces: each item
// is named by its index.
func (d *decoder) decodeList(n *yaml.Node, v reflect.Value, path string) {
	if n.Kind != yaml.SequenceNode {
		d.fail(n, path, "want a list")
		return
	}
	s := reflect.MakeSlice(v.Type(), len(n.Content), len(n.Content))
	for i, item := range n.Content {
		d.decode(item, s.Index(i), Index(path, i))
	}
	v.Set(s)
}

// decodeScalar reads a scalar into a string, bool, integer, float64 or
// interface value, each only from the scalars yaml tags as that type; any
// other kind of v cannot be decoded.
func (d *decoder) decodeScalar(n *yaml.Node, v reflect.Value, path string) {
	switch v.Kind() {
	case reflect.String:
		if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!str" {
			d.fail(n, path, "want a string")
			return
		}
		v.SetString(n.Value)
	case reflect.Bool:
		b, err := strconv.ParseBool(n.Value)
		if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!bool" || err != nil {
			d.fail(n, path, "want true or false")
			return
		}
		v.SetBool(b)
	case reflect.Int, reflect.Int64:
		// Base 0 reads the integers YAML tags !!int (0x1F, 0o17) as it does.
		i, err := strconv.ParseInt(n.Value, 0, 64)
		if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!int" || err != nil {
			d.fail(n, path, "want an integer")
			return
		}
		v.SetInt(i)
	case reflect.Float64:
		// yaml reads the integers and floats it tags as such (0x10, 1e3, .inf);
		// a quoted "4" is a string, and NaN bounds nothing.
		var f float64
		if n.Kind != yaml.ScalarNode || (n.ShortTag() != "!!int" && n.ShortTag() != "!!float") || n.Decode(&f) != nil ||
			math.IsNaN(f) {
			d.fail(n, path, "want a number")
			return
		}
		v.SetFloat(f)
	case reflect.Interface:
		var x any
		if v.NumMethod() != 0 || n.Kind != yaml.ScalarNode || n.Decode(&x) != nil {
			d.fail(n, path, "want a scalar")
			return
		}
		v.Set(reflect.ValueOf(x))
	default:
		d.fail(n, path, "cannot be decoded")
	}
}

// want says what a value of type t must be, for a null where one is needed.
func want(t reflect.Type) string {
	switch {
	case t == durationType:
		return "want a duration such as 30s, 5m or 1h"
	case t.Kind() != reflect.Pointer && reflect.PointerTo(t).Implements(textUnmarshaler):
		return "want a string"
	}
	switch t.Kind() {
	case reflect.Pointer:
		return want(t.Elem())
	case reflect.Struct, reflect.Map:
		return "want a mapping"
	case reflect.Slice:
		return "want a list"
	case reflect.String:
		return "want a string"
	case reflect.Bool:
		return "want true or false"
	case reflect.Int, reflect.Int64:
		return "want an integer"
	case reflect.Float64:
		return "want a number"
	case reflect.Interface:
		return "want a scalar"
	}
	return "must not be null"
}

// mapping calls each for every key of n in document order, refusing
// duplicate and non-scalar keys.
func (d *decoder) mapping(n *yaml.Node, path string, each func(key string, kn, vn *yaml.Node)) {
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		kn, vn := n.Content[i], n.Content[i+1]
		if !d.charge(kn, path) {
			return
		}
		if kn.Kind != yaml.ScalarNode {
			d.fail(kn, path, "keys must be strings")
			continue
		}
		if seen[kn.Value] {
			d.fail(kn, Join(path, kn.Value), "duplicate key")
			continue
		}
		seen[kn.Value] = true
		each(kn.Value, kn, vn)
	}
}
