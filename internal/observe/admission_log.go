package observe

import (
	"math/big"
	"sync"
	"time"

	"github.com/backflow-dev/backflow/internal/values"
	"github.com/backflow-dev/backflow/internal/yamlnode"
)

// Defaults of AdmissionLog.
const (
	// DefaultAdmissionPending bounds the records waiting for the watch.
	DefaultAdmissionPending = 10_000
	// DefaultAdmissionConfirmed bounds the confirmed records kept.
	DefaultAdmissionConfirmed = 100_000
	// DefaultAdmissionTTL is how long a record waits for the watch to
	// confirm it: a write the API server admitted is seen within moments.
	DefaultAdmissionTTL = 2 * time.Minute
)

// AdmissionLog keeps admission records until the watch confirms or they
// expire, and the confirmed ones for the join. A record is settled by the
// write that follows the version it was reviewed at: the next
// resourceVersion of its object (same uid) the watch sees, when the version
// the watch saw before it is the reviewed one (or, for an object the watch
// has not seen yet, the first newer version it sees). Each field carrying
// the recorded value there is confirmed, the others never are. The API
// server asks the webhook before it writes, so a genuine record is always
// waiting when the watch sees its write; a review that arrives after the
// watch saw the write it claims is never confirmed. It is safe for
// concurrent use.
type AdmissionLog struct {
	// TTL is how long a record waits; zero means DefaultAdmissionTTL.
	TTL time.Duration
	// MaxPending bounds the waiting records; a record beyond it is
	// refused, so a flood cannot push a genuine record out. Zero means
	// DefaultAdmissionPending.
	MaxPending int
	// MaxConfirmed bounds the confirmed records, oldest dropped first;
	// zero means DefaultAdmissionConfirmed.
	MaxConfirmed int
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// OnConfirm, when set, is told each record the watch confirmed, after
	// the fact (to log who changed which fields at level admission).
	OnConfirm func(AdmissionRecord)

	mu        sync.Mutex
	pending   map[string][]*AdmissionRecord // object uid -> waiting records
	npending  int
	confirmed map[string][]*AdmissionRecord // audit object key -> confirmed records
	seen      map[string]string             // object uid -> the last resourceVersion the watch saw
	order     []*AdmissionRecord
	expired   int
}

func (l *AdmissionLog) now() time.Time {
	if l.Now != nil {
		return l.Now()
	}
	return time.Now()
}

// Add keeps r waiting for the watch, stamped with the time it arrived. It
// reports false when the log is full (the record is refused).
func (l *AdmissionLog) Add(r AdmissionRecord) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	l.expireLocked(now)
	max := l.MaxPending
	if max <= 0 {
		max = DefaultAdmissionPending
	}
	if l.npending >= max {
		return false
	}
	if l.pending == nil {
		l.pending = map[string][]*AdmissionRecord{}
	}
	r.Received = now
	r.Cluster, r.ConfirmedAt, r.ConfirmedVersion = "", time.Time{}, ""
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
	l.pending[r.UID] = append(l.pending[r.UID], &r)
	l.npending++
	return true
}

// expireLocked drops the records that waited longer than the TTL.
func (l *AdmissionLog) expireLocked(now time.Time) {
	ttl := l.TTL
	if ttl <= 0 {
		ttl = DefaultAdmissionTTL
	}
	for uid, rs := range l.pending {
		kept := rs[:0]
		for _, r := range rs {
			if now.Sub(r.Received) > ttl {
				l.expired++
				l.npending--
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

// Confirm tells the log what the watch of cluster sees of an object: its
// records waiting for a newer resourceVersion than the one they were
// reviewed at are settled against it. It returns how many records it
// confirmed.
func (l *AdmissionLog) Confirm(cluster string, obj map[string]any) int {
	confirmed := l.confirm(cluster, obj)
	if l.OnConfirm != nil {
		for _, r := range confirmed {
			l.OnConfirm(r)
		}
	}
	return len(confirmed)
}

func (l *AdmissionLog) confirm(cluster string, obj map[string]any) []AdmissionRecord {
	uid, rv := metaString(obj, "uid"), metaString(obj, "resourceVersion")
	if uid == "" || rv == "" {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	l.expireLocked(now)
	prev, known := l.seen[uid]
	if known && prev == rv {
		// The same version again (a re-list): not a write.
		return nil
	}
	if l.seen == nil {
		l.seen = map[string]string{}
	}
	l.seen[uid] = rv
	rs := l.pending[uid]
	if len(rs) == 0 {
		return nil
	}
	var out []AdmissionRecord
	kept := rs[:0]
	for _, r := range rs {
		switch {
		case known && r.OldResourceVersion == prev && newerVersion(rv, prev):
			// The write that followed the version the review was of.
		case !known && newerVersion(rv, r.OldResourceVersion):
			// The first version the watch sees of the object.
		case newerVersion(rv, r.OldResourceVersion):
			// Reviewed at a version before the last one seen: the write it
			// asked for did not follow that version (it failed), or the
			// review came after the write it claims. Never confirmed.
			l.npending--
			continue
		default:
			// Of the current version or a later one: waits.
			kept = append(kept, r)
			continue
		}
		l.npending--
		for i := range r.Fields {
			f := &r.Fields[i]
			v, ok := valueAt(obj, f.segs)
			f.Confirmed = (f.Removed && !ok) || (!f.Removed && ok && values.Equal(v, f.Value))
		}
		if !r.Confirmed() {
			// The write that followed did not carry the values: it failed,
			// or it was not the write reviewed.
			continue
		}
		r.Cluster, r.ConfirmedAt, r.ConfirmedVersion = cluster, now, rv
		l.keepLocked(r)
		out = append(out, *r)
	}
	if len(kept) == 0 {
		delete(l.pending, uid)
	} else {
		l.pending[uid] = kept
	}
	return out
}

func (l *AdmissionLog) keepLocked(r *AdmissionRecord) {
	if l.confirmed == nil {
		l.confirmed = map[string][]*AdmissionRecord{}
	}
	key := admissionObjKey(r.Object.Group, r.Object.Namespace, r.Object.Name)
	l.confirmed[key] = append(l.confirmed[key], r)
	l.order = append(l.order, r)
	max := l.MaxConfirmed
	if max <= 0 {
		max = DefaultAdmissionConfirmed
	}
	for len(l.order) > max {
		old := l.order[0]
		l.order = l.order[1:]
		k := admissionObjKey(old.Object.Group, old.Object.Namespace, old.Object.Name)
		l.confirmed[k] = l.confirmed[k][1:]
		if len(l.confirmed[k]) == 0 {
			delete(l.confirmed, k)
		}
	}
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
// (any resource of its group: the join matches the resource).
func (l *AdmissionLog) RecordsOf(k ObjectKey) []AdmissionRecord {
	group, _ := SplitAPIVersion(k.APIVersion)
	l.mu.Lock()
	defer l.mu.Unlock()
	rs := l.confirmed[admissionObjKey(group, k.Namespace, k.Name)]
	out := make([]AdmissionRecord, len(rs))
	for i, r := range rs {
		out[i] = *r
		out[i].Fields = append([]AdmissionField(nil), r.Fields...)
		out[i].Groups = append([]string(nil), r.Groups...)
	}
	return out
}

// AdmissionStats counts what the log holds.
type AdmissionStats struct {
	Pending, Confirmed, Expired int
}

// Stats counts the waiting, confirmed and expired records.
func (l *AdmissionLog) Stats() AdmissionStats {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.expireLocked(l.now())
	return AdmissionStats{Pending: l.npending, Confirmed: len(l.order), Expired: l.expired}
}

func admissionObjKey(group, namespace, name string) string {
	return group + "|" + namespace + "|" + name
}
