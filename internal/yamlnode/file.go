package yamlnode

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"

	yaml "go.yaml.in/yaml/v3"
)

// ErrUnparseable marks a file that is not YAML at all (a syntax error, no
// document, more than one): a different failure from a file that is YAML
// but has wrong places, which DecodeFile lists as FieldErrors.
var ErrUnparseable = errors.New("not one YAML document")

// SyntaxError is a file that could not be parsed; its message is the
// parser's, and errors.Is(err, ErrUnparseable) holds.
type SyntaxError struct {
	// Line is the 1-based line of the problem, 0 when unknown.
	Line int
	Err  error
}

func (e *SyntaxError) Error() string { return e.Err.Error() }
func (e *SyntaxError) Unwrap() error { return e.Err }

// Is makes every SyntaxError match ErrUnparseable under errors.Is.
func (e *SyntaxError) Is(target error) bool { return target == ErrUnparseable }

// DecodeFile is the strict decoder of every config file: data must be
// exactly one YAML document, which Decode reads into out. A syntax error, an
// empty file or a second document is a *SyntaxError; every wrong place of
// the document (an unknown key, a duplicate key, a value of the wrong type)
// is a FieldError named by its dotted path and line.
func DecodeFile(data []byte, out any, opts Options) (errs []FieldError, err error) {
	// The YAML library is third-party code fed untrusted input: a panic in it
	// must surface as a parse error, not bring the process down.
	defer func() {
		if r := recover(); r != nil {
			errs, err = nil, &SyntaxError{Err: fmt.Errorf("invalid YAML: %v", r)}
		}
	}()
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var root yaml.Node
	if err := dec.Decode(&root); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, &SyntaxError{Err: errors.New("empty file")}
		}
		return nil, &SyntaxError{Line: syntaxLine(err), Err: err}
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		if err != nil {
			return nil, &SyntaxError{Line: syntaxLine(err), Err: err}
		}
		return nil, &SyntaxError{Line: extra.Line, Err: errors.New("want one YAML document, found more")}
	}
	if len(root.Content) != 1 {
		return nil, &SyntaxError{Err: errors.New("empty file")}
	}
	return Decode(root.Content[0], out, opts), nil
}

// syntaxLine reads the line yaml.v3 puts in its messages ("yaml: line 3: ...").
func syntaxLine(err error) int {
	var line int
	if _, after, ok := strings.Cut(err.Error(), "line "); ok {
		_, _ = fmt.Sscanf(after, "%d", &line)
	}
	return line
}

// FileMessage is one wrong place as a config file's reader prints it after
// the file's name: "line 4: unknown key server.webhok" for a key,
// "line 7: server.listen: want a string" for a value.
func (e FieldError) FileMessage() string {
	var b strings.Builder
	if e.Line > 0 {
		fmt.Fprintf(&b, "line %d: ", e.Line)
	}
	switch {
	case e.Path == "":
		b.WriteString(e.Message)
	case e.Message == "unknown key" || e.Message == "duplicate key":
		b.WriteString(e.Message + " " + e.Path)
	default:
		b.WriteString(e.Path + ": " + e.Message)
	}
	return b.String()
}
