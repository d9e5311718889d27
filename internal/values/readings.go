package values

import (
	"encoding/binary"
	"encoding/json"
	"math"
	"sync"

	"github.com/backflow-dev/backflow/internal/yamlnode"
)

// Readings remembers work that is a function of exact bytes, so that a
// process that reads and edits the same files again (the bot, plan after
// plan) does not repeat it:
//
//   - Helm's reading of a YAML document, by the document's bytes: a
//     document read once (by the planner, say) is not read again by the
//     editor. HelmUnmarshal is a function of the bytes alone.
//   - That a file parses: Parse of the same bytes with the same document,
//     root and Inline takes the document and root it chose before and
//     leaves the yaml.v3 parse until an edit or a Get needs the nodes
//     (with an edit remembered, none does).
//   - Verified edits: the output of File.Set and File.SetRead (the new
//     bytes, the changes and Helm's reading of the result), by the whole
//     file's bytes, the chosen document, the values root and the edits
//     (each path, and each value with its Go type). An edit that was
//     verified once is not verified again.
//
// A file that does not parse, or a refused edit, is not remembered: it
// fails afresh with its reasons (Helm's reader's error on a document is,
// like its reading). Keys are the exact bytes, never a
// digest of them, so two inputs share an entry only when they are equal.
// The trees it hands out are shared between callers; nobody may change
// them.
//
// Readings may be kept for the life of a process and used from several
// goroutines. A budget bounds the bytes it keeps (an estimate of the keys,
// bytes and trees it holds: see Stats); beyond it the least recently used
// entries are dropped, and an entry larger than the whole budget is not
// kept. The zero value is not ready: use NewReadings or
// NewBoundedReadings. A nil *Readings remembers nothing.
type Readings struct {
	mu       sync.Mutex
	budget   int64 // most bytes kept; 0: no bound
	used     int64
	readings map[string]*entry
	files    map[fileKey]*entry
	edits    map[editKey]*entry
	lru      entry // sentinel: lru.next is the most recently used
	stats    ReadingsStats
}

// ReadingsStats counts what a Readings holds and how it was used.
type ReadingsStats struct {
	// Entries and Bytes are what is kept now: Bytes is the estimate the
	// budget bounds (keys, bytes and Helm's trees, and a fixed cost per
	// entry; a tree two entries share is counted in both).
	Entries int
	Bytes   int64
	// Hits and Misses count lookups of readings, files and edits;
	// Evictions the entries dropped to keep within the budget.
	Hits, Misses, Evictions int64
}

// entry is one remembered reading, file or edit, on the LRU list.
type entry struct {
	prev, next *entry
	size       int64
	kind       entryKind
	// A reading: its key (the document's bytes), the tree and the error.
	doc string
	v   any
	err error
	// A file that parses: its key, and what Parse found.
	fkey   fileKey
	parsed parsedFile
	// An edit: its key and the result.
	ekey    editKey
	out     []byte
	helm    any
	changes []Change
}

type entryKind uint8

const (
	readingEntry entryKind = iota
	fileEntry
	editEntry
)

// fileKey names a parse: the file's bytes and the options that choose the
// document and the values root.
type fileKey struct {
	file   string
	doc    int // -1: Options.Document is nil
	root   string
	inline bool
}

// editKey names an edit: the file's bytes, and the rest of what decides
// the result (the document, the values root and the edits), encoded by
// editKeyOf.
type editKey struct {
	file string
	rest string
}

// NewReadings returns an empty set of readings with no bound: for work
// whose inputs are bounded already, such as one plan.
func NewReadings() *Readings { return NewBoundedReadings(0) }

// NewBoundedReadings returns an empty set of readings that keeps at most
// budget bytes (as Stats counts them), dropping the least recently used
// entries beyond that. A budget of zero or less means no bound.
func NewBoundedReadings(budget int64) *Readings {
	r := &Readings{
		budget:   max(budget, 0),
		readings: map[string]*entry{},
		files:    map[fileKey]*entry{},
		edits:    map[editKey]*entry{},
	}
	r.lru.next, r.lru.prev = &r.lru, &r.lru
	return r
}

// Stats returns the current counts.
func (r *Readings) Stats() ReadingsStats {
	if r == nil {
		return ReadingsStats{}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.stats
	s.Entries = len(r.readings) + len(r.files) + len(r.edits)
	s.Bytes = r.used
	return s
}

// HelmUnmarshal is the package's HelmUnmarshal, remembered by doc's bytes.
func (r *Readings) HelmUnmarshal(doc []byte) (any, error) {
	if r == nil {
		return HelmUnmarshal(doc)
	}
	r.mu.Lock()
	if e, ok := r.readings[string(doc)]; ok {
		r.hit(e)
		r.mu.Unlock()
		return e.v, e.err
	}
	r.stats.Misses++
	r.mu.Unlock()
	// Read outside the lock: other documents need not wait. Two readers of
	// the same new bytes both read them; the second keeps its own.
	v, err := HelmUnmarshal(doc)
	size := entryOverhead + int64(len(doc)) + treeBytes(v)
	if r.fits(size) {
		r.keep(&entry{kind: readingEntry, doc: string(doc), v: v, err: err, size: size})
	}
	return v, err
}

// fits says an entry of size bytes may be kept: keep would drop it
// anyway, so its key need not be copied.
func (r *Readings) fits(size int64) bool {
	return r.budget == 0 || size <= r.budget
}

// parsedFile is what Parse found of a file that parses: the bytes (as the
// key holds them), the document chosen, its span when the file has one,
// and the values root.
type parsedFile struct {
	key    string
	index  int
	doc    span
	hasDoc bool
	root   []yamlnode.Segment
}

// parsed returns what Parse found of data with opts before.
func (r *Readings) parsed(data []byte, opts Options) (parsedFile, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	e, ok := r.files[fileKey{file: string(data), doc: docKey(opts), root: opts.Root, inline: opts.Inline}]
	if !ok {
		r.stats.Misses++
		return parsedFile{}, false
	}
	r.hit(e)
	return e.parsed, true
}

// keepParsed remembers what Parse found of the bytes p.key with opts.
func (r *Readings) keepParsed(opts Options, p parsedFile) {
	e := &entry{
		kind:   fileEntry,
		fkey:   fileKey{file: p.key, doc: docKey(opts), root: opts.Root, inline: opts.Inline},
		parsed: p,
	}
	e.size = entryOverhead + int64(len(p.key)+len(opts.Root))
	for _, s := range p.root {
		e.size += 64 + int64(len(s.Key)+len(s.MergeKey)+len(s.MergeValue))
	}
	r.keep(e)
}

func docKey(opts Options) int {
	if opts.Document == nil {
		return -1
	}
	return *opts.Document
}

// edit returns the remembered result of an edit.
func (r *Readings) edit(k editKey) (*entry, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	e, ok := r.edits[k]
	if !ok {
		r.stats.Misses++
		return nil, false
	}
	r.hit(e)
	return e, true
}

// keepEdit remembers the verified result of an edit.
func (r *Readings) keepEdit(k editKey, out []byte, helm any, changes []Change) {
	e := &entry{kind: editEntry, ekey: k, out: out, helm: helm, changes: changes}
	e.size = entryOverhead + int64(len(k.file)+len(k.rest)+len(out)) + treeBytes(helm)
	for _, c := range changes {
		e.size += changeOverhead + int64(len(c.Path)) + treeBytes(c.Old) + treeBytes(c.New)
	}
	r.keep(e)
}

// hit counts a lookup that found e and moves e to the front of the list.
// r.mu is held.
func (r *Readings) hit(e *entry) {
	r.stats.Hits++
	e.prev.next, e.next.prev = e.next, e.prev
	e.prev, e.next = &r.lru, r.lru.next
	e.prev.next, e.next.prev = e, e
}

// keep adds e, in place of an entry with the same key, dropping the least
// recently used entries to make room; an entry larger than the budget is
// not kept.
func (r *Readings) keep(e *entry) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var old *entry
	switch e.kind {
	case readingEntry:
		old = r.readings[e.doc]
	case fileEntry:
		old = r.files[e.fkey]
	case editEntry:
		old = r.edits[e.ekey]
	}
	if old != nil {
		r.remove(old)
	}
	if r.budget > 0 {
		if e.size > r.budget {
			return
		}
		for r.used+e.size > r.budget {
			r.remove(r.lru.prev)
			r.stats.Evictions++
		}
	}
	switch e.kind {
	case readingEntry:
		r.readings[e.doc] = e
	case fileEntry:
		r.files[e.fkey] = e
	case editEntry:
		r.edits[e.ekey] = e
	}
	e.prev, e.next = &r.lru, r.lru.next
	e.prev.next, e.next.prev = e, e
	r.used += e.size
}

// remove drops e from the list and its map. r.mu is held.
func (r *Readings) remove(e *entry) {
	e.prev.next, e.next.prev = e.next, e.prev
	e.prev, e.next = nil, nil
	r.used -= e.size
	switch e.kind {
	case readingEntry:
		delete(r.readings, e.doc)
	case fileEntry:
		delete(r.files, e.fkey)
	case editEntry:
		delete(r.edits, e.ekey)
	}
}

// The fixed costs Stats counts for an entry (the entry, its map slot and
// list links) and a remembered Change.
const (
	entryOverhead  = 384
	changeOverhead = 96
)

// treeBytes estimates the heap a decoded tree holds: headers, map slots and
// the text of strings and numbers. It is an estimate for the budget, meant
// to be of the right size, not exact.
func treeBytes(v any) int64 {
	switch x := v.(type) {
	case string:
		return 16 + int64(len(x))
	case json.Number:
		return 16 + int64(len(x))
	case int64, float64, int, uint64:
		return 8
	case map[string]any:
		n := int64(48)
		for k, e := range x {
			n += 48 + int64(len(k)) + treeBytes(e)
		}
		return n
	case []any:
		n := int64(24 + 16*len(x))
		for _, e := range x {
			n += treeBytes(e)
		}
		return n
	}
	return 0
}

// editKeyOf is the key of edits on f: everything the result depends on
// besides the code. ok is false for a value of a type the key cannot spell
// exactly; such edits are not remembered.
func (f *File) editKeyOf(edits []Edit) (editKey, bool) {
	b := make([]byte, 0, 64)
	b = binary.AppendUvarint(b, uint64(f.index))
	b = binary.AppendUvarint(b, uint64(len(f.root)))
	for _, s := range f.root {
		b = appendSegment(b, s)
	}
	b = binary.AppendUvarint(b, uint64(len(edits)))
	for _, e := range edits {
		b = appendString(b, e.Path)
		var ok bool
		if b, ok = appendValue(b, e.Value); !ok {
			return editKey{}, false
		}
	}
	return editKey{file: f.fileKey, rest: string(b)}, true
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func appendSegment(b []byte, s yamlnode.Segment) []byte {
	var flags byte
	if s.IsIndex {
		flags |= 1
	}
	if s.AnyIndex {
		flags |= 2
	}
	b = append(b, flags)
	b = binary.AppendVarint(b, int64(s.Index))
	b = appendString(b, s.Key)
	b = appendString(b, s.MergeKey)
	return appendString(b, s.MergeValue)
}

// appendValue spells v and its Go type (every part of a key is
// self-delimiting: lengths before text, varints, fixed-width bits, so no
// two different keys spell alike): values of different types are
// different keys even where they would render alike, since a Change
// carries the value it was given.
func appendValue(b []byte, v any) ([]byte, bool) {
	switch x := v.(type) {
	case nil:
		return append(b, 'n'), true
	case bool:
		if x {
			return append(b, 'T'), true
		}
		return append(b, 'F'), true
	case string:
		return appendString(append(b, 's'), x), true
	case json.Number:
		return appendString(append(b, 'j'), string(x)), true
	case int:
		return binary.AppendVarint(append(b, 'i'), int64(x)), true
	case int8:
		return binary.AppendVarint(append(b, 'b'), int64(x)), true
	case int16:
		return binary.AppendVarint(append(b, 'h'), int64(x)), true
	case int32:
		return binary.AppendVarint(append(b, 'w'), int64(x)), true
	case int64:
		return binary.AppendVarint(append(b, 'l'), x), true
	case uint:
		return binary.AppendUvarint(append(b, 'I'), uint64(x)), true
	case uint8:
		return binary.AppendUvarint(append(b, 'B'), uint64(x)), true
	case uint16:
		return binary.AppendUvarint(append(b, 'H'), uint64(x)), true
	case uint32:
		return binary.AppendUvarint(append(b, 'W'), uint64(x)), true
	case uint64:
		return binary.AppendUvarint(append(b, 'L'), x), true
	case float32:
		return binary.BigEndian.AppendUint32(append(b, 'f'), math.Float32bits(x)), true
	case float64:
		return binary.BigEndian.AppendUint64(append(b, 'd'), math.Float64bits(x)), true
	}
	return b, false
}
