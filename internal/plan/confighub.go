package plan

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/backflow-dev/backflow/internal/receipt"
	"github.com/backflow-dev/backflow/internal/repoconfig"
)

// ConfigHubHead is what the snapshot's reader saw of a ConfigHub Unit
// besides its data: the hash a write must be conditional on and the head
// revision the write follows.
type ConfigHubHead struct {
	// DataHash is the data's hash as ConfigHub served it (its ETag).
	DataHash string
	// HeadRevisionNum is the Unit's head revision when it was read.
	HeadRevisionNum int64
}

// Revision is a write-back into a ConfigHub Unit: its new data, made from
// the data at Head by the byte-minimal editor, and what the write must
// change (the accepted fields, each to its live value).
type Revision struct {
	// Space and Unit are the Unit's slugs.
	Space, Unit string
	// Head is what the plan read: the write is conditional on its DataHash,
	// and the revision it makes is HeadRevisionNum + 1.
	Head ConfigHubHead
	// Data is the Unit's new data.
	Data []byte
	// Changes are the accepted fields, sorted by object and field.
	Changes []Change
}

// Number is the revision the write makes.
func (r *Revision) Number() int64 { return r.Head.HeadRevisionNum + 1 }

// configHubStore is the store of a unit whose desired state is a ConfigHub
// Unit: a pull request carries the receipt, and the merge writes the
// revision the receipt names.
type configHubStore struct {
	ch   *repoconfig.ConfigHub
	head ConfigHubHead
}

// Method is receipt.MethodConfigHubRevision.
func (s configHubStore) Method() string { return receipt.MethodConfigHubRevision }

// NewRevision is the revision the write will make: the one after the head
// it was planned against (the write is conditional on that head).
func (s configHubStore) NewRevision(string) string {
	return receipt.ConfigHubRevision(s.ch.Space, s.ch.Unit, s.head.HeadRevisionNum+1)
}

// Applied is the same revision: the merge commit authorizes it, and the
// receipt's mergeCommit names that.
func (s configHubStore) Applied(string) string { return s.NewRevision("") }

// storeOf is the store of u's write-backs.
func (p *planner) storeOf(u *repoconfig.Unit) Store {
	if u.ConfigHub != nil {
		return configHubStore{ch: u.ConfigHub, head: p.snap.ConfigHub[repoconfig.ConfigHubPath(u.ConfigHub)]}
	}
	return p.snap.StoreOf()
}

// readConfigHub reads a unit whose desired state is a ConfigHub Unit: its
// data, held in the snapshot, is a stream of manifests read and edited as
// a unit of plain manifests is.
func (p *planner) readConfigHub(u *repoconfig.Unit) *unitValues {
	path := repoconfig.ConfigHubPath(u.ConfigHub)
	if _, ok := p.snap.Files[path]; !ok {
		err := fmt.Errorf("ConfigHub unit %s of unit %s (%s) could not be read", configHubName(u), u.Name, u.Environment)
		return &unitValues{err: err}
	}
	if _, ok := p.snap.ConfigHub[path]; !ok {
		// Fail closed: a write that is not conditional on a hash could
		// overwrite a change backflow never saw.
		err := fmt.Errorf("ConfigHub unit %s of unit %s (%s) was read without its data hash",
			configHubName(u), u.Name, u.Environment)
		return &unitValues{err: err}
	}
	return p.readDocuments([]string{path})
}

// revision is the write-back of u's Unit with its new data; the changes
// are added by the caller from the write-back's decisions.
func (p *planner) revision(u *repoconfig.Unit, data []byte) *Revision {
	head := p.snap.ConfigHub[repoconfig.ConfigHubPath(u.ConfigHub)]
	return &Revision{Space: u.ConfigHub.Space, Unit: u.ConfigHub.Unit, Head: head, Data: data}
}

// configHubNotClaimed says what a receipt of a ConfigHub Unit rests on.
func (p *planner) configHubNotClaimed(u *repoconfig.Unit) string {
	head := p.snap.ConfigHub[repoconfig.ConfigHubPath(u.ConfigHub)]
	return fmt.Sprintf("Desired state is the ConfigHub Unit %s at revision %d (data hash %s); "+
		"the field is written as itself in the Unit's document that applies the object, "+
		"the documents themselves are the witness, and the revision is written only when "+
		"the pull request carrying this receipt merges, conditional on that hash, "+
		"after ConfigHub's dry run shows exactly the accepted fields changing; "+
		"that ConfigHub's worker applies the revision is not claimed until a follow-up re-observes the object.",
		configHubName(u), head.HeadRevisionNum, head.DataHash)
}

// revisionChanges are the accepted fields of a ConfigHub unit's
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

// readConfigHub reads u's ConfigHub Unit into snap through read.
func readConfigHub(snap *Snapshot, u repoconfig.Unit, read func(repoconfig.ConfigHub) ([]byte, ConfigHubHead, error),
) []error {
	ch := u.ConfigHub
	if read == nil {
		return []error{fmt.Errorf("reading ConfigHub unit %s of unit %s (%s): no ConfigHub server is configured",
			configHubName(&u), u.Name, u.Environment)}
	}
	data, head, err := read(*ch)
	if err != nil {
		return []error{fmt.Errorf("reading ConfigHub unit %s of unit %s (%s): %w",
			configHubName(&u), u.Name, u.Environment, err)}
	}
	path := repoconfig.ConfigHubPath(ch)
	snap.Files[path] = data
	if snap.ConfigHub == nil {
		snap.ConfigHub = map[string]ConfigHubHead{}
	}
	snap.ConfigHub[path] = head
	return nil
}

// configHubName is space/unit of u's ConfigHub Unit.
func configHubName(u *repoconfig.Unit) string { return u.ConfigHub.Space + "/" + u.ConfigHub.Unit }
