package forge

import (
	"errors"
	"fmt"
	"time"
)

// Sentinel errors decide control flow in the callers; adapters wrap them with
// %w and the place they happened ("error creating branch backflow/prod/redis
// in acme/gitops: ...").
var (
	// ErrNotFound: the repository, file, ref, pull request, comment or
	// check run does not exist (or the App cannot see it).
	ErrNotFound = errors.New("not found")
	// ErrConflict: a compare-and-swap lost: the branch already exists, its
	// head is not the expected one, or a merge was pinned to a head that moved
	// (HTTP 409 on GitHub).
	ErrConflict = errors.New("conflict")
	// ErrNotMergeable: the pull request cannot be merged now (HTTP 405 on
	// GitHub: failing required checks, merge conflicts, a draft).
	ErrNotMergeable = errors.New("not mergeable")
	// ErrAlreadyMergeable: auto-merge could not be enabled because the pull
	// request is already mergeable ("clean status"); merge it directly,
	// pinned to its head SHA.
	ErrAlreadyMergeable = errors.New("pull request is already mergeable")
	// ErrAutoMergeNotAllowed: the repository does not allow auto-merge.
	ErrAutoMergeNotAllowed = errors.New("auto-merge is not allowed")
	// ErrUnauthorized: the credentials were refused (HTTP 401) or lack the
	// permission for the call (HTTP 403 without a rate limit).
	ErrUnauthorized = errors.New("unauthorized")
	// ErrInvalid: the service refused the request as malformed (HTTP 422
	// other than the conflicts above).
	ErrInvalid = errors.New("invalid request")
	// ErrNotRegularFile: a read reached a directory, a symlink or a
	// submodule where a file was expected; the bot never follows those.
	ErrNotRegularFile = errors.New("not a regular file")
	// ErrUnavailable: the service kept failing (5xx, timeouts, resets) after
	// the bounded retries.
	ErrUnavailable = errors.New("service unavailable")
)

// RateLimitError reports that the service asked for no more requests until
// Until, and the wait was longer than the adapter is willing to block. The
// cycle should stop and resume after Until.
type RateLimitError struct {
	// Until is when requests may resume.
	Until time.Time
	// Reason says which limit: "primary", "secondary" or "429".
	Reason string
}

// Error implements error.
func (e *RateLimitError) Error() string {
	return fmt.Sprintf("rate limited (%s) until %s", e.Reason, e.Until.UTC().Format(time.RFC3339))
}

// IsRateLimited reports whether err is or wraps a *RateLimitError, and returns it.
func IsRateLimited(err error) (*RateLimitError, bool) {
	var rl *RateLimitError
	ok := errors.As(err, &rl)
	return rl, ok
}
