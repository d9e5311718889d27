package confighub

import (
	"errors"
	"fmt"
	"strings"
)

// The kinds of failure, each wrapped by an *Error.
var (
	// ErrUnreachable: no answer (refused, reset, timed out): retry later.
	ErrUnreachable = errors.New("ConfigHub is unreachable")
	// ErrUnauthorized: the token was refused (401).
	ErrUnauthorized = errors.New("the token was refused")
	// ErrForbidden: the token may not do this (403).
	ErrForbidden = errors.New("the token is not allowed to do this")
	// ErrNotFound: no such Space or Unit (404, or a lookup that found none).
	ErrNotFound = errors.New("not found")
	// ErrConflict: the Unit's data changed since it was read (409).
	ErrConflict = errors.New("the unit's data changed since it was read")
	// ErrServer: ConfigHub failed (5xx): retry later.
	ErrServer = errors.New("ConfigHub failed")
	// ErrRejected: the request was refused as invalid (400, 422, other 4xx).
	ErrRejected = errors.New("the request was refused")
	// ErrToolchain: the Unit's toolchain is not Kubernetes/YAML.
	ErrToolchain = errors.New("the unit's toolchain is not " + ToolchainKubernetesYAML)
	// ErrUnparseable: the Unit's data is not a stream of Kubernetes manifests.
	ErrUnparseable = errors.New("the unit's data does not parse")
	// ErrTooLarge: the Unit's data is over the size backflow reads.
	ErrTooLarge = errors.New("the unit's data is too large")
	// ErrBadResponse: an answer that does not say what the API says it says.
	ErrBadResponse = errors.New("ConfigHub's answer does not conform to its API")
)

// Retryable reports whether err may succeed unchanged on a later cycle: an
// unreachable or failing ConfigHub. A conflict needs a new plan, not a retry.
func Retryable(err error) bool {
	return errors.Is(err, ErrUnreachable) || errors.Is(err, ErrServer)
}

// Error is a failed operation on a Unit (or a Space), naming both.
type Error struct {
	// Op is what was being done ("reading unit", "writing revision", ...).
	Op string
	// Space and Unit are the slugs (Unit empty for a Space lookup).
	Space, Unit string
	// Status is the HTTP status, 0 when there was no answer.
	Status int
	// Message is ConfigHub's StandardErrorResponse message, or what
	// backflow found wrong, with the token taken out.
	Message string
	// Kind is one of the sentinel errors.
	Kind error
	// Err is the cause, if any (a transport error).
	Err error
}

// Error implements error.
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("error ")
	b.WriteString(e.Op)
	if e.Unit != "" {
		fmt.Fprintf(&b, " unit %q of space %q", e.Unit, e.Space)
	} else {
		fmt.Fprintf(&b, " space %q", e.Space)
	}
	b.WriteString(": ")
	b.WriteString(e.Kind.Error())
	if e.Status != 0 {
		fmt.Fprintf(&b, " (HTTP %d)", e.Status)
	}
	if e.Message != "" {
		b.WriteString(": ")
		b.WriteString(e.Message)
	}
	if e.Err != nil {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	return b.String()
}

// Unwrap returns the kind and the cause.
func (e *Error) Unwrap() []error {
	if e.Err == nil {
		return []error{e.Kind}
	}
	return []error{e.Kind, e.Err}
}

// kindOf maps an HTTP status to the kind of failure.
func kindOf(status int) error {
	switch {
	case status == 401:
		return ErrUnauthorized
	case status == 403:
		return ErrForbidden
	case status == 404:
		return ErrNotFound
	case status == 409:
		return ErrConflict
	case status >= 500:
		return ErrServer
	default:
		return ErrRejected
	}
}
