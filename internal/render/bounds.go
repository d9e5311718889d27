package render

import (
	"errors"
	"fmt"
	"time"
)

// Defaults of the bounds on one rendering (see Bounds).
const (
	// DefaultTimeout bounds one rendering's wall time.
	DefaultTimeout = 30 * time.Second
	// DefaultMaxMemory is the memory budget of the process a rendering runs in.
	DefaultMaxMemory = 512 << 20
	// DefaultMaxOutputBytes bounds the bytes a rendering's templates produce.
	DefaultMaxOutputBytes = 16 << 20
	// DefaultMaxObjects bounds the documents a rendering produces.
	DefaultMaxObjects = 10000
)

// Bounds are what one rendering may take. A rendering that passes one is
// stopped and fails with an error wrapping ErrBound that names the bound.
type Bounds struct {
	// Timeout is the wall time one rendering may take (both of its runs,
	// see Render); DefaultTimeout when zero.
	Timeout time.Duration
	// MaxMemory is the memory budget of the child process a rendering
	// runs in, charts it keeps included; DefaultMaxMemory when zero.
	MaxMemory int64
	// MaxOutputBytes bounds the bytes the templates render;
	// DefaultMaxOutputBytes when zero.
	MaxOutputBytes int64
	// MaxObjects bounds the YAML documents the templates render, hooks
	// included; DefaultMaxObjects when zero.
	MaxObjects int
}

// ErrBound marks a rendering stopped because it passed one of its Bounds:
// nothing is written, and the next cycle tries again.
var ErrBound = errors.New("rendering stopped")

// ErrNondeterministic marks a chart whose rendering of the same values
// differs between two runs: no decision can rest on it.
var ErrNondeterministic = errors.New("nondeterministic chart")

// orDefaults fills the zero bounds with their defaults.
func (b Bounds) orDefaults() Bounds {
	if b.Timeout <= 0 {
		b.Timeout = DefaultTimeout
	}
	if b.MaxMemory <= 0 {
		b.MaxMemory = DefaultMaxMemory
	}
	if b.MaxOutputBytes <= 0 {
		b.MaxOutputBytes = DefaultMaxOutputBytes
	}
	if b.MaxObjects <= 0 {
		b.MaxObjects = DefaultMaxObjects
	}
	return b
}

// Validate refuses negative bounds, naming the field; where prefixes the
// names (a config key).
func (b Bounds) Validate(where string) error {
	switch {
	case b.Timeout < 0:
		return fmt.Errorf("%stimeout: must not be negative", where)
	case b.MaxMemory < 0:
		return fmt.Errorf("%smaxMemory: must not be negative", where)
	case b.MaxOutputBytes < 0:
		return fmt.Errorf("%smaxOutputBytes: must not be negative", where)
	case b.MaxObjects < 0:
		return fmt.Errorf("%smaxObjects: must not be negative", where)
	}
	return nil
}

// mib spells a byte count for a reason.
func mib(n int64) string {
	if n%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d bytes", n)
}

// The bounds as reasons name them.
func deadlineBound(b Bounds) error {
	return fmt.Errorf("%w at its deadline of %s (render timeout)", ErrBound, b.Timeout)
}

func memoryBound(b Bounds, how string) error {
	return fmt.Errorf("%w: it passed its memory budget of %s (%s)", ErrBound, mib(b.MaxMemory), how)
}

func outputBytesBound(b Bounds, n int64) error {
	return fmt.Errorf("%w: the templates rendered more than %s (%d bytes, output bound)",
		ErrBound, mib(b.MaxOutputBytes), n)
}

func objectsBound(b Bounds) error {
	return fmt.Errorf("%w: the templates rendered more than %d documents (object bound)", ErrBound, b.MaxObjects)
}
