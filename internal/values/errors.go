package values

import "errors"

// Sentinel errors let callers tell a refused edit (the file is fine, the edit
// is not one the editor makes safely) from a file that does not parse and from
// a path that is not there. Errors returned by this package wrap one of them
// and name the path and the line.
var (
	// ErrParse: the input is not YAML the editor can read.
	ErrParse = errors.New("not a parseable YAML file")
	// ErrNotFound: the path names nothing in the document.
	ErrNotFound = errors.New("path not found")
	// ErrRefused is wrapped by every refusal below.
	ErrRefused = errors.New("edit refused")
	// ErrVerify: the edited file did not pass verification; nothing is
	// returned.
	ErrVerify = errors.New("verification failed")
)

// Refusals, each wrapping ErrRefused.
var (
	// ErrAlias: the path goes through an alias, a << merge, or a node whose
	// anchor an alias reuses; the edit would change the aliases too.
	ErrAlias = refusal("the path goes through an alias or a node whose anchor an alias reuses")
	// ErrFlowInsert: a new key would go into a non-empty flow collection,
	// which would have to be rewritten.
	ErrFlowInsert = refusal("inserting into a non-empty flow collection")
	// ErrListItem: the path names a list item that does not exist.
	ErrListItem = refusal("creating list items")
	// ErrThroughScalar: the path continues below a scalar, or uses a key
	// on a list or an index on a mapping.
	ErrThroughScalar = refusal("the path goes through a scalar")
	// ErrTooLarge: the file is over Options.MaxBytes.
	ErrTooLarge = refusal("the file is larger than the size cap")
	// ErrAliasBomb: aliases expand to more nodes than the editor reads.
	ErrAliasBomb = refusal("alias expansion exceeds the limit")
	// ErrDocument: several documents and none chosen, or no such document.
	ErrDocument = refusal("several documents and none chosen, or no such document")
	// ErrNotScalar: the value at the path is a non-empty mapping or list,
	// which a scalar does not replace.
	ErrNotScalar = refusal("the value at the path is a non-empty mapping or list")
	// ErrUnsupported: a layout the editor cannot delimit safely.
	ErrUnsupported = refusal("a layout the editor does not edit")
	// ErrNonStringKey: a key on the path that yaml.v3 and Helm name
	// differently (a plain on:, 0755:), or that two keys share.
	ErrNonStringKey = refusal("a key that Helm reads as another type")
	// ErrSelector: a `[key=value]` list selector that matches no item or
	// several, or that Helm's reader resolves to another item.
	ErrSelector = refusal("a list selector that does not name exactly one item")
	// ErrInline: no manifest with inline values where Options.Inline or
	// Options.Root looks for them.
	ErrInline = refusal("no inline values mapping there")
	// ErrUnsupportedVal: a value no scalar token reads back as (NaN, a
	// type that is not a scalar).
	ErrUnsupportedVal = refusal("a value that cannot be written as a scalar")
)

type refusalError struct{ msg string }

func (e *refusalError) Error() string { return e.msg }
func (e *refusalError) Unwrap() error { return ErrRefused }

func refusal(msg string) error { return &refusalError{msg: msg} }
