package plan

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/backflow-dev/backflow/internal/observe"
	"github.com/backflow-dev/backflow/internal/policy"
	"github.com/backflow-dev/backflow/internal/receipt"
	"github.com/backflow-dev/backflow/internal/repoconfig"
	"github.com/backflow-dev/backflow/internal/values"
	"github.com/backflow-dev/backflow/internal/witness"
)

// Break glass: an acceptance under a mayAccept entry with acceptFor (or
// whose intent asks for a term) lasts until its receipt's expiresAt. What
// is due is read from the merged receipts on the default branch
// (Snapshot.Receipts), never remembered: once the expiry is past, the
// planner proposes restoring each field's from on the unit's branch, with
// a receipt at the expired receipt's own path. Merged, that receipt
// replaces the expired one, so the expiry cannot fire twice. A later
// acceptance of the same object replaces it too: the fields it accepts
// again are superseded (said once, not restored), the others carried in
// its receipt with their expiry.

// ExpiryState is where a temporary acceptance stands at the plan's time.
type ExpiryState string

// The states of a temporary acceptance.
const (
	// InForce: not expired yet.
	InForce ExpiryState = "in-force"
	// Due: expired, and desired still holds the accepted values: the plan
	// proposes restoring them (WriteBack names the branch), or only
	// reports it when the repository writes nothing back.
	Due ExpiryState = "due"
	// Waiting: expired, but the unit has another write-back this plan;
	// the restoring one follows when that is done.
	Waiting ExpiryState = "waiting"
	// Void: expired, but desired no longer holds an accepted value (a
	// person changed it, or the unit or path is gone): nothing is restored.
	Void ExpiryState = "void"
	// Refused: expired, but the restoring write-back cannot be made (the
	// policy no longer authorizes it, an edit is refused): said, and
	// nothing is written.
	Refused ExpiryState = "refused"
	// Restored: expired, and a merged restoring receipt replaced it
	// (Result.Restored).
	Restored ExpiryState = "restored"
	// Superseded: a later acceptance in this plan accepts all its fields
	// again; that acceptance's receipt replaces it, and it is not restored.
	Superseded ExpiryState = "superseded"
)

// Expiry is one temporary acceptance on the default branch.
type Expiry struct {
	// Receipt is the accepting receipt's path; Name its metadata.name.
	Receipt, Name string
	Environment   string
	Unit          string
	// Object is the accepted object's key, as its receipt names it.
	Object observe.ObjectKey
	// ExpiresAt and SetBy are the receipt's expiry.
	ExpiresAt time.Time
	SetBy     string
	State     ExpiryState
	// Changes are the accepted fields: From the value desired before the
	// acceptance, To the accepted one.
	Changes []Change
	// WriteBack is the restoring write-back's branch, when one is made.
	WriteBack string
	// Why says what the state rests on, in a sentence.
	Why string
	// carried is the index of the acceptance among those its receipt
	// carries, -1 for the receipt's own (names repeat: one per object).
	carried int
}

// glass is what the default branch's receipts say about temporary
// acceptances, read once per plan.
type glass struct {
	// temporary are the receipts with an expiry, by path.
	temporary []temporary
	// restored are, by environment, object and field, the receipts that
	// restored an expired acceptance.
	restored map[string]restoredField
	// keys are the object keys the receipts name, by their text: each is
	// read once, and a receipt naming something else is not acted on.
	keys map[string]observe.ObjectKey
}

// readKeys reads every object key r names (its observation's, its changed
// fields' and those of the acceptances it carries) into g.keys.
func (g *glass) readKeys(r *receipt.Receipt) error {
	read := func(where, text string) error {
		if _, ok := g.keys[text]; ok {
			return nil
		}
		k, err := observe.ParseObjectKey(text)
		if err != nil {
			return fmt.Errorf("%s: %w", where, err)
		}
		g.keys[text] = k
		return nil
	}
	if err := read("observation.object", r.Spec.Observation.Object); err != nil {
		return err
	}
	for i, cf := range r.Spec.Bounds.ChangedFields {
		if err := read(fmt.Sprintf("bounds.changedFields[%d].object", i), cf.Object); err != nil {
			return err
		}
	}
	for i, c := range r.Spec.Carried {
		for j, cf := range c.ChangedFields {
			if err := read(fmt.Sprintf("carried[%d].changedFields[%d].object", i, j), cf.Object); err != nil {
				return err
			}
		}
	}
	return nil
}

// temporary is one temporary acceptance on the default branch: the
// receipt at path's own (carried < 0), or the one it carries at index
// carried.
type temporary struct {
	path    string
	r       *receipt.Receipt
	carried int
}

// name, trigger, expiry and fields are the acceptance's, whether the
// receipt's own or carried by it.
func (t temporary) name() string {
	if t.carried >= 0 {
		return t.r.Spec.Carried[t.carried].Name
	}
	return t.r.Metadata.Name
}

func (t temporary) trigger() (actor, role, intent string) {
	if t.carried >= 0 {
		c := &t.r.Spec.Carried[t.carried]
		return c.Actor, c.Role, c.Intent
	}
	tr := &t.r.Spec.Trigger
	return tr.Actor, tr.Role, tr.Intent
}

func (t temporary) expiry() *receipt.Expiry {
	if t.carried >= 0 {
		return &t.r.Spec.Carried[t.carried].Expiry
	}
	return t.r.Spec.Expiry
}

func (t temporary) fields() []receipt.ChangedField {
	if t.carried >= 0 {
		return t.r.Spec.Carried[t.carried].ChangedFields
	}
	return t.r.Spec.Bounds.ChangedFields
}

// asCarried is the acceptance as a later receipt at its path carries it,
// with its fields that receipt does not change again; ok is false when it
// changes them all.
func (t temporary) asCarried(again func(object, field string) bool) (receipt.Carried, bool) {
	actor, role, intent := t.trigger()
	c := receipt.Carried{Name: t.name(), Actor: actor, Role: role, Intent: intent, Expiry: *t.expiry()}
	for _, cf := range t.fields() {
		if !again(cf.Object, cf.Field) {
			c.ChangedFields = append(c.ChangedFields, cf)
		}
	}
	return c, len(c.ChangedFields) > 0
}

type restoredField struct {
	at       time.Time
	accepted any
	name     string
}

func restoredKey(env, object, field string) string { return env + "\x00" + object + "\x00" + field }

// readReceipts reads the default branch's receipts. A receipt that does
// not parse is an error of the plan and is not acted on.
func (p *planner) readReceipts() {
	p.glass = &glass{restored: map[string]restoredField{}, keys: map[string]observe.ObjectKey{}}
	if p.snap.ReceiptsError != "" {
		p.res.Errors = append(p.res.Errors, "expiries unknown: "+p.snap.ReceiptsError)
	}
	for _, path := range slices.Sorted(maps.Keys(p.snap.Receipts)) {
		data := p.snap.Receipts[path]
		if !bytes.Contains(data, []byte("expiresAt:")) {
			// Neither temporary nor restoring: a permanent acceptance,
			// most of the folder, is not parsed at every plan.
			continue
		}
		r, _, err := receipt.Parse(path, data)
		if err != nil {
			p.res.Errors = append(
				p.res.Errors,
				fmt.Sprintf("receipt %s: %v: its expiry, if any, is not acted on", path, err),
			)
			continue
		}
		if err := p.glass.readKeys(r); err != nil {
			p.res.Errors = append(
				p.res.Errors,
				fmt.Sprintf("receipt %s: %v: its expiry, if any, is not acted on", path, err),
			)
			continue
		}
		if x := r.Spec.Trigger.Expired; x != nil {
			at, err := time.Parse(time.RFC3339, r.Spec.Trigger.At)
			if err != nil {
				continue
			}
			for _, cf := range r.Spec.Bounds.ChangedFields {
				p.glass.restored[restoredKey(r.Spec.Environment, cf.Object, cf.Field)] = restoredField{
					at:       at,
					accepted: cf.From.V,
					name:     x.Name,
				}
			}
			p.res.Restored = append(p.res.Restored, p.glass.restoredExpiry(path, r))
		}
		if r.Spec.Expiry != nil {
			p.glass.temporary = append(p.glass.temporary, temporary{path: path, r: r, carried: -1})
		}
		for i := range r.Spec.Carried {
			p.glass.temporary = append(p.glass.temporary, temporary{path: path, r: r, carried: i})
		}
	}
}

// restoredExpiry is the acceptance the restoring receipt r at path ended,
// as an Expiry in state Restored.
func (g *glass) restoredExpiry(path string, r *receipt.Receipt) Expiry {
	s, x := &r.Spec, r.Spec.Trigger.Expired
	e := Expiry{Receipt: x.Receipt, Name: x.Name, Environment: s.Environment, Unit: s.Unit.Space,
		Object: g.keys[s.Observation.Object], SetBy: x.SetBy, State: Restored,
		Why: fmt.Sprintf("expired at %s and restored by the receipt %s", x.ExpiresAt, path)}
	if at, err := time.Parse(time.RFC3339, x.ExpiresAt); err == nil {
		e.ExpiresAt = at
	}
	for _, cf := range s.Bounds.ChangedFields {
		e.Changes = append(e.Changes, Change{Object: g.keys[cf.Object], Field: cf.Field, ValuePath: cf.ValuePath,
			ValuesFile: cf.ValuesFile, WrittenFile: cf.WrittenFile, WrittenPath: cf.WrittenPath, From: cf.To.V, To: cf.From.V,
			Authorized: true})
	}
	return e
}

// restoredLive says why a live field is no new change: it holds the value
// of an acceptance that expired and was restored, written before that
// acceptance's expiry. Until the forward apply puts live back, the
// observer still sees the expired acceptance; accepting it again would undo
// the restoration. A live change made after the expiry is a new one.
func (p *planner) restoredLive(env, object string, fs *fieldState, at time.Time) string {
	if p.glass == nil || !fs.present {
		return ""
	}
	rf, ok := p.glass.restored[restoredKey(env, object, fs.f.Path)]
	if !ok || !values.Equal(fs.live, rf.accepted) || at.After(rf.at) {
		return ""
	}
	return fmt.Sprintf(
		"restored: %s still holds %s, the acceptance %s that expired at %s and whose value desired state was restored "+
			"from; the forward apply puts it back",
		fs.f.Path,
		values.Format(fs.live),
		rf.name,
		rf.at.UTC().Format(time.RFC3339),
	)
}

// expiryOf is the receipt's expiry for an allowed decision: the term
// policy.TermOf gives its fields' entries and its intent, from the plan's
// time; nil for a permanent acceptance.
func (p *planner) expiryOf(pd *pending, intent string) *receipt.Expiry {
	matches := make([]*policy.Match, 0, len(pd.fields))
	for _, fs := range pd.fields {
		if m := fs.match(pd.role); m != nil {
			matches = append(matches, m)
		}
	}
	term, ok := p.snap.Policy.TermOf(matches, intent)
	if !ok {
		return nil
	}
	return &receipt.Expiry{
		ExpiresAt: p.now.Add(term.For).Format(time.RFC3339),
		SetBy:     term.Entry,
		AcceptFor: term.AcceptFor,
		Requested: term.Asked,
		Bounded:   term.Bounded,
	}
}

// expiryNote is what a temporary acceptance says on its receipt and on
// the edited line of the values file.
func expiryNote(x *receipt.Expiry, restores string) string {
	s := "accepted until " + x.ExpiresAt + " by " + x.SetBy
	if x.AcceptFor != "" {
		s += " (acceptFor " + x.AcceptFor + ")"
	}
	if x.Requested != "" {
		s += ", the intent asked " + x.Requested
		if x.Bounded {
			s += ", more than the entry allows"
		}
	}
	return s + "; then a pull request restores " + restores
}

// expiryClaim is the receipt's honesty marker for a temporary acceptance.
func expiryClaim(x *receipt.Expiry) string {
	return "Temporary: " + expiryNote(x, "the value desired before (each changed field's from)") +
		". The restoring pull request is opened from the default branch's receipts once expiresAt has passed by " +
		"backflow's clock; that it merges, and that live goes back, is not claimed here."
}

// noteExpiry writes each temporary acceptance's note on its edited lines
// of the values files (a trailing comment the editor keeps a person's
// comment beside). A line that cannot carry a note keeps none: the
// receipt and the pull request still say it.
func (p *planner) noteExpiry(uv *unitValues, pend []*pending, out []editedFile) {
	for _, pd := range pend {
		d := &p.res.Decisions[pd.index]
		if d.Receipt == nil || d.Receipt.Spec.Expiry == nil && !p.replacesTemporary(d.ReceiptPath) {
			continue
		}
		for _, fs := range pd.fields {
			if fs.writtenFile != "" || fs.self || !out[fs.file].edited {
				continue
			}
			vf := uv.files[fs.file]
			f, err := values.Parse(out[fs.file].data, vf.opts)
			if err != nil {
				continue
			}
			// A permanent acceptance of a field a temporary one accepted
			// before takes that one's note off: it is not restored.
			var note string
			if x := d.Receipt.Spec.Expiry; x != nil {
				note = expiryNote(x, values.Format(fs.from()))
			}
			if data, err := f.Note(vf.prefix+fs.valuePath, note); err == nil {
				setFileData(uv, out, fs.file, data)
			}
		}
	}
}

// replacesTemporary reports whether the default branch's receipt at path
// holds a temporary acceptance, which a receipt written there replaces.
func (p *planner) replacesTemporary(path string) bool {
	return p.glass != nil && slices.ContainsFunc(p.glass.temporary, func(t temporary) bool { return t.path == path })
}

// setFileData gives file i its new bytes, and every document sharing its
// path the same bytes.
func setFileData(uv *unitValues, out []editedFile, i int, data []byte) {
	for k := range out {
		if out[k].edited && uv.files[k].path == uv.files[i].path {
			out[k].data = data
		}
	}
}

// expiries decides every temporary acceptance on the default branch, and
// makes the restoring write-backs of those due, one per unit.
func (p *planner) expiries() {
	if p.glass == nil {
		return
	}
	due := map[*repoconfig.Unit][]int{}
	duePath := map[string]string{}
	var order []*repoconfig.Unit
	for _, t := range p.glass.temporary {
		x := p.expiry(t)
		if first, ok := duePath[t.path]; ok && x.State == Due {
			// One restoring receipt per path a plan: the next one carries
			// this acceptance, and the plan after restores it.
			x.State, x.Why = Waiting, fmt.Sprintf(
				"expired at %s; the acceptance of %s at the same receipt path is restored first, its receipt carrying "+
					"this one to the next plan",
				x.ExpiresAt.UTC().Format(time.RFC3339),
				first,
			)
		}
		p.res.Expiries = append(p.res.Expiries, x)
		if x.State != Due {
			continue
		}
		fields := make([]string, len(x.Changes))
		for i, c := range x.Changes {
			fields[i] = c.Field
		}
		duePath[t.path] = strings.Join(fields, ", ")
		u := p.unitNamed(t.r.Spec.Environment, t.r.Spec.Unit.Space)
		if due[u] == nil {
			order = append(order, u)
		}
		due[u] = append(due[u], len(p.res.Expiries)-1)
	}
	for _, u := range order {
		p.restore(u, due[u])
	}
	slices.SortStableFunc(p.res.WriteBacks, func(a, b WriteBack) int { return cmp.Compare(a.Branch, b.Branch) })
}

// expiry is the state of one temporary acceptance.
func (p *planner) expiry(t temporary) Expiry {
	s := &t.r.Spec
	x := Expiry{
		Receipt:     t.path,
		Name:        t.name(),
		Environment: s.Environment,
		Unit:        s.Unit.Space,
		Object:      p.glass.keys[s.Observation.Object],
		SetBy:       t.expiry().SetBy,
		carried:     t.carried,
	}
	for _, cf := range t.fields() {
		x.Changes = append(
			x.Changes,
			Change{Object: p.glass.keys[cf.Object], Field: cf.Field, ValuePath: cf.ValuePath, ValuesFile: cf.ValuesFile,
				WrittenFile: cf.WrittenFile, WrittenPath: cf.WrittenPath, From: cf.From.V, To: cf.To.V, Authorized: true},
		)
	}
	at, err := time.Parse(time.RFC3339, t.expiry().ExpiresAt)
	if err != nil {
		x.State, x.Why = Refused, fmt.Sprintf("expiry.expiresAt %q is not an RFC 3339 time", t.expiry().ExpiresAt)
		return x
	}
	x.ExpiresAt = at
	if by := p.supersededBy(&x); by != "" {
		x.State, x.Why = Superseded, by
		return x
	}
	if p.now.Before(at) {
		x.State, x.Why = InForce, "accepted until "+at.UTC().Format(time.RFC3339)
		return x
	}
	if said, ok := p.snap.Voided[t.path]; ok && said == at.UTC().Format(time.RFC3339) {
		// Void is said once and stays: desired back at the accepted
		// values since (a person put them back) is that person's choice,
		// not the acceptance's, and is never restored over.
		x.State, x.Why = Void, fmt.Sprintf(
			"expired at %s and already said void on the pull request that carried it: it stays void, whatever desired "+
				"holds since; nothing is restored",
			said,
		)
		return x
	}
	u := p.unitNamed(s.Environment, s.Unit.Space)
	if u == nil {
		x.State, x.Why = Void, fmt.Sprintf(
			"the unit %s of %s is no longer in %s: nothing to restore",
			s.Unit.Space,
			s.Environment,
			repoconfig.Path,
		)
		return x
	}
	if ref := u.StoreRef(); ref != nil {
		// A revision store writes its document as a new revision when
		// its own pull request merges; a restore made from the receipts
		// would be a second revision racing that one.
		x.State, x.Why = Refused, fmt.Sprintf(
			"unit %s's desired state is %s, in a store that writes a new revision only when its pull request merges, "+
				"so a restore would be a second revision after that one, which backflow does not make; restore %s by hand "+
				"in %s",
			u.Name,
			ref,
			x.Object,
			cmp.Or(p.snap.Heads[*ref].Words.Store, ref.Store),
		)
		return x
	}
	uv := p.unitValues(u)
	if uv.err != nil {
		x.State, x.Why = Refused, uv.err.Error()
		return x
	}
	for _, c := range x.Changes {
		state, why := p.holdsAccepted(u, uv, c, s.Unit.DesiredRender)
		if state != "" {
			x.State, x.Why = state, why
			return x
		}
	}
	if len(p.allowed[u]) > 0 {
		x.State, x.Why = Waiting, fmt.Sprintf(
			"expired at %s; unit %s has another write-back this cycle, so the restoring one waits for it",
			at.UTC().Format(time.RFC3339),
			u.Name,
		)
		return x
	}
	x.State = Due
	x.Why = fmt.Sprintf(
		"expired at %s under %s: desired still holds the accepted values, so they are restored",
		at.UTC().Format(time.RFC3339),
		x.SetBy,
	)
	if !p.cfg.WritesBack() {
		x.Why += "; report only: the repository is " + p.modeWord()
	}
	return x
}

// restore makes unit u's restoring write-back for the due expiries at
// indexes: each accepted field set back to its from (and its note taken
// off the line), a receipt per expired receipt at the same path, verified
// against the policy, with the expired acceptance as its trigger.
func (p *planner) restore(u *repoconfig.Unit, indexes []int) {
	uv := p.unitValues(u)
	branch := p.cfg.Branch(u)
	refuse := func(why string) {
		for _, i := range indexes {
			x := &p.res.Expiries[i]
			x.State, x.Why = Refused, "the restoring write-back cannot be made: "+why
			p.res.Errors = append(p.res.Errors, fmt.Sprintf("expiry of %s: %s", x.Receipt, why))
		}
	}
	if uv.kust != nil {
		p.restoreKustomize(u, uv, indexes, branch, refuse)
		return
	}
	edits := make([][]values.Edit, len(uv.files))
	for _, i := range indexes {
		for _, c := range p.res.Expiries[i].Changes {
			fi, path := slices.IndexFunc(uv.files, func(vf *valuesFile) bool { return vf.path == c.ValuesFile }), c.ValuePath
			if c.WrittenFile != "" {
				// A manifest's field, written as itself in its object's
				// document (holdsAccepted found it there).
				fi, path = uv.docs.index[c.Object], c.WrittenPath
			}
			if fi < 0 {
				refuse(fmt.Sprintf("%s is no longer a values file of unit %s", c.ValuesFile, u.Name))
				return
			}
			edits[fi] = append(edits[fi], values.Edit{Path: uv.files[fi].prefix + path, Value: c.From})
		}
	}
	out := make([]editedFile, len(uv.files))
	for fi, es := range edits {
		if len(es) == 0 {
			continue
		}
		vf := uv.files[fi]
		// Documents of one manifest file are edited in turn, each from
		// the bytes the one before left.
		from := vf.data
		for j := range out {
			if out[j].edited && uv.files[j].path == vf.path {
				from = out[j].data
			}
		}
		data, read, err := setValuesOf(from, vf, es)
		if err != nil {
			refuse(editError(vf.path, err))
			return
		}
		for _, e := range es {
			// The acceptance's note ends with it.
			if f, err := values.Parse(data, vf.opts); err == nil {
				if noted, err := f.Note(e.Path, ""); err == nil {
					data = noted
				}
			}
		}
		out[fi] = editedFile{edited: true, data: data, read: read}
		setFileData(uv, out, fi, data)
	}
	after, trees, err := valuesAfter(u, uv, out)
	if err != nil {
		refuse(err.Error())
		return
	}
	var rendered *receipt.Render
	if u.Rendered() {
		if rendered, err = p.restoreWitness(u, uv, indexes, trees); err != nil {
			refuse(err.Error())
			return
		}
	}
	desired := func(c Change) (any, bool) {
		if c.WrittenFile != "" {
			return p.lookup(trees[uv.docs.index[c.Object]], c.WrittenPath)
		}
		return p.lookup(after, c.ValuePath)
	}
	var files []File
	for fi, e := range out {
		if e.edited && !slices.ContainsFunc(files, func(f File) bool { return f.Path == uv.files[fi].path }) {
			files = append(files, File{Path: uv.files[fi].path, Data: e.data})
		}
	}
	p.restoreWriteBack(u, indexes, branch, restored{desired: desired, rendered: rendered, files: files}, refuse)
}

// restored is what a unit's restoring edit leaves: the desired value of
// each restored change after it, the witness's render section (nil when
// nothing is rendered), the edited files, and where a shared file was
// edited and why, which the restoring decisions and receipts say.
type restored struct {
	desired  func(Change) (any, bool)
	rendered *receipt.Render
	files    []File
	placed   []string
}

// restoreWriteBack makes unit u's restoring decisions for the due expiries
// at indexes, with their receipts, and the write-back carrying them and
// the edited files; refuse says why none can be made.
func (p *planner) restoreWriteBack(u *repoconfig.Unit, indexes []int, branch string, rs restored, refuse func(string)) {
	wb := WriteBack{Unit: u.Name, Environment: u.Environment, Branch: branch, AutoMerge: true}
	var made []Decision
	for _, i := range indexes {
		x := &p.res.Expiries[i]
		t := p.temporaryAt(x.Receipt, x.carried)
		d, err := p.restoreDecision(u, t, x, rs, branch)
		if err != nil {
			x.State, x.Why = Refused, "the restoring write-back cannot be made: "+err.Error()
			p.res.Errors = append(p.res.Errors, fmt.Sprintf("expiry of %s: %v", x.Receipt, err))
			return
		}
		made = append(made, d)
	}
	if !p.cfg.WritesBack() {
		// Reported as the allow it would be, with its verified receipt;
		// nothing is written.
		for i := range made {
			made[i].Reasons = append(made[i].Reasons, "report-only: the repository is "+p.modeWord()+": nothing is written back")
		}
		p.res.Decisions = append(p.res.Decisions, made...)
		return
	}
	for _, d := range made {
		data, err := receipt.Marshal(d.Receipt)
		if err != nil {
			refuse(err.Error())
			return
		}
		wb.AutoMerge = wb.AutoMerge && d.AutoMerge
		wb.Objects = append(wb.Objects, d.Object)
		wb.Receipts = append(wb.Receipts, File{Path: d.ReceiptPath, Data: data})
	}
	wb.Files = rs.files
	slices.SortFunc(wb.Objects, observe.ObjectKey.Compare)
	slices.SortFunc(wb.Files, func(a, b File) int { return cmp.Compare(a.Path, b.Path) })
	slices.SortFunc(wb.Receipts, func(a, b File) int { return cmp.Compare(a.Path, b.Path) })
	for _, i := range indexes {
		p.res.Expiries[i].WriteBack = branch
	}
	p.res.Decisions = append(p.res.Decisions, made...)
	p.res.WriteBacks = append(p.res.WriteBacks, wb)
}

// temporaryAt is the temporary acceptance of the receipt at path, its own
// (carried < 0) or the one it carries at index carried.
func (p *planner) temporaryAt(path string, carried int) temporary {
	for _, t := range p.glass.temporary {
		if t.path == path && t.carried == carried {
			return t
		}
	}
	return temporary{}
}

// supersededBy says which allowed decision of this plan accepts every
// field of x again, on its object: that decision's receipt replaces x's at
// its path, so x is not restored. Empty when none does.
func (p *planner) supersededBy(x *Expiry) string {
	for _, d := range p.res.Decisions {
		if d.Outcome != Allow || d.Receipt == nil || d.WriteBack == "" || d.Environment != x.Environment ||
			d.Object != x.Object || d.Receipt.Spec.Trigger.Expired != nil {
			continue
		}
		all := !slices.ContainsFunc(x.Changes, func(c Change) bool {
			return !slices.ContainsFunc(d.Changes, func(dc Change) bool { return dc.Field == c.Field })
		})
		if !all {
			continue
		}
		term := "for good"
		if e := d.Receipt.Spec.Expiry; e != nil {
			term = "until " + e.ExpiresAt
		}
		return fmt.Sprintf(
			"a later acceptance, by %s on %s, accepts its fields again %s: its receipt replaces this one, which is "+
				"not restored",
			d.Actor,
			d.WriteBack,
			term,
		)
	}
	return ""
}

// carry is what a receipt at path, changing the fields changed, carries
// of the temporary acceptances the default branch's receipt there holds
// (but skip, a restored one): each with its fields changed does not change
// again. An acceptance already said void is not carried.
func (p *planner) carry(path string, skip *temporary, changed []receipt.ChangedField) []receipt.Carried {
	if p.glass == nil {
		return nil
	}
	again := func(object, field string) bool {
		return slices.ContainsFunc(changed, func(cf receipt.ChangedField) bool {
			return cf.Object == object && cf.Field == field
		})
	}
	var out []receipt.Carried
	for _, t := range p.glass.temporary {
		if t.path != path || skip != nil && t.carried == skip.carried {
			continue
		}
		at, err := time.Parse(time.RFC3339, t.expiry().ExpiresAt)
		if said, ok := p.snap.Voided[path]; ok && err == nil && said == at.UTC().Format(time.RFC3339) {
			continue
		}
		if c, ok := t.asCarried(again); ok {
			out = append(out, c)
		}
	}
	return out
}

// carryNote is the reason a decision gives for what its receipt carries.
func carryNote(cs []receipt.Carried) []string {
	out := make([]string, 0, len(cs))
	for _, c := range cs {
		fields := make([]string, len(c.ChangedFields))
		for i, cf := range c.ChangedFields {
			fields[i] = cf.Field
		}
		out = append(out, fmt.Sprintf(
			"carries: the temporary acceptance %s of %s (until %s, by %s), whose receipt this one replaces: it is "+
				"still restored at its expiry",
			c.Name,
			strings.Join(fields, ", "),
			c.Expiry.ExpiresAt,
			c.Expiry.SetBy,
		))
	}
	return out
}

// restoreDecision is the allowed decision restoring one expired receipt,
// with its verified receipt: the same role's authority, under the
// policy's matcher, for each field's from.
func (p *planner) restoreDecision(
	u *repoconfig.Unit,
	t temporary,
	x *Expiry,
	rs restored,
	branch string,
) (Decision, error) {
	actor, role, _ := t.trigger()
	expired := x.ExpiresAt.UTC().Format(time.RFC3339)
	d := Decision{
		Unit:        u.Name,
		Environment: u.Environment,
		Object:      x.Object,
		Outcome:     Allow,
		AutoMerge:   true,
		WriteBack:   branch,
		Actor:       actor,
		Role:        role,
		ObservedAt:  x.ExpiresAt,
		ReceiptPath: t.path,
	}
	if !p.cfg.WritesBack() {
		d.WriteBack, d.Reported = "", true
	}
	rules, autoMerge, err := p.authorizeRestore(u, role, x)
	if err != nil {
		return d, err
	}
	f := restoreFields(x, rs.desired)
	d.AutoMerge = autoMerge
	d.Changes = f.changes
	d.Reasons = []string{
		fmt.Sprintf(
			"allow: expiry of %s (receipt %s) at %s under %s: role %s restores the value desired before",
			x.Name,
			t.path,
			expired,
			x.SetBy,
			role,
		),
	}
	r := p.restoreReceipt(u, t, x, rs.rendered, branch, rules, f)
	// Where a shared file was restored and why, as its acceptance said.
	r.Spec.NotClaimed = append(r.Spec.NotClaimed, rs.placed...)
	d.Reasons = append(d.Reasons, rs.placed...)
	if r.Spec.Carried = p.carry(t.path, &t, f.changed); len(r.Spec.Carried) > 0 {
		d.Reasons = append(d.Reasons, carryNote(r.Spec.Carried)...)
	}
	if vs := receipt.Verify(r, p.snap.Policy, p.snap.PolicyPath); len(vs) > 0 {
		return d, fmt.Errorf("the restoring receipt fails verification: %s", receipt.JoinViolations(vs))
	}
	d.Receipt = r
	return d, nil
}

// authorizeRestore is role's authority to restore each field of x to its
// from in u's environment: the matchedRule text of each field's grant, in
// the order the fields first need it, and whether every matching entry
// auto-merges. A field the policy no longer lets role restore is an
// error, and so is a restore the entry that set the expiry does not
// authorize.
func (p *planner) authorizeRestore(u *repoconfig.Unit, role string, x *Expiry) ([]string, bool, error) {
	autoMerge := true
	var rules, entries []string
	for _, c := range x.Changes {
		dec := p.snap.Policy.Evaluate(
			policy.Request{Roles: []string{role}, Environment: u.Environment, Object: c.Object.String(), Field: c.Field,
				ValuePath: c.ValuePath, Value: c.From, HasValue: true},
		)
		if !dec.Allowed {
			msgs := make([]string, len(dec.Reasons))
			for i, r := range dec.Reasons {
				msgs[i] = r.String()
			}
			return nil, false, fmt.Errorf(
				"the policy no longer lets %s restore %s to %s: %s",
				role,
				restoredName(c),
				values.Format(c.From),
				strings.Join(msgs, "; "),
			)
		}
		autoMerge = autoMerge && dec.Match.AutoMerge
		if e := dec.Match.Path(); !slices.Contains(entries, e) {
			entries = append(entries, e)
		}
		if rule := grant(role, c.ValuePath, c.Field, dec.Match); !slices.Contains(rules, rule) {
			rules = append(rules, rule)
		}
	}
	if !slices.Contains(entries, x.SetBy) {
		// The restore is made under the authority that set the expiry, or
		// not at all: an edited policy whose other entry matches now would
		// restore under an authority the acceptance never named.
		return nil, false, fmt.Errorf(
			"the entry %s that set the expiry no longer authorizes restoring it (%s does now): "+
				"restore by hand, or accept again",
			x.SetBy,
			strings.Join(entries, ", "),
		)
	}
	return rules, autoMerge, nil
}

// restoredName is how a restored change is named to a person: its values
// path, or, for a manifest's or a kustomization's field, which has none,
// the field itself, as its acceptance named it.
func restoredName(c Change) string {
	return cmp.Or(c.ValuePath, c.Field)
}

// restoredFields is what restoring an expiry changes, field by field.
type restoredFields struct {
	// changes are the decision's, each from the accepted value to the one
	// desired before the acceptance.
	changes []Change
	// changed are the receipt's bounds of the same changes.
	changed []receipt.ChangedField
	// files are the desired files the changes are written in, sorted.
	files []string
	// residual is the round trip's residual drift: each restored field
	// the desired state after the restoring write-back does not hold at
	// the value restored.
	residual []any
}

// restoreFields is what restoring x's fields changes, with desired the
// desired value of each after the restoring write-back.
func restoreFields(x *Expiry, desired func(Change) (any, bool)) restoredFields {
	f := restoredFields{residual: []any{}}
	for _, c := range x.Changes {
		named, file := restoredName(c), cmp.Or(c.ValuesFile, c.WrittenFile)
		f.changes = append(
			f.changes,
			Change{Object: c.Object, Field: c.Field, ValuePath: c.ValuePath, ValuesFile: file,
				WrittenFile: c.WrittenFile, WrittenPath: c.WrittenPath, From: c.To, To: c.From, Authorized: true},
		)
		// The receipt names the object as text.
		f.changed = append(f.changed, receipt.ChangedField{Object: c.Object.String(), Field: c.Field,
			ValuePath: c.ValuePath, From: receipt.ValueOf(c.To), To: receipt.ValueOf(c.From),
			DesiredValueAfter: receipt.ValueOf(c.From), ValuesFile: c.ValuesFile, WrittenFile: c.WrittenFile,
			WrittenPath: c.WrittenPath})
		if !slices.Contains(f.files, file) {
			f.files = append(f.files, file)
		}
		switch got, ok := desired(c); {
		case !ok:
			f.residual = append(
				f.residual,
				fmt.Sprintf("%s: absent from desired after the restoring write-back", named),
			)
		case !values.Equal(got, c.From):
			f.residual = append(
				f.residual,
				fmt.Sprintf(
					"%s: desired after the restoring write-back is %s, not %s",
					named,
					values.Format(got),
					values.Format(c.From),
				),
			)
		}
	}
	slices.Sort(f.files)
	return f
}

// restoreReceipt is the receipt restoring the expired acceptance t of x
// on branch, proposed under rules, for the fields f restores; rendered is
// the restoring edit's render section, nil when nothing is rendered. It
// is not yet verified, and says nothing of what it carries or of where a
// shared file was restored.
func (p *planner) restoreReceipt(
	u *repoconfig.Unit,
	t temporary,
	x *Expiry,
	rendered *receipt.Render,
	branch string,
	rules []string,
	f restoredFields,
) *receipt.Receipt {
	s := &t.r.Spec
	actor, role, acceptedIntent := t.trigger()
	when := p.now.Format(time.RFC3339)
	expired := x.ExpiresAt.UTC().Format(time.RFC3339)
	first := x.Changes[0]
	closed := len(f.residual) == 0
	result := receipt.ResultClosed
	if !closed {
		result = "open"
	}
	intent := fmt.Sprintf(
		"expiry: the temporary acceptance %s (%s) ended at %s; restoring the value desired before it",
		x.Name,
		acceptedIntent,
		expired,
	)
	sec := restoredRender(u, x, rendered)
	store := p.snap.StoreOf()
	r := &receipt.Receipt{
		APIVersion: receipt.APIVersion, Kind: receipt.Kind, Metadata: receipt.Metadata{Name: x.Name + "-restored"},
		Spec: receipt.Spec{
			Status: receipt.StatusProposed, Chart: s.Chart, Version: s.Version, Environment: u.Environment,
			Unit: receipt.Unit{Space: u.Name, DesiredRender: strings.Join(f.files, ", ")},
			Trigger: receipt.Trigger{
				Class:  receipt.ClassAuthorized,
				Actor:  actor,
				Role:   role,
				Intent: intent,
				At:     expired,
				Expired: &receipt.Expired{
					Receipt:   t.path,
					Name:      x.Name,
					ExpiresAt: expired,
					SetBy:     x.SetBy,
					Commit:    p.snap.Commit,
				},
			},
			Observation: receipt.Observation{Source: "backflow", Predicate: "acceptance-expired",
				ReceiptRef: "the expired acceptance's receipt " + t.path + " " + p.where(),
				Object:     first.Object.String(), Field: first.Field, ValuePath: first.ValuePath,
				LiveValue: receipt.ValueOf(first.From), DesiredValueBefore: receipt.ValueOf(first.To)},
			Authority: receipt.Authority{
				PolicyRef:   p.snap.PolicyPath,
				Decision:    receipt.DecisionAllow,
				MatchedRule: strings.Join(rules, "; "),
			},
			Bounds: authorizedBounds(f.changed),
			WriteBack: receipt.WriteBack{
				Method:            store.Method(),
				DesiredValueAfter: receipt.ValueOf(first.From),
				NewRevision:       store.NewRevision(branch),
				Provenance: receipt.Provenance{
					Who:       "backflow (expiry of " + actor + "'s acceptance)",
					When:      when,
					Operation: Operation,
					Authority: p.snap.PolicyPath,
					Intent:    intent,
				},
			},
			RoundTrip: receipt.RoundTrip{DesiredAfterMatchesObserved: &closed, ResidualDrift: f.residual,
				Result: result},
			NotClaimed: []string{
				fmt.Sprintf(
					"Restoring, not observed: the acceptance %s (receipt %s %s) expired at %s under %s; observation.liveValue is "+
						"the value desired before that acceptance, which this write-back restores, not a live reading. That live is "+
						"back at it after the merge and the next forward apply is not claimed until a follow-up re-observes it and the "+
						"receipt is proven.",
					x.Name,
					t.path,
					p.where(),
					expired,
					x.SetBy,
				),
				p.restoredDesiredClaim(u, sec),
			},
		},
	}
	if !p.cfg.WritesBack() {
		r.Spec.WriteBack.NewRevision = "(report only: nothing is written back while the repository is " + p.modeWord() + ")"
	}
	if sec != nil {
		r.Spec.Render = sec
		r.Spec.RoundTrip.RenderedAfterMatchesObserved = &closed
	}
	return r
}

// restoredRender is the render section of x's restoring receipt: the
// restoring edit's rendered, with the changed fields of x's object alone
// and, for a kustomization, x's object's namespace. Nil when nothing is
// rendered.
func restoredRender(u *repoconfig.Unit, x *Expiry, rendered *receipt.Render) *receipt.Render {
	if rendered == nil {
		return nil
	}
	sec := *rendered
	sec.ChangedFields = nil
	for _, c := range rendered.ChangedFields {
		if c.Object == x.Object.String() {
			sec.ChangedFields = append(sec.ChangedFields, c)
		}
	}
	if u.Source() == repoconfig.SourceKustomize {
		sec.Namespace = x.Object.Namespace
	}
	return &sec
}

// restoredDesiredClaim is what a restoring receipt says u's desired state
// is and how the restored fields were read back from it: built or
// rendered as sec says, or, when nothing is rendered, the manifests or
// values files read as they are.
func (p *planner) restoredDesiredClaim(u *repoconfig.Unit, sec *receipt.Render) string {
	switch {
	case sec != nil && u.Source() == repoconfig.SourceKustomize:
		return fmt.Sprintf(
			"Desired state is the kustomization %s %s, built by %s from the %d files listed under render.files, before "+
				"and after the restoring edit, with the inline spec.postBuild.substitute variables of the repository's Flux "+
				"Kustomization applying it, if one is among those files, substituted as Flux does: the builds differ "+
				"exactly in the restored fields, each built as the value restored; what the GitOps controller adds on "+
				"apply is not claimed.",
			u.Kustomization,
			p.where(),
			sec.Renderer,
			len(sec.Files),
		)
	case sec != nil:
		return fmt.Sprintf(
			"Desired state is the values files %s, rendered with chart %s %s (%s) by %s for Kubernetes %s as release %s in "+
				"namespace %s before and after the restoring edit: the renderings differ exactly in the restored fields; what "+
				"the GitOps controller renders with its own Helm version, post-renderers or lookups of live objects is not "+
				"claimed.",
			p.where(),
			sec.Chart,
			sec.Version,
			sec.Digest,
			sec.Renderer,
			sec.KubeVersion,
			sec.ReleaseName,
			sec.Namespace,
		)
	case u.Source() == repoconfig.SourceManifests:
		return fmt.Sprintf(
			"Desired state is the manifests %s; each restored field is written as itself in its object's document and "+
				"read back from the edited document, not rendered.",
			p.where(),
		)
	}
	return fmt.Sprintf(
		"Desired state is the values files %s; the chart was not rendered for the restoring write-back, so the field "+
			"to value path mapping is the policy's.",
		p.where(),
	)
}

// unitNamed is the repo config's unit name in env, or nil.
func (p *planner) unitNamed(env, name string) *repoconfig.Unit {
	for i := range p.cfg.Units {
		if u := &p.cfg.Units[i]; u.Environment == env && u.Name == name {
			return u
		}
	}
	return nil
}

// where names what the snapshot was read at.
func (p *planner) where() string {
	if p.snap.Commit == "" {
		return "in the working tree"
	}
	return "at commit " + p.snap.Commit
}

// readReceiptFiles reads the receipts under receipts.dir, for the expiries
// of temporary acceptances. A folder that is not there holds none; one
// that cannot be listed, or a receipt that cannot be read, is said (the
// planner reports that expiries are unknown) and fails nothing else.
func readReceiptFiles(
	read FileReader,
	list func(string) ([]string, error),
	cfg *repoconfig.Config,
) (map[string][]byte, string) {
	if list == nil {
		return nil, ""
	}
	dir := strings.TrimSuffix(cmp.Or(cfg.Receipts.Dir, repoconfig.DefaultReceiptsDir), "/")
	paths, err := list(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, ""
	}
	if err != nil {
		return nil, fmt.Sprintf("listing %s: %v", dir, err)
	}
	out := map[string][]byte{}
	var problems []string
	for _, p := range paths {
		if !strings.HasSuffix(p, ".yaml") {
			continue
		}
		data, err := read(p, receipt.MaxSize)
		if err != nil {
			problems = append(problems, fmt.Sprintf("reading %s: %v", p, err))
			continue
		}
		out[p] = data
	}
	return out, strings.Join(problems, "; ")
}

// jsonExpiry is an expiry in the plan's JSON contract.
type jsonExpiry struct {
	Receipt     string            `json:"receipt"`
	Name        string            `json:"name"`
	Environment string            `json:"environment"`
	Unit        string            `json:"unit"`
	Object      observe.ObjectKey `json:"object"`
	ExpiresAt   *string           `json:"expiresAt"`
	SetBy       string            `json:"setBy"`
	State       ExpiryState       `json:"state"`
	WriteBack   *string           `json:"writeBack"`
	Why         string            `json:"why"`
	Changes     []jsonChange      `json:"changes"`
}

func jsonExpiries(xs []Expiry) []jsonExpiry {
	var out []jsonExpiry
	for _, x := range xs {
		j := jsonExpiry{
			Receipt:     x.Receipt,
			Name:        x.Name,
			Environment: x.Environment,
			Unit:        x.Unit,
			Object:      x.Object,
			SetBy:       x.SetBy,
			State:       x.State,
			WriteBack:   nullable(x.WriteBack),
			Why:         x.Why,
			Changes:     []jsonChange{},
		}
		if !x.ExpiresAt.IsZero() {
			j.ExpiresAt = new(x.ExpiresAt.UTC().Format(time.RFC3339))
		}
		for _, c := range x.Changes {
			j.Changes = append(
				j.Changes,
				jsonChange{
					Object:     c.Object,
					Field:      c.Field,
					ValuePath:  nullable(c.ValuePath),
					ValuesFile: nullable(c.ValuesFile),
					From:       jsonSafe(c.From),
					To:         jsonSafe(c.To),
					Authorized: c.Authorized,
				},
			)
		}
		out = append(out, j)
	}
	return out
}

// restoreWitness renders a charted unit before and after the restoring
// edit: the renderings must differ exactly in the restored fields, each
// rendered as the value restored, as an acceptance's must. It returns the
// render section, with every restored field; each receipt keeps its own.
func (p *planner) restoreWitness(
	u *repoconfig.Unit,
	uv *unitValues,
	indexes []int,
	trees []map[string]any,
) (*receipt.Render, error) {
	b := p.base(&unitWork{u: u, uv: uv})
	if b.err != nil {
		return nil, b.err
	}
	after, err := p.render(u, trees)
	if err != nil {
		return nil, fmt.Errorf("render: with the restored values: %w", err)
	}
	want := map[string]any{}
	for _, i := range indexes {
		for _, c := range p.res.Expiries[i].Changes {
			want[c.Object.String()+" "+c.Field] = c.From
		}
	}
	sec := &receipt.Render{Chart: after.Chart, Version: after.Version, Digest: after.Digest, Renderer: after.Renderer,
		ReleaseName: after.Release, Namespace: after.Namespace, KubeVersion: after.KubeVersion}
	compared := map[string]bool{}
	for k := range b.r.Objects {
		compared[k] = true
	}
	for k := range after.Objects {
		compared[k] = true
	}
	sec.ObjectsCompared = slices.Sorted(maps.Keys(compared))
	seen := map[string]bool{}
	for _, c := range witness.Diff(b.r, after) {
		k := c.Object + " " + c.Field
		v, ok := want[k]
		if !ok || !c.HasAfter || !values.Equal(c.After, v) {
			return nil, fmt.Errorf("render-mismatch: restoring also changes %s %s (%s -> %s)", c.Object, c.Field,
				values.Format(c.Before), values.Format(c.After))
		}
		seen[k] = true
		sec.ChangedFields = append(sec.ChangedFields, receipt.RenderedField{Object: c.Object, Field: c.Field,
			Before: renderedValue(c.Before, c.HasBefore), After: renderedValue(c.After, c.HasAfter)})
	}
	for k := range want {
		if !seen[k] {
			return nil, fmt.Errorf("render-mismatch: the rendering does not restore %s", k)
		}
	}
	return sec, nil
}

// markdownExpiries is the Markdown report's section of temporary
// acceptances; empty when there are none.
func markdownExpiries(xs []Expiry) string {
	if len(xs) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("\n### Temporary acceptances\n\n")
	for _, x := range xs {
		fmt.Fprintf(&b, "- %s in %s (receipt %s): %s, until %s: %s\n", codeSpan(x.Object.String()), x.Environment,
			codeSpan(x.Receipt), x.State, orDash(expiryTime(x)), x.Why)
	}
	return b.String()
}

// tableExpiries is the terminal's list of temporary acceptances.
func tableExpiries(xs []Expiry) string {
	if len(xs) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("\ntemporary acceptances:\n")
	for _, x := range xs {
		fmt.Fprintf(&b, "  %s in %s until %s: %s: %s\n", x.Object, x.Environment, orDash(expiryTime(x)), x.State, x.Why)
	}
	return b.String()
}

func expiryTime(x Expiry) string {
	if x.ExpiresAt.IsZero() {
		return ""
	}
	return x.ExpiresAt.UTC().Format(time.RFC3339)
}

// holdsAccepted says whether desired still holds c's accepted value where
// the acceptance wrote it: a values path of the unit's merged values, the
// written path of the object's document in a unit of manifests, or, for a
// kustomization, the file written still read by its build and the built
// field still the accepted value. It returns "" when it does, else Void
// (or Refused, when the receipt does not say where it wrote) and why.
func (p *planner) holdsAccepted(u *repoconfig.Unit, uv *unitValues, c Change, render string) (ExpiryState, string) {
	store := "desired state"
	if u.Source() == repoconfig.SourceValues {
		store = "values"
	}
	voidWhy := func(where string, desired any, ok bool) (ExpiryState, string) {
		if !ok {
			return Void, fmt.Sprintf("%s is no longer set in %s's %s %s: the expiry is void", where, u.Name, store, p.where())
		}
		return Void, fmt.Sprintf(
			"desired %s is %s %s, no longer the accepted %s (someone changed it since): the expiry is void, nothing is "+
				"restored",
			where,
			values.Format(desired),
			p.where(),
			values.Format(c.To),
		)
	}
	if u.Source() == repoconfig.SourceValues {
		if c.ValuesFile == "" {
			return Refused, fmt.Sprintf(
				"%s is written in %s, not a values file: only a values path is restored in a values unit",
				c.Field,
				render,
			)
		}
		desired, ok := p.lookup(uv.merged, c.ValuePath)
		if !ok || !values.Equal(desired, c.To) {
			return voidWhy(c.ValuePath, desired, ok)
		}
		return "", ""
	}
	if c.WrittenFile == "" || c.WrittenPath == "" {
		return Refused, fmt.Sprintf(
			"the receipt does not say where %s of %s was written (writtenFile and writtenPath): restore it by hand",
			c.Field,
			c.Object,
		)
	}
	where := c.WrittenPath + " in " + c.WrittenFile
	if uv.kust != nil {
		if _, ok := uv.kust.files[c.WrittenFile]; !ok {
			return Void, fmt.Sprintf(
				"%s, where the acceptance wrote %s, is no longer a file kustomize's build of %s reads %s: the expiry is "+
					"void, nothing is restored",
				c.WrittenFile,
				c.Field,
				uv.kust.dir,
				p.where(),
			)
		}
		desired, ok := p.lookup(uv.kust.built.Objects[c.Object.String()], c.Field)
		if !ok || !values.Equal(desired, c.To) {
			return voidWhy(c.Field+" of "+c.Object.String()+" as kustomize builds "+uv.kust.dir, desired, ok)
		}
		return "", ""
	}
	fi, ok := uv.docs.index[c.Object]
	if !ok || uv.files[fi].path != c.WrittenFile {
		return Void, fmt.Sprintf(
			"%s, where the acceptance wrote %s, no longer holds the one document of %s %s: the expiry is void, nothing is "+
				"restored",
			c.WrittenFile,
			c.Field,
			c.Object,
			p.where(),
		)
	}
	desired, ok := p.lookup(uv.files[fi].tree, c.WrittenPath)
	if !ok || !values.Equal(desired, c.To) {
		return voidWhy(where, desired, ok)
	}
	return "", ""
}
