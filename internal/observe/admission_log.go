package observe

import (
	"fmt"
	"math/big"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/backflow-dev/backflow/internal/values"
	"github.com/backflow-dev/backflow/internal/yamlnode"
)

// Defaults of AdmissionLog.
const (
	// DefaultAdmissionMaxHeldBytes bounds what the records hold, waiting
	// and confirmed together (the bot config's admission.maxHeldBytes). A
	// typical record (a scale, an image) holds well under a kilobyte.
	DefaultAdmissionMaxHeldBytes = 16 << 20
	// DefaultAdmissionTTL is how long a record waits for the watch to
	// confirm it: a write the API server admitted is seen within moments.
	DefaultAdmissionTTL = 2 * time.Minute
)

// Reasons a record is refused or never confirmed (the values of
// AdmissionRefusal.Reason, a closed set for metrics).
const (
	// RefusedBudget: the record does not fit in the bytes the log may hold.
	RefusedBudget = "budget"
	// RefusedVersion: the record was reviewed at a resourceVersion that is
	// not the one the watch last saw of its object: a transition already
	// seen, a version the watch never saw, or none ("" or "0").
	RefusedVersion = "version"
	// RefusedObject: the record's uid is of an object of another name,
	// namespace, resource or cluster than the record names.
	RefusedObject = "object"
	// RefusedChange: the write that followed the reviewed version changed
	// other fields, or set other values, than the record claims.
	RefusedChange = "change"
	// RefusedExpired: the watch saw no write of the object in time.
	RefusedExpired = "expired"
)

// AdmissionRefusalReasons lists every AdmissionRefusal reason.
var AdmissionRefusalReasons = []string{RefusedBudget, RefusedVersion, RefusedObject, RefusedChange, RefusedExpired}

// AdmissionRefusal says why a record is never confirmed.
type AdmissionRefusal struct {
	// Reason is one of AdmissionRefusalReasons.
	Reason string
	// Detail says what disagreed, naming versions and field paths, never
	// values.
	Detail string
	// ReviewUID, User, Object and UID name the record.
	ReviewUID string
	User      string
	Object    AuditObject
	UID       string
}

// Error implements error, so Add can return a refusal.
func (r *AdmissionRefusal) Error() string {
	return fmt.Sprintf(
		"admission review %s (%s by %s, uid %s) refused: %s: %s",
		r.ReviewUID,
		r.Object,
		r.User,
		r.UID,
		r.Reason,
		r.Detail,
	)
}

// AdmissionLog keeps admission records until the watch confirms them, and
// the confirmed ones for the join. A record attributes exactly one
// transition of one object, in the order the API server wrote it:
//
//   - its uid, name, namespace and resource agree with what the watch saw
//     of that uid;
//   - it was reviewed at the resourceVersion the watch last saw of that
//     uid (a review always precedes the write it asks for; a record of an
//     older version claims a transition already seen, or one that never
//     was, and is refused at once);
//   - it is confirmed only by the very next watch event of that uid, when
//     that event's change (old -> new, field by field, the API server's
//     own fields aside) is the record's change, value for value.
//
// Anything else is never confirmed and is reported through OnRefuse.
// Records of one transition that disagree (user, groups, change or intent)
// are confirmed disputed: the join then attributes the fields to nobody.
// A later transition of a field supersedes the record that set it before.
// Records are bounded by the bytes they hold, not by their number. It is
// safe for concurrent use.
type AdmissionLog struct {
	// TTL is how long a record waits; zero means DefaultAdmissionTTL.
	TTL time.Duration
	// MaxHeldBytes bounds the bytes the records hold (HeldBytes of each);
	// zero means DefaultAdmissionMaxHeldBytes. A waiting record that does
	// not fit is refused, so a flood cannot push a genuine waiting record
	// out; it may take the room of the oldest confirmed records only
	// beyond half the budget, so a flood cannot erase recent attributions
	// either.
	MaxHeldBytes int64
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// OnConfirm, when set, is told each record the watch confirmed, after
	// the fact (to log who changed which fields at level admission).
	OnConfirm func(AdmissionRecord)
	// OnRefuse, when set, is told each record refused or never confirmed,
	// after the fact (to log it and count it).
	OnRefuse func(AdmissionRefusal)

	mu             sync.Mutex
	pending        map[string][]*AdmissionRecord // object uid -> waiting records
	npending       int
	pendingBytes   int64
	confirmed      map[AuditName][]*AdmissionRecord // the object written -> confirmed records
	order          []*AdmissionRecord               // confirmed records, oldest first
	confirmedBytes int64
	seen           map[string]watched // object uid -> what the watch last saw of it
	expired        int
	refused        map[string]int
}

// watched is what the watch last saw of one object.
type watched struct {
	cluster, group, resource, namespace, name string
	version                                   string
}

func (l *AdmissionLog) now() time.Time {
	if l.Now != nil {
		return l.Now()
	}
	return time.Now()
}

func (l *AdmissionLog) budget() int64 {
	if l.MaxHeldBytes > 0 {
		return l.MaxHeldBytes
	}
	return DefaultAdmissionMaxHeldBytes
}

// Add keeps r waiting for the watch, stamped with the time it arrived. It
// returns an *AdmissionRefusal when r is refused (and tells OnRefuse too).
func (l *AdmissionLog) Add(r AdmissionRecord) error {
	var out []AdmissionRefusal
	err := l.add(r, &out)
	l.report(nil, out)
	if err != nil {
		return err
	}
	return nil
}

func (l *AdmissionLog) add(r AdmissionRecord, refusals *[]AdmissionRefusal) *AdmissionRefusal {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	l.expireLocked(now, refusals)
	refuse := func(reason, format string, args ...any) *AdmissionRefusal {
		f := refusalOf(&r, reason, fmt.Sprintf(format, args...))
		l.countLocked(reason)
		*refusals = append(*refusals, f)
		return &f
	}
	r.Received = now
	r.Cluster, r.ConfirmedAt, r.ConfirmedVersion, r.Disputed = "", time.Time{}, "", ""
	fields := make([]AdmissionField, 0, len(r.Fields))
	for _, f := range r.Fields {
		if f.segs == nil {
			segs, err := fieldSegs(f.Path)
			if err != nil {
				continue
			}
			f.segs = segs
		}
		f.Confirmed = false
		fields = append(fields, f)
	}
	r.Fields = fields
	if !apiVersionNumber(r.OldResourceVersion) {
		return refuse(
			RefusedVersion,
			"reviewed at resourceVersion %q, which the API server never gives an object",
			r.OldResourceVersion,
		)
	}
	if w, ok := l.seen[r.UID]; ok {
		if !w.is(r.Object) {
			return refuse(RefusedObject, "uid %s is %s of cluster %s to the watch, not %s", r.UID, w.key(), w.cluster, r.Object)
		}
		if newerVersion(w.version, r.OldResourceVersion) {
			return refuse(
				RefusedVersion,
				"reviewed at resourceVersion %s, but the watch last saw %s: the transition it claims was already seen, or never "+
					"happened",
				r.OldResourceVersion,
				w.version,
			)
		}
	}
	size := r.HeldBytes()
	limit := l.budget()
	for l.pendingBytes+l.confirmedBytes+size > limit && l.confirmedBytes > limit/2 && len(l.order) > 0 {
		l.dropOldestLocked()
	}
	if l.pendingBytes+l.confirmedBytes+size > limit {
		return refuse(
			RefusedBudget,
			"holds %d bytes; %d of the %d allowed are held (admission.maxHeldBytes)",
			size,
			l.pendingBytes+l.confirmedBytes,
			limit,
		)
	}
	if l.pending == nil {
		l.pending = map[string][]*AdmissionRecord{}
	}
	r.held = size
	l.pending[r.UID] = append(l.pending[r.UID], &r)
	l.npending++
	l.pendingBytes += size
	return nil
}

// report tells the hooks, outside the lock.
func (l *AdmissionLog) report(confirmed []AdmissionRecord, refused []AdmissionRefusal) {
	if l.OnRefuse != nil {
		for _, r := range refused {
			l.OnRefuse(r)
		}
	}
	if l.OnConfirm != nil {
		for _, r := range confirmed {
			l.OnConfirm(r)
		}
	}
}

func refusalOf(r *AdmissionRecord, reason, detail string) AdmissionRefusal {
	return AdmissionRefusal{
		Reason:    reason,
		Detail:    detail,
		ReviewUID: r.ReviewUID,
		User:      r.User,
		Object:    r.Object,
		UID:       r.UID,
	}
}

func (l *AdmissionLog) countLocked(reason string) {
	if l.refused == nil {
		l.refused = map[string]int{}
	}
	l.refused[reason]++
}

// unpendLocked forgets a waiting record's bytes.
func (l *AdmissionLog) unpendLocked(r *AdmissionRecord) {
	l.npending--
	l.pendingBytes -= r.held
}

// expireLocked drops the records that waited longer than the TTL.
func (l *AdmissionLog) expireLocked(now time.Time, refusals *[]AdmissionRefusal) {
	ttl := l.TTL
	if ttl <= 0 {
		ttl = DefaultAdmissionTTL
	}
	for uid, rs := range l.pending {
		kept := rs[:0]
		for _, r := range rs {
			if now.Sub(r.Received) > ttl {
				l.expired++
				l.countLocked(RefusedExpired)
				*refusals = append(
					*refusals,
					refusalOf(
						r,
						RefusedExpired,
						fmt.Sprintf("the watch saw no write after resourceVersion %s within %s", r.OldResourceVersion, ttl),
					),
				)
				l.unpendLocked(r)
				continue
			}
			kept = append(kept, r)
		}
		if len(kept) == 0 {
			delete(l.pending, uid)
		} else {
			l.pending[uid] = kept
		}
	}
}

// Confirm tells the log what the watch of cluster delivered of an object:
// obj after old (old is nil when the watch lists the object rather than
// seeing it change). The records waiting for that transition are settled
// against its change. It returns how many records it confirmed.
func (l *AdmissionLog) Confirm(cluster string, old, obj map[string]any) int {
	confirmed, refused := l.confirm(cluster, old, obj)
	l.report(confirmed, refused)
	return len(confirmed)
}

func (l *AdmissionLog) confirm(cluster string, old, obj map[string]any) ([]AdmissionRecord, []AdmissionRefusal) {
	uid, rv := metaString(obj, "uid"), metaString(obj, "resourceVersion")
	if uid == "" || rv == "" {
		return nil, nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	var refusals []AdmissionRefusal
	now := l.now()
	l.expireLocked(now, &refusals)
	prev, known := l.seen[uid]
	if known && prev.version == rv {
		// The same version again (a re-list): not a write.
		return nil, refusals
	}
	group, _ := SplitAPIVersion(metaStringTop(obj, "apiVersion"))
	cur := watched{cluster: cluster, group: group, resource: kindResource(metaStringTop(obj, "kind")),
		namespace: metaString(obj, "namespace"), name: metaString(obj, "name"), version: rv}
	if l.seen == nil {
		l.seen = map[string]watched{}
	}
	l.seen[uid] = cur
	// The watch's transition: only when it delivers the change from the
	// very version it saw last. A list, or a gap, is no transition.
	transition := old != nil && known && metaString(old, "resourceVersion") == prev.version
	var change transitionChange
	if transition {
		change = changeOf(old, obj)
		l.supersedeLocked(uid, change)
	}
	rs := l.pending[uid]
	if len(rs) == 0 {
		return nil, refusals
	}
	refuse := func(r *AdmissionRecord, reason, format string, args ...any) {
		l.countLocked(reason)
		refusals = append(refusals, refusalOf(r, reason, fmt.Sprintf(format, args...)))
		l.unpendLocked(r)
	}
	var judged []*AdmissionRecord
	kept := rs[:0]
	for _, r := range rs {
		switch {
		case !cur.is(r.Object):
			refuse(r, RefusedObject, "uid %s is %s of cluster %s to the watch, not %s", uid, cur.key(), cluster, r.Object)
		case transition && r.OldResourceVersion == prev.version:
			judged = append(judged, r)
			l.unpendLocked(r)
		case r.OldResourceVersion == rv || newerVersion(r.OldResourceVersion, rv):
			// Of the current version (its write is still to come) or of a
			// later one the watch has yet to deliver: waits.
			kept = append(kept, r)
		case known:
			refuse(
				r,
				RefusedVersion,
				"reviewed at resourceVersion %s, but the watch saw %s and then %s: the transition it claims was already seen, or "+
					"never happened",
				r.OldResourceVersion,
				prev.version,
				rv,
			)
		default:
			refuse(
				r,
				RefusedVersion,
				"reviewed at resourceVersion %s, but the watch first saw the object at %s: a version it never saw",
				r.OldResourceVersion,
				rv,
			)
		}
	}
	if len(kept) == 0 {
		delete(l.pending, uid)
	} else {
		l.pending[uid] = kept
	}
	if len(judged) == 0 {
		return nil, refusals
	}
	disputed := dispute(judged)
	var out []AdmissionRecord
	for _, r := range judged {
		if why := change.differs(r); why != "" {
			l.countLocked(RefusedChange)
			refusals = append(refusals, refusalOf(r, RefusedChange, fmt.Sprintf("the write %s -> %s %s", prev.version, rv, why)))
			continue
		}
		for i := range r.Fields {
			r.Fields[i].Confirmed = true
		}
		r.Cluster, r.ConfirmedAt, r.ConfirmedVersion, r.Disputed = cluster, now, rv, disputed
		l.keepLocked(r)
		out = append(out, *r)
	}
	return out, refusals
}

// dispute says how the records of one transition disagree; empty when they
// all say the same (who, as which groups, which change, which intent).
func dispute(rs []*AdmissionRecord) string {
	first := rs[0]
	var claims []string
	agree := true
	for _, r := range rs {
		claims = append(claims, fmt.Sprintf("admission review %s says %s", r.ReviewUID, r.User))
		if r.User != first.User || !slices.Equal(r.Groups, first.Groups) || r.HasIntent != first.HasIntent ||
			r.Intent != first.Intent ||
			!sameFields(r.Fields, first.Fields) {
			agree = false
		}
	}
	if agree {
		return ""
	}
	return fmt.Sprintf(
		"the admission reviews of one write of %s at resourceVersion %s disagree: %s",
		first.Object,
		first.OldResourceVersion,
		strings.Join(claims, "; "),
	)
}

// transitionChange is what one watch event changed of an object.
type transitionChange struct {
	fields    []AdmissionField
	over      bool
	intent    string
	hasIntent bool
}

// changeOf is the change from old to obj, diffed as a review is.
func changeOf(old, obj map[string]any) transitionChange {
	d := &differ{}
	d.object(old, obj)
	c := transitionChange{fields: d.fields, over: d.over}
	slices.SortFunc(c.fields, func(a, b AdmissionField) int { return strings.Compare(a.Path, b.Path) })
	c.intent, c.hasIntent = intentOf(old, obj)
	return c
}

// differs says how a record's change is not c; empty when it is c.
func (c transitionChange) differs(r *AdmissionRecord) string {
	switch {
	case c.over:
		return fmt.Sprintf("changed more than %d fields", MaxAdmissionFields)
	case !sameFields(c.fields, r.Fields):
		return fmt.Sprintf("changed %s, the review claims %s", pathList(c.fields), pathList(r.Fields))
	case c.hasIntent != r.HasIntent || c.intent != r.Intent:
		return "set another intent than the review claims"
	}
	return ""
}

// sameFields reports whether two sorted changes set the same fields to the
// same values.
func sameFields(a, b []AdmissionField) bool {
	return slices.EqualFunc(a, b, func(x, y AdmissionField) bool {
		return x.Path == y.Path && x.Removed == y.Removed && (x.Removed || values.Equal(x.Value, y.Value))
	})
}

func pathList(fs []AdmissionField) string {
	if len(fs) == 0 {
		return "no field"
	}
	paths := make([]string, len(fs))
	for i, f := range fs {
		paths[i] = f.Path
	}
	return strings.Join(paths, ", ")
}

// supersedeLocked takes back, from the confirmed records of uid, the fields
// a later transition changed again: a record attributes its own transition
// only, not the value someone wrote after it.
func (l *AdmissionLog) supersedeLocked(uid string, c transitionChange) {
	if len(c.fields) == 0 && !c.over {
		return
	}
	for _, r := range l.order {
		if r.UID != uid {
			continue
		}
		for i := range r.Fields {
			f := &r.Fields[i]
			if !f.Confirmed {
				continue
			}
			if c.over ||
				slices.ContainsFunc(
					c.fields,
					func(g AdmissionField) bool { return covers(f.segs, g.segs) || covers(g.segs, f.segs) },
				) {
				f.Confirmed = false
			}
		}
	}
}

func (l *AdmissionLog) keepLocked(r *AdmissionRecord) {
	if l.confirmed == nil {
		l.confirmed = map[AuditName][]*AdmissionRecord{}
	}
	key := r.Object.AuditName()
	l.confirmed[key] = append(l.confirmed[key], r)
	l.order = append(l.order, r)
	l.confirmedBytes += r.held
	for l.confirmedBytes+l.pendingBytes > l.budget() && len(l.order) > 1 {
		l.dropOldestLocked()
	}
}

// dropOldestLocked forgets the oldest confirmed record.
func (l *AdmissionLog) dropOldestLocked() {
	old := l.order[0]
	l.order[0] = nil
	l.order = l.order[1:]
	l.confirmedBytes -= old.held
	k := old.Object.AuditName()
	rs := slices.DeleteFunc(l.confirmed[k], func(r *AdmissionRecord) bool { return r == old })
	if len(rs) == 0 {
		delete(l.confirmed, k)
	} else {
		l.confirmed[k] = rs
	}
}

func (w watched) is(o AuditObject) bool {
	return w.group == o.Group && w.resource == o.Resource && w.namespace == o.Namespace && w.name == o.Name
}

func (w watched) key() string {
	gr := w.resource
	if w.group != "" {
		gr = w.group + "/" + w.resource
	}
	if w.namespace == "" {
		return gr + " " + w.name
	}
	return gr + " " + w.namespace + "/" + w.name
}

// apiVersionNumber reports whether rv is a resourceVersion the API server
// gives an object: a decimal number above zero.
func apiVersionNumber(rv string) bool {
	n, ok := new(big.Int).SetString(rv, 10)
	return ok && n.Sign() > 0 && !strings.HasPrefix(rv, "+")
}

// newerVersion reports whether resourceVersion rv is newer than old. The
// API server's versions are decimal integers; the order of anything else
// is unknown, so only a different version counts then.
func newerVersion(rv, old string) bool {
	a, okA := new(big.Int).SetString(rv, 10)
	b, okB := new(big.Int).SetString(old, 10)
	if okA && okB {
		return a.Cmp(b) > 0
	}
	return rv != old
}

// valueAt reads the value at segs in obj.
func valueAt(obj any, segs []yamlnode.Segment) (any, bool) {
	cur := obj
	for _, s := range segs {
		switch {
		case s.IsIndex:
			list, ok := cur.([]any)
			if !ok || s.Index >= len(list) {
				return nil, false
			}
			cur = list[s.Index]
		default:
			m, ok := cur.(map[string]any)
			if !ok {
				return nil, false
			}
			v, ok := m[s.Key]
			if !ok {
				return nil, false
			}
			cur = v
		}
	}
	return cur, true
}

// RecordsOf returns copies of the confirmed records of objects named like k
// (any resource of its group: the join matches the resource) that still
// attribute a field.
func (l *AdmissionLog) RecordsOf(k ObjectKey) []AdmissionRecord {
	l.mu.Lock()
	defer l.mu.Unlock()
	rs := l.confirmed[k.AuditName()]
	out := make([]AdmissionRecord, 0, len(rs))
	for _, r := range rs {
		if !r.Confirmed() {
			continue
		}
		c := *r
		c.Fields = append([]AdmissionField(nil), r.Fields...)
		c.Groups = append([]string(nil), r.Groups...)
		out = append(out, c)
	}
	return out
}

// AdmissionStats counts what the log holds and what it refused.
type AdmissionStats struct {
	Pending, Confirmed, Expired int
	// PendingBytes and ConfirmedBytes are the HeldBytes of the waiting
	// and the confirmed records.
	PendingBytes, ConfirmedBytes int64
	// Refused counts the records refused or never confirmed, by reason
	// (expired ones included).
	Refused map[string]int
}

// Stats counts the waiting, confirmed, expired and refused records.
func (l *AdmissionLog) Stats() AdmissionStats {
	var refusals []AdmissionRefusal
	l.mu.Lock()
	l.expireLocked(l.now(), &refusals)
	st := AdmissionStats{Pending: l.npending, Confirmed: len(l.order), Expired: l.expired,
		PendingBytes: l.pendingBytes, ConfirmedBytes: l.confirmedBytes, Refused: map[string]int{}}
	for k, v := range l.refused {
		st.Refused[k] = v
	}
	l.mu.Unlock()
	l.report(nil, refusals)
	return st
}

// HeldBytes estimates the memory r holds: its strings and the values of
// its fields as Go keeps them (headers, map entries and boxes included),
// erring high, so that a budget of bytes bounds the heap it costs.
func (r AdmissionRecord) HeldBytes() int64 {
	n := int64(512) + int64(len(r.ReviewUID)+len(r.Operation)+len(r.User)+len(r.Manager)+len(r.UID)+
		len(r.OldResourceVersion)+len(r.Intent)+len(r.Object.String())*2)
	for _, g := range r.Groups {
		n += 16 + int64(len(g))
	}
	for _, f := range r.Fields {
		n += 96 + 2*int64(len(f.Path)) + int64(len(f.segs))*64 + valueBytes(f.Value)
	}
	return n
}

// valueBytes estimates the memory a decoded JSON value holds.
func valueBytes(v any) int64 {
	switch x := v.(type) {
	case string:
		return 32 + int64(len(x))
	case map[string]any:
		// Even a small map takes a whole group of eight slots.
		n := int64(320)
		for k, e := range x {
			n += 64 + int64(len(k)) + valueBytes(e)
		}
		return n
	case []any:
		n := int64(48)
		for _, e := range x {
			n += 16 + valueBytes(e)
		}
		return n
	default:
		return 16
	}
}
