package lifecycle

import (
	"bytes"
	"cmp"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/backflow-dev/backflow/internal/helmvalues"
	"github.com/backflow-dev/backflow/internal/observe"
	"github.com/backflow-dev/backflow/internal/plan"
)

// markerVersion is the version of the hidden marker a pull request body
// carries.
const markerVersion = 1

// Closed reasons the bot records in the marker before it closes a pull
// request itself. A pull request closed without merge and without one of
// these was closed by a person, and its fingerprint is never reopened.
const (
	ClosedSuperseded = "superseded"
	ClosedConverged  = "converged"
)

// Notes the bot records so that each comment is made once.
const (
	noteHumanCommit = "human-commit"
	noteReverted    = "reverted-by-gitops"
	noteReceipt     = "receipt-failed"
	// noteAutoMergeRefused: GitHub refused auto-merge with an error the
	// adapter does not recognise; said once.
	noteAutoMergeRefused = "auto-merge-refused"
	// noteHoldMaximum: a hold was released at its maximum time (the note
	// names the proposal and the object, holdMaximumNote); said once, and
	// the same proposal is not held on that object again.
	noteHoldMaximum = "hold-maximum"
)

// Marker is the bot's memory of one write-back, carried in its pull
// request's body as a hidden HTML comment. It is everything the next cycle
// needs: what was proposed (the fingerprint and changes), on which base, and
// which commits the bot wrote. The follow-up after a merge adds its state
// here too.
type Marker struct {
	// Version is markerVersion.
	Version int `json:"v"`
	// Unit and Environment name the write-back's unit.
	Unit        string `json:"unit"`
	Environment string `json:"environment"`
	// Branch is the write-back branch the marker belongs to; a marker on a
	// pull request from another branch is ignored.
	Branch string `json:"branch"`
	// Fingerprint identifies the proposal: unit, fields and live values.
	Fingerprint string         `json:"fingerprint"`
	Changes     []MarkerChange `json:"changes"`
	// Base is the default-branch commit the bot's commit was made on.
	Base string `json:"base"`
	// Files are the sha256 of the values files' bytes at Base, so a cycle
	// can tell that the default branch changed under them.
	Files map[string]string `json:"files"`
	// Policy is the sha256 of the policy the receipts were checked against.
	Policy string `json:"policy"`
	// Commits are the commits the bot wrote on the branch, oldest first.
	Commits []string `json:"commits"`
	// AutoMerge records that the write-back qualified for auto-merge.
	AutoMerge bool `json:"autoMerge,omitempty"`
	// Receipts are the receipt paths the commit added.
	Receipts []string `json:"receipts"`
	// Revision is the revision a write-back into a revision store (a
	// ConfigHub Unit) was planned against; nil for a write-back into the
	// repository.
	Revision *MarkerRevision `json:"revision,omitempty"`
	// Closed is set (ClosedSuperseded, ClosedConverged) just before the bot
	// closes the pull request itself.
	Closed string `json:"closed,omitempty"`
	// BranchDeleted records that the closed pull request's branch was cleaned up.
	BranchDeleted bool `json:"branchDeleted,omitempty"`
	// Notes are the one-time comments already made ("human-commit:<sha>").
	Notes []string `json:"notes,omitempty"`
	// FollowUp is the state of the re-observation after a merge, for the
	// follow-up stage ("", "proven", "reverted").
	FollowUp string `json:"followUp,omitempty"`
	// Holds are the holds in place for the change, as the body lists them
	// (holdsSection); the cycle that places or releases one keeps it true.
	Holds []MarkerHold `json:"holds,omitempty"`
	// MAC authenticates the marker for its pull request (see markerMAC).
	MAC string `json:"mac,omitempty"`
}

// MarkerChange is one accepted field of a write-back.
type MarkerChange struct {
	// Object is the changed object's key, in the marker's JSON as its text
	// (a marker naming something else is not read).
	Object observe.ObjectKey `json:"object"`
	// Field is the Kubernetes field path.
	Field string `json:"field"`
	// ValuePath is the values path the field maps to.
	ValuePath string `json:"valuePath"`
	// ValuesFile is the values file the write-back edits.
	ValuesFile string `json:"valuesFile"`
	// From is the desired value the change was proposed against; To the
	// accepted live value.
	From any `json:"from"`
	To   any `json:"to"`
	// Trust is the attribution the change was accepted on: its proof needs
	// an observation whose source is trusted at least as far (empty, in a
	// marker written before it was recorded: asserted).
	Trust observe.Attribution `json:"trust,omitempty"`
}

// ProofTrust is the trust an observation needs to prove c.
func (c MarkerChange) proofTrust() observe.Attribution {
	if c.Trust == "" || !c.Trust.Valid() {
		return observe.DefaultCeiling
	}
	return c.Trust
}

const markerOpen, markerClose = "<!-- backflow:marker ", " -->"

// The JSON escapes "<", ">" and "&", so " -->" cannot occur inside it.
var markerRE = regexp.MustCompile(`<!-- backflow:marker (\{.*?\}) -->`)

// Encode writes the marker as the hidden HTML comment.
func (m *Marker) Encode() string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(true) // "<", ">" and "&" escaped: the comment cannot be closed early
	_ = enc.Encode(m)       // plain data: encoding cannot fail
	return markerOpen + strings.TrimSpace(buf.String()) + markerClose
}

// ParseMarker finds and decodes the marker ending a pull request body,
// without authenticating it (the bot reads markers with readMarker); ok is
// false when there is none or it is not one this version reads.
func ParseMarker(body string) (*Marker, bool) {
	all := markerRE.FindAllStringSubmatch(body, -1)
	if len(all) == 0 {
		return nil, false
	}
	return decodeMarker(all[len(all)-1][1])
}

// decodeMarker decodes a marker's JSON.
func decodeMarker(data string) (*Marker, bool) {
	dec := json.NewDecoder(strings.NewReader(data))
	dec.UseNumber()
	var m Marker
	if err := dec.Decode(&m); err != nil || m.Version != markerVersion || m.Fingerprint == "" || m.Branch == "" {
		return nil, false
	}
	return &m, true
}

// Into is body with m as its marker (replaceMarker).
func (m *Marker) Into(body string) string { return replaceMarker(body, m) }

// Written is a copy of m, the marker an Open or Update decided, once the
// write made head on base: head recorded as the bot's latest commit.
func (m *Marker) Written(head, base string) *Marker {
	c := *m
	c.Commits = append(slices.Clone(m.Commits), head)
	if len(c.Commits) > maxRecordedCommits {
		c.Commits = c.Commits[len(c.Commits)-maxRecordedCommits:]
	}
	c.Notes = slices.Clone(m.Notes)
	c.Base = base
	return &c
}

// replaceMarker swaps the marker ending body (the last one) for m's, with
// the list of m's holds just before it (none when m has none).
func replaceMarker(body string, m *Marker) string {
	enc := m.Encode()
	if all := markerRE.FindAllStringIndex(body, -1); len(all) > 0 {
		last := all[len(all)-1]
		return withoutHolds(body[:last[0]]) + holdsSection(m.Holds) + enc + body[last[1]:]
	}
	return strings.TrimRight(withoutHolds(body), "\n") + "\n\n" + holdsSection(m.Holds) + enc + "\n"
}

func (m *Marker) hasNote(n string) bool { return slices.Contains(m.Notes, n) }

// commentTag is the hidden tag a comment made once under note carries, so a
// crash between the comment and the marker update does not repeat it.
func commentTag(note string) string { return "<!-- backflow:note " + note + " -->" }

// receiptRefused reports that a failed receipt check was posted on the head.
func (m *Marker) receiptRefused() bool {
	return slices.ContainsFunc(m.Notes, func(n string) bool { return strings.HasPrefix(n, noteReceipt) })
}

// OwnsHead reports whether sha is the last commit the bot recorded.
func (m *Marker) OwnsHead(sha string) bool {
	return len(m.Commits) > 0 && m.Commits[len(m.Commits)-1] == sha
}

// Fingerprint identifies a write-back by what it proposes: the unit, and
// every accepted field with its live value. The values files' bytes and the
// base are left out so that the same proposal on a moved default branch
// keeps its identity (and a closed one is not reopened).
func fingerprint(wb plan.WriteBack, decisions []plan.Decision) string {
	return fingerprintOf(wb.Environment, wb.Unit, markerChanges(wb, decisions))
}

func fingerprintOf(env, unit string, changes []MarkerChange) string {
	h := sha256.New()
	fmt.Fprintf(h, "backflow/v1\x00%s\x00%s\x00", env, unit)
	for _, c := range changes {
		to, _ := json.Marshal(canonical(c.To))
		fmt.Fprintf(h, "%s\x00%s\x00%s\x00%s\x00", c.Object, c.Field, c.ValuePath, to)
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

// canonical writes numbers by value so that 4 and 4.0 fingerprint alike.
func canonical(v any) any {
	return helmvalues.Typed(v)
}

// markerChanges lists the accepted fields of a write-back's decisions,
// sorted by object then field.
func markerChanges(wb plan.WriteBack, decisions []plan.Decision) []MarkerChange {
	var out []MarkerChange
	for _, d := range decisionsOf(wb, decisions) {
		for _, c := range d.Changes {
			out = append(
				out,
				MarkerChange{
					Object:     c.Object,
					Field:      c.Field,
					ValuePath:  c.ValuePath,
					ValuesFile: c.ValuesFile,
					From:       c.From,
					To:         c.To,
					Trust:      d.Attribution,
				},
			)
		}
	}
	slices.SortFunc(out, func(a, b MarkerChange) int {
		return cmp.Or(a.Object.Compare(b.Object), strings.Compare(a.Field, b.Field))
	})
	return out
}

// decisionsOf returns the allowed decisions a write-back carries.
func decisionsOf(wb plan.WriteBack, decisions []plan.Decision) []plan.Decision {
	var out []plan.Decision
	for _, d := range decisions {
		if d.Outcome == plan.Allow && d.WriteBack == wb.Branch && d.Unit == wb.Unit && d.Environment == wb.Environment {
			out = append(out, d)
		}
	}
	return out
}

// hashBytes is the hex sha256 of b, as markers record files and policies.
func hashBytes(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// commitToken is the keyed trailer that lets the bot recognise a commit it
// made but could not record (a crash between the push and the pull request
// update): an HMAC of the branch, the parent and the fingerprint under a key
// only the bot holds. Without a key there is no token, and an unrecorded
// head is treated as a person's.
func commitToken(key []byte, branch, parent, fingerprint string) string {
	if len(key) == 0 {
		return ""
	}
	m := hmac.New(sha256.New, key)
	fmt.Fprintf(m, "%s\x00%s\x00%s", branch, parent, fingerprint)
	return hex.EncodeToString(m.Sum(nil))[:32]
}

// Trailer names the bot writes into its commits besides the attribution ones.
const (
	trailerFingerprint = "Backflow-Fingerprint"
	trailerToken       = "Backflow-Commit"
)

// trailer returns the value of the last trailer named key in a message.
func trailer(msg, key string) string {
	val := ""
	for _, line := range strings.Split(msg, "\n") {
		if v, ok := strings.CutPrefix(line, key+": "); ok {
			val = strings.TrimSpace(v)
		}
	}
	return val
}
