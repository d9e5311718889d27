package plan

import (
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/backflow-dev/backflow/internal/helmvalues"
	"github.com/backflow-dev/backflow/internal/observe"
	"github.com/backflow-dev/backflow/internal/policy"
	"github.com/backflow-dev/backflow/internal/repoconfig"
	"github.com/backflow-dev/backflow/internal/values"
)

// fieldState is one observed field on its way through the planner.
type fieldState struct {
	// f is the observed field, in the plan's observations.
	f *observe.Field
	// structural is f.Structural, or why the planner finds the observer's
	// text to be structure rather than a value.
	structural string
	// valuePath is the values path the field maps to; empty when none.
	// For a unit of manifests it is the field itself (self is set): the
	// path written in the object's document.
	valuePath string
	// self marks a field written as itself, in a document of a unit of
	// manifests, whose policy entry names no valuePath.
	self bool
	// writtenFile and writtenPath are where a kustomize unit's write-back
	// wrote the field, and after the object as built with it.
	writtenFile, writtenPath string
	after                    map[string]any
	// mapWhy says why no value path maps the field.
	mapWhy string
	// repo is the repository's merged desired value at valuePath, valid
	// when present.
	repo    any
	present bool
	// file indexes the unit's values file a write-back edits.
	file int
	// placedWhy says why file is not the file Helm takes the value from
	// (a shared file's override); empty otherwise.
	placedWhy string
	// live and obsDesired are typed like repo (the typing table).
	live       any
	obsDesired any
	authorized bool
	// matches are the entries that authorize the field, one for each
	// eligible role that does (a role or two: a slice, not a map).
	matches []roleMatch
}

// roleMatch is the policy entry that authorizes a field for one role.
type roleMatch struct {
	role string
	m    *policy.Match
}

// match is the entry that authorizes the field for role, or nil.
func (fs *fieldState) match(role string) *policy.Match {
	for _, rm := range fs.matches {
		if rm.role == role {
			return rm.m
		}
	}
	return nil
}

// policyPath is the valuePath the policy's entry names for the field:
// none for a field written as itself.
func (fs *fieldState) policyPath() string {
	if fs.self {
		return ""
	}
	return fs.valuePath
}

// from is the value the change starts from: the repository's when it holds
// the path, else what the observer compared against, else null.
func (fs *fieldState) from() any {
	if fs.present {
		return fs.repo
	}
	if fs.f.HasDesired {
		return fs.obsDesired
	}
	return nil
}

// pending is an allow waiting for its unit's write-back to be built.
type pending struct {
	index int
	obs   *observe.Observation
	// object is the key's text, as its group printed it: renderings, the
	// witness and receipts name objects as text.
	object string
	fields []*fieldState
	role   string
}

// decided is what deciding one object adds to the plan besides the
// decision: the errors, and the allow awaiting its unit's write-back.
type decided struct {
	errs []string
	unit *repoconfig.Unit
	pd   *pending
}

// decide makes the decision for one object, the index-th of the plan,
// applying the outcomes in their order of precedence: unmapped, noop,
// stale, deny, allow. It only reads the planner (every unit's values are
// read before), so objects are decided concurrently; what it adds to the
// plan goes to out.
func (p *planner) decide(g *group, index int, out *decided) Decision {
	o := g.newest
	d := Decision{
		Environment: g.env, Object: g.key, Actor: o.Change.Actor, Attribution: o.Change.Attribution,
		ObservedAt: o.ObservedAt, Reasons: slices.Clone(g.notes), Changes: []Change{},
	}
	secret := o.Object.IsSecret()
	show := func(v any) any {
		if secret {
			return observe.Redacted
		}
		return v
	}
	if g.env == "" {
		d.Outcome = Unmapped
		d.Reasons = append(d.Reasons, g.unmappedWhy)
		d.Changes = p.rawChanges(o, show)
		return d
	}
	u := p.unitFor(g.env, g.object)
	if u == nil {
		d.Outcome = Unmapped
		d.Reasons = append(
			d.Reasons,
			fmt.Sprintf("unmapped: no unit of %s claims %s in environment %s", repoconfig.Path, g.object, g.env),
		)
		d.Changes = p.rawChanges(o, show)
		return d
	}
	d.Unit = u.Name
	uv := p.values[u]
	if uv == nil {
		// readUnits reads every unit an object belongs to; this is not
		// reached, and would read without keeping.
		uv = p.readUnitValues(u)
	}
	if uv.err != nil {
		// Fail closed: without the unit's desired values nothing can be
		// compared, so nothing may be written.
		d.Changes = p.rawChanges(o, show)
		failClosed(&out.errs, &d, uv.err.Error())
		return d
	}
	if uv.kust != nil && uv.kust.built.Objects[g.object] == nil {
		d.Changes = p.rawChanges(o, show)
		failClosed(
			&out.errs,
			&d,
			fmt.Sprintf("unit %s (%s): kustomize's build of %s makes no %s", u.Name, u.Environment, uv.kust.dir, g.object),
		)
		return d
	}
	if uv.docs != nil {
		if why := uv.docs.missing(g.key); why != "" {
			// Fail closed: without the object's document nothing can be
			// compared or written.
			d.Changes = p.rawChanges(o, show)
			failClosed(&out.errs, &d, fmt.Sprintf("unit %s (%s): %s", u.Name, u.Environment, why))
			return d
		}
	}
	o, found := p.narrow(o, g, uv)
	held, fields := found.held, found.fields
	d.Actor, d.Attribution = o.Change.Actor, o.Change.Attribution
	d.Reasons = append(d.Reasons, found.restored...)
	d.Changes = make([]Change, 0, len(fields))
	for _, fs := range fields {
		c := Change{Object: g.key, Field: fs.f.Path, ValuePath: fs.policyPath(), From: show(fs.from()), To: show(fs.live)}
		if fs.valuePath != "" {
			c.ValuesFile = uv.files[fs.file].path
		}
		d.Changes = append(d.Changes, c)
	}
	d.Reasons = append(d.Reasons, revertedReasons(fields, show)...)
	if len(fields) == 0 {
		d.Outcome = Noop
		if len(o.Fields) == 0 {
			d.Reasons = append(d.Reasons, "noop: the object was observed matching desired")
		} else {
			d.Reasons = append(d.Reasons, "noop: every observed field equals desired, is ignored (ignoreFields) "+
				"or was written by an ignored manager (ignoreManagers)")
		}
		return d
	}
	anchorWhy := p.anchorReason(o, u.Name, uv)
	if stale := p.staleReasons(fields, uv, show); len(stale) > 0 {
		d.Outcome = Stale
		d.Reasons = append(d.Reasons, stale...)
		return d
	}
	reasons, role := p.authorize(o, g, fields, held, secret)
	if anchorWhy != "" {
		reasons, role = append(reasons, anchorWhy), ""
	}
	for i, fs := range fields {
		d.Changes[i].Authorized = fs.authorized
	}
	if len(reasons) > 0 {
		d.Outcome = Deny
		d.Reasons = append(d.Reasons, reasons...)
		return d
	}
	d.Outcome = Allow
	d.Role = role
	// Only an identity the API server authenticated merges unreviewed: the
	// audit log's, or an admission record the watch confirmed.
	d.AutoMerge = o.Change.Attribution == observe.AttributionAuditLog ||
		o.Change.Attribution == observe.AttributionAdmission
	for _, fs := range fields {
		if !fs.match(role).AutoMerge {
			d.AutoMerge = false
		}
	}
	d.Reasons = append(d.Reasons, fmt.Sprintf("allow: role %s of %s authorizes every changed field", role, o.Change.Actor))
	out.unit, out.pd = u, &pending{index: index, obs: o, object: g.object, fields: fields, role: role}
	return d
}

// unchanged reports a field that is no change: live equals the desired
// value (the repository's when it holds the path, else the observer's), or
// live is null where the repository holds nothing.
func (fs *fieldState) unchanged() bool {
	if fs.structural != "" || fs.f.Ambiguous != "" {
		// Structure is never a value that could equal desired, and what
		// an ambiguous text holds is not known.
		return false
	}
	if fs.f.Removed {
		// A field absent live is a change only when desired has a value.
		return !fs.present && (!fs.f.HasDesired || fs.obsDesired == nil)
	}
	if fs.present {
		return values.Equal(fs.live, fs.repo)
	}
	if fs.live == nil {
		// A live null for a key the values file does not hold: writing
		// null -> null would change nothing.
		return true
	}
	return fs.f.HasDesired && values.Equal(fs.live, fs.obsDesired)
}

// fieldState maps a field to its value path and reads the values it is
// compared with, into fs.
func (p *planner) fieldState(fs *fieldState, f *observe.Field, g *group, uv *unitValues, held []string) {
	fs.f, fs.structural = f, f.Structural
	fs.valuePath, fs.mapWhy = p.mapField(g.object, g.env, f.Path, held)
	p.mapSelf(fs, g, uv)
	if fs.valuePath != "" {
		switch {
		case uv.kust != nil:
			fs.file = 0
			fs.repo, fs.present = p.lookup(uv.kust.built.Objects[g.object], fs.valuePath)
		case uv.docs != nil:
			fs.file = uv.docs.index[g.key]
			fs.repo, fs.present = p.lookup(uv.files[fs.file].tree, fs.valuePath)
		default:
			fs.repo, fs.present = p.lookup(uv.merged, fs.valuePath)
			fs.file = p.editedFile(uv, fs.valuePath)
		}
	}
	if f.Ambiguous != "" {
		// Nothing live to type: desired is still what the change starts from.
		if f.HasDesired {
			fs.obsDesired = helmvalues.Plain(f.DesiredLike(fs.repo))
		}
		return
	}
	if f.Textual && fs.structural == "" && fs.present {
		switch fs.repo.(type) {
		case map[string]any, []any:
			// An observer's text where the values file holds a map or a
			// list: a count or a rendering, never the value to write.
			fs.structural = fmt.Sprintf("%s holds a %s at %s; the observer's text %q is structure, not a value",
				uv.files[fs.file].path, kindOf(fs.repo), fs.valuePath, textOf(*f))
		}
	}
	if fs.structural != "" {
		// Neither side is a value: nothing is typed, nothing compared.
		return
	}
	if !f.Removed {
		fs.live = helmvalues.Plain(f.LiveLike(fs.repo))
	}
	if f.HasDesired {
		fs.obsDesired = helmvalues.Plain(f.DesiredLike(fs.repo))
	}
}

// mapSelf applies the unit's store to the entry mapField chose: a unit of
// manifests writes the field itself, at the same path of the object's
// document, and its entries name no valuePath; a unit of values files
// needs one.
func (p *planner) mapSelf(fs *fieldState, g *group, uv *unitValues) {
	chose := fs.valuePath != "" || fs.mapWhy == ""
	self := uv.docs != nil || uv.kust != nil
	switch {
	case !chose:
	case self && fs.valuePath == "":
		fs.valuePath, fs.self = fs.f.Path, true
	case self:
		fs.mapWhy = fmt.Sprintf(
			"field-not-accepted: %s: the mayAccept entry for %s names valuePath %s, but the object's unit is plain manifests "+
				"or a kustomization, whose fields are written as themselves: the entry must name no valuePath",
			fs.f.Path,
			g.object,
			fs.valuePath,
		)
		fs.valuePath = ""
	case fs.valuePath == "":
		fs.mapWhy = fmt.Sprintf(
			"field-not-accepted: %s: the mayAccept entry for %s names no valuePath, but the object's unit reads values files: "+
				"the entry must say which values path the field is written at",
			fs.f.Path,
			g.object,
		)
	}
}

func kindOf(v any) string {
	if _, ok := v.([]any); ok {
		return "list"
	}
	return "map"
}

// textOf is the observer's live text, or its desired text when live is absent.
func textOf(f observe.Field) any {
	if !f.Removed {
		return f.Live
	}
	return f.Desired
}

// mapField finds the value path a field maps to on object: the valuePath of
// a mayAccept entry for that field that lists the object. Entries of a role
// the actor holds come first, then entries that list the environment, then
// file order. A field no entry maps is unauthorized.
func (p *planner) mapField(object, env, field string, held []string) (string, string) {
	return mapEntries(p.entries[field], object, env, field, held)
}

// MapField is the value path the planner maps field of object to in env
// for an actor holding the roles held, under pol (mapField without a
// plan), and why none when it maps none: a check of a receipt it did not
// make asks it which path the receipt's field is written at.
func MapField(pol *policy.Policy, object, env, field string, held []string) (valuePath, why string) {
	var es []entry
	if pol != nil {
		for ri := range pol.Rules {
			r := &pol.Rules[ri]
			for ai := range r.MayAccept {
				if a := &r.MayAccept[ai]; a.Field == field {
					es = append(es, entry{role: r.Role, a: a})
				}
			}
		}
	}
	return mapEntries(es, object, env, field, held)
}

// mapEntries is mapField over es, the policy's entries for field.
func mapEntries(es []entry, object, env, field string, held []string) (string, string) {
	best, bestRank := -1, 0
	for i, e := range es {
		if !listsObject(e.a.Objects, object) {
			continue
		}
		rank := 0
		if !slices.Contains(held, e.role) {
			rank += 2
		}
		if !listsEnvironment(e.a.Environments, env) {
			rank++
		}
		if best < 0 || rank < bestRank {
			best, bestRank = i, rank
		}
	}
	if best >= 0 {
		return es[best].a.ValuePath, ""
	}
	if len(es) > 0 {
		var objs []string
		for _, e := range es {
			objs = append(objs, e.a.Objects...)
		}
		slices.Sort(objs)
		objs = slices.Compact(objs)
		return "", fmt.Sprintf(
			"object-not-listed: %s: no mayAccept entry for this field lists %s (they list %s)",
			field,
			object,
			strings.Join(objs, ", "),
		)
	}
	return "", fmt.Sprintf("field-not-accepted: %s: no mayAccept entry maps this field to a value path", field)
}

func listsObject(patterns []string, object string) bool {
	return slices.ContainsFunc(patterns, func(p string) bool { return policy.MatchKey(p, object) })
}

func listsEnvironment(patterns []string, env string) bool {
	// An environment name has no `|`, so it is one segment of an object
	// glob: `*` matches any run of characters.
	return slices.ContainsFunc(patterns, func(p string) bool { return policy.MatchKey(p, env) })
}

// staleReasons lists the fields whose observer compared against a desired
// value the repository no longer holds.
func (p *planner) staleReasons(fields []*fieldState, uv *unitValues, show func(any) any) []string {
	var out []string
	for _, fs := range fields {
		if !fs.present || !fs.f.HasDesired || fs.structural != "" || fs.f.DesiredAgrees(fs.repo) {
			continue
		}
		out = append(
			out,
			fmt.Sprintf(
				"stale: %s: the observer compared against desired %s, but %s holds %s at %s%s; desired moved since, look again",
				fs.f.Path,
				observedDesired(fs, show),
				uv.files[fs.file].path,
				values.Format(show(fs.repo)),
				fs.valuePath,
				p.atCommit(),
			),
		)
	}
	return out
}

// observedDesired is the desired value the observer compared against, as
// a stale reason shows it: cub-scout's placeholder is named as one.
func observedDesired(fs *fieldState, show func(any) any) string {
	if fs.f.DesiredPlaceholder() {
		return `"-" (cub-scout's text for absent, null, "" or "-")`
	}
	return values.Format(show(fs.obsDesired))
}

func (p *planner) atCommit() string {
	if p.snap.Commit == "" {
		return ""
	}
	return " at commit " + p.snap.Commit
}

// authorize decides every field and returns every reason to deny, or the
// role that authorizes every field.
func (p *planner) authorize(
	o *observe.Observation,
	g *group,
	fields []*fieldState,
	held []string,
	secret bool,
) ([]string, string) {
	// A set keeps the de-duplication linear: an observation with 100,000
	// unmapped fields made it quadratic.
	// The set is made with the first reason: most objects have none.
	var reasons []string
	var seen map[string]bool
	add := func(format string, a ...any) {
		r := fmt.Sprintf(format, a...)
		if seen == nil {
			seen = map[string]bool{}
		}
		if !seen[r] {
			seen[r] = true
			reasons = append(reasons, r)
		}
	}
	if secret {
		add("secret: %s is a Secret: Secrets are never written back and their values are redacted", g.object)
	}
	eligible := p.eligibleRoles(o, held, add)
	p.authorizeFields(g, fields, eligible, held, secret, add)
	boundsReason(g, fields, add)
	p.clusterAgreement(g, fields, add)
	if len(reasons) > 0 {
		return reasons, ""
	}
	if r, ok := singleRole(eligible, fields); ok {
		return nil, r
	}
	add(
		"no-single-role: every changed field is authorized, but no one role of %s authorizes them all; a receipt names one "+
			"role",
		o.Change.Actor,
	)
	return reasons, ""
}

// eligibleRoles are the roles of held that accept the attribution of o's
// change, in held's order. It adds the reasons the actor authorizes
// nothing: nobody is known to have made the change, or the attribution is
// unknown; the actor holds no role; a role held does not accept the
// attribution.
func (p *planner) eligibleRoles(o *observe.Observation, held []string, add func(string, ...any)) []string {
	ch := o.Change
	switch {
	case ch.Actor == "" && ch.Evidence != "":
		add("actor-unknown: nobody is known to have made the change (%s)", ch.Evidence)
	case ch.Actor == "":
		add("actor-unknown: nobody is known to have made the change (the %s observation names no actor)", sourceName(o))
	case ch.Attribution == observe.AttributionUnknown:
		add("actor-unknown: %s is named, but the attribution is unknown", ch.Actor)
	}
	if ch.Actor != "" && len(held) == 0 {
		add("no-role: %s (groups [%s]) holds no role in %s", ch.Actor, strings.Join(ch.Groups, ", "), repoconfig.Path)
	}
	var eligible []string
	for _, r := range held {
		role := p.cfg.Roles[r]
		if role.Accepts(ch.Attribution) {
			eligible = append(eligible, r)
			continue
		}
		if ch.Attribution != observe.AttributionUnknown {
			accepted := role.Attribution
			if accepted == nil {
				accepted = repoconfig.DefaultAttribution
			}
			add("attribution-not-accepted: role %s accepts attribution [%s]; the change by %s is attributed %s%s",
				r, joinAttr(accepted), ch.Actor, ch.Attribution, claimedNote(ch))
		}
	}
	return eligible
}

// authorizeFields asks the policy, for each field it may be asked about,
// which eligible role authorizes the field's live value in g: each
// eligible role alone, in turn, so that every field records the entry of
// every role that authorizes it (fs.matches) and whether one does
// (fs.authorized). A field no eligible role authorizes adds the policy's
// reasons for the roles held, and a field the policy is not asked about
// adds why not.
func (p *planner) authorizeFields(
	g *group,
	fields []*fieldState,
	eligible, held []string,
	secret bool,
	add func(string, ...any),
) {
	one := make([]string, 1) // each eligible role alone, in turn
	for _, fs := range fields {
		fs.matches = nil
		if beyondPolicy(fs, secret, add) {
			continue
		}
		req := policy.Request{
			Environment: g.env,
			Object:      g.object,
			Field:       fs.f.Path,
			ValuePath:   fs.policyPath(),
			Value:       fs.live,
			HasValue:    true,
		}
		for _, r := range eligible {
			one[0] = r
			req.Roles = one
			if dec := p.snap.Policy.Evaluate(req); dec.Allowed {
				fs.matches = append(fs.matches, roleMatch{r, dec.Match})
			}
		}
		fs.authorized = len(fs.matches) > 0
		if fs.authorized || len(held) == 0 {
			// With no role held, no-role says it all.
			continue
		}
		req.Roles = held
		if !p.snap.Policy.Valid() {
			add("invalid-policy: %s is invalid, so it authorizes nothing", p.snap.PolicyPath)
			continue
		}
		for _, r := range p.snap.Policy.Evaluate(req).Reasons {
			add("%s: %s: %s", r.Kind, fs.f.Path, r.Message)
		}
	}
}

// beyondPolicy reports a field the policy is not asked about, adding why:
// a change of structure, an ambiguous text, no value path, or a removal.
// A Secret's fields are not asked about either; the secret reason says why
// for all of them.
func beyondPolicy(fs *fieldState, secret bool, add func(string, ...any)) bool {
	switch {
	case fs.structural != "":
		add("structural: %s: %s; no value path can accept a change of structure", fs.f.Path, fs.structural)
	case fs.f.Ambiguous != "":
		add(
			"ambiguous: %s: %s: neither a removal nor a value to write; a source that reads the object itself (the Kubernetes "+
				"watch, observations.<cluster>[].kube) can settle it",
			fs.f.Path,
			fs.f.Ambiguous,
		)
	case fs.valuePath == "":
		add("%s", fs.mapWhy)
	case secret:
		// The secret reason says why, once for the object.
	case fs.f.Removed:
		add("field-removed: %s: the field is absent live; removals are not written back", fs.f.Path)
	default:
		return false
	}
	return true
}

// boundsReason adds the bounds reason when a field of g's change is
// unauthorized, naming every such field: bounds are per object, so one
// unauthorized field denies the whole change, the authorized fields with
// it.
func boundsReason(g *group, fields []*fieldState, add func(string, ...any)) {
	var unauthorized []string
	for _, fs := range fields {
		if !fs.authorized {
			unauthorized = append(unauthorized, g.object+" "+fs.f.Path)
		}
	}
	if len(unauthorized) > 0 {
		add(
			"bounds: the object's change is denied as a whole; unauthorized fields changed: %s",
			strings.Join(unauthorized, ", "),
		)
	}
}

// singleRole is the first of the eligible roles that authorizes every
// field, the one a receipt names; false when none does.
func singleRole(eligible []string, fields []*fieldState) (string, bool) {
	for _, r := range eligible {
		all := true
		for _, fs := range fields {
			if fs.match(r) == nil {
				all = false
				break
			}
		}
		if all {
			return r, true
		}
	}
	return "", false
}

// clusterAgreement checks, when the environment requires it, that every one
// of its clusters was observed with the same live value for every changed
// field. A cluster not observed, or observed matching desired, disagrees.
func (p *planner) clusterAgreement(g *group, fields []*fieldState, add func(string, ...any)) {
	if !p.cfg.RequiresClusterAgreement(g.env) {
		return
	}
	secret := g.newest.Object.IsSecret()
	for _, cluster := range p.cfg.Environments[g.env].Clusters {
		o := g.of(cluster)
		if o == nil {
			add("clusters-disagree: requireClusterAgreement: cluster %s of %s has not been observed", cluster, g.env)
			continue
		}
		for _, fs := range fields {
			i := slices.IndexFunc(o.Fields, func(f observe.Field) bool { return f.Path == fs.f.Path })
			switch {
			case i < 0:
				add(
					"clusters-disagree: requireClusterAgreement: %s on cluster %s was observed matching desired",
					fs.f.Path,
					cluster,
				)
			case o.Fields[i].Removed != fs.f.Removed || !values.Equal(helmvalues.Plain(o.Fields[i].LiveLike(fs.repo)), fs.live):
				if secret {
					add("clusters-disagree: requireClusterAgreement: %s differs on cluster %s", fs.f.Path, cluster)
				} else {
					add("clusters-disagree: requireClusterAgreement: %s is %s on cluster %s but %s on %s",
						fs.f.Path, values.Format(helmvalues.Plain(o.Fields[i].LiveLike(fs.repo))), cluster,
						values.Format(fs.live), g.newest.Cluster)
				}
			}
		}
	}
}

func joinAttr(as []observe.Attribution) string {
	s := make([]string, len(as))
	for i, a := range as {
		s[i] = string(a)
	}
	return strings.Join(s, ", ")
}

func claimedNote(ch observe.Change) string {
	if ch.Claimed != "" && ch.Claimed != ch.Attribution {
		return fmt.Sprintf(" (claimed %s, lowered to its source's trust ceiling)", ch.Claimed)
	}
	return ""
}

func sourceName(o *observe.Observation) string {
	if o.Source == "" {
		return observe.SourceFile
	}
	return o.Source
}

// rawChanges lists an observation's fields when no value path can be known
// (unmapped, or the unit's values unreadable): ignored fields and fields the
// observer itself saw equal to desired are dropped.
func (p *planner) rawChanges(o *observe.Observation, show func(any) any) []Change {
	out := []Change{}
	fields := slices.Clone(o.Fields)
	slices.SortStableFunc(fields, func(a, b observe.Field) int { return strings.Compare(a.Path, b.Path) })
	for _, f := range fields {
		if p.ignoresField(f.Path) || p.cfg.IgnoresManager(f.Manager) {
			continue
		}
		var live, desired any
		if !f.Removed {
			live = helmvalues.Plain(f.LiveLike(nil))
		}
		if f.HasDesired {
			desired = helmvalues.Plain(f.DesiredLike(nil))
			if !f.Removed && f.Ambiguous == "" && values.Equal(live, desired) {
				continue
			}
		}
		out = append(out, Change{Object: o.Object, Field: f.Path, From: show(desired), To: show(live)})
	}
	return out
}

// failClosed turns d into a deny because the planner could not do its job
// for it, and records the error.
func (p *planner) failClosed(d *Decision, msg string) {
	failClosed(&p.res.Errors, d, msg)
}

// failClosed turns d into a deny for msg and adds the error to errs.
func failClosed(errs *[]string, d *Decision, msg string) {
	denyDecision(d, "error: "+msg)
	where := d.Object.String()
	if d.Environment != "" {
		where = d.Environment + " " + where
	}
	*errs = append(*errs, where+": "+msg)
}

// denyDecision turns d, allowed so far, into a deny for reason.
func denyDecision(d *Decision, reason string) {
	d.Outcome = Deny
	d.AutoMerge = false
	d.WriteBack = ""
	d.Reported = false
	d.Receipt = nil
	d.ReceiptPath = ""
	d.Role = ""
	d.Reasons = slices.DeleteFunc(d.Reasons, func(r string) bool {
		return strings.HasPrefix(r, "allow:") || strings.HasPrefix(r, "report-only:")
	})
	d.Reasons = append(d.Reasons, reason)
}

// anchorReason cross-checks a cub-scout receipt's desired-state anchor
// against the unit: when it names a path, one of the unit's values files
// must be at or under it. A receipt anchored elsewhere compared live with
// another desired state, so nothing it says may be written to this unit.
func (p *planner) anchorReason(o *observe.Observation, unit string, uv *unitValues) string {
	a := o.Evidence.Anchor
	if a == nil || (a.Path == "" && a.File == "") {
		return ""
	}
	var files []string
	for _, f := range uv.files {
		files = append(files, f.path)
		if a.File != "" && path.Clean(a.File) == path.Clean(f.path) {
			return ""
		}
		if a.File == "" {
			dir := path.Clean(a.Path)
			if dir == "." || path.Clean(f.path) == dir || strings.HasPrefix(path.Clean(f.path), dir+"/") {
				return ""
			}
		}
	}
	return fmt.Sprintf(
		"anchor: the cub-scout receipt compared live with desired state at %s, which holds none of unit %s's values files "+
			"(%s)",
		a.String(),
		unit,
		strings.Join(files, ", "),
	)
}
