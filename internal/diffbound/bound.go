package diffbound

import (
	"cmp"
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"

	"github.com/backflow-dev/backflow/internal/fluxdoc"
	"github.com/backflow-dev/backflow/internal/plan"
	"github.com/backflow-dev/backflow/internal/policy"
	"github.com/backflow-dev/backflow/internal/receipt"
	"github.com/backflow-dev/backflow/internal/repoconfig"
	"github.com/backflow-dev/backflow/internal/values"
	"github.com/backflow-dev/backflow/internal/yamlnode"
)

// Input is one pull request as the check sees it.
type Input struct {
	// Config and Policy are the BASE branch's, never the head's; PolicyPath
	// is the policy's repository path, the policyRef receipts must name.
	Config     *repoconfig.Config
	Policy     *policy.Policy
	PolicyPath string
	// Changed lists every file the pull request changes (added, modified,
	// deleted or renamed: both names), repository-relative.
	Changed []string
	// Base holds a changed file's bytes where the pull request starts
	// (the merge base); Head its bytes at the head. A file missing from
	// Base was added; missing from Head, deleted.
	Base, Head map[string][]byte
}

// Result is the check's answer.
type Result struct {
	// Receipts counts the receipts checked.
	Receipts int
	// ValuePaths counts the changed value paths found in values files.
	ValuePaths int
	// Violations say, one per line, "<file>: <problem>"; none means pass.
	Violations []string
}

// OK reports whether the diff is within its receipts' bounds.
func (r Result) OK() bool { return len(r.Violations) == 0 }

// claim is one changed field of a receipt: the value it puts at a value
// path of a values file.
type claim struct {
	receipt   string
	file      string
	valuePath string
	to        any
	// object is set for a field written as itself (writtenFile): the
	// claim is on valuePath of that object's document of file.
	object string
	// kustomize marks a kustomize unit's claim: on the path written in
	// an overlay file (a replicas: or images: entry, a patch), whose
	// value is kustomize's to turn into the built field's.
	kustomize bool
}

// Check applies the bound to in. It never fails: an input it cannot read
// is a violation.
func Check(in Input) Result {
	var res Result
	fail := func(format string, a ...any) { res.Violations = append(res.Violations, fmt.Sprintf(format, a...)) }
	if in.Config == nil {
		fail("%s: the base branch has no readable repo config: nothing can be authorized", repoconfig.Path)
		return res
	}
	dir := strings.TrimSuffix(cmp.Or(in.Config.Receipts.Dir, repoconfig.DefaultReceiptsDir), "/") + "/"
	changed := slices.Clone(in.Changed)
	slices.Sort(changed)
	changed = slices.Compact(changed)

	var claims []claim
	var others []string
	readers := in.Config.ReadersOf()
	for _, p := range changed {
		if !isReceipt(p, dir) {
			others = append(others, p)
			continue
		}
		data, ok := in.Head[p]
		if !ok {
			fail("%s: a receipt is deleted; receipts are only ever added or updated", p)
			continue
		}
		res.Receipts++
		claims = append(claims, receiptClaims(p, data, in, readers, fail)...)
	}
	named := map[string]bool{}
	for _, c := range claims {
		named[c.file] = true
	}
	for _, p := range others {
		res.ValuePaths += checkFile(p, dir, in, claims, named, fail)
	}
	return res
}

// receiptClaims verifies the receipt p, whose bytes at the head are data,
// against the base branch's policy and config, and returns the claims of
// its changed fields that its unit may make (readers are, by file, the
// environments whose units read it). A receipt that does not parse, or
// names a unit the base config does not define, claims nothing.
func receiptClaims(p string, data []byte, in Input, readers map[string][]string, fail func(string, ...any)) []claim {
	c := receipt.Check(p, data, in.Policy, in.PolicyPath)
	if c.Err != nil {
		fail("%s: %v", p, c.Err)
		return nil
	}
	// Strict: a key the model does not know could carry a claim no
	// check reads.
	for _, v := range c.Strict() {
		fail("%s: %s", p, v.String())
	}
	r := c.Receipt
	u := unitOf(in.Config, r)
	if u == nil {
		fail(
			"%s: names unit %s in %s, which the base branch's %s does not define: it authorizes no file",
			p,
			r.Spec.Unit.Space,
			r.Spec.Environment,
			repoconfig.Path,
		)
		return nil
	}
	var claims []claim
	for i, cf := range r.Spec.Bounds.ChangedFields {
		f := field{p: p, at: fmt.Sprintf("bounds.changedFields[%d]", i), u: u, r: r, cf: cf}
		if !f.mapped(in, fail) {
			continue
		}
		if cf.WrittenFile != "" || u.Documents() {
			if c, ok := f.written(in, fail); ok {
				claims = append(claims, c)
			}
			continue
		}
		claims = append(claims, f.values(in.Policy, readers, fail)...)
	}
	return claims
}

// field is one changed field of a receipt as the bound reads it: the
// receipt's path p, the field's place in it (at), the unit u the receipt
// is about, the receipt r and the field cf.
type field struct {
	p, at string
	u     *repoconfig.Unit
	r     *receipt.Receipt
	cf    receipt.ChangedField
}

// mapped reports whether f's unit writes f's field where it claims: the
// unit renders the field's object in its environment and, under a valid
// base policy, its mapping (the policy's entry for the receipt's role)
// writes the field at the claimed value path. When not, it fails the
// field.
func (f field) mapped(in Input, fail func(string, ...any)) bool {
	if o, ok := in.Config.UnitFor(f.u.Environment, f.cf.Object); !ok || o != f.u {
		fail("%s: %s is %s, which unit %s does not render in %s: it authorizes no file",
			f.p, f.at, f.cf.Object, f.u.Name, f.u.Environment)
		return false
	}
	roles := []string{f.r.Spec.Trigger.Role}
	vp, why := plan.MapField(in.Policy, f.cf.Object, f.u.Environment, f.cf.Field, roles)
	if !in.Policy.Valid() || vp == f.cf.ValuePath {
		return true
	}
	if vp == "" {
		fail("%s: %s claims %s at %s, which unit %s's mapping does not write: %s",
			f.p, f.at, f.cf.Field, f.cf.ValuePath, f.u.Name, why)
	} else {
		fail("%s: %s claims %s at %s, but unit %s's mapping (the policy's entry for role %q) writes it at %s",
			f.p, f.at, f.cf.Field, f.cf.ValuePath, f.u.Name, f.r.Spec.Trigger.Role, vp)
	}
	return false
}

// written is the claim of f written as itself: on its writtenPath in its
// writtenFile, in the document that applies its object or, for a
// kustomize unit, in any document of that overlay file. When f's unit may
// not write that file, it fails the field and claims nothing.
func (f field) written(in Input, fail func(string, ...any)) (claim, bool) {
	if why := writesItself(f.u, f.cf, in.Base, sharedBase(in, f.u, f.r, f.cf)); why != "" {
		fail("%s: %s %s", f.p, f.at, why)
		return claim{}, false
	}
	c := claim{receipt: f.p, file: f.cf.WrittenFile, valuePath: f.cf.WrittenPath, to: f.cf.To.V, object: f.cf.Object}
	if f.u.Source() == repoconfig.SourceKustomize {
		c.object, c.kustomize = "", true
	}
	return c, true
}

// values are the claims of f at its value path: in the values file it
// names or, when it names none, in each file the receipt's render reads.
// It fails every file f's unit may not write (readers are, by file, the
// environments whose units read it) and claims the others.
func (f field) values(pol *policy.Policy, readers map[string][]string, fail func(string, ...any)) []claim {
	files := []string{f.cf.ValuesFile}
	if f.cf.ValuesFile == "" {
		// A receipt without valuesFile claims the path in each
		// file it renders from.
		files = receipt.RenderedFiles(f.r.Spec.Unit.DesiredRender)
	}
	var claims []claim
	for _, file := range files {
		if why := unitWrites(pol, f.u, f.r, f.cf, file, readers[file]); why != "" {
			fail("%s: %s names %s, which %s", f.p, f.at, file, why)
			continue
		}
		claims = append(claims, claim{receipt: f.p, file: file, valuePath: f.cf.ValuePath, to: f.cf.To.V})
	}
	return claims
}

// checkFile checks p, a changed file that is not a receipt under dir: a
// claim of this pull request must name it (named holds every file the
// claims are in), the base config must let a write-back change it, and
// the claims must account for every path it changes, as a kustomize
// claim's overlay file, a manifest of a unit of plain manifests, or a
// values file.
// It returns how many paths changed.
func checkFile(p, dir string, in Input, claims []claim, named map[string]bool, fail func(string, ...any)) int {
	if !named[p] {
		fail(
			"%s: changed, but it is neither a receipt under %s nor a values file a receipt of this pull request names",
			p,
			dir,
		)
		return 0
	}
	if err := in.Config.Writable(p); err != nil {
		fail("%s: %v", p, err)
		return 0
	}
	if slices.ContainsFunc(claims, func(c claim) bool { return c.kustomize && c.file == p }) {
		return checkKustomize(p, in, claims, fail)
	}
	if manifestOf(in.Config, p) {
		return checkManifest(p, in, claims, fail)
	}
	return checkValues(p, in, claims, fail)
}

// unitOf is the base config's unit a receipt is about: the one its
// unit.space names in its environment (the planner writes the unit's name
// there), nil when there is none.
func unitOf(cfg *repoconfig.Config, r *receipt.Receipt) *repoconfig.Unit {
	for i := range cfg.Units {
		if u := &cfg.Units[i]; u.Name == r.Spec.Unit.Space && u.Environment == r.Spec.Environment {
			return u
		}
	}
	return nil
}

// unitWrites says why the receipt r of unit u may not claim cf in file
// (readers are the environments whose units read file), or returns "".
// A receipt authorizes only its own unit's values files: a file of another
// environment's unit, or the chart's own values.yaml, is desired state its
// environment's authority does not reach. A file that units of other
// environments read too (a shared file, as the planner decides it) changes
// only with each reading environment's authority, as the planner edits one
// only when every environment reading it allowed the change: the base
// policy must let the receipt's role accept the same field, at the same
// value path, with the same value, in each of them.
func unitWrites(
	pol *policy.Policy,
	u *repoconfig.Unit,
	r *receipt.Receipt,
	cf receipt.ChangedField,
	file string,
	readers []string,
) string {
	if !slices.Contains(u.ValuesFiles, file) {
		return fmt.Sprintf(
			"is not a values file of unit %s in %s (its files are %s): a receipt authorizes only its own unit's files",
			u.Name,
			u.Environment,
			strings.Join(u.ValuesFiles, ", "),
		)
	}
	for _, env := range readers {
		if env == u.Environment {
			continue
		}
		d := pol.Evaluate(
			policy.Request{Roles: []string{r.Spec.Trigger.Role}, Environment: env, Object: cf.Object, Field: cf.Field,
				ValuePath: cf.ValuePath, Value: cf.To.V, HasValue: cf.To.Set},
		)
		if !d.Allowed {
			return fmt.Sprintf(
				"units of %s read too, and the base policy does not let role %q accept %s at %s = %s in %s: a shared file "+
					"changes only with every reading environment's authority",
				strings.Join(
					without(readers, u.Environment),
					", ",
				),
				r.Spec.Trigger.Role,
				cf.Field,
				cf.ValuePath,
				values.Format(cf.To.V),
				env,
			)
		}
	}
	return ""
}

// sharedBase reports whether cf, a kustomize unit u's write outside its
// overlay, may edit a shared base: the base policy lets the receipt's role
// accept the same field of the same object, to the same value, in every
// other environment with a kustomize unit (the check does not build the
// overlays, so it asks it of each environment that may build the base, as
// the planner asks it of each that does; there must be one, as the
// planner writes an override for a base no other environment builds), and
// the file is in no other unit's overlay.
func sharedBase(in Input, u *repoconfig.Unit, r *receipt.Receipt, cf receipt.ChangedField) bool {
	if u.Source() != repoconfig.SourceKustomize || strings.HasPrefix(cf.WrittenFile, u.Kustomization+"/") ||
		strings.HasPrefix(cf.WrittenPath, "spec.postBuild.substitute.") || !in.Policy.Valid() {
		return false
	}
	others := 0
	for i := range in.Config.Units {
		o := &in.Config.Units[i]
		if o == u || o.Kustomization == "" {
			continue
		}
		if strings.HasPrefix(cf.WrittenFile, o.Kustomization+"/") {
			return false
		}
		if o.Environment == u.Environment {
			continue
		}
		others++
		d := in.Policy.Evaluate(policy.Request{Roles: []string{r.Spec.Trigger.Role}, Environment: o.Environment,
			Object: cf.Object, Field: cf.Field, Value: cf.To.V, HasValue: cf.To.Set})
		if !d.Allowed {
			return false
		}
	}
	return others > 0
}

// fluxVariable reports whether cf writes a postBuild variable of the Flux
// Kustomization that, at the base, applies u's overlay: that Flux
// Kustomization is the environment's own, as the overlay is.
func fluxVariable(u *repoconfig.Unit, cf receipt.ChangedField, base map[string][]byte) bool {
	if !strings.HasPrefix(cf.WrittenPath, "spec.postBuild.substitute.") {
		return false
	}
	f, err := fluxdoc.Find(map[string][]byte{cf.WrittenFile: base[cf.WrittenFile]}, u.Kustomization)
	return err == nil && f != nil && f.File == cf.WrittenFile
}

// writesItself says why cf of a receipt of u may not claim its
// writtenFile, or returns "": a field written as itself is written by a
// unit of plain manifests, at the field's own path, in one of its files.
func writesItself(u *repoconfig.Unit, cf receipt.ChangedField, base map[string][]byte, shared bool) string {
	switch {
	case u.Source() == repoconfig.SourceKustomize:
		if cf.WrittenFile == "" || cf.WrittenPath == "" {
			return fmt.Sprintf(
				"names no writtenFile and writtenPath, but unit %s in %s is a kustomization: a receipt says which file and path "+
					"it writes",
				u.Name,
				u.Environment,
			)
		}
		if !strings.HasPrefix(cf.WrittenFile, u.Kustomization+"/") && !fluxVariable(u, cf, base) && !shared {
			return fmt.Sprintf(
				"names %s, which is outside unit %s's overlay %s: a base other environments may build is written only as an "+
					"override in the unit's own overlay",
				cf.WrittenFile,
				u.Name,
				u.Kustomization,
			)
		}
		return ""
	case u.Source() == repoconfig.SourceStore:
		return writesStore(u, cf)
	case u.Source() != repoconfig.SourceManifests:
		return fmt.Sprintf(
			"names writtenFile %s, but unit %s in %s is not plain manifests: a receipt of its unit writes at a values path",
			cf.WrittenFile,
			u.Name,
			u.Environment,
		)
	case cf.WrittenFile == "":
		return fmt.Sprintf(
			"names no writtenFile, but unit %s in %s is plain manifests: a receipt says which manifest it writes",
			u.Name,
			u.Environment,
		)
	case cf.WrittenPath != cf.Field:
		return fmt.Sprintf(
			"writes %s at %s, but a unit of plain manifests writes a field at its own path",
			cf.Field,
			cf.WrittenPath,
		)
	}
	if got, _ := repoconfig.ManifestsOf(u.Manifests, []string{cf.WrittenFile}); len(got) == 0 {
		return fmt.Sprintf(
			"names %s, which is not a manifest of unit %s in %s (its manifests are %s): a receipt authorizes only its own "+
				"unit's files",
			cf.WrittenFile,
			u.Name,
			u.Environment,
			strings.Join(u.Manifests, ", "),
		)
	}
	return ""
}

// manifestOf reports a file that a unit of plain manifests reads.
func manifestOf(cfg *repoconfig.Config, file string) bool {
	return slices.ContainsFunc(cfg.Units, func(u repoconfig.Unit) bool {
		got, _ := repoconfig.ManifestsOf(u.Manifests, []string{file})
		return len(got) > 0
	})
}

// checkManifest compares a manifest document by document at base and
// head: every changed path of a document must be claimed, with its value
// at the head, by a receipt's field of the object that document applies;
// documents are neither added nor removed. It returns how many paths
// changed.
func checkManifest(p string, in Input, claims []claim, fail func(string, ...any)) int {
	baseData, ok := in.Base[p]
	headData, hok := in.Head[p]
	if !ok || !hok {
		fail("%s: a manifest is added or deleted; a write-back only edits a field of one that exists", p)
		return 0
	}
	base, err := values.ReadDocuments(baseData, values.Options{})
	if err != nil {
		fail("%s: at the base: %v", p, err)
		return 0
	}
	head, err := values.ReadDocuments(headData, values.Options{})
	if err != nil {
		fail("%s: at the head: %v", p, err)
		return 0
	}
	if len(base) != len(head) {
		fail(
			"%s: %d documents at the base, %d at the head; a write-back changes fields of documents, never the documents",
			p,
			len(base),
			len(head),
		)
		return 0
	}
	n := 0
	for i := range base {
		var diffs []string
		diffPaths(nil, base[i], head[i], &diffs)
		n += len(diffs)
		obj := ""
		if m, ok := base[i].(map[string]any); ok {
			obj = plan.ObjectKey(m)
		}
		for _, vp := range diffs {
			mine := claims[:0:0]
			for _, c := range claims {
				if c.object != "" && c.object == obj {
					mine = append(mine, c)
				}
			}
			hm, _ := head[i].(map[string]any)
			if vp == "" || obj == "" || !claimed(p, vp, hm, mine) {
				now := "removed"
				if v, present := repoconfig.Lookup(head[i], vp); present {
					now = "set to " + values.Format(v)
				}
				fail(
					"%s: document %d (%s): %s is %s, but no receipt of this pull request claims that value there",
					p,
					i,
					orWhole(obj),
					orWhole(vp),
					now,
				)
			}
		}
	}
	return n
}

// checkKustomize compares an overlay file document by document at base
// and head: every changed path must be at or under a path a kustomize
// receipt of this pull request claims in the file (the entry or patch it
// wrote). That kustomize builds the claimed values from it is the
// planner's witness, recorded in the receipt's render section.
func checkKustomize(p string, in Input, claims []claim, fail func(string, ...any)) int {
	base, err := values.ReadDocuments(in.Base[p], values.Options{})
	if err != nil {
		fail("%s: at the base: %v", p, err)
		return 0
	}
	head, err := values.ReadDocuments(in.Head[p], values.Options{})
	if err != nil {
		fail("%s: at the head: %v", p, err)
		return 0
	}
	if _, ok := in.Base[p]; !ok || len(base) != len(head) {
		fail(
			"%s: documents added or removed; a write-back changes an entry, a patch or a field of an overlay file that exists",
			p,
		)
		return 0
	}
	n := 0
	for i := range base {
		var diffs []string
		diffPaths(nil, base[i], head[i], &diffs)
		n += len(diffs)
		for _, vp := range diffs {
			if !slices.ContainsFunc(claims, func(c claim) bool {
				return c.kustomize && c.file == p &&
					(vp == c.valuePath || strings.HasPrefix(vp, c.valuePath+".") || strings.HasPrefix(vp, c.valuePath+"["))
			}) {
				fail("%s: document %d: %s changed, but no receipt of this pull request claims a write there", p, i, orWhole(vp))
			}
		}
	}
	return n
}

func orWhole(s string) string {
	if s == "" {
		return "the document"
	}
	return s
}

func without(envs []string, env string) []string {
	return slices.DeleteFunc(slices.Clone(envs), func(e string) bool { return e == env })
}

func isReceipt(p, dir string) bool {
	ext := path.Ext(p)
	return strings.HasPrefix(p, dir) && (ext == ".yaml" || ext == ".yml") && !strings.Contains(p, "..")
}

// checkValues compares a values file as Helm reads it at base and head,
// path by path, and fails every changed path no receipt claims with that
// value. It returns how many paths changed.
func checkValues(p string, in Input, claims []claim, fail func(string, ...any)) int {
	root := in.Config.RootOf(p)
	if _, ok := in.Head[p]; ok && root != nil && !outsideValues(p, in, root, fail) {
		return 0
	}
	base := map[string]any{}
	if data, ok := in.Base[p]; ok {
		t, err := repoconfig.Values(p, data, root)
		if err != nil {
			fail("%s: at the base: %v", p, err)
			return 0
		}
		base = t
	}
	data, ok := in.Head[p]
	if !ok {
		fail("%s: a values file is deleted; no receipt claims that", p)
		return 0
	}
	head, err := repoconfig.Values(p, data, root)
	if err != nil {
		fail("%s: at the head: %v", p, err)
		return 0
	}
	var diffs []string
	diffPaths(nil, base, head, &diffs)
	for _, vp := range diffs {
		if !claimed(p, vp, head, claims) {
			v, present := repoconfig.Lookup(head, vp)
			now := "removed"
			if present {
				now = "set to " + values.Format(v)
			}
			fail("%s: %s is %s, but no receipt of this pull request claims that value there", p, vp, now)
		}
	}
	return len(diffs)
}

// claimed reports whether a receipt claims the changed path vp of file:
// a claim on vp itself or on an enclosing path, whose value at the head
// is the receipt's `to`.
func claimed(file, vp string, head map[string]any, claims []claim) bool {
	for _, c := range claims {
		if c.file != file {
			continue
		}
		if c.valuePath != vp && !strings.HasPrefix(vp, c.valuePath+".") && !strings.HasPrefix(vp, c.valuePath+"[") {
			continue
		}
		if v, ok := repoconfig.Lookup(head, c.valuePath); ok && values.Equal(v, c.to) {
			return true
		}
	}
	return false
}

// outsideValues fails every change of a manifest outside the inline values
// the receipts claim paths in: the other documents, and the rest of the
// document holding the values, must read the same at the base and the head.
func outsideValues(p string, in Input, root *repoconfig.ValuesRoot, fail func(string, ...any)) bool {
	var base []any
	if data, ok := in.Base[p]; ok {
		b, err := repoconfig.OutsideValues(p, data, root)
		if err != nil {
			fail("%s: at the base: %v", p, err)
			return false
		}
		base = b
	}
	head, err := repoconfig.OutsideValues(p, in.Head[p], root)
	if err != nil {
		fail("%s: at the head: %v", p, err)
		return false
	}
	if base == nil {
		fail("%s: a manifest holding inline values is added; a write-back only edits the values of one that exists", p)
		return false
	}
	if len(base) != len(head) {
		fail(
			"%s: %d documents at the base, %d at the head; a write-back changes only the %s of %s",
			p,
			len(base),
			len(head),
			root.Path,
			root.Document,
		)
		return false
	}
	ok := true
	for i := range base {
		var diffs []string
		diffPaths(nil, base[i], head[i], &diffs)
		for _, vp := range diffs {
			ok = false
			if vp == "" {
				vp = "the document"
			}
			fail(
				"%s: document %d: %s changed outside the %s of %s, where no receipt can claim a change",
				p,
				i,
				vp,
				root.Path,
				root.Document,
			)
		}
	}
	return ok
}

// diffPaths appends every value path where a and b differ: leaves that
// changed, keys and list items added or removed (the path of the added or
// removed node itself).
func diffPaths(at []yamlnode.Segment, a, b any, out *[]string) {
	am, aok := a.(map[string]any)
	bm, bok := b.(map[string]any)
	if aok && bok {
		keys := map[string]bool{}
		for k := range am {
			keys[k] = true
		}
		for k := range bm {
			keys[k] = true
		}
		for _, k := range slices.Sorted(maps.Keys(keys)) {
			av, ain := am[k]
			bv, bin := bm[k]
			next := append(slices.Clone(at), yamlnode.Segment{Key: k})
			if ain != bin {
				*out = append(*out, yamlnode.FormatPath(next))
				continue
			}
			diffPaths(next, av, bv, out)
		}
		return
	}
	al, aok := a.([]any)
	bl, bok := b.([]any)
	if aok && bok {
		for i := range max(len(al), len(bl)) {
			next := append(slices.Clone(at), yamlnode.Segment{Index: i, IsIndex: true})
			if i >= len(al) || i >= len(bl) {
				*out = append(*out, yamlnode.FormatPath(next))
				continue
			}
			diffPaths(next, al[i], bl[i], out)
		}
		return
	}
	if !values.Equal(a, b) {
		*out = append(*out, yamlnode.FormatPath(at))
	}
}
