package source

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"

	"github.com/backflow-dev/backflow/internal/observe"
)

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
	byObj map[observe.AuditName][]observe.AuditEvent
	ids   map[string]bool
	files []*auditFile
}

type auditRef struct {
	obj observe.AuditName
	id  string
}

// auditFile is a log file read as it grows.
type auditFile struct {
	path    string
	offset  int64
	partial []byte
}

// maxAuditRead bounds what one refresh reads of a log file.
const maxAuditRead = 64 << 20

// Add keeps events and returns how many were new.
func (l *AuditLog) Add(events ...observe.AuditEvent) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.addLocked(events)
}

func (l *AuditLog) addLocked(events []observe.AuditEvent) int {
	if l.byObj == nil {
		l.byObj, l.ids = map[observe.AuditName][]observe.AuditEvent{}, map[string]bool{}
	}
	limit := l.Max
	if limit <= 0 {
		limit = DefaultMaxAuditEvents
	}
	added := 0
	for _, e := range events {
		if e.AuditID != "" && l.ids[e.AuditID] {
			continue
		}
		key := e.Object.AuditName()
		l.byObj[key] = append(l.byObj[key], e)
		l.order = append(l.order, auditRef{key, e.AuditID})
		if e.AuditID != "" {
			l.ids[e.AuditID] = true
		}
		added++
	}
	for len(l.order) > limit {
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

// Len is the number of events kept.
func (l *AuditLog) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.order)
}

// EventsOf returns the kept events of objects named like k (any resource
// of its group: observe.Attribute matches the resource).
func (l *AuditLog) EventsOf(k observe.ObjectKey) []observe.AuditEvent {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]observe.AuditEvent(nil), l.byObj[k.AuditName()]...)
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

func (f *auditFile) read() (observe.AuditResult, error) {
	fh, err := os.Open(f.path)
	if err != nil {
		return observe.AuditResult{}, fmt.Errorf("reading audit log: %w", err)
	}
	defer fh.Close()
	info, err := fh.Stat()
	if err != nil {
		return observe.AuditResult{}, fmt.Errorf("reading audit log: %w", err)
	}
	if info.Size() < f.offset {
		f.offset, f.partial = 0, nil
	}
	if _, err := fh.Seek(f.offset, io.SeekStart); err != nil {
		return observe.AuditResult{}, fmt.Errorf("reading audit log %s: %w", f.path, err)
	}
	data, err := io.ReadAll(io.LimitReader(fh, maxAuditRead))
	if err != nil {
		return observe.AuditResult{}, fmt.Errorf("reading audit log %s: %w", f.path, err)
	}
	f.offset += int64(len(data))
	data = append(f.partial, data...)
	// A line still being written is kept for the next refresh.
	end := strings.LastIndexByte(string(data), '\n') + 1
	f.partial = append([]byte(nil), data[end:]...)
	return observe.ParseAuditEvents(data[:end], f.path), nil
}

// Reader is what an observation source offers: the bot's sources have
// this shape.
type Reader interface {
	// Name names the source in reports.
	Name() string
	// Read returns what the source holds now.
	Read(ctx context.Context) observe.Result
}

// Attributing joins every observation a source yields with the audit
// events and the confirmed admission records (see observe.AttributeAll),
// so observations from any source (cub-scout's, files, pushes, Kubernetes)
// can reach attribution audit-log or admission.
type Attributing struct {
	// Source yields the observations.
	Source Reader
	// Log holds the audit events; its tailed files are refreshed first.
	// Nil means none.
	Log *AuditLog
	// Admission holds the confirmed admission records; nil means none.
	Admission *observe.AdmissionLog
}

// Name implements Reader.
func (a *Attributing) Name() string { return a.Source.Name() }

// Read implements Reader.
func (a *Attributing) Read(ctx context.Context) observe.Result {
	var errs []error
	if a.Log != nil {
		errs = a.Log.Refresh()
	}
	res := a.Source.Read(ctx)
	res.Errors = append(res.Errors, errs...)
	for i, o := range res.Observations {
		var events []observe.AuditEvent
		if a.Log != nil {
			events = a.Log.EventsOf(o.Object)
		}
		var records []observe.AdmissionRecord
		if a.Admission != nil {
			records = a.Admission.RecordsOf(o.Object)
		}
		res.Observations[i] = observe.AttributeAll(o, events, records)
	}
	return res
}
