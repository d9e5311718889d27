package plan

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/backflow-dev/backflow/internal/repoconfig"
)

// Head is what the reader of a revision store (a desired store outside
// the repository: a ConfigHub Unit) saw of a unit's documents besides
// their bytes: what the next revision's write is conditional on, the head
// revision, and the store's own words for them. The planner and the
// lifecycle say of a store only what its Head says, so a new store is a
// new reader, not a change to either.
type Head struct {
	// Condition is what the write of the next revision is conditional on
	// (a ConfigHub Unit's data hash, its ETag); the store gets it back.
	Condition string
	// Number is the head revision's number: the write makes Number + 1.
	Number int64
	// Words are the store's names, for receipts and pull requests.
	Words Words
}

// Words are a revision store's names of what it holds and writes, as
// receipts and pull requests say them.
type Words struct {
	// Store is the store's name: "ConfigHub".
	Store string
	// Document names the document: "ConfigHub unit prod-us-east/redis".
	Document string
	// Condition names the head's Condition: "data hash 5f3a".
	Condition string
	// Method is writeBack.method of the receipts the store's revisions
	// carry out (receipt.MethodConfigHubRevision).
	Method string
	// Next is writeBack.newRevision of the revision after the head:
	// "confighub:prod-us-east/redis@2".
	Next string
	// NotClaimed is what a receipt of the store's write-back rests on and
	// does not claim, as the receipt's notClaimed says it.
	NotClaimed string
}

// complete says h has what a write-back needs of it: the condition, and
// the store's names a receipt and a pull request say.
func (h Head) complete() bool {
	w := h.Words
	return h.Condition != "" && w.Store != "" && w.Document != "" && w.Condition != "" && w.Method != "" &&
		w.Next != "" && w.NotClaimed != ""
}

// Revision is a write-back into a revision store: the document's new
// bytes, made from the bytes at Head by the byte-minimal editor, and what
// the write must change (the accepted fields, each to its live value).
type Revision struct {
	// Ref names the document in its store.
	Ref repoconfig.StoreRef
	// Head is what the plan read: the write is conditional on its
	// Condition, and the revision it makes is Head.Number + 1.
	Head Head
	// Data is the document's new bytes.
	Data []byte
	// Changes are the accepted fields, sorted by object and field.
	Changes []Change
}

// Number is the revision the write makes.
func (r *Revision) Number() int64 { return r.Head.Number + 1 }

// Name is the revision as messages name it: the store's name of the
// document and the revision's number, prod-us-east/redis@2.
func (r *Revision) Name() string { return fmt.Sprintf("%s@%d", r.Ref.Name, r.Number()) }

// revisionStore is the store of a unit whose desired state is outside the
// repository: a pull request carries the receipt, and the merge writes
// the revision the receipt names, in the store's words.
type revisionStore struct{ head Head }

// Method is the store's.
func (s revisionStore) Method() string { return s.head.Words.Method }

// NewRevision is the revision the write will make: the one after the head
// it was planned against (the write is conditional on that head).
func (s revisionStore) NewRevision(string) string { return s.head.Words.Next }

// Applied is the same revision: the merge commit authorizes it, and the
// receipt's mergeCommit names that.
func (s revisionStore) Applied(string) string { return s.head.Words.Next }

// storeOf is the store of u's write-backs.
func (p *planner) storeOf(u *repoconfig.Unit) Store {
	if ref := u.StoreRef(); ref != nil {
		return revisionStore{head: p.snap.Heads[*ref]}
	}
	return p.snap.StoreOf()
}

// readStore reads a unit whose desired state is in a revision store: its
// documents, held in the snapshot, are a stream of manifests read and
// edited as a unit of plain manifests is.
func (p *planner) readStore(u *repoconfig.Unit) *unitValues {
	ref := *u.StoreRef()
	if _, ok := p.snap.Files[ref.Path()]; !ok {
		return &unitValues{err: fmt.Errorf("%s of unit %s (%s) could not be read", ref, u.Name, u.Environment)}
	}
	if h, ok := p.snap.Heads[ref]; !ok || !h.complete() {
		// Fail closed: a write that is not conditional on what was read
		// could overwrite a change backflow never saw, and a receipt must
		// say where its revision goes.
		err := fmt.Errorf("%s of unit %s (%s) was read without the condition its next revision is written on "+
			"or without the store's names of it", ref, u.Name, u.Environment)
		return &unitValues{err: err}
	}
	return p.readDocuments([]string{ref.Path()})
}

// revision is the write-back of u's document with its new bytes; the
// changes are added by the caller from the write-back's decisions.
func (p *planner) revision(u *repoconfig.Unit, data []byte) *Revision {
	ref := *u.StoreRef()
	return &Revision{Ref: ref, Head: p.snap.Heads[ref], Data: data}
}

// revisionChanges are the accepted fields of a revision store's
// write-back, each to its live value, sorted by object and field.
func (p *planner) revisionChanges(pend []*pending) []Change {
	var out []Change
	for _, pd := range pend {
		d := &p.res.Decisions[pd.index]
		for _, fs := range pd.fields {
			out = append(out, Change{Object: d.Object, Field: fs.f.Path, From: fs.from(), To: fs.live, Authorized: true})
		}
	}
	slices.SortFunc(out, func(a, b Change) int {
		return cmp.Or(a.Object.Compare(b.Object), cmp.Compare(a.Field, b.Field))
	})
	return out
}

// RevisionReader reads the document a revision store names: its bytes and
// head. It errs for a store it does not know.
type RevisionReader func(repoconfig.StoreRef) ([]byte, Head, error)

// readRevisionStore reads u's document in its revision store into snap
// through read.
func readRevisionStore(snap *Snapshot, u repoconfig.Unit, read RevisionReader) []error {
	ref := *u.StoreRef()
	if read == nil {
		return []error{fmt.Errorf("reading %s of unit %s (%s): no %s store is configured",
			ref, u.Name, u.Environment, ref.Store)}
	}
	data, head, err := read(ref)
	if err != nil {
		return []error{fmt.Errorf("reading %s of unit %s (%s): %w", ref, u.Name, u.Environment, err)}
	}
	snap.Files[ref.Path()] = data
	if snap.Heads == nil {
		snap.Heads = map[repoconfig.StoreRef]Head{}
	}
	snap.Heads[ref] = head
	return nil
}
