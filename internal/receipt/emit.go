package receipt

import (
	"bytes"
	"math"
	"strconv"
	"strings"
	"sync"
	"time"
)

// emitter writes a receipt's YAML by hand, byte for byte what yaml.v3's
// encoder writes for it with an indent of two, for the receipts a plan
// makes: every string printable ASCII on one line, every value a scalar.
// yaml.v3 keeps every event of a document until its end, about 170 KB and
// 0.3 ms a receipt, which was two fifths of a 1,000-unit plan. A receipt
// outside what the emitter knows (a string whose style it cannot be sure
// of, a map or list value) makes ok false, and Marshal leaves the whole
// receipt to yaml.v3; a test compares the two on hostile strings and
// values.
type emitter struct {
	b  []byte
	ok bool
}

// emitBuffers are the emitter's scratch buffers: a receipt is written into
// one and copied out at its size, so a receipt longer than a first guess
// does not leave the guess and its doublings behind.
var emitBuffers = sync.Pool{New: func() any {
	b := make([]byte, 0, 8192)
	return &b
}}

// emitFast writes r as Marshal does, by hand; ok is false when r holds
// what the emitter leaves to yaml.v3 (see emitter).
func emitFast(r *Receipt) ([]byte, bool) {
	buf := emitBuffers.Get().(*[]byte)
	e := &emitter{b: (*buf)[:0], ok: true}
	defer func() {
		*buf = e.b[:0]
		emitBuffers.Put(buf)
	}()
	if len(r.Spec.Carried) > 0 {
		// A carried acceptance is rare: yaml.v3 writes it.
		return nil, false
	}
	e.receipt(r)
	if !e.ok {
		return nil, false
	}
	return bytes.Clone(e.b), true
}

// receipt writes r in the seed's key order: its apiVersion, kind and name,
// what the spec is about (status, chart, environment, unit), then each spec
// section by its own method, expiry and render only when r has them.
func (e *emitter) receipt(r *Receipt) {
	e.str(0, "apiVersion", r.APIVersion)
	e.str(0, "kind", r.Kind)
	e.key(0, "metadata")
	e.str(2, "name", r.Metadata.Name)
	e.key(0, "spec")
	s := &r.Spec
	e.str(2, "status", s.Status)
	e.str(2, "chart", s.Chart)
	e.str(2, "version", s.Version)
	e.str(2, "environment", s.Environment)
	e.key(2, "unit")
	e.str(4, "space", s.Unit.Space)
	e.str(4, "desiredRender", s.Unit.DesiredRender)
	e.trigger(&s.Trigger)
	e.observation(&s.Observation)
	e.authority(&s.Authority)
	e.bounds(&s.Bounds)
	e.writeBack(&s.WriteBack)
	if s.Expiry != nil {
		e.expiry(s.Expiry)
	}
	if s.Render != nil {
		e.render(s.Render)
	}
	e.roundTrip(&s.RoundTrip)
	e.strs(2, "notClaimed", s.NotClaimed)
}

// trigger writes spec.trigger: what started the reverse reconcile and who,
// and on a receipt that restores desired state, the expired acceptance it
// ends.
func (e *emitter) trigger(t *Trigger) {
	e.key(2, "trigger")
	e.str(4, "class", t.Class)
	e.str(4, "actor", t.Actor)
	e.str(4, "role", t.Role)
	e.str(4, "intent", t.Intent)
	e.str(4, "at", t.At)
	if x := t.Expired; x != nil {
		e.key(4, "expired")
		e.str(6, "receipt", x.Receipt)
		e.str(6, "name", x.Name)
		e.str(6, "expiresAt", x.ExpiresAt)
		e.str(6, "setBy", x.SetBy)
		if x.Commit != "" {
			e.str(6, "commit", x.Commit)
		}
	}
}

// observation writes spec.observation: the live observation of the first
// changed field, its values and what the observer reported beyond them.
func (e *emitter) observation(o *Observation) {
	e.key(2, "observation")
	e.str(4, "source", o.Source)
	e.str(4, "predicate", o.Predicate)
	e.str(4, "receiptRef", o.ReceiptRef)
	e.str(4, "object", o.Object)
	e.str(4, "field", o.Field)
	if o.ValuePath != "" {
		e.str(4, "valuePath", o.ValuePath)
	}
	e.value(4, "liveValue", o.LiveValue)
	e.value(4, "desiredValueBefore", o.DesiredValueBefore)
	if o.UID != "" {
		e.str(4, "uid", o.UID)
	}
	if len(o.Evidence) > 0 {
		e.strs(4, "evidence", o.Evidence)
	}
}

// authority writes spec.authority: the policy decision.
func (e *emitter) authority(a *Authority) {
	e.key(2, "authority")
	e.str(4, "policyRef", a.PolicyRef)
	e.str(4, "decision", a.Decision)
	e.str(4, "matchedRule", a.MatchedRule)
}

// bounds writes spec.bounds: every changed field with where the
// write-back wrote it, and which fields the policy does not authorize.
func (e *emitter) bounds(b *Bounds) {
	e.key(2, "bounds")
	if len(b.ChangedFields) == 0 {
		e.empty(4, "changedFields")
	} else {
		e.key(4, "changedFields")
		for _, c := range b.ChangedFields {
			e.item(6)
			e.str(0, "object", c.Object)
			e.str(8, "field", c.Field)
			if c.ValuePath != "" {
				e.str(8, "valuePath", c.ValuePath)
			}
			e.value(8, "from", c.From)
			e.value(8, "to", c.To)
			if c.DesiredValueAfter.Set {
				e.value(8, "desiredValueAfter", c.DesiredValueAfter)
			}
			if c.ValuesFile != "" {
				e.str(8, "valuesFile", c.ValuesFile)
			}
			if c.WrittenFile != "" {
				e.str(8, "writtenFile", c.WrittenFile)
			}
			if c.WrittenPath != "" {
				e.str(8, "writtenPath", c.WrittenPath)
			}
		}
	}
	e.strs(4, "unauthorizedFieldsChanged", b.UnauthorizedFieldsChanged)
	e.boolp(4, "withinAuthorizedScope", b.WithinAuthorizedScope)
}

// writeBack writes spec.writeBack: how desired state was updated and the
// write-back's provenance.
func (e *emitter) writeBack(w *WriteBack) {
	e.key(2, "writeBack")
	e.str(4, "method", w.Method)
	e.value(4, "desiredValueAfter", w.DesiredValueAfter)
	e.str(4, "newRevision", w.NewRevision)
	if w.MergeCommit != "" {
		e.str(4, "mergeCommit", w.MergeCommit)
	}
	e.key(4, "provenance")
	e.str(6, "who", w.Provenance.Who)
	e.str(6, "when", w.Provenance.When)
	e.str(6, "operation", w.Provenance.Operation)
	e.str(6, "authority", w.Provenance.Authority)
	e.str(6, "intent", w.Provenance.Intent)
}

// expiry writes spec.expiry, the break glass of a temporary acceptance:
// when it expires, the entry that bounds it, and what the intent asked.
func (e *emitter) expiry(x *Expiry) {
	e.key(2, "expiry")
	e.str(4, "expiresAt", x.ExpiresAt)
	e.str(4, "setBy", x.SetBy)
	if x.AcceptFor != "" {
		e.str(4, "acceptFor", x.AcceptFor)
	}
	if x.Requested != "" {
		e.str(4, "requested", x.Requested)
	}
	if x.Bounded {
		e.b = append(e.b, "    bounded: true\n"...)
	}
}

// render writes spec.render, the render witness: how the chart was
// rendered, the objects compared and every rendered field the write-back
// changes, before and after.
func (e *emitter) render(rd *Render) {
	e.key(2, "render")
	e.str(4, "chart", rd.Chart)
	e.str(4, "version", rd.Version)
	e.str(4, "digest", rd.Digest)
	e.str(4, "renderer", rd.Renderer)
	if len(rd.Files) > 0 {
		e.strs(4, "files", rd.Files)
	}
	e.str(4, "releaseName", rd.ReleaseName)
	e.str(4, "namespace", rd.Namespace)
	e.str(4, "kubeVersion", rd.KubeVersion)
	e.strs(4, "objectsCompared", rd.ObjectsCompared)
	if len(rd.ChangedFields) == 0 {
		e.empty(4, "changedFields")
		return
	}
	e.key(4, "changedFields")
	for _, c := range rd.ChangedFields {
		e.item(6)
		e.str(0, "object", c.Object)
		e.str(8, "field", c.Field)
		e.value(8, "before", c.Before)
		e.value(8, "after", c.After)
	}
}

// roundTrip writes spec.roundTrip, the witness that desired now equals
// what was observed: whether desired and the render match it, the drift
// left, and the result.
func (e *emitter) roundTrip(rt *RoundTrip) {
	e.key(2, "roundTrip")
	e.boolp(4, "desiredAfterMatchesObserved", rt.DesiredAfterMatchesObserved)
	if rt.RenderedAfterMatchesObserved != nil {
		e.boolp(4, "renderedAfterMatchesObserved", rt.RenderedAfterMatchesObserved)
	}
	if len(rt.ResidualDrift) == 0 {
		e.empty(4, "residualDrift")
	} else {
		e.key(4, "residualDrift")
		for _, v := range rt.ResidualDrift {
			e.item(6)
			e.scalar(v)
			e.nl()
		}
	}
	e.str(4, "result", rt.Result)
}

func (e *emitter) indent(n int) {
	for range n {
		e.b = append(e.b, ' ')
	}
}

func (e *emitter) nl() { e.b = append(e.b, '\n') }

// key starts a mapping or a sequence under k.
func (e *emitter) key(indent int, k string) {
	e.indent(indent)
	e.b = append(e.b, k...)
	e.b = append(e.b, ':', '\n')
}

// keyed writes `k: ` at indent (indent 0 right after an item's dash).
func (e *emitter) keyed(indent int, k string) {
	e.indent(indent)
	e.b = append(e.b, k...)
	e.b = append(e.b, ':', ' ')
}

func (e *emitter) empty(indent int, k string) {
	e.keyed(indent, k)
	e.b = append(e.b, "[]\n"...)
}

// item starts a sequence item; what follows continues its line.
func (e *emitter) item(indent int) {
	e.indent(indent)
	e.b = append(e.b, '-', ' ')
}

func (e *emitter) str(indent int, k, v string) {
	e.keyed(indent, k)
	e.string(v)
	e.nl()
}

func (e *emitter) strs(indent int, k string, vs []string) {
	if len(vs) == 0 {
		e.empty(indent, k)
		return
	}
	e.key(indent, k)
	for _, v := range vs {
		e.item(indent + 2)
		e.string(v)
		e.nl()
	}
}

func (e *emitter) boolp(indent int, k string, v *bool) {
	e.keyed(indent, k)
	switch {
	case v == nil:
		e.b = append(e.b, "null"...)
	case *v:
		e.b = append(e.b, "true"...)
	default:
		e.b = append(e.b, "false"...)
	}
	e.nl()
}

func (e *emitter) value(indent int, k string, v Value) {
	e.keyed(indent, k)
	e.scalar(v.V)
	e.nl()
}

// scalar writes a value as yaml.v3 does: integers in decimal, floats in
// the shortest form that reads back (`g`), .inf and .nan spelled as YAML
// spells them.
func (e *emitter) scalar(v any) {
	switch x := v.(type) {
	case nil:
		e.b = append(e.b, "null"...)
	case bool:
		e.b = strconv.AppendBool(e.b, x)
	case int:
		e.b = strconv.AppendInt(e.b, int64(x), 10)
	case int64:
		e.b = strconv.AppendInt(e.b, x, 10)
	case float64:
		switch {
		case math.IsInf(x, 1):
			e.b = append(e.b, ".inf"...)
		case math.IsInf(x, -1):
			e.b = append(e.b, "-.inf"...)
		case math.IsNaN(x):
			e.b = append(e.b, ".nan"...)
		default:
			e.b = strconv.AppendFloat(e.b, x, 'g', -1, 64)
		}
	case string:
		e.string(x)
	default:
		e.ok = false
	}
}

// string writes s in the style yaml.v3 chooses for it as a block mapping
// value or sequence item: plain when a plain scalar reads back as the same
// string and nothing in it is an indicator there; single-quoted when it is
// a string but an indicator rules plain out; double-quoted when a plain
// scalar would be another type (a timestamp, the empty string). Any string
// it cannot be sure of sets ok false.
func (e *emitter) string(s string) {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			e.ok = false
			return
		}
	}
	switch plainType(s) {
	case "str":
	case "other":
		e.b = append(e.b, '"')
		for i := 0; i < len(s); i++ {
			if s[i] == '"' || s[i] == '\\' {
				e.b = append(e.b, '\\')
			}
			e.b = append(e.b, s[i])
		}
		e.b = append(e.b, '"')
		return
	default:
		e.ok = false
		return
	}
	if !blockPlainAllowed(s) {
		e.b = append(e.b, '\'')
		e.b = append(e.b, strings.ReplaceAll(s, "'", "''")...)
		e.b = append(e.b, '\'')
		return
	}
	e.b = append(e.b, s...)
}

// plainType says what yaml.v3 resolves s to as a plain scalar, as far as
// the emitter needs: "str" (it may be written plain), "other" (another type:
// it is written double-quoted) or "" (not sure: numbers with a `:`, which
// YAML 1.1 may read in base 60; Marshal leaves those to yaml.v3). It
// follows yaml.v3's resolve: the first character says what to try, a
// table of special words (true, null, .inf, ...), then timestamps,
// integers (any base, `_` ignored) and floats; YAML 1.1's booleans (yes,
// off, ...) are quoted too.
func plainType(s string) string {
	if s == "" {
		return "other"
	}
	switch s {
	case "true", "True", "TRUE", "false", "False", "FALSE", "null", "Null", "NULL", "~",
		".nan", ".NaN", ".NAN", ".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF", "-.inf", "-.Inf", "-.INF",
		"y", "Y", "yes", "Yes", "YES", "on", "On", "ON", "n", "N", "no", "No", "NO", "off", "Off", "OFF":
		return "other"
	}
	switch c := s[0]; {
	case c == '.':
		// Without a base prefix ParseFloat takes no `_` and no word after
		// a dot, so only a digit after it can make a float: paths such as
		// .github/... are not parsed (a failed parse allocates its error).
		if len(s) > 1 && '0' <= s[1] && s[1] <= '9' {
			if _, err := strconv.ParseFloat(s, 64); err == nil {
				return "other"
			}
		}
	case c == '+' || c == '-' || '0' <= c && c <= '9':
		if timestamp(s) {
			return "other"
		}
		if strings.IndexByte(s, ':') >= 0 {
			return ""
		}
		if number(strings.ReplaceAll(s, "_", "")) {
			return "other"
		}
	}
	return "str"
}

// timestamp is yaml.v3's parseTimestamp.
func timestamp(s string) bool {
	i := 0
	for i < len(s) && '0' <= s[i] && s[i] <= '9' {
		i++
	}
	if i != 4 || i == len(s) || s[i] != '-' {
		return false
	}
	layouts := []string{
		"2006-1-2T15:4:5.999999999Z07:00", "2006-1-2t15:4:5.999999999Z07:00", "2006-1-2 15:4:5.999999999", "2006-1-2",
	}
	for _, f := range layouts {
		if _, err := time.Parse(f, s); err == nil {
			return true
		}
	}
	return false
}

// number is yaml.v3's resolve of an integer or a float, on s without its
// underscores.
func number(s string) bool {
	if _, err := strconv.ParseInt(s, 0, 64); err == nil {
		return true
	}
	if _, err := strconv.ParseUint(s, 0, 64); err == nil {
		return true
	}
	if yamlFloat(s) {
		if _, err := strconv.ParseFloat(s, 64); err == nil {
			return true
		}
	}
	for _, p := range []string{"0b", "-0b", "0o", "-0o"} {
		rest, ok := strings.CutPrefix(s, p)
		if !ok {
			continue
		}
		base := 2
		if p[len(p)-1] == 'o' {
			base = 8
		}
		if p[0] == '-' {
			if _, err := strconv.ParseInt("-"+rest, base, 64); err == nil {
				return true
			}
			continue
		}
		if _, err := strconv.ParseInt(rest, base, 64); err == nil {
			return true
		}
		if _, err := strconv.ParseUint(rest, base, 64); err == nil {
			return true
		}
	}
	return false
}

// yamlFloat matches yaml.v3's float syntax,
// [-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?
func yamlFloat(s string) bool {
	i := 0
	digits := func() int {
		n := 0
		for i < len(s) && '0' <= s[i] && s[i] <= '9' {
			i++
			n++
		}
		return n
	}
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		i++
	}
	if i < len(s) && s[i] == '.' {
		i++
		if digits() == 0 {
			return false
		}
	} else {
		if digits() == 0 {
			return false
		}
		if i < len(s) && s[i] == '.' {
			i++
			digits()
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if digits() == 0 {
			return false
		}
	}
	return i == len(s)
}

// blockPlainAllowed is yaml.v3's analysis of a one-line printable ASCII
// scalar in block context: no leading or trailing space, no document
// separator, no indicator at the start, no `: ` or trailing `:`, no ` #`.
func blockPlainAllowed(s string) bool {
	if s[0] == ' ' || s[len(s)-1] == ' ' {
		return false
	}
	if strings.HasPrefix(s, "---") || strings.HasPrefix(s, "...") {
		return false
	}
	followedBySpace := func(i int) bool { return i+1 >= len(s) || s[i+1] == ' ' }
	switch s[0] {
	case '#', ',', '[', ']', '{', '}', '&', '*', '!', '|', '>', '\'', '"', '%', '@', '`':
		return false
	case '?', ':', '-':
		if followedBySpace(0) {
			return false
		}
	}
	for i := 1; i < len(s); i++ {
		switch s[i] {
		case ':':
			if followedBySpace(i) {
				return false
			}
		case '#':
			if s[i-1] == ' ' {
				return false
			}
		}
	}
	return true
}
