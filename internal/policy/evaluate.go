package policy

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/backflow-dev/backflow/internal/values"
)

// Request asks whether someone holding Roles may accept Field of Object
// (written at ValuePath of the values file) in Environment, set to Value.
type Request struct {
	Roles       []string
	Environment string
	Object      string
	Field       string
	ValuePath   string
	// Value is the value to accept; it matters only when HasValue is set
	// (a nil Value with HasValue is the value null).
	Value    any
	HasValue bool
}

// Decision is the outcome of Evaluate: an allow carries the matched entry, a
// deny every reason that applied.
type Decision struct {
	Allowed bool
	Match   *Match
	Reasons []Reason
}

// Match names the mayAccept entry that authorized a request.
type Match struct {
	Role string
	// Rule and Accept index spec.rules and the rule's mayAccept list.
	Rule, Accept int
	// Reason is the rule's reason, on one line.
	Reason    string
	AutoMerge bool
}

// Path is the entry's place in the policy file.
func (m *Match) Path() string { return entryPath(m.Rule, m.Accept) }

// ReasonKind tells deny reasons apart without parsing messages.
type ReasonKind int

// Deny reasons, in the order a reader would check them.
const (
	// InvalidPolicy: the policy failed validation and authorizes nothing.
	InvalidPolicy ReasonKind = iota + 1
	// NoRuleForRole: no rule names the role (or the request has no role).
	NoRuleForRole
	// FieldNotAccepted: the role's rules have no entry with this valuePath and field.
	FieldNotAccepted
	// ObjectNotListed: an entry matches the field but not the object.
	ObjectNotListed
	// EnvironmentNotListed: an entry matches the field but not the environment.
	EnvironmentNotListed
	// ValueOutOfBounds: the value breaks the entry's minimum, maximum, pattern or oneOf.
	ValueOutOfBounds
	// ValueMissing: the entry bounds the value and the request carries none.
	ValueMissing
)

var kindNames = map[ReasonKind]string{
	InvalidPolicy:        "invalid-policy",
	NoRuleForRole:        "no-rule-for-role",
	FieldNotAccepted:     "field-not-accepted",
	ObjectNotListed:      "object-not-listed",
	EnvironmentNotListed: "environment-not-listed",
	ValueOutOfBounds:     "value-out-of-bounds",
	ValueMissing:         "value-missing",
}

// String is the kind's stable token, as `policy explain` prints it.
func (k ReasonKind) String() string {
	if s, ok := kindNames[k]; ok {
		return s
	}
	return "unknown"
}

// Reason is one cause of a deny.
type Reason struct {
	Kind ReasonKind
	Role string
	// Rule and Accept index the entry the reason is about; -1 when the
	// reason is not about one entry.
	Rule, Accept int
	// Message says what failed, naming the entry's place when there is one.
	Message string
}

// String writes "<kind>: <message>", as `policy explain` prints a reason.
func (r Reason) String() string { return r.Kind.String() + ": " + r.Message }

func entryPath(rule, accept int) string {
	return "spec.rules[" + strconv.Itoa(rule) + "].mayAccept[" + strconv.Itoa(accept) + "]"
}

// Evaluate decides a request under default deny: it is allowed only when a
// rule of one of the request's roles has a mayAccept entry with the same
// valuePath and field that lists the object and the environment and whose
// bounds hold for the value. The first such entry in file order is the match.
// A nil or invalid policy denies everything.
func (p *Policy) Evaluate(req Request) Decision {
	if !p.Valid() {
		// Fail closed: a policy that did not validate authorizes nothing.
		return Decision{Reasons: []Reason{{Kind: InvalidPolicy, Rule: -1, Accept: -1,
			Message: "the policy is missing or invalid, so it authorizes nothing"}}}
	}
	roles := unique(req.Roles)
	if len(roles) == 0 {
		return Decision{Reasons: []Reason{{Kind: NoRuleForRole, Rule: -1, Accept: -1,
			Message: "the request has no role (an unknown actor has none)"}}}
	}
	var (
		match      *Match
		entryDeny  []Reason
		ruleFound  = map[string]bool{}
		fieldFound = map[string]bool{}
	)
	for ri := range p.Rules {
		rule := &p.Rules[ri]
		if !slices.Contains(roles, rule.Role) {
			continue
		}
		ruleFound[rule.Role] = true
		for ai := range rule.MayAccept {
			a := &rule.MayAccept[ai]
			if a.ValuePath != req.ValuePath || a.Field != req.Field {
				continue
			}
			fieldFound[rule.Role] = true
			denies := a.check(req, rule.Role, ri, ai)
			if len(denies) == 0 && match == nil {
				match = &Match{Role: rule.Role, Rule: ri, Accept: ai, Reason: oneLine(rule.Reason), AutoMerge: a.AutoMerge}
			}
			entryDeny = append(entryDeny, denies...)
		}
	}
	if match != nil {
		return Decision{Allowed: true, Match: match}
	}
	var reasons []Reason
	for _, role := range roles {
		switch {
		case !ruleFound[role]:
			reasons = append(reasons, Reason{Kind: NoRuleForRole, Role: role, Rule: -1, Accept: -1,
				Message: fmt.Sprintf("no rule for role %q", role)})
		case !fieldFound[role]:
			reasons = append(reasons, Reason{Kind: FieldNotAccepted, Role: role, Rule: -1, Accept: -1,
				Message: fmt.Sprintf(
					"role %q may not accept field %s at value path %s: no mayAccept entry has both",
					role,
					req.Field,
					req.ValuePath,
				)})
		default:
			for _, r := range entryDeny {
				if r.Role == role {
					reasons = append(reasons, r)
				}
			}
		}
	}
	return Decision{Reasons: reasons}
}

// check returns every reason the entry does not authorize req.
func (a *Accept) check(req Request, role string, ri, ai int) []Reason {
	var out []Reason
	deny := func(kind ReasonKind, format string, args ...any) {
		out = append(out, Reason{Kind: kind, Role: role, Rule: ri, Accept: ai,
			Message: entryPath(ri, ai) + " (role " + role + "): " + fmt.Sprintf(format, args...)})
	}
	if !slices.ContainsFunc(a.Objects, func(p string) bool { return MatchKey(p, req.Object) }) {
		deny(ObjectNotListed, "object %q is not listed in objects [%s]", req.Object, strings.Join(a.Objects, ", "))
	}
	if !slices.ContainsFunc(a.Environments, func(p string) bool { return MatchKey(p, req.Environment) }) {
		deny(
			EnvironmentNotListed,
			"environment %q is not listed in environments [%s]",
			req.Environment,
			strings.Join(a.Environments, ", "),
		)
	}
	if !a.hasBounds() {
		return out
	}
	if !req.HasValue {
		deny(ValueMissing, "the entry bounds the value and no value was given")
		return out
	}
	for _, msg := range a.boundsErrors(req.Value) {
		deny(ValueOutOfBounds, "%s", msg)
	}
	return out
}

// boundsErrors says how v breaks the entry's value bounds.
func (a *Accept) boundsErrors(v any) []string {
	var out []string
	shown := values.Format(v)
	if a.Minimum != nil || a.Maximum != nil {
		n, ok := values.AsNumber(v)
		switch {
		case !ok:
			out = append(out, fmt.Sprintf("value %s is not a number (minimum/maximum bound numbers)", shown))
		case math.IsNaN(n):
			out = append(out, fmt.Sprintf("value %s is not comparable with the bounds", shown))
		default:
			if a.Minimum != nil && n < *a.Minimum {
				out = append(out, fmt.Sprintf("value %s is below minimum %s", shown, values.Format(*a.Minimum)))
			}
			if a.Maximum != nil && n > *a.Maximum {
				out = append(out, fmt.Sprintf("value %s is above maximum %s", shown, values.Format(*a.Maximum)))
			}
		}
	}
	if a.pattern != nil {
		s, ok := v.(string)
		switch {
		case !ok:
			out = append(out, fmt.Sprintf("value %s is not a string (pattern bounds strings)", shown))
		case !a.pattern.MatchString(s):
			out = append(out, fmt.Sprintf("value %s does not match pattern %s", shown, a.Pattern))
		}
	}
	if a.OneOf != nil && !slices.ContainsFunc(a.OneOf, func(o any) bool { return values.Equal(o, v) }) {
		allowed := make([]string, len(a.OneOf))
		for i, o := range a.OneOf {
			allowed[i] = values.Format(o)
		}
		out = append(out, fmt.Sprintf("value %s is not one of [%s]", shown, strings.Join(allowed, ", ")))
	}
	return out
}

// oneLine folds a (possibly multi-line) reason onto one line.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// unique returns ss without repeats, in first-seen order.
func unique(ss []string) []string {
	var out []string
	for _, s := range ss {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}
