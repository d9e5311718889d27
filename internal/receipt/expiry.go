package receipt

import (
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/backflow-dev/backflow/internal/policy"
)

// Expiry is how long a temporary acceptance lasts (break glass).
type Expiry struct {
	// ExpiresAt is an RFC 3339 time: from then on backflow proposes
	// restoring each changed field's from.
	ExpiresAt string `yaml:"expiresAt"`
	// SetBy is the mayAccept entry whose authority bounds the acceptance
	// (`spec.rules[0].mayAccept[0]`); AcceptFor is its acceptFor as
	// written, absent when the entry sets none and the intent asked.
	SetBy     string `yaml:"setBy"`
	AcceptFor string `yaml:"acceptFor,omitempty"`
	// Requested is the intent's ask (`until 2h`), when it asked; Bounded
	// says it asked for more than the entry allows and got the entry's.
	Requested string `yaml:"requested,omitempty"`
	Bounded   bool   `yaml:"bounded,omitempty"`
}

// Carried is an earlier temporary acceptance of the object, carried by a
// later receipt at its path so that it is still restored at its expiry.
type Carried struct {
	// Name is the earlier receipt's metadata.name; Actor, Role and Intent
	// its trigger's: the restoring write-back is made under that role.
	Name   string `yaml:"name"`
	Actor  string `yaml:"actor"`
	Role   string `yaml:"role"`
	Intent string `yaml:"intent"`
	// Expiry is the earlier receipt's expiry.
	Expiry Expiry `yaml:"expiry"`
	// ChangedFields are its accepted fields that no later acceptance
	// changed again: from is the value desired before it.
	ChangedFields []ChangedField `yaml:"changedFields"`
}

// Expired names the temporary acceptance a restoring receipt ends.
type Expired struct {
	// Receipt is the expired receipt's path on the default branch, Name
	// its metadata.name.
	Receipt string `yaml:"receipt"`
	Name    string `yaml:"name"`
	// ExpiresAt and SetBy are the expired receipt's expiry.
	ExpiresAt string `yaml:"expiresAt"`
	SetBy     string `yaml:"setBy"`
	// Commit is the default-branch commit the expired receipt was read at.
	Commit string `yaml:"commit,omitempty"`
}

// ExpiresAt is the receipt's expiry time; ok is false on a permanent
// acceptance or an expiresAt that is not an RFC 3339 time.
func (r *Receipt) ExpiresAt() (time.Time, bool) {
	if r.Spec.Expiry == nil {
		return time.Time{}, false
	}
	t, err := time.Parse(time.RFC3339, r.Spec.Expiry.ExpiresAt)
	return t, err == nil
}

// expiry checks backflow's break-glass rules. The term an acceptance may
// last is the policy's (policy.TermOf over the entries that authorize the
// changed fields, on the trigger's intent): when it has one, the receipt
// must carry an expiry set by that entry, with its acceptFor, ending after
// writeBack.provenance.when and no later than the term after it. A
// receipt that restores an expired acceptance (trigger.expired) names the
// receipt, the entry and an expiry no later than its own write-back, and
// has no expiry of its own.
func (v *verifier) expiry(s *Spec, pol *policy.Policy) {
	v.carried(s)
	when, err := time.Parse(time.RFC3339, s.WriteBack.Provenance.When)
	if err != nil {
		return // reported as writeBack.provenance.when
	}
	if x := s.Trigger.Expired; x != nil {
		if s.Expiry != nil {
			v.fail("expiry", "a receipt restoring an expired acceptance does not expire itself")
		}
		for _, f := range []struct{ name, value string }{{"receipt", x.Receipt}, {"name", x.Name}, {"setBy", x.SetBy}} {
			if f.value == "" {
				v.fail("trigger.expired."+f.name, "required")
			}
		}
		v.rfc3339("trigger.expired.expiresAt", x.ExpiresAt)
		if at, err := time.Parse(time.RFC3339, x.ExpiresAt); err == nil && at.After(when) {
			v.fail(
				"trigger.expired.expiresAt",
				"is %s, after writeBack.provenance.when %s: the acceptance had not expired",
				x.ExpiresAt,
				s.WriteBack.Provenance.When,
			)
		}
		return
	}
	var matches []*policy.Match
	for _, cf := range s.Bounds.ChangedFields {
		d := pol.Evaluate(policy.Request{Roles: []string{s.Trigger.Role}, Environment: s.Environment,
			Object: cf.Object, Field: cf.Field, ValuePath: cf.ValuePath, Value: cf.To.V, HasValue: cf.To.Set})
		if d.Allowed {
			matches = append(matches, d.Match)
		}
	}
	term, bounded := pol.TermOf(matches, s.Trigger.Intent)
	x := s.Expiry
	if x == nil {
		if bounded {
			v.fail(
				"expiry",
				"required: %s bounds the acceptance to %s, so it must expire",
				term.Entry,
				policy.FormatDuration(term.For),
			)
		}
		return
	}
	v.rfc3339("expiry.expiresAt", x.ExpiresAt)
	if !bounded {
		// The entries accept for good: any later expiry is within that,
		// set by one of them.
		if !slices.ContainsFunc(matches, func(m *policy.Match) bool { return m.Path() == x.SetBy }) {
			v.fail("expiry.setBy", "is %q, which authorizes none of the changed fields", x.SetBy)
		}
		if at, err := time.Parse(time.RFC3339, x.ExpiresAt); err == nil && !at.After(when) {
			v.fail("expiry.expiresAt", "is %s, not after writeBack.provenance.when %s", x.ExpiresAt, s.WriteBack.Provenance.When)
		}
		if x.AcceptFor != "" {
			v.fail("expiry.acceptFor", "is %q, but no entry authorizing the changed fields sets acceptFor", x.AcceptFor)
		}
		return
	}
	if x.SetBy != term.Entry {
		v.fail("expiry.setBy", "is %q, want %s, the entry that bounds the acceptance", x.SetBy, term.Entry)
	}
	if x.AcceptFor != term.AcceptFor {
		v.fail("expiry.acceptFor", "is %q, want %s's acceptFor %q", x.AcceptFor, term.Entry, term.AcceptFor)
	}
	if x.Requested != term.Asked || x.Bounded != term.Bounded {
		v.fail("expiry.requested", "is %q (bounded %s), want the intent's ask %q (bounded %s)",
			x.Requested, strconv.FormatBool(x.Bounded), term.Asked, strconv.FormatBool(term.Bounded))
	}
	at, err := time.Parse(time.RFC3339, x.ExpiresAt)
	switch {
	case err != nil:
	case !at.After(when):
		v.fail(
			"expiry.expiresAt",
			"is %s, not after writeBack.provenance.when %s",
			x.ExpiresAt,
			s.WriteBack.Provenance.When,
		)
	case at.Sub(when) > term.For:
		v.fail("expiry.expiresAt", "is %s after writeBack.provenance.when, beyond the term of %s (%s)",
			policy.FormatDuration(at.Sub(when)), policy.FormatDuration(term.For), term.Entry)
	}
}

// carried checks the earlier acceptances a receipt carries: each names
// its receipt, role and entry, expires at an RFC 3339 time, and has fields
// this receipt does not change again (those it does are superseded, not
// carried).
func (v *verifier) carried(s *Spec) {
	for i, c := range s.Carried {
		at := fmt.Sprintf("carried[%d]", i)
		for _, f := range []struct{ name, value string }{{"name", c.Name}, {"role", c.Role},
			{"expiry.setBy", c.Expiry.SetBy}} {
			if f.value == "" {
				v.fail(at+"."+f.name, "required")
			}
		}
		v.rfc3339(at+".expiry.expiresAt", c.Expiry.ExpiresAt)
		if len(c.ChangedFields) == 0 {
			v.fail(at+".changedFields", "required: a carried acceptance has fields to restore")
		}
		for j, cf := range c.ChangedFields {
			if slices.ContainsFunc(s.Bounds.ChangedFields, func(o ChangedField) bool {
				return o.Object == cf.Object && o.Field == cf.Field
			}) {
				v.fail(fmt.Sprintf("%s.changedFields[%d]", at, j),
					"%s %s is changed again by this receipt: superseded, not carried", cf.Object, cf.Field)
			}
		}
	}
}

// expiryNote is what the rollup table adds to a receipt's accepted change:
// when a temporary acceptance ends, or which one a restoring receipt ends.
func expiryNote(r *Receipt) string {
	var carried string
	for _, c := range r.Spec.Carried {
		carried += " (carries: " + code(c.Name) + " until " + cell(c.Expiry.ExpiresAt) + ")"
	}
	return ownExpiryNote(r) + carried
}

func ownExpiryNote(r *Receipt) string {
	switch {
	case r.Spec.Expiry != nil:
		return " (until " + cell(r.Spec.Expiry.ExpiresAt) + ")"
	case r.Spec.Trigger.Expired != nil:
		return " (restores: " + code(
			r.Spec.Trigger.Expired.Name,
		) + " expired " + cell(
			r.Spec.Trigger.Expired.ExpiresAt,
		) + ")"
	}
	return ""
}
