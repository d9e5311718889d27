package observe

import (
	"context"
	"fmt"
	"github.com/backflow-dev/backflow/internal/yamlnode"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// managedFieldsSlack allows for managedFields times, which have whole
// seconds, against audit times, which have microseconds.
const managedFieldsSlack = time.Second

// Attribute returns o with each changed field attributed to who set it: the
// authenticated user of the latest successful write, among events, that set
// the field before o was observed (attribution audit-log); else, when the
// field's managedFields manager and time are known, that manager
// (managed-fields); else unknown. When the field's manager is known, only
// writes recorded under that manager count, since they are the ones
// managedFields says last set it.
//
// The observation's Change becomes the fields' common actor at the weakest
// of their levels, with the intent a person set in the same change; fields
// changed by different actors, or by nobody known, leave it unknown (the
// planner then denies, fail closed). A Change the source already
// established at a higher level than the join reaches is kept. Fields the
// GitOps controller's forward apply wrote back (cause forward-apply) are
// not a person's change and do not count. events may hold events of other
// objects; o is not modified.
func Attribute(o Observation, events []AuditEvent) Observation {
	return attribute(o, events, nil)
}

// attribute is Attribute with the live object, when the caller has it, to
// tell which list item a strategic merge patch's merge key names.
func attribute(o Observation, events []AuditEvent, live map[string]any) Observation {
	group, _ := splitAPIVersion(o.Object.APIVersion)
	resource := kindResource(o.Object.Kind)
	var mine []*AuditEvent
	for i := range events {
		e := &events[i]
		if e.Object.Group == group && e.Object.Resource == resource && e.Object.Namespace == o.Object.Namespace && e.Object.Name == o.Object.Name {
			mine = append(mine, e)
		}
	}
	fields := make([]Field, len(o.Fields))
	copy(fields, o.Fields)
	o.Fields = fields
	var people []*Change
	for i := range o.Fields {
		f := &o.Fields[i]
		by := attributeField(*f, o.ObservedAt, mine, live)
		f.By = &by
		if f.Cause != CauseForwardApply {
			people = append(people, f.By)
		}
	}
	if len(people) == 0 {
		return o
	}
	joined := commonChange(people, o.Fields)
	if joined.Attribution.Rank() >= o.Change.Attribution.Rank() {
		if joined.Intent == "" && joined.Actor == o.Change.Actor {
			joined.Intent = o.Change.Intent
		}
		o.Change = joined
	}
	return o
}

// CauseForwardApply is the cause of a field the GitOps controller's forward
// apply wrote back to desired after a live change.
const CauseForwardApply = "forward-apply"

func attributeField(f Field, observedAt time.Time, events []*AuditEvent, live map[string]any) Change {
	segs, err := fieldSegs(f.Path)
	var best *AuditEvent
	if err == nil {
		for _, e := range events {
			if e.Time.After(observedAt) || !setsField(e, f, segs, live) {
				continue
			}
			if best == nil || !e.Time.Before(best.Time) {
				best = e
			}
		}
	}
	if best != nil {
		c := Change{Actor: best.User, Groups: append([]string(nil), best.Groups...), Attribution: AttributionAuditLog,
			Claimed: AttributionAuditLog, At: best.Time, Evidence: auditEvidence(best)}
		if best.HasIntent {
			c.Intent = best.Intent
		}
		return c
	}
	if f.Manager != "" && !f.ManagedAt.IsZero() {
		return Change{Actor: f.Manager, Attribution: AttributionManagedFields, Claimed: AttributionManagedFields, At: f.ManagedAt,
			Evidence: fmt.Sprintf("managedFields: %s last written by manager %s at %s (no audit event of the write)", f.Path, f.Manager, f.ManagedAt.UTC().Format(time.RFC3339))}
	}
	return Change{Attribution: AttributionUnknown, Claimed: AttributionUnknown}
}

// setsField reports whether event e wrote field f.
func setsField(e *AuditEvent, f Field, segs []yamlnode.Segment, live map[string]any) bool {
	if f.Manager != "" {
		if e.Manager != f.Manager {
			return false
		}
		if f.Subresource != "" && e.Object.Subresource != f.Subresource {
			return false
		}
		if !f.ManagedAt.IsZero() && e.Time.After(f.ManagedAt.Add(managedFieldsSlack)) {
			return false
		}
	}
	if !e.HasBody {
		// A Metadata-level event does not say which fields it set; only
		// managedFields naming its manager ties it to the field.
		return f.Manager != "" && !f.ManagedAt.IsZero()
	}
	for _, p := range e.sets {
		if (covers(p, segs) || covers(segs, p)) && mergeKeysHold(p, segs, live) {
			return true
		}
	}
	return false
}

// mergeKeysHold checks, against the live object when there is one, that
// each list item a strategic merge patch named by its merge key is the
// item at the field's index. Without the live object an item named by key
// matches any index.
func mergeKeysHold(p, field []yamlnode.Segment, live map[string]any) bool {
	if live == nil {
		return true
	}
	var cur any = live
	for i := 0; i < len(p) && i < len(field); i++ {
		s := field[i]
		if p[i].AnyIndex && p[i].MergeKey != "" && s.IsIndex {
			list, ok := cur.([]any)
			if !ok || s.Index >= len(list) {
				return false
			}
			item, _ := list[s.Index].(map[string]any)
			if fmt.Sprint(item[p[i].MergeKey]) != p[i].MergeValue {
				return false
			}
		}
		switch {
		case s.IsIndex:
			list, ok := cur.([]any)
			if !ok || s.Index >= len(list) {
				return true
			}
			cur = list[s.Index]
		default:
			m, ok := cur.(map[string]any)
			if !ok {
				return true
			}
			cur = m[s.Key]
		}
	}
	return true
}

func auditEvidence(e *AuditEvent) string {
	who := e.User
	if len(e.Groups) > 0 {
		who += " (groups " + strings.Join(e.Groups, ", ") + ")"
	}
	if e.ImpersonatedBy != "" {
		who += ", impersonated by " + e.ImpersonatedBy
	}
	return fmt.Sprintf("Kubernetes audit event %s: %s %s by %s at %s, read from %s",
		e.AuditID, e.Verb, e.Object, who, e.Time.UTC().Format(time.RFC3339), e.Origin)
}

// commonChange is the observation-level change of its fields' changes.
func commonChange(people []*Change, fields []Field) Change {
	first := people[0]
	same := first.Actor != ""
	weakest := first.Attribution
	for _, c := range people[1:] {
		if c.Actor != first.Actor {
			same = false
		}
		if c.Attribution.Rank() < weakest.Rank() {
			weakest = c.Attribution
		}
	}
	if !same {
		var who []string
		for _, f := range fields {
			if f.Cause == CauseForwardApply || f.By == nil {
				continue
			}
			actor := f.By.Actor
			if actor == "" {
				actor = "unknown"
			}
			who = append(who, f.Path+": "+actor)
		}
		return Change{Attribution: AttributionUnknown, Claimed: AttributionUnknown,
			Evidence: "the fields were not changed by one known actor (" + strings.Join(who, "; ") + ")"}
	}
	out := Change{Actor: first.Actor, Attribution: weakest, Claimed: weakest}
	var evidence []string
	var latest *Change
	for _, c := range people {
		if latest == nil || !c.At.Before(latest.At) {
			latest = c
		}
		if c.Evidence != "" && !containsString(evidence, c.Evidence) {
			evidence = append(evidence, c.Evidence)
		}
		if c.Intent != "" {
			out.Intent = c.Intent
		}
	}
	out.Groups, out.At = latest.Groups, latest.At
	out.Evidence = strings.Join(evidence, "; ")
	return out
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// splitAPIVersion splits apps/v1 into apps and v1, and v1 into "" and v1.
func splitAPIVersion(apiVersion string) (group, version string) {
	if g, v, ok := strings.Cut(apiVersion, "/"); ok {
		return g, v
	}
	return "", apiVersion
}

// kindResource is the resource name the API server (and so the audit log)
// uses for a kind: its lowercase plural, as Kubernetes itself guesses it.
func kindResource(kind string) string {
	plural, _ := meta.UnsafeGuessKindToResource(schema.GroupVersionKind{Kind: kind})
	return plural.Resource
}

// DefaultMaxAuditEvents bounds the events an AuditLog keeps.
const DefaultMaxAuditEvents = 100_000

// AuditLog keeps recent successful writes from audit events, deduplicated by
// audit id (the log file and the webhook deliver the same events), for the
// join. It is safe for concurrent use.
type AuditLog struct {
	// Max bounds the events kept, oldest dropped first; zero means
	// DefaultMaxAuditEvents.
	Max int

	mu    sync.Mutex
	order []auditRef
	byObj map[string][]AuditEvent
	ids   map[string]bool
	files []*auditFile
}

type auditRef struct{ obj, id string }

// auditFile is a log file read as it grows.
type auditFile struct {
	path    string
	offset  int64
	partial []byte
}

// maxAuditRead bounds what one refresh reads of a log file.
const maxAuditRead = 64 << 20

// Add keeps events and returns how many were new.
func (l *AuditLog) Add(events ...AuditEvent) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.addLocked(events)
}

func (l *AuditLog) addLocked(events []AuditEvent) int {
	if l.byObj == nil {
		l.byObj, l.ids = map[string][]AuditEvent{}, map[string]bool{}
	}
	max := l.Max
	if max <= 0 {
		max = DefaultMaxAuditEvents
	}
	added := 0
	for _, e := range events {
		if e.AuditID != "" && l.ids[e.AuditID] {
			continue
		}
		key := auditObjKey(e.Object.Group, e.Object.Namespace, e.Object.Name)
		l.byObj[key] = append(l.byObj[key], e)
		l.order = append(l.order, auditRef{key, e.AuditID})
		if e.AuditID != "" {
			l.ids[e.AuditID] = true
		}
		added++
	}
	for len(l.order) > max {
		old := l.order[0]
		l.order = l.order[1:]
		l.byObj[old.obj] = l.byObj[old.obj][1:]
		if len(l.byObj[old.obj]) == 0 {
			delete(l.byObj, old.obj)
		}
		delete(l.ids, old.id)
	}
	return added
}

func auditObjKey(group, namespace, name string) string {
	return group + "|" + namespace + "|" + name
}

// Len is the number of events kept.
func (l *AuditLog) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.order)
}

// EventsOf returns the kept events of objects named like k (any resource
// of its group: Attribute matches the resource).
func (l *AuditLog) EventsOf(k ObjectKey) []AuditEvent {
	group, _ := splitAPIVersion(k.APIVersion)
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]AuditEvent(nil), l.byObj[auditObjKey(group, k.Namespace, k.Name)]...)
}

// Tail makes Refresh read the audit log file at path (JSON lines, as the
// API server's log backend writes it) from its start, then as it grows.
func (l *AuditLog) Tail(path string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.files = append(l.files, &auditFile{path: path})
}

// Refresh reads what the tailed files gained since the last refresh. A file
// that shrank was rotated or truncated and is read again from its start.
// It returns what could not be read; the rest is kept.
func (l *AuditLog) Refresh() []error {
	l.mu.Lock()
	defer l.mu.Unlock()
	var errs []error
	for _, f := range l.files {
		res, err := f.read()
		if err != nil {
			errs = append(errs, err)
		}
		errs = append(errs, res.Errors...)
		l.addLocked(res.Events)
	}
	return errs
}

func (f *auditFile) read() (AuditResult, error) {
	fh, err := os.Open(f.path)
	if err != nil {
		return AuditResult{}, fmt.Errorf("reading audit log: %w", err)
	}
	defer fh.Close()
	info, err := fh.Stat()
	if err != nil {
		return AuditResult{}, fmt.Errorf("reading audit log: %w", err)
	}
	if info.Size() < f.offset {
		f.offset, f.partial = 0, nil
	}
	if _, err := fh.Seek(f.offset, io.SeekStart); err != nil {
		return AuditResult{}, fmt.Errorf("reading audit log %s: %w", f.path, err)
	}
	data, err := io.ReadAll(io.LimitReader(fh, maxAuditRead))
	if err != nil {
		return AuditResult{}, fmt.Errorf("reading audit log %s: %w", f.path, err)
	}
	f.offset += int64(len(data))
	data = append(f.partial, data...)
	// A line still being written is kept for the next refresh.
	end := strings.LastIndexByte(string(data), '\n') + 1
	f.partial = append([]byte(nil), data[end:]...)
	return ParseAuditEvents(data[:end], f.path), nil
}

// Reader is what an observation source offers: the bot's sources have
// this shape.
type Reader interface {
	// Name names the source in reports.
	Name() string
	// Read returns what the source holds now.
	Read(ctx context.Context) Result
}

// Attributing joins every observation a source yields with the audit
// events (see Attribute), so observations from any source (cub-scout's,
// files, pushes, Kubernetes) can reach attribution audit-log.
type Attributing struct {
	// Source yields the observations.
	Source Reader
	// Log holds the audit events; its tailed files are refreshed first.
	Log *AuditLog
}

// Name implements Reader.
func (a *Attributing) Name() string { return a.Source.Name() }

// Read implements Reader.
func (a *Attributing) Read(ctx context.Context) Result {
	errs := a.Log.Refresh()
	res := a.Source.Read(ctx)
	res.Errors = append(res.Errors, errs...)
	for i, o := range res.Observations {
		res.Observations[i] = Attribute(o, a.Log.EventsOf(o.Object))
	}
	return res
}
