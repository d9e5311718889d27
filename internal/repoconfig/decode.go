package repoconfig

import (
	"errors"
	"strings"

	"github.com/backflow-dev/backflow/internal/yamlnode"
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

// FieldError is one invalid place in the config file: its dotted path with
// list indexes (units[0].valuesFiles[1]), empty for the file as a whole,
// its line when known, and what is wrong there.
type FieldError = yamlnode.FieldError

// Error lists every invalid place of a config file, one per line, each
// prefixed with the file name.
type Error struct {
	File   string
	Errors []FieldError
	// Unparseable is set when the file is not YAML at all (one error for
	// the whole file): errors.Is(err, yamlnode.ErrUnparseable) holds.
	Unparseable bool
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

// Is makes errors.Is(err, yamlnode.ErrUnparseable) true for a file that is
// not YAML at all.
func (e *Error) Is(target error) bool { return e.Unparseable && target == yamlnode.ErrUnparseable }

// decodeFile reads the single YAML document of data into c, strictly: an
// unknown key, a duplicate key or a value of the wrong type is an error
// named by its dotted path. A file that is not YAML at all is one error for
// the whole file that errors.Is(ErrUnparseable) recognises.
func decodeFile(data []byte, c *Config) (errs []FieldError, unparseable bool) {
	errs, err := yamlnode.DecodeFile(data, c, yamlnode.Options{MaxNodes: maxNodes, Aliases: true, MaxErrors: maxErrors})
	var se *yamlnode.SyntaxError
	if errors.As(err, &se) {
		return []FieldError{{Line: se.Line, Message: se.Error()}}, true
	}
	return errs, false
}

// maxErrors bounds the errors listed: past it, the rest is one line.
const maxErrors = 50
