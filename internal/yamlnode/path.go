package yamlnode

import (
	"fmt"
	"strconv"
	"strings"
)

// Segment is one step of a value path: a mapping key, or a list index when
// IsIndex is set. A Segment may also stand for a list item whose index is
// not known (AnyIndex), optionally named by a merge key as a strategic merge
// patch names items (MergeKey=MergeValue): a write set can say that much,
// and so can ParseSelectorPath's `[key=value]`; a path that ParsePath reads
// cannot.
type Segment struct {
	Key        string
	Index      int
	IsIndex    bool
	AnyIndex   bool
	MergeKey   string
	MergeValue string
}

// String writes the segment as it appears in a path: `[N]` for an index,
// `[*]` for an item of unknown index, `[key=value]` for one named by its
// merge key, the escaped key otherwise.
func (s Segment) String() string {
	switch {
	case s.AnyIndex && s.MergeKey != "":
		return "[" + s.MergeKey + "=" + s.MergeValue + "]"
	case s.AnyIndex:
		return "[*]"
	}
	if s.IsIndex {
		return "[" + strconv.Itoa(s.Index) + "]"
	}
	return EscapeKey(s.Key)
}

// PathError is a value path that does not parse; Offset is the byte offset
// in Path where parsing stopped.
type PathError struct {
	Path   string
	Offset int
	Msg    string
}

// Error names the path and the offset.
func (e *PathError) Error() string {
	return fmt.Sprintf("path %q: offset %d: %s", e.Path, e.Offset, e.Msg)
}

// maxIndex bounds list indexes so that a path cannot ask for an absurd list.
const maxIndex = 1 << 30

// ParsePath reads a value path in Helm's --set syntax: `.` separates keys,
// `[N]` indexes a list, `\` makes the next character literal, and digits
// without brackets are a mapping key.
func ParsePath(path string) ([]Segment, error) { return parsePath(path, false) }

// ParseSelectorPath reads a value path as ParsePath does and also kyaml's
// list selector `[key=value]`, which names the one list item whose mapping
// has key set to value (`env[name=TZ].value`). A selector segment is
// AnyIndex with MergeKey and MergeValue set; the editor resolves it to an
// index before it edits.
func ParseSelectorPath(path string) ([]Segment, error) { return parsePath(path, true) }

func parsePath(path string, selectors bool) ([]Segment, error) {
	if path == "" {
		return nil, &PathError{Path: path, Offset: 0, Msg: "empty path"}
	}
	var segs []Segment
	var key strings.Builder
	// expectKey says a key must come next: at the start or after a dot.
	expectKey := true
	i := 0
	for i < len(path) {
		c := path[i]
		switch c {
		case '\\':
			if i+1 >= len(path) {
				return nil, &PathError{Path: path, Offset: i, Msg: "trailing backslash escapes nothing"}
			}
			key.WriteByte(path[i+1])
			expectKey = false
			i += 2
			continue
		case '.':
			if key.Len() == 0 {
				if expectKey {
					return nil, &PathError{Path: path, Offset: i, Msg: "empty key"}
				}
				// After an index, a dot starts the next key.
			} else {
				segs = append(segs, Segment{Key: key.String()})
				key.Reset()
			}
			if i+1 == len(path) {
				return nil, &PathError{Path: path, Offset: i + 1, Msg: "empty key at end of path"}
			}
			expectKey = true
			i++
			continue
		case '[':
			if key.Len() > 0 {
				segs = append(segs, Segment{Key: key.String()})
				key.Reset()
			} else if expectKey && len(segs) > 0 {
				return nil, &PathError{Path: path, Offset: i, Msg: "empty key before index"}
			}
			end := strings.IndexByte(path[i:], ']')
			if end < 0 {
				return nil, &PathError{Path: path, Offset: i, Msg: "unclosed ["}
			}
			digits := path[i+1 : i+end]
			if eq := strings.IndexByte(digits, '='); eq >= 0 && selectors {
				if eq == 0 {
					return nil, &PathError{Path: path, Offset: i + 1, Msg: "empty key in list selector [key=value]"}
				}
				segs = append(segs, Segment{AnyIndex: true, MergeKey: digits[:eq], MergeValue: digits[eq+1:]})
				i += end + 1
				if i < len(path) && path[i] != '.' && path[i] != '[' {
					return nil, &PathError{Path: path, Offset: i, Msg: "expected . or [ after ]"}
				}
				expectKey = false
				continue
			}
			if digits == "" {
				return nil, &PathError{Path: path, Offset: i + 1, Msg: "empty list index"}
			}
			for j := 0; j < len(digits); j++ {
				if digits[j] < '0' || digits[j] > '9' {
					return nil, &PathError{Path: path, Offset: i + 1 + j, Msg: "list index must be digits"}
				}
			}
			n, err := strconv.Atoi(digits)
			if err != nil || n > maxIndex {
				return nil, &PathError{Path: path, Offset: i + 1, Msg: "list index too large"}
			}
			segs = append(segs, Segment{Index: n, IsIndex: true})
			i += end + 1
			if i < len(path) && path[i] != '.' && path[i] != '[' {
				return nil, &PathError{Path: path, Offset: i, Msg: "expected . or [ after ]"}
			}
			expectKey = false
			continue
		case ']':
			return nil, &PathError{Path: path, Offset: i, Msg: "] without ["}
		}
		key.WriteByte(c)
		expectKey = false
		i++
	}
	if key.Len() > 0 {
		segs = append(segs, Segment{Key: key.String()})
	}
	return segs, nil
}

// EscapeKey escapes one mapping key so that ParsePath reads it back as a
// single key.
func EscapeKey(key string) string {
	if !strings.ContainsAny(key, `.[]\`) {
		return key
	}
	var b strings.Builder
	for i := 0; i < len(key); i++ {
		switch key[i] {
		case '.', '[', ']', '\\':
			b.WriteByte('\\')
		}
		b.WriteByte(key[i])
	}
	return b.String()
}

// FormatPath writes segments as a path; ParsePath reads it back to the same
// segments unless one of them is an item of unknown index.
func FormatPath(segs []Segment) string {
	var b strings.Builder
	for i, s := range segs {
		if !s.IsIndex && !s.AnyIndex && i > 0 {
			b.WriteByte('.')
		}
		b.WriteString(s.String())
	}
	return b.String()
}

// Lookup follows segs through a decoded tree: mappings (map[string]any, or
// map[any]any as yaml.v2 decodes them, whose keys are compared as
// fmt.Sprint writes them) and lists ([]any). It reports false when a
// segment names nothing: a missing key, an index past the end, a key of a
// list or an index of a mapping, or a step into a scalar.
func Lookup(tree any, segs []Segment) (any, bool) {
	cur := tree
	for _, s := range segs {
		var ok bool
		switch x := cur.(type) {
		case map[string]any:
			if s.IsIndex {
				return nil, false
			}
			cur, ok = x[s.Key]
		case map[any]any:
			if s.IsIndex {
				return nil, false
			}
			for k, v := range x {
				if fmt.Sprint(k) == s.Key {
					cur, ok = v, true
					break
				}
			}
		case []any:
			if !s.IsIndex || s.Index >= len(x) {
				return nil, false
			}
			cur, ok = x[s.Index], true
		}
		if !ok {
			return nil, false
		}
	}
	return cur, true
}
