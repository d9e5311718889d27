package values

import (
	"bytes"
	"fmt"
	"strings"

	yaml "go.yaml.in/yaml/v3"
)

// NotePrefix starts the part of a line comment that backflow writes: what
// follows it is backflow's, what comes before a person's, kept.
const NotePrefix = "backflow: "

// noteJoin separates a person's comment from backflow's note on one line.
const noteJoin = " | "

// Note returns the file with backflow's note on the line of the scalar at
// path (Helm's --set syntax, under the file's root): a trailing comment
// `# backflow: <note>`, or `# <a person's comment> | backflow: <note>` where
// the line had a comment of someone else's, which is kept. A note already
// there is replaced; an empty note removes backflow's and leaves a
// person's comment as it was. Only that line's comment changes, and the
// result is verified: both readers read the same values as before. A value
// that is not a one-line scalar in block context (a block scalar, a flow
// collection's item) cannot carry a note of its own line and is refused
// (ErrUnsupported), as is a path that is not there (ErrNotFound).
func (f *File) Note(path, note string) ([]byte, error) {
	note = strings.Join(strings.Fields(note), " ")
	d, err := f.document()
	if err != nil {
		return nil, err
	}
	segs, err := parseEditPath(path)
	if err != nil {
		return nil, err
	}
	if segs, err = d.resolveSelectors(f.under(segs), f.helm); err != nil {
		return nil, err
	}
	loc, err := d.locate(segs)
	if err != nil {
		return nil, err
	}
	if loc.node == nil {
		return nil, fmt.Errorf("%s: %w", path, ErrNotFound)
	}
	if loc.node.Kind != yaml.ScalarNode || loc.flow {
		return nil, fmt.Errorf(
			"line %d: a note needs a one-line scalar in block context: %w",
			d.line(loc.node),
			ErrUnsupported,
		)
	}
	e, err := d.scanScalar(loc.node, loc.indent, false)
	if err != nil {
		return nil, err
	}
	if e.block {
		return nil, fmt.Errorf("line %d: a block scalar's line carries no note: %w", d.line(loc.node), ErrUnsupported)
	}
	data := d.src.data
	rest := data[e.end:e.eol]
	gap, comment := " ", ""
	if i := bytes.IndexByte(rest, '#'); i >= 0 {
		if strings.TrimSpace(string(rest[:i])) != "" {
			return nil, fmt.Errorf("line %d: text after the value: %w", d.line(loc.node), ErrUnsupported)
		}
		gap = string(rest[:i])
		comment = strings.TrimSpace(strings.TrimPrefix(string(rest[i:]), "#"))
	} else if strings.TrimSpace(string(rest)) != "" {
		return nil, fmt.Errorf("line %d: text after the value: %w", d.line(loc.node), ErrUnsupported)
	}
	person := comment
	switch {
	case strings.HasPrefix(comment+" ", NotePrefix):
		person = ""
	case strings.Contains(comment, noteJoin+NotePrefix):
		person = comment[:strings.Index(comment, noteJoin+NotePrefix)]
	}
	var tail string
	switch {
	case person != "" && note != "":
		tail = gap + "# " + person + noteJoin + NotePrefix + note
	case person != "":
		tail = gap + "# " + person
	case note != "":
		tail = gap + "# " + NotePrefix + note
	}
	if person == comment && note == "" {
		return bytes.Clone(data), nil
	}
	out := make([]byte, 0, len(data)+len(tail))
	out = append(append(append(out, data[:e.end]...), tail...), data[e.eol:]...)
	// Verify: a comment changes no value, for either reader.
	tree, err := helmRead(newSource(out), f.index, nil)
	if err != nil {
		return nil, fmt.Errorf("the note made the file unreadable: %v: %w", err, ErrVerify)
	}
	if err := diffExcept(f.helm, tree, nil, nil); err != nil {
		return nil, fmt.Errorf("the note changed a value: %v: %w", err, ErrVerify)
	}
	after, err := parseDocument(newSource(out), f.index)
	if err != nil {
		return nil, fmt.Errorf("the note made the file unreadable: %v: %w", err, ErrVerify)
	}
	if n, err := after.locate(segs); err != nil || n.node == nil || n.node.Value != loc.node.Value {
		return nil, fmt.Errorf("the note moved the value at %s: %w", path, ErrVerify)
	}
	return out, nil
}
