package plan

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/backflow-dev/backflow/internal/observe"
	"github.com/backflow-dev/backflow/internal/receipt"
	"github.com/backflow-dev/backflow/internal/repoconfig"
	"github.com/backflow-dev/backflow/internal/values"
)

// writeBacks builds each unit's write-back from its allowed decisions: one
// set of edits per values file, applied together, and one receipt per
// object. A decision whose edit is refused, conflicts with another's, or
// whose receipt fails verification is denied (fail closed), and the unit's
// write-back is rebuilt without it. Units are built concurrently (each
// touches only its own decisions) and their errors and write-backs are
// added to the result in the units' order, so the result is the same as
// building them one after the other.
func (p *planner) writeBacks() {
	p.placeShared()
	p.readKustomizeUnits()
	units := p.allowedUnits()
	work := make([]unitWork, len(units))
	for i, u := range units {
		work[i] = unitWork{u: u, uv: p.unitValues(u), branch: p.cfg.Branch(u)}
	}
	each(len(work), p.workers, func(i int) {
		p.writeBack(&work[i], p.allowed[work[i].u])
	})
	for i := range work {
		p.res.Errors = append(p.res.Errors, work[i].errs...)
		if work[i].wb != nil {
			p.res.WriteBacks = append(p.res.WriteBacks, *work[i].wb)
		}
	}
}

// unitWork is one unit's write-back while it is built: what it reads, and
// what it adds to the result once every unit is built.
type unitWork struct {
	u      *repoconfig.Unit
	uv     *unitValues
	branch string
	// base is the unit's chart rendered with the values at the snapshot,
	// for the render witness; made when first needed.
	base *base
	// errs are the unit's planning errors, in the order they arose.
	errs []string
	// wb is the write-back; nil when nothing is written.
	wb *WriteBack
}

// failClosed is the planner's failClosed with the error kept in the unit's
// own list.
func (p *planner) failClosedUnit(w *unitWork, d *Decision, msg string) {
	failClosed(&w.errs, d, msg)
}

// target is one value path in one values file.
type target struct {
	file int
	path string
}

func (p *planner) writeBack(w *unitWork, pend []*pending) {
	if w.uv.kust != nil {
		p.writeKustomize(w, pend)
		return
	}
	u, uv, branch := w.u, w.uv, w.branch
	var out []editedFile
	for len(pend) > 0 {
		if bad := conflicts(pend, uv); len(bad) > 0 {
			pend = p.drop(w, pend, bad)
			continue
		}
		var bad map[*pending]string
		out, bad = p.apply(uv, pend)
		if len(bad) > 0 {
			pend = p.drop(w, pend, bad)
			continue
		}
		after, trees, err := valuesAfter(u, uv, out)
		if err != nil {
			all := map[*pending]string{}
			for _, pd := range pend {
				all[pd] = err.Error()
			}
			pend = p.drop(w, pend, all)
			continue
		}
		var sections map[*pending]*receipt.Render
		if u.Rendered() {
			var denied map[*pending]string
			sections, bad, denied = p.witness(w, pend, trees)
			if len(bad) > 0 || len(denied) > 0 {
				pend = p.deny(p.drop(w, pend, bad), denied)
				continue
			}
		}
		bad = map[*pending]string{}
		for _, pd := range pend {
			if err := p.attachReceipt(u, uv, pd, after, trees, branch, sections[pd]); err != nil {
				bad[pd] = err.Error()
			}
		}
		if len(bad) > 0 {
			pend = p.drop(w, pend, bad)
			continue
		}
		break
	}
	if len(pend) == 0 {
		return
	}
	wb := p.finish(w, pend)
	if wb == nil {
		return
	}
	p.noteExpiry(uv, pend, out)
	written := map[string]bool{}
	for i, e := range out {
		// Documents of one manifest share its bytes: the file is written once.
		if path := uv.files[i].path; e.edited && string(e.data) != string(uv.files[i].data) && !written[path] {
			written[path] = true
			if w.u.StoreRef() != nil {
				wb.Revision = p.revision(w.u, e.data)
				continue
			}
			wb.Files = append(wb.Files, File{Path: path, Data: e.data})
		}
	}
	slices.SortFunc(wb.Files, func(a, b File) int { return cmp.Compare(a.Path, b.Path) })
	if wb.Revision != nil {
		wb.Revision.Changes = p.revisionChanges(pend)
	}
}

// finish makes the unit's write-back of its decisions in pend, whose
// receipts are attached, without its files; nil when nothing is written
// (observe-only, paused, or a receipt that does not marshal).
func (p *planner) finish(w *unitWork, pend []*pending) *WriteBack {
	u, branch := w.u, w.branch
	if !p.cfg.WritesBack() {
		why := "the repository is in observe-only mode"
		if p.cfg.Paused {
			why = "the repository is paused"
		}
		for _, pd := range pend {
			d := &p.res.Decisions[pd.index]
			d.Reported = true
			d.Reasons = append(d.Reasons, "report-only: "+why+": nothing is written back")
		}
		return nil
	}
	wb := WriteBack{Unit: u.Name, Environment: u.Environment, Branch: branch, AutoMerge: true}
	for _, pd := range pend {
		d := &p.res.Decisions[pd.index]
		d.WriteBack = branch
		wb.AutoMerge = wb.AutoMerge && d.AutoMerge
		wb.Objects = append(wb.Objects, d.Object)
		data, err := marshalReceipt(d)
		if err != nil {
			// Marshaling a receipt that just verified does not fail; if it
			// does, nothing of the unit is written.
			p.failClosedUnit(w, d, err.Error())
			return nil
		}
		wb.Receipts = append(wb.Receipts, File{Path: d.ReceiptPath, Data: data})
	}
	slices.SortFunc(wb.Objects, observe.ObjectKey.Compare)
	slices.SortFunc(wb.Receipts, func(a, b File) int { return cmp.Compare(a.Path, b.Path) })
	w.wb = &wb
	return w.wb
}

// drop denies the decisions in bad with their reason and returns the rest.
func (p *planner) drop(w *unitWork, pend []*pending, bad map[*pending]string) []*pending {
	var keep []*pending
	for _, pd := range pend {
		if msg, ok := bad[pd]; ok {
			p.failClosedUnit(w, &p.res.Decisions[pd.index], msg)
			continue
		}
		keep = append(keep, pd)
	}
	return keep
}

// conflicts finds allowed decisions of one unit that would write different
// values at the same place: neither can be written without undoing the
// other.
func conflicts(pend []*pending, uv *unitValues) map[*pending]string {
	if len(pend) < 2 {
		// One decision writes each of its paths once.
		return nil
	}
	type claim struct {
		pd    *pending
		value any
	}
	claims := map[target]claim{}
	bad := map[*pending]string{}
	for _, pd := range pend {
		for _, fs := range pd.fields {
			t := target{fs.file, fs.valuePath}
			c, seen := claims[t]
			if !seen {
				claims[t] = claim{pd, fs.live}
				continue
			}
			if c.pd == pd || values.Equal(c.value, fs.live) {
				continue
			}
			obj := func(x *pending) string { return x.obs.Object.String() }
			bad[pd] = fmt.Sprintf("conflict: %s in %s would be %s for %s but %s for %s", fs.valuePath, uv.files[fs.file].path,
				values.Format(fs.live), obj(pd), values.Format(c.value), obj(c.pd))
			bad[c.pd] = fmt.Sprintf("conflict: %s in %s would be %s for %s but %s for %s", fs.valuePath, uv.files[fs.file].path,
				values.Format(c.value), obj(c.pd), values.Format(fs.live), obj(pd))
		}
	}
	return bad
}

// editedFile is one of a unit's values files after its edits: the new
// bytes and the editor's Helm reading of them, when edited.
type editedFile struct {
	edited bool
	data   []byte
	read   any
}

// apply makes every decision's edits with the values editor, all edits of a
// file in one call, and returns each touched file's new bytes and the
// editor's Helm reading of them, by the file's index. When the
// editor refuses a file's edits, each decision's own edits are tried alone
// to find which decisions cannot be written.
func (p *planner) apply(uv *unitValues, pend []*pending) ([]editedFile, map[*pending]string) {
	total := 0
	for _, pd := range pend {
		total += len(pd.fields)
	}
	edits := make([][]values.Edit, len(uv.files))
	// The same value path of a file is edited once; a few edits are
	// compared with each other, many looked up in a set.
	var seen map[target]bool
	if total > 32 {
		seen = make(map[target]bool, total)
	}
	for _, pd := range pend {
		for _, fs := range pd.fields {
			path := uv.files[fs.file].prefix + fs.valuePath
			if seen != nil {
				t := target{fs.file, fs.valuePath}
				if seen[t] {
					continue
				}
				seen[t] = true
			} else if slices.ContainsFunc(edits[fs.file], func(e values.Edit) bool { return e.Path == path }) {
				continue
			}
			if edits[fs.file] == nil {
				edits[fs.file] = make([]values.Edit, 0, total)
			}
			edits[fs.file] = append(edits[fs.file], values.Edit{Path: path, Value: fs.live})
		}
	}
	out := make([]editedFile, len(uv.files))
	var bad map[*pending]string
	// The documents of a unit of manifests that share a file are edited
	// in turn, each from the bytes the edit of the one before left.
	var before map[string]int
	for i, es := range edits {
		if len(es) == 0 {
			continue
		}
		vf := uv.files[i]
		slices.SortFunc(es, func(a, b values.Edit) int { return cmp.Compare(a.Path, b.Path) })
		var data []byte
		var helm any
		var err error
		if j, ok := before[vf.path]; ok && uv.docs != nil {
			data, helm, err = setValuesOf(out[j].data, vf, es)
		} else {
			data, helm, err = p.setValues(vf, es)
		}
		if err == nil {
			out[i] = editedFile{edited: true, data: data, read: helm}
			if uv.docs != nil {
				if before == nil {
					before = map[string]int{}
				}
				for k := range out[:i] {
					if out[k].edited && uv.files[k].path == vf.path {
						// Every document's reading stays; the file's
						// bytes are those with every edit made.
						out[k].data = data
					}
				}
				before[vf.path] = i
			}
			continue
		}
		if bad == nil {
			bad = map[*pending]string{}
		}
		blamed := false
		for _, pd := range pend {
			var own []values.Edit
			for _, fs := range pd.fields {
				if fs.file == i {
					own = append(own, values.Edit{Path: vf.prefix + fs.valuePath, Value: fs.live})
				}
			}
			if len(own) == 0 {
				continue
			}
			if _, _, err := p.setValues(vf, own); err != nil {
				bad[pd] = editError(vf.path, err)
				blamed = true
			}
		}
		if !blamed {
			for _, pd := range pend {
				if slices.ContainsFunc(pd.fields, func(fs *fieldState) bool { return fs.file == i }) {
					bad[pd] = editError(vf.path, err)
				}
			}
		}
	}
	return out, bad
}

// setValuesOf is setValues of vf's document in data, the file's bytes
// after the edit of another of its documents.
func setValuesOf(data []byte, vf *valuesFile, edits []values.Edit) ([]byte, any, error) {
	f, err := values.Parse(data, vf.opts)
	if err != nil {
		return nil, nil, err
	}
	return f.SetRead(edits)
}

// setValues edits a values file and returns its new bytes and their
// reading by Helm's reader, which the editor's verification made.
func (p *planner) setValues(vf *valuesFile, edits []values.Edit) ([]byte, any, error) {
	f, err := p.parsed.parse(vf)
	if err != nil {
		return nil, nil, err
	}
	return f.SetRead(edits)
}

// parsedFiles holds the editor's reading of each distinct values file (its
// path, which names the same bytes throughout a plan, and chosen document)
// in one plan: units that share a file,
// and a unit whose edits are retried without a refused one, edit from the
// same reading, made once even when units are built concurrently. A
// values.File never changes; each edit starts from the original bytes.
type parsedFiles struct {
	mu sync.Mutex
	m  map[parsedKey]*parsedFile
}

type parsedKey struct {
	path string
	doc  int // -1: the only document
}

type parsedFile struct {
	once sync.Once
	f    *values.File
	err  error
}

func (m *parsedFiles) parse(vf *valuesFile) (*values.File, error) {
	k := parsedKey{path: vf.path, doc: -1}
	if vf.opts.Document != nil {
		k.doc = *vf.opts.Document
	}
	m.mu.Lock()
	got := m.m[k]
	if got == nil {
		got = &parsedFile{}
		m.m[k] = got
	}
	m.mu.Unlock()
	got.once.Do(func() { got.f, got.err = values.Parse(vf.data, vf.opts) })
	return got.f, got.err
}

func editError(file string, err error) string {
	if errors.Is(err, values.ErrRefused) {
		return fmt.Sprintf("the values editor refused to edit %s: %v", file, err)
	}
	return fmt.Sprintf("editing %s: %v", file, err)
}

// valuesAfter reads the unit's values again with the edited files in place
// (only the files whose bytes changed) and merges them: the desired state the write-back leaves behind, and each
// file's values tree.
func valuesAfter(u *repoconfig.Unit, uv *unitValues, out []editedFile) (map[string]any, []map[string]any, error) {
	trees := make([]map[string]any, len(uv.files))
	for i, vf := range uv.files {
		trees[i] = vf.tree
		data, edited := out[i].data, out[i].edited
		if !edited || string(data) == string(vf.data) {
			// Bytes the edit left as they were read as they did.
			continue
		}
		root := u.RootOf(vf.path)
		if m, ok := out[i].read.(map[string]any); ok && uv.docs != nil {
			// A manifest's document as Helm's reader reads it, which the
			// editor's verification has just read.
			trees[i] = m
			continue
		}
		if m, ok := out[i].read.(map[string]any); ok && root == nil && len(data) <= repoconfig.MaxValuesSize {
			// A plain values file's values are its document as Helm reads
			// it, which the editor's verification has just read: the
			// repo config would read the same bytes with the same reader.
			trees[i] = m
			continue
		}
		tree, err := repoconfig.Values(vf.path, data, root)
		if err != nil {
			return nil, nil, fmt.Errorf("reading back %s after the edit: %w", vf.path, err)
		}
		trees[i] = tree
	}
	return mergeShared(trees), trees, nil
}

// receiptPath is where an object's receipt is committed:
// <receipts.dir>/<environment>/<unit>/<namespace>_<Kind>.<group>.<version>_<name>.yaml
// (the group and its dot are left out for the core group). Every segment
// escapes `_`, `%` and any character other than letters, digits, `.` and
// `-` as %XX, and the kind and version escape `.` too, so distinct object
// keys never share a file.
func (p *planner) receiptPath(u *repoconfig.Unit, apiVersion, kind, namespace, name string) string {
	dir := p.cfg.Receipts.Dir
	if dir == "" {
		dir = repoconfig.DefaultReceiptsDir
	}
	gv := escape(apiVersion[strings.LastIndex(apiVersion, "/")+1:], true)
	if i := strings.LastIndex(apiVersion, "/"); i >= 0 {
		gv = escape(apiVersion[:i], false) + "." + gv
	}
	file := escape(namespace, false) + "_" + escape(kind, true) + "." + gv + "_" + escape(name, false) + ".yaml"
	return strings.TrimSuffix(dir, "/") + "/" + u.Environment + "/" + u.Name + "/" + file
}

func escape(s string, dots bool) string {
	if !needsEscape(s, dots) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '-', c == '.' && !dots:
			b.WriteByte(c)
		default:
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}

// needsEscape reports whether escape changes s.
func needsEscape(s string, dots bool) bool {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '-', c == '.' && !dots:
		default:
			return true
		}
	}
	return false
}
