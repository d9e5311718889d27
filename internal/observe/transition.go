package observe

import (
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/backflow-dev/backflow/internal/values"
	"github.com/backflow-dev/backflow/internal/yamlnode"
)

// This file keeps a person's live change as the watch saw it happen, so
// that a GitOps controller's revert that comes before backflow's cycle (a
// self-heal within seconds, a busy or restarting backflow, an audit event
// that arrives in a batch after the revert) does not erase it: the object's
// managedFields then name the controller again and hold its value, and only
// the transition still says who set what.

// Bounds of a TransitionLog.
const (
	// DefaultTransitionWindow is how long a transition is kept: longer
	// than the audit webhook's batches take to deliver the event that
	// attributes it, and than a cycle waits for it.
	DefaultTransitionWindow = 2 * time.Minute
	// DefaultMaxTransitions bounds the transitions kept, oldest dropped first.
	DefaultMaxTransitions = 10_000
	// DefaultMaxTransitionBytes bounds their estimated memory (HeldBytes).
	DefaultMaxTransitionBytes = 16 << 20
)

// Transition is one field of one live object changed by a write that
// managedFields credit to someone other than the GitOps controllers, as the
// watch delivered it: from the version it saw before to the next one.
type Transition struct {
	// Cluster, UID and Object name the object.
	Cluster string
	UID     string
	Object  ObjectKey
	// Path is the field path, in the one spelling.
	Path string
	// Old is the value before the write; OldAbsent says the field was not
	// there.
	Old       any
	OldAbsent bool
	// New is the value the write set.
	New any
	// Manager, Subresource and ManagedAt are the writer as managedFields
	// recorded it right after the write.
	Manager, Subresource string
	ManagedAt            time.Time
	// FromVersion and ResourceVersion are the object's versions before
	// and after the write.
	FromVersion, ResourceVersion string
	// At is when the watch delivered the write (the log's clock).
	At time.Time
	// Records are the admission records the watch confirmed for this very
	// write: the next write takes a field back from them, so the
	// transition keeps them to be attributed after a revert.
	Records []AdmissionRecord
	// Settled says a cycle has reported the change with its author: a
	// revert after that is not this change to judge again (see Settle).
	Settled bool

	held int64
}

// HeldBytes estimates the memory t holds, its records included, erring
// high, so that a budget of bytes bounds the heap it costs.
func (t Transition) HeldBytes() int64 {
	n := int64(384) + int64(len(t.Cluster)+len(t.UID)+len(t.Object.String())*2+2*len(t.Path)+
		len(t.Manager)+len(t.Subresource)+len(t.FromVersion)+len(t.ResourceVersion))
	n += valueBytes(t.Old) + valueBytes(t.New)
	for _, r := range t.Records {
		n += r.HeldBytes()
	}
	return n
}

// TransitionLog keeps the transitions the watches saw, one per object
// field (a later write of the field replaces the earlier), for Window
// after the write, within Max transitions and MaxBytes of memory (the
// oldest are dropped first). It is safe for concurrent use; Now is its
// clock.
type TransitionLog struct {
	// Window is how long a transition is kept; zero means
	// DefaultTransitionWindow.
	Window time.Duration
	// Max bounds the transitions kept; zero means DefaultMaxTransitions.
	Max int
	// MaxBytes bounds their HeldBytes; zero means DefaultMaxTransitionBytes.
	MaxBytes int64
	// Now is the clock; nil means time.Now.
	Now func() time.Time

	mu      sync.Mutex
	order   []*Transition // oldest first
	byKey   map[string]*Transition
	bytes   int64
	dropped int
	expired int
}

// TransitionStats counts what a TransitionLog holds and let go.
type TransitionStats struct {
	Held    int
	Bytes   int64
	Expired int
	// Dropped counts the transitions let go for room before their window
	// ended.
	Dropped int
}

func (l *TransitionLog) now() time.Time {
	if l.Now != nil {
		return l.Now()
	}
	return time.Now()
}

func (l *TransitionLog) window() time.Duration {
	if l.Window > 0 {
		return l.Window
	}
	return DefaultTransitionWindow
}

func transitionKey(cluster, uid, path string) string { return cluster + "\x00" + uid + "\x00" + path }

// Record keeps the person's fields that the watch's transition of one
// object, obj after old, changed: the fields managedFields credit to a
// manager other than gitops and ignore (see LiveChanges), whose value old
// did not hold. A list (old nil) is no transition. records are the
// admission records of the object confirmed so far; those of obj's very
// version are kept with the transition. It returns how many fields it kept.
func (l *TransitionLog) Record(
	cluster string,
	old, obj map[string]any,
	gitops, ignore []string,
	records []AdmissionRecord,
) (int, error) {
	if old == nil || obj == nil {
		return 0, nil
	}
	uid, rv := metaString(obj, "uid"), metaString(obj, "resourceVersion")
	if uid == "" || rv == "" || metaString(old, "resourceVersion") == rv {
		return 0, nil
	}
	changes, err := LiveChanges(obj, gitops, ignore)
	if err != nil {
		return 0, err
	}
	var mine []AdmissionRecord
	for _, r := range records {
		if r.UID == uid && r.ConfirmedVersion == rv {
			mine = append(mine, r)
		}
	}
	key := ObjectKey{APIVersion: metaStringTop(obj, "apiVersion"), Kind: metaStringTop(obj, "kind"),
		Namespace: metaString(obj, "namespace"), Name: metaString(obj, "name")}
	now := l.now()
	var kept []*Transition
	for _, f := range changes.Fields {
		segs, err := fieldSegs(f.Path)
		if err != nil {
			continue
		}
		was, found := yamlnode.Lookup(old, segs)
		if found && values.Equal(was, f.Live) {
			continue
		}
		t := &Transition{Cluster: cluster, UID: uid, Object: key, Path: f.Path, Old: was, OldAbsent: !found, New: f.Live,
			Manager: f.Manager, Subresource: f.Subresource, ManagedAt: f.ManagedAt,
			FromVersion: metaString(old, "resourceVersion"), ResourceVersion: rv, At: now, Records: mine}
		t.held = t.HeldBytes()
		kept = append(kept, t)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.expireLocked(now)
	for _, t := range kept {
		l.addLocked(t)
	}
	return len(kept), nil
}

func (l *TransitionLog) addLocked(t *Transition) {
	if l.byKey == nil {
		l.byKey = map[string]*Transition{}
	}
	k := transitionKey(t.Cluster, t.UID, t.Path)
	if prev := l.byKey[k]; prev != nil {
		l.removeLocked(prev)
	}
	maxN, maxBytes := l.Max, l.MaxBytes
	if maxN <= 0 {
		maxN = DefaultMaxTransitions
	}
	if maxBytes <= 0 {
		maxBytes = DefaultMaxTransitionBytes
	}
	if t.held > maxBytes {
		// Larger than the whole budget: kept without its records, which
		// are what makes a transition large.
		t.Records = nil
		t.held = t.HeldBytes()
		if t.held > maxBytes {
			l.dropped++
			return
		}
	}
	for len(l.order) > 0 && (len(l.order) >= maxN || l.bytes+t.held > maxBytes) {
		l.removeLocked(l.order[0])
		l.dropped++
	}
	l.byKey[k] = t
	l.order = append(l.order, t)
	l.bytes += t.held
}

func (l *TransitionLog) removeLocked(t *Transition) {
	for i, o := range l.order {
		if o == t {
			l.order = append(l.order[:i], l.order[i+1:]...)
			break
		}
	}
	delete(l.byKey, transitionKey(t.Cluster, t.UID, t.Path))
	l.bytes -= t.held
}

// expireLocked drops the transitions older than the window.
func (l *TransitionLog) expireLocked(now time.Time) {
	w := l.window()
	n := 0
	for n < len(l.order) && now.Sub(l.order[n].At) > w {
		t := l.order[n]
		delete(l.byKey, transitionKey(t.Cluster, t.UID, t.Path))
		l.bytes -= t.held
		n++
	}
	if n > 0 {
		l.expired += n
		l.order = append([]*Transition(nil), l.order[n:]...)
	}
}

// Of returns copies of the transitions of one object still in their
// window, by path.
func (l *TransitionLog) Of(cluster, uid string) []Transition {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.expireLocked(l.now())
	var out []Transition
	for _, t := range l.order {
		if t.Cluster == cluster && t.UID == uid {
			c := *t
			c.Records = append([]AdmissionRecord(nil), t.Records...)
			out = append(out, c)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}

// Settle marks the transition of the object's field that set value as
// settled: reported with its author, so RevertedFields no longer reports
// it. A transition that set another value is left as it is.
func (l *TransitionLog) Settle(cluster, uid, path string, value any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if t := l.byKey[transitionKey(cluster, uid, path)]; t != nil && values.Equal(t.New, value) {
		t.Settled = true
	}
}

// Forget drops what is kept of the objects of cluster whose uid present
// does not report: they were deleted.
func (l *TransitionLog) Forget(cluster string, present func(uid string) bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, t := range append([]*Transition(nil), l.order...) {
		if t.Cluster == cluster && !present(t.UID) {
			l.removeLocked(t)
		}
	}
}

// Stats counts the transitions held, their bytes, and those let go.
func (l *TransitionLog) Stats() TransitionStats {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.expireLocked(l.now())
	return TransitionStats{Held: len(l.order), Bytes: l.bytes, Expired: l.expired, Dropped: l.dropped}
}

// Revert says that the value a person set was written over by a GitOps
// controller before backflow read the object: the field's Live is the
// person's value, and Revert what the object holds now.
type Revert struct {
	// Live is what the field holds live now.
	Live any
	// Manager is the GitOps controller's field manager that wrote it.
	Manager string
	// From is the value before the person's change; FromAbsent says the
	// field was not there.
	From       any
	FromAbsent bool
	// ChangedVersion is the resourceVersion the person's write made, and
	// Version the object's now.
	ChangedVersion, Version string
	// ChangedAt is when the watch saw the person's write.
	ChangedAt time.Time
}

// String says what happened, for reasons and receipts.
func (r Revert) String() string {
	from := values.Format(r.From)
	if r.FromAbsent {
		from = "absent"
	}
	return fmt.Sprintf("written back to %s by %s (resourceVersion %s) after the person's change from %s at "+
		"resourceVersion %s, seen by the watch at %s", values.Format(r.Live), r.Manager, r.Version, from, r.ChangedVersion,
		r.ChangedAt.UTC().Format(time.RFC3339))
}

// RevertedFields returns, for an object whose managedFields read as live
// (LiveChanges) at resourceVersion rv, a field for each transition not yet
// settled that the GitOps controller has since written over: the field is the controller's
// again (not a person's now) and holds another value than the one the
// person set. Each field carries the person's value as Live, their manager
// and time, and Reverted: what the object holds now. The admission records
// kept with those transitions are returned to attribute them.
func RevertedFields(ts []Transition, live LiveResult, rv string) ([]Field, []AdmissionRecord) {
	var fields []Field
	var records []AdmissionRecord
	for _, t := range ts {
		if t.Settled {
			continue // judged already, with its author
		}
		if live.Changed(t.Path) {
			continue // someone's value is live: the watch reports it as it is
		}
		g, ok := live.GitOps[t.Path]
		if !ok || values.Equal(g.Live, t.New) {
			continue // not written back by a GitOps controller, or applied as set
		}
		fields = append(fields, Field{Path: t.Path, Live: t.New, Manager: t.Manager, ManagedAt: t.ManagedAt,
			Subresource: t.Subresource, Reverted: &Revert{Live: g.Live, Manager: g.Manager, From: t.Old,
				FromAbsent: t.OldAbsent, ChangedVersion: t.ResourceVersion, Version: rv, ChangedAt: t.At}})
		records = append(records, t.Records...)
	}
	return fields, records
}

// Now returns what the field holds live at the time of the observation:
// Reverted's value when a GitOps controller wrote over the person's, else
// Live.
func (f Field) Now() any {
	if f.Reverted != nil {
		return f.Reverted.Live
	}
	return f.Live
}
