package server

import "log/slog"

// redacted is what a Secret prints as, wherever it ends up.
const redacted = "(redacted)"

// Secret holds a shared secret (a webhook secret, a bearer token). It prints,
// logs and marshals as "(redacted)", so that it cannot leak through a log
// line, an error message or a debug dump of a config.
type Secret struct{ b []byte }

// NewSecret wraps b; the bytes are copied.
func NewSecret(b []byte) Secret { return Secret{b: append([]byte(nil), b...)} }

// Empty reports whether no secret is set.
func (s Secret) Empty() bool { return len(s.b) == 0 }

// Reveal returns the secret's bytes, for the one place that uses them.
func (s Secret) Reveal() []byte { return s.b }

// String implements fmt.Stringer without revealing the secret.
func (s Secret) String() string { return redacted }

// GoString implements fmt.GoStringer without revealing the secret.
func (s Secret) GoString() string { return redacted }

// LogValue implements slog.LogValuer without revealing the secret.
func (s Secret) LogValue() slog.Value { return slog.StringValue(redacted) }

// MarshalText implements encoding.TextMarshaler without revealing the secret.
func (s Secret) MarshalText() ([]byte, error) { return []byte(redacted), nil }
