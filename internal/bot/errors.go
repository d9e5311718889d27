package bot

import (
	"encoding/json"
	"errors"
	"slices"

	"github.com/backflow-dev/backflow/internal/forge"
	"github.com/backflow-dev/backflow/internal/policy"
	"github.com/backflow-dev/backflow/internal/repoconfig"
	"github.com/backflow-dev/backflow/internal/values"
)

// Errors is a list of errors kept as errors, so the sentinels they wrap
// reach the caller; as JSON it is the list of their messages.
type Errors []error

// MarshalJSON writes the messages.
func (es Errors) MarshalJSON() ([]byte, error) {
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = e.Error()
	}
	return json.Marshal(out)
}

// Strings are the messages.
func (es Errors) Strings() []string {
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = e.Error()
	}
	return out
}

// Join is the errors as one (nil when there is none).
func (es Errors) Join() error { return errors.Join(es...) }

// UnitError is a failure of one write-back branch.
type UnitError struct {
	// Unit is the write-back branch.
	Unit string
	// Err is what failed.
	Err error
}

// Error is "<branch>: <error>".
func (e *UnitError) Error() string { return e.Unit + ": " + e.Err.Error() }

// Unwrap returns the failure.
func (e *UnitError) Unwrap() error { return e.Err }

func unitError(unit string, err error) error {
	if unit == "" {
		return err
	}
	return &UnitError{Unit: unit, Err: err}
}

// ErrorClass names the kind of a cycle's error by the sentinel it wraps,
// for a metric label: rate-limited, unauthorized, unavailable, not-found,
// conflict, not-mergeable, invalid-request, not-regular-file, repo-config,
// policy, values; anything else is "repository".
func ErrorClass(err error) string {
	if _, ok := forge.IsRateLimited(err); ok {
		return "rate-limited"
	}
	for _, c := range errorClasses {
		if errors.Is(err, c.sentinel) {
			return c.name
		}
	}
	return "repository"
}

// ErrorClasses are every name ErrorClass gives, for pre-initialising a
// metric by error class.
func ErrorClasses() []string {
	names := []string{"rate-limited", "repository"}
	for _, c := range errorClasses {
		if !slices.Contains(names, c.name) {
			names = append(names, c.name)
		}
	}
	return names
}

var errorClasses = []struct {
	sentinel error
	name     string
}{
	{forge.ErrUnauthorized, "unauthorized"},
	{forge.ErrUnavailable, "unavailable"},
	{forge.ErrNotFound, "not-found"},
	{forge.ErrConflict, "conflict"},
	{forge.ErrNotMergeable, "not-mergeable"},
	{forge.ErrInvalid, "invalid-request"},
	{forge.ErrNotRegularFile, "not-regular-file"},
	{repoconfig.ErrInvalid, "repo-config"},
	{repoconfig.ErrUnreadable, "repo-config"},
	{policy.ErrUnparseable, "policy"},
	{values.ErrParse, "values"},
	{values.ErrRefused, "values"},
	{values.ErrVerify, "values"},
}
