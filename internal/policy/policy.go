package policy

import (
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"
	"time"

	"github.com/backflow-dev/backflow/internal/yamlnode"
)

// API versions a policy may declare: the seed's and backflow's own.
const (
	SeedAPIVersion = "helm-expt.confighub.com/v1alpha1"
	APIVersion     = "backflow.dev/v1alpha1"
	Kind           = "ReverseReconcilePolicy"
)

// MaxSize is the largest policy file Parse accepts. A policy is a short,
// hand-written file; anything larger is refused before parsing.
const MaxSize = 1 << 20

// ErrUnparseable marks a policy that could not be read as one YAML mapping
// (unreadable, too large, not YAML, excessive aliasing). It is a different
// failure from a ValidationError, which names every invalid place.
var ErrUnparseable = errors.New("unparseable policy")

// Policy is a loaded ReverseReconcilePolicy. It is not modified after
// loading, so one Policy may be evaluated concurrently.
type Policy struct {
	APIVersion string
	Kind       string
	Name       string
	Chart      string
	// Default is the decision when no rule applies; only "deny" is valid.
	Default string
	Rules   []Rule

	// invalid is set when validation failed: such a policy authorizes
	// nothing, whatever its rules say (fail closed).
	invalid bool
}

// Rule grants one role the right to accept the fields listed in MayAccept.
type Rule struct {
	Role      string
	Reason    string
	MayAccept []Accept
}

// Accept is one mayAccept entry: a value path and the Kubernetes field it
// maps to, on the listed objects, in the listed environments, optionally
// bounded and optionally pre-authorized for auto-merge.
type Accept struct {
	ValuePath string
	Field     string
	// Objects are object keys `apiVersion|kind|namespace|name`; each
	// `|`-separated segment may contain `*` globs.
	Objects []string
	// Environments are environment names that may contain `*` globs.
	Environments []string
	// AutoMerge marks the entry as pre-authorized: a write-back that only
	// this kind of entry authorizes may be merged without review.
	AutoMerge bool
	// Minimum and Maximum bound numeric values (inclusive).
	Minimum, Maximum *float64
	// Pattern is an RE2 expression that a string value must match in full.
	Pattern string
	// OneOf lists the only values accepted, compared as in the typing table.
	OneOf []any
	// AcceptFor is the longest an acceptance under this entry lasts (break
	// glass); zero accepts for good. AcceptForText is it as written.
	AcceptFor     time.Duration
	AcceptForText string

	pattern *regexp.Regexp
}

// hasBounds reports whether the entry restricts the value itself.
func (a *Accept) hasBounds() bool {
	return a.Minimum != nil || a.Maximum != nil || a.Pattern != "" || a.OneOf != nil
}

// Valid reports whether the policy passed validation. An invalid policy
// authorizes nothing.
func (p *Policy) Valid() bool { return p != nil && !p.invalid }

// FieldError is one invalid place in a policy file: its dotted path with
// list indexes (`spec.rules[0].role`), empty for the document as a whole,
// its line when known (the places the decoder found), and what is wrong
// there. It is the error of every config file's strict decoder.
type FieldError = yamlnode.FieldError

// ValidationError lists every invalid place of a policy file.
type ValidationError struct {
	File   string
	Errors []FieldError
}

// Error writes one "<file>: <place>: <message>" line per error.
func (e *ValidationError) Error() string {
	lines := make([]string, len(e.Errors))
	for i, fe := range e.Errors {
		lines[i] = e.File + ": " + fe.Error()
	}
	return strings.Join(lines, "\n")
}

// Load reads and parses the policy file at path; errors name path as given.
func Load(path string) (*Policy, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUnparseable, err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxSize+1))
	if err != nil {
		return nil, fmt.Errorf("%w: reading %s: %w", ErrUnparseable, path, err)
	}
	return Parse(path, data)
}

// Parse reads a policy document; file names it in errors. It returns an
// error wrapping ErrUnparseable and no policy when data is not one YAML
// mapping, or the policy together with a *ValidationError when it is invalid;
// such a policy denies every request.
func Parse(file string, data []byte) (*Policy, error) {
	if len(data) > MaxSize {
		return nil, fmt.Errorf("%w: %s: larger than %d bytes", ErrUnparseable, file, MaxSize)
	}
	root, err := yamlnode.ParseMapping(data)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrUnparseable, file, err)
	}
	var f policyFile
	errs := yamlnode.Decode(root, &f, yamlnode.Options{MaxNodes: maxNodes, Aliases: true})
	for _, e := range errs {
		if errors.Is(e, yamlnode.ErrTooManyNodes) {
			return nil, fmt.Errorf("%w: %s: %w", ErrUnparseable, file, yamlnode.ErrTooManyNodes)
		}
	}
	p, errs := f.policy(errs)
	if len(errs) > 0 {
		p.invalid = true
		return p, &ValidationError{File: file, Errors: errs}
	}
	return p, nil
}
