package observe

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"
)

// DefaultMaxBytes caps one input (a file, a response body, a pushed body).
const DefaultMaxBytes = 8 << 20

// ErrTooLarge is returned for an input larger than its cap.
var ErrTooLarge = errors.New("input too large")

// ErrUnreadable marks an input, or a document of it, that could not be
// read as YAML or JSON at all (a read error, a syntax error, too large): a
// different failure from a document that was read and is not a valid
// observation. errors.Is recognises it; the message is unchanged.
var ErrUnreadable = errors.New("unreadable input")

// ErrEmpty is returned for an input with nothing in it (no bytes, or only
// whitespace); it is also ErrUnreadable.
var ErrEmpty = errors.New("empty input")

// Unreadable marks err as ErrUnreadable, keeping its message.
func Unreadable(err error) error { return unreadable{err} }

type unreadable struct{ err error }

func (u unreadable) Error() string   { return u.err.Error() }
func (u unreadable) Unwrap() []error { return []error{u.err, ErrUnreadable} }

// Options says where an input came from, how far it is believed, and how
// much of it is read.
type Options struct {
	// Name names the input in messages: a file path, a URL, "webhook".
	Name string
	// Ceiling is the highest attribution a document from this input is
	// believed to have; empty means DefaultCeiling.
	Ceiling Attribution
	// MaxBytes caps the input; zero means DefaultMaxBytes.
	MaxBytes int64
}

func (o Options) maxBytes() int64 {
	if o.MaxBytes <= 0 {
		return DefaultMaxBytes
	}
	return o.MaxBytes
}

func (o Options) name() string {
	if o.Name == "" {
		return "input"
	}
	return o.Name
}

// Result is what an input yielded. Errors name each document that was
// skipped; the other documents are still in Observations and Triggers.
type Result struct {
	Observations []Observation
	Triggers     []Trigger
	// Forgets are objects deleted live (cub-scout's resource.deleted).
	Forgets []Forget
	// Notices are events to report that ask for no cycle.
	Notices []Notice
	Errors  []error
	// Ignored counts documents read and deliberately not used: watch events
	// of other types and repeated findings.
	Ignored int
}

// Merge appends other's observations, triggers, errors and ignored count.
func (r *Result) Merge(other Result) {
	r.Observations = append(r.Observations, other.Observations...)
	r.Triggers = append(r.Triggers, other.Triggers...)
	r.Forgets = append(r.Forgets, other.Forgets...)
	r.Notices = append(r.Notices, other.Notices...)
	r.Errors = append(r.Errors, other.Errors...)
	r.Ignored += other.Ignored
}

// DocumentError is a document that was skipped, with where it was.
type DocumentError struct {
	// Source names the input (file path, URL).
	Source string
	// Line is the 1-based line of the problem, or of the document when the
	// problem has no line of its own.
	Line int
	// Index is the document's 0-based position in the input.
	Index int
	// Err is the problem.
	Err error
}

func (e *DocumentError) Error() string {
	return fmt.Sprintf("%s:%d: document %d: %v", e.Source, e.Line, e.Index+1, e.Err)
}

func (e *DocumentError) Unwrap() error { return e.Err }

// Parse reads every document of r, recognising each by its content: a
// native ObjectStateObserved document (YAML or JSON), a cub-scout trace-diff
// (traceDiffObservation), a cub-scout watch event or a cub-scout in-toto
// receipt. An input that cannot be
// read, or is larger than the cap, yields one error and nothing else.
func Parse(r io.Reader, opts Options) Result {
	data, err := ReadCapped(r, opts.maxBytes())
	if err != nil {
		return Result{Errors: []error{Unreadable(fmt.Errorf("%s: %w", opts.name(), err))}}
	}
	return ParseBytes(data, opts)
}

// ParseBytes is Parse on an input already in memory.
func ParseBytes(data []byte, opts Options) Result {
	if int64(len(data)) > opts.maxBytes() {
		return Result{
			Errors: []error{Unreadable(fmt.Errorf("%s: %w: more than %d bytes", opts.name(), ErrTooLarge, opts.maxBytes()))},
		}
	}
	return parseAll(data, opts, formatUnknown)
}

// parseAll reads every document of data; with only set, documents of
// other formats are errors. An input with nothing in it is an error: the
// observer that wrote it said nothing, not that nothing changed.
func parseAll(data []byte, opts Options, only format) Result {
	if len(bytes.TrimSpace(bytes.TrimPrefix(data, []byte("\xef\xbb\xbf")))) == 0 {
		return Result{
			Errors: []error{
				Unreadable(
					fmt.Errorf(
						"%s: %w: nothing but whitespace, not even an empty list (cub-scout writes nothing when it fails; its error "+
							"went to its stderr)",
						opts.name(),
						ErrEmpty,
					),
				),
			},
		}
	}
	p := &parser{opts: opts, seen: map[string]bool{}, other: map[string]*otherOutputError{}, only: only}
	for _, d := range splitDocuments(data) {
		p.document(d)
	}
	return p.result()
}

// ParseWatchEvents reads cub-scout watch events: JSON Lines as
// `cub-scout watch --output-file` writes them, or the single event of a
// `--webhook` delivery body. Documents of other formats are errors.
func ParseWatchEvents(r io.Reader, opts Options) Result {
	data, err := ReadCapped(r, opts.maxBytes())
	if err != nil {
		return Result{Errors: []error{Unreadable(fmt.Errorf("%s: %w", opts.name(), err))}}
	}
	return parseAll(data, opts, formatWatch)
}

// result is what was parsed, every observation carrying its source's
// trust ceiling.
func (p *parser) result() Result {
	trust := p.opts.Ceiling
	if trust == "" {
		trust = DefaultCeiling
	}
	for i := range p.res.Observations {
		p.res.Observations[i].Trust = trust
	}
	return p.res
}

// ReadCapped reads r up to limit bytes; more is ErrTooLarge.
func ReadCapped(r io.Reader, limit int64) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("%w: more than %d bytes", ErrTooLarge, limit)
	}
	return data, nil
}

type format int

const (
	formatUnknown format = iota
	formatNative
	formatTraceDiff
	formatWatch
	formatCubReceipt
)

type parser struct {
	opts Options
	res  Result
	only format          // when set, other formats are errors
	seen map[string]bool // resource+message of watch events already used
	// other is the first error for each other cub-scout command's output
	// the input held, counting the documents like it.
	other map[string]*otherOutputError
}

func (p *parser) document(d document) {
	if d.err != nil {
		p.fail(d, Unreadable(d.err))
		return
	}
	m, err := asMapping(d.node, "")
	if err != nil {
		p.fail(d, err)
		return
	}
	if cmd := cubOtherOutput(m); cmd != "" {
		if e := p.other[cmd]; e != nil {
			e.more++
			return
		}
		e := &otherOutputError{command: cmd}
		p.other[cmd] = e
		p.fail(d, e)
		return
	}
	f := detect(m)
	if p.only != formatUnknown && f != p.only {
		p.fail(d, errors.New("not a cub-scout watch event"))
		return
	}
	origin := fmt.Sprintf("%s:%d", p.opts.name(), d.line)
	switch f {
	case formatNative:
		o, err := decodeNative(m, p.opts.Ceiling)
		if err != nil {
			p.fail(d, err)
			return
		}
		o.Origin = origin
		p.res.Observations = append(p.res.Observations, o)
	case formatTraceDiff:
		o, err := decodeTraceDiff(m)
		if err != nil {
			p.fail(d, err)
			return
		}
		o.Origin = origin
		p.res.Observations = append(p.res.Observations, o)
	case formatWatch:
		ev, err := decodeWatchEvent(m)
		if err != nil {
			p.fail(d, err)
			return
		}
		switch {
		case ev.trigger != nil:
			t := *ev.trigger
			key := t.Cluster + "\x00" + t.Object.String() + "\x00" + t.Message
			if p.seen[key] {
				p.res.Ignored++
				return
			}
			p.seen[key] = true
			t.Origin = origin
			p.res.Triggers = append(p.res.Triggers, t)
		case ev.forget != nil:
			ev.forget.Origin = origin
			p.res.Forgets = append(p.res.Forgets, *ev.forget)
		case ev.notice != nil:
			ev.notice.Origin = origin
			p.res.Notices = append(p.res.Notices, *ev.notice)
		default:
			p.res.Ignored++
		}
	case formatCubReceipt:
		obs, triggers, err := decodeCubReceipt(m)
		if err != nil {
			p.fail(d, err)
			return
		}
		for i := range obs {
			obs[i].Origin = origin
		}
		for i := range triggers {
			triggers[i].Origin = origin
		}
		p.res.Observations = append(p.res.Observations, obs...)
		p.res.Triggers = append(p.res.Triggers, triggers...)
	default:
		p.fail(
			d,
			errors.New(
				"not a recognised document: want kind ObjectStateObserved, a cub-scout trace-diff (differences, resource, read), "+
					"a cub-scout watch event (type, timestamp) or a cub-scout receipt (predicateType, predicate)",
			),
		)
	}
}

func (p *parser) fail(d document, err error) {
	line := d.line
	var pe *placeError
	if errors.As(err, &pe) && pe.line > 0 {
		line = pe.line
	}
	p.res.Errors = append(p.res.Errors, &DocumentError{Source: p.opts.name(), Line: line, Index: d.index, Err: err})
}

// detect recognises a document's format by its keys.
func detect(m *mapping) format {
	if m.has("predicateType") && m.has("predicate") {
		return formatCubReceipt
	}
	if m.has("kind") || m.has("apiVersion") || m.has("spec") {
		return formatNative
	}
	if m.has("differences") || m.has("comparison") || (m.has("resource") && m.has("read")) {
		return formatTraceDiff
	}
	if m.has("type") && m.has("timestamp") {
		return formatWatch
	}
	return formatUnknown
}

// Covers reports whether f is about the object k on cluster, seen at at: the
// same cluster, kind, namespace and name (and apiVersion when f says one),
// observed no later than the deletion.
func (f Forget) Covers(cluster string, k ObjectKey, at time.Time) bool {
	return cluster == f.Cluster && k.Kind == f.Object.Kind && k.Namespace == f.Object.Namespace &&
		k.Name == f.Object.Name &&
		(f.Object.APIVersion == "" || k.APIVersion == f.Object.APIVersion) &&
		!at.After(f.At)
}

// ApplyForgets drops the observations and triggers of r that a forget of r
// covers: what was seen of an object before it was deleted describes
// nothing live.
func (r *Result) ApplyForgets() {
	if len(r.Forgets) == 0 {
		return
	}
	covered := func(cluster string, k ObjectKey, at time.Time) bool {
		for _, f := range r.Forgets {
			if f.Covers(cluster, k, at) {
				return true
			}
		}
		return false
	}
	r.Observations = slices.DeleteFunc(
		r.Observations,
		func(o Observation) bool { return covered(o.Cluster, o.Object, o.ObservedAt) },
	)
	r.Triggers = slices.DeleteFunc(r.Triggers, func(t Trigger) bool { return covered(t.Cluster, t.Object, t.At) })
}
