package repoconfig

import (
	"bytes"
	"encoding"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strconv"
	"strings"

	yaml "go.yaml.in/yaml/v3"
)

// MaxSize is the largest config file read: it is a short, hand-written file.
const MaxSize = 1 << 20

// maxNodes bounds the nodes visited while decoding, aliases included, so an
// alias bomb stops early instead of expanding.
const maxNodes = 100_000

// ErrInvalid marks a config that was read but is not valid; errors.As gives
// the *Error listing every place.
var ErrInvalid = errors.New("invalid repo config")

// ErrUnreadable marks a config that could not be read at all (missing,
// unreadable, a symlink, too large): a different failure from an invalid one.
var ErrUnreadable = errors.New("unreadable repo config")

// FieldError is one invalid place in the config file.
type FieldError struct {
	// Path is the dotted place with list indexes (units[0].valuesFiles[1]);
	// empty for the file as a whole.
	Path string
	// Line is the 1-based line of the place, 0 when unknown.
	Line    int
	Message string
}

func (e FieldError) Error() string {
	if e.Path == "" {
		return e.Message
	}
	return e.Path + ": " + e.Message
}

// Error lists every invalid place of a config file, one per line, each
// prefixed with the file name.
type Error struct {
	File   string
	Errors []FieldError
}

func (e *Error) Error() string {
	lines := make([]string, len(e.Errors))
	for i, fe := range e.Errors {
		lines[i] = e.File + ": " + fe.Error()
	}
	return strings.Join(lines, "\n")
}

// Unwrap makes errors.Is(err, ErrInvalid) true.
func (e *Error) Unwrap() error { return ErrInvalid }

// decodeFile reads the single YAML document of data into c, strictly: an
// unknown key, a duplicate key or a value of the wrong type is an error
// named by its dotted path.
func decodeFile(data []byte, c *Config) []FieldError {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var root yaml.Node
	if err := dec.Decode(&root); err != nil {
		if errors.Is(err, io.EOF) {
			return []FieldError{{Message: "empty file"}}
		}
		return []FieldError{{Message: err.Error()}}
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		return []FieldError{{Line: extra.Line, Message: "want one YAML document, found more"}}
	}
	if len(root.Content) != 1 {
		return []FieldError{{Message: "empty file"}}
	}
	d := &decoder{budget: maxNodes}
	d.decode(root.Content[0], reflect.ValueOf(c).Elem(), "")
	return d.errs
}

type decoder struct {
	errs      []FieldError
	budget    int
	exhausted bool
}

// maxErrors bounds the errors listed: past it, the rest is one line.
const maxErrors = 50

func (d *decoder) fail(n *yaml.Node, path, format string, a ...any) {
	switch {
	case len(d.errs) < maxErrors:
		d.errs = append(d.errs, FieldError{Path: path, Line: n.Line, Message: fmt.Sprintf(format, a...)})
	case len(d.errs) == maxErrors:
		d.errs = append(d.errs, FieldError{Message: "more errors follow; fix these first"})
	}
}

var textUnmarshaler = reflect.TypeOf((*encoding.TextUnmarshaler)(nil)).Elem()

func (d *decoder) decode(n *yaml.Node, v reflect.Value, path string) {
	if d.exhausted {
		return
	}
	if d.budget--; d.budget < 0 {
		d.exhausted = true
		d.errs = append(d.errs, FieldError{Path: path, Line: n.Line, Message: fmt.Sprintf("too many nodes (alias expansion?): more than %d", maxNodes)})
		return
	}
	if n.Kind == yaml.AliasNode {
		d.decode(n.Alias, v, path)
		return
	}
	if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null" {
		return // an empty value leaves the default
	}
	if v.Kind() != reflect.Pointer && reflect.PointerTo(v.Type()).Implements(textUnmarshaler) {
		if n.Kind != yaml.ScalarNode {
			d.fail(n, path, "want a string")
			return
		}
		if err := v.Addr().Interface().(encoding.TextUnmarshaler).UnmarshalText([]byte(n.Value)); err != nil {
			d.fail(n, path, "%v", err)
		}
		return
	}
	switch v.Kind() {
	case reflect.Pointer:
		p := reflect.New(v.Type().Elem())
		d.decode(n, p.Elem(), path)
		v.Set(p)
	case reflect.Struct:
		if n.Kind != yaml.MappingNode {
			d.fail(n, path, "want a mapping")
			return
		}
		fields := map[string]int{}
		for i := 0; i < v.NumField(); i++ {
			name, _, _ := strings.Cut(v.Type().Field(i).Tag.Get("yaml"), ",")
			if name != "" && name != "-" {
				fields[name] = i
			}
		}
		d.mapping(n, path, func(key string, kn, vn *yaml.Node) {
			i, ok := fields[key]
			if !ok {
				d.fail(kn, join(path, key), "unknown key")
				return
			}
			d.decode(vn, v.Field(i), join(path, key))
		})
	case reflect.Map:
		if n.Kind != yaml.MappingNode {
			d.fail(n, path, "want a mapping")
			return
		}
		if v.IsNil() {
			v.Set(reflect.MakeMap(v.Type()))
		}
		d.mapping(n, path, func(key string, _, vn *yaml.Node) {
			e := reflect.New(v.Type().Elem()).Elem()
			d.decode(vn, e, join(path, key))
			v.SetMapIndex(reflect.ValueOf(key).Convert(v.Type().Key()), e)
		})
	case reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			d.fail(n, path, "want a list")
			return
		}
		s := reflect.MakeSlice(v.Type(), len(n.Content), len(n.Content))
		for i, item := range n.Content {
			d.decode(item, s.Index(i), fmt.Sprintf("%s[%d]", path, i))
		}
		v.Set(s)
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
	case reflect.Int:
		i, err := strconv.ParseInt(n.Value, 0, 64)
		if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!int" || err != nil {
			d.fail(n, path, "want an integer")
			return
		}
		v.SetInt(i)
	default:
		d.fail(n, path, "cannot be decoded")
	}
}

// mapping calls each for every key of n, refusing duplicate and non-scalar
// keys.
func (d *decoder) mapping(n *yaml.Node, path string, each func(key string, kn, vn *yaml.Node)) {
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		kn, vn := n.Content[i], n.Content[i+1]
		if d.budget--; d.budget < 0 {
			if !d.exhausted {
				d.exhausted = true
				d.errs = append(d.errs, FieldError{Path: path, Line: kn.Line, Message: fmt.Sprintf("too many nodes (alias expansion?): more than %d", maxNodes)})
			}
			return
		}
		if kn.Kind != yaml.ScalarNode {
			d.fail(kn, path, "keys must be strings")
			continue
		}
		if seen[kn.Value] {
			d.fail(kn, join(path, kn.Value), "duplicate key")
			continue
		}
		seen[kn.Value] = true
		each(kn.Value, kn, vn)
	}
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}
