package policy

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// MaxAcceptFor is the longest acceptFor a policy may set: a temporary
// acceptance meant to outlast a year is a permanent one, written as such.
const MaxAcceptFor = 366 * 24 * time.Hour

// durationText is a duration as acceptFor and an intent spell it: one or
// more <digits><unit> parts, the unit d (24 hours), h, m or s, largest
// first (`8h`, `2h30m`, `3d`, `1d12h`, `90m`). It is Go's duration syntax
// without fractions, signs or sub-second units, with days added.
var durationText = regexp.MustCompile(`^(?:[0-9]+d)?(?:[0-9]+h)?(?:[0-9]+m)?(?:[0-9]+s)?$`)

// ParseDuration reads a duration of acceptFor's grammar (see durationText).
// It must be positive and at most MaxAcceptFor.
func ParseDuration(s string) (time.Duration, error) {
	if s == "" || !durationText.MatchString(s) {
		return 0, fmt.Errorf("%q is not a duration: write digits and a unit, largest first (d, h, m, s), "+
			"as in 8h, 2h30m or 3d", s)
	}
	var total time.Duration
	rest := s
	for rest != "" {
		i := strings.IndexAny(rest, "dhms")
		n, err := strconv.ParseInt(rest[:i], 10, 64)
		if err != nil || n > int64(MaxAcceptFor/time.Second) {
			return 0, fmt.Errorf("%q is longer than the longest acceptance, %s", s, FormatDuration(MaxAcceptFor))
		}
		unit := map[byte]time.Duration{'d': 24 * time.Hour, 'h': time.Hour, 'm': time.Minute, 's': time.Second}[rest[i]]
		total += time.Duration(n) * unit
		if total > MaxAcceptFor {
			return 0, fmt.Errorf("%q is longer than the longest acceptance, %s", s, FormatDuration(MaxAcceptFor))
		}
		rest = rest[i+1:]
	}
	if total <= 0 {
		return 0, errors.New("must be longer than zero")
	}
	return total, nil
}

// FormatDuration writes d in acceptFor's grammar, largest unit first, with
// whole days as d (`1d12h`, `2h30m`); parts below a second are dropped.
func FormatDuration(d time.Duration) string {
	if d < time.Second {
		return "0s"
	}
	var b strings.Builder
	for _, u := range []struct {
		n    time.Duration
		name string
	}{{24 * time.Hour, "d"}, {time.Hour, "h"}, {time.Minute, "m"}, {time.Second, "s"}} {
		if q := d / u.n; q > 0 {
			b.WriteString(strconv.FormatInt(int64(q), 10) + u.name)
			d -= q * u.n
		}
	}
	return b.String()
}

// intentAsk finds a duration an intent asks for: the word `for` or `until`
// (any case), white space, and a duration of acceptFor's grammar that ends
// the text or is followed by white space or one of `.,;:)]`. The first
// such phrase is the ask.
var intentAsk = regexp.MustCompile(`(?i)(?:^|[\s(\[])(?:for|until)\s+([0-9][0-9dhms]*)(?:$|[\s.,;:)\]])`)

// IntentDuration returns the duration an intent asks its acceptance to
// last, and the phrase that asked (`until 2h`); ok is false when the intent
// asks for none. A phrase whose duration does not parse ("for 3 hours",
// "until 0h") asks for nothing.
func IntentDuration(intent string) (d time.Duration, phrase string, ok bool) {
	// Phrases may share the white space between them, so each search
	// starts where the last duration ended.
	for off := 0; off < len(intent); {
		m := intentAsk.FindStringSubmatchIndex(intent[off:])
		if m == nil {
			break
		}
		ds, de := off+m[2], off+m[3]
		d, err := ParseDuration(intent[ds:de])
		if err != nil {
			off = de
			continue
		}
		start := off + m[0]
		for start < ds && strings.ContainsRune(" \t\r\n([", rune(intent[start])) {
			start++
		}
		return d, strings.Join(strings.Fields(intent[start:de]), " "), true
	}
	return 0, "", false
}

// Term is how long an acceptance lasts: the entry's bound and the
// intent's ask, whichever is shorter.
type Term struct {
	// For is how long the acceptance lasts.
	For time.Duration
	// Entry is the mayAccept entry that authorizes it (its place in the
	// policy file); AcceptFor its bound as written, empty when the entry
	// sets none.
	Entry     string
	AcceptFor string
	// Asked is the intent's phrase, when it asked; Bounded says it asked
	// for more than the entry allows, and got the entry's bound.
	Asked   string
	Bounded bool
}

// TermOf is the term of an acceptance the entries of matches authorize, on
// an intent: the shortest of the entries' acceptFor and the intent's ask.
// ok is false when neither bounds it (a permanent acceptance).
func (p *Policy) TermOf(matches []*Match, intent string) (Term, bool) {
	var t Term
	var have bool
	for _, m := range matches {
		a := p.entry(m)
		if a == nil || a.AcceptFor == 0 {
			continue
		}
		if !have || a.AcceptFor < t.For {
			t = Term{For: a.AcceptFor, Entry: m.Path(), AcceptFor: a.AcceptForText}
			have = true
		}
	}
	asked, phrase, ok := IntentDuration(intent)
	switch {
	case !ok:
	case have && asked > t.For:
		t.Asked, t.Bounded = phrase, true
	case have:
		t.For, t.Asked = asked, phrase
	default:
		// An entry without acceptFor accepts for good; asking for less
		// than that is honoured, under the first entry.
		if len(matches) == 0 {
			return Term{}, false
		}
		t = Term{For: asked, Entry: matches[0].Path(), Asked: phrase}
		have = true
	}
	return t, have
}

// Entry returns the mayAccept entry at the place path names
// (`spec.rules[0].mayAccept[1]`), or nil.
func (p *Policy) Entry(path string) (*Accept, string) {
	var ri, ai int
	if _, err := fmt.Sscanf(path, "spec.rules[%d].mayAccept[%d]", &ri, &ai); err != nil || entryPath(ri, ai) != path {
		return nil, ""
	}
	if !p.Valid() || ri < 0 || ri >= len(p.Rules) || ai < 0 || ai >= len(p.Rules[ri].MayAccept) {
		return nil, ""
	}
	return &p.Rules[ri].MayAccept[ai], p.Rules[ri].Role
}

func (p *Policy) entry(m *Match) *Accept {
	a, _ := p.Entry(m.Path())
	return a
}
