package observe

import (
	"fmt"
	"strings"
	"time"

	"github.com/backflow-dev/backflow/internal/yamlnode"
)

// managedFieldsSlack allows for managedFields times, which have whole
// seconds, against audit times, which have microseconds.
const managedFieldsSlack = time.Second

// Attribute returns o with each changed field attributed to who set it: the
// authenticated user of the latest successful write, among events, that set
// the field before o was observed (attribution audit-log), when the value
// that write set is the live value observed (see Field.Holds); a write
// that set another value, or does not say what it set, leaves the field
// unknown, and the observation's Change unknown with the mismatch as its
// evidence, whatever the source claimed. Else, when the
// field's managedFields manager and time are known, that manager
// (managed-fields); else unknown. When the field's manager is known, only
// writes recorded under that manager count, since they are the ones
// managedFields says last set it.
//
// The observation's Change becomes the fields' common actor at the weakest
// of their levels, with the intent a person set in the same change; fields
// changed by different actors, or by nobody known, leave it unknown (the
// planner then denies, fail closed). A Change the source already
// established at a higher level than the join reaches is kept. Fields the
// GitOps controller's forward apply wrote back (cause forward-apply) are
// not a person's change and do not count. events may hold events of other
// objects; o is not modified.
func Attribute(o Observation, events []AuditEvent) Observation {
	return AttributeLive(o, events, nil, nil)
}

// AttributeAll is Attribute with confirmed admission records too: a field
// whose live value a record of the same cluster set is attributed to the
// record's user (attribution admission). Where an audit event and a record
// both attribute a field they must name the same user, and so must records
// confirmed by the same write (a forged review beside the real one), or
// the field is unknown and its evidence names the disagreement. Where they
// agree, the audit event's level holds.
func AttributeAll(o Observation, events []AuditEvent, records []AdmissionRecord) Observation {
	return AttributeLive(o, events, records, nil)
}

// AttributeLive is AttributeAll with the live object, when the caller has
// it, to tell which list item a strategic merge patch's merge key names.
func AttributeLive(o Observation, events []AuditEvent, records []AdmissionRecord, live map[string]any) Observation {
	group, _ := SplitAPIVersion(o.Object.APIVersion)
	resource := kindResource(o.Object.Kind)
	var mine []*AuditEvent
	for i := range events {
		e := &events[i]
		if e.Object.Group == group && e.Object.Resource == resource && e.Object.Namespace == o.Object.Namespace &&
			e.Object.Name == o.Object.Name {
			mine = append(mine, e)
		}
	}
	var reviews []*AdmissionRecord
	for i := range records {
		r := &records[i]
		if r.Cluster == o.Cluster && r.Object.Group == group && r.Object.Resource == resource &&
			r.Object.Namespace == o.Object.Namespace && r.Object.Name == o.Object.Name && !r.Received.After(o.ObservedAt) {
			reviews = append(reviews, r)
		}
	}
	fields := make([]Field, len(o.Fields))
	copy(fields, o.Fields)
	o.Fields = fields
	var people []*Change
	var mismatches []string
	for i := range o.Fields {
		f := &o.Fields[i]
		by, mismatch := attributeField(*f, o.ObservedAt, mine, reviews, live)
		f.By = &by
		if f.Cause == CauseForwardApply {
			// The controller's write back to desired is nobody's change: an
			// audit event of it that has not arrived yet says nothing of the
			// fields people changed.
			continue
		}
		if mismatch {
			mismatches = append(mismatches, by.Evidence)
		}
		people = append(people, f.By)
	}
	if len(mismatches) > 0 {
		// The recorded writes contradict the observed values: whatever the
		// source claimed, nobody is known to have set them.
		o.Change = Change{
			Attribution: AttributionUnknown,
			Claimed:     o.Change.Claimed,
			Evidence:    strings.Join(mismatches, "; "),
		}
		return o
	}
	o.Change = joinChange(o.Change, people, o.Fields)
	return o
}

// ChangeOf is the change of the fields of o that keep selects, joined as
// AttributeLive joins a whole observation's, from the By it gave each
// field: their common actor at the weakest of their levels, or unknown. The
// planner asks it for the fields that still differ from desired, so that a
// field a person set to the value desired now holds is nobody's change.
// It never trusts more than the whole observation: when the recorded writes
// of any field of o contradict it (see contradicts), selected or not, or no
// selected field was attributed, o.Change is returned as it is; a Change
// the source established at a higher level than the join reaches is kept.
func ChangeOf(o Observation, keep func(*Field) bool) Change {
	var people []*Change
	var fields []Field
	for i := range o.Fields {
		f := &o.Fields[i]
		if f.By == nil || f.Cause == CauseForwardApply {
			continue
		}
		if contradicts(f.By) {
			return o.Change
		}
		if keep(f) {
			people = append(people, f.By)
			fields = append(fields, *f)
		}
	}
	return joinChange(o.Change, people, fields)
}

// contradicts reports a field's change that the records contradict: an
// unknown change with evidence is a recorded write of another value, a
// write that does not say what it set, or attributions that disagree
// (attributeField); a field nobody recorded has no evidence.
func contradicts(c *Change) bool {
	return c.Attribution == AttributionUnknown && c.Evidence != ""
}

// joinChange is cur, the change a source established, replaced by the
// common change of people, the changes of fields, unless cur is at a
// higher level.
func joinChange(cur Change, people []*Change, fields []Field) Change {
	if len(people) == 0 {
		return cur
	}
	joined := commonChange(people, fields)
	if joined.Attribution.Rank() < cur.Attribution.Rank() {
		return cur
	}
	if joined.Intent == "" && joined.Actor == cur.Actor {
		joined.Intent = cur.Intent
	}
	return joined
}

// CauseForwardApply is the cause of a field the GitOps controller's forward
// apply wrote back to desired after a live change.
const CauseForwardApply = "forward-apply"

func attributeField(
	f Field,
	observedAt time.Time,
	events []*AuditEvent,
	reviews []*AdmissionRecord,
	live map[string]any,
) (c Change, mismatch bool) {
	segs, err := fieldSegs(f.Path)
	var best *AuditEvent
	var admitted []*AdmissionRecord
	if err == nil {
		for _, e := range events {
			if e.Time.After(observedAt) || !setsField(e, f, segs, live) {
				continue
			}
			if best == nil || !e.Time.Before(best.Time) {
				best = e
			}
		}
		admitted = admittedField(f, segs, reviews)
	}
	if len(admitted) > 0 {
		// The audit event counts beside the records only when it set the
		// value observed live: then both say who made the same change.
		var agreeing *AuditEvent
		if best != nil {
			if w, known := best.writtenAt(segs, live); known && f.Holds(w) {
				agreeing = best
			}
		}
		return admissionChange(f, agreeing, admitted), false
	}
	if best != nil {
		// The latest write explains the field only when it set the value
		// observed live; a value nobody recorded writing is nobody's.
		w, known := best.writtenAt(segs, live)
		if !known || !f.Holds(w) {
			return Change{
				Attribution: AttributionUnknown,
				Claimed:     AttributionUnknown,
				Evidence:    valueMismatch(f, best, w, known),
			}, true
		}
		c = Change{Actor: best.User, Groups: append([]string(nil), best.Groups...), Attribution: AttributionAuditLog,
			Claimed: AttributionAuditLog, At: best.Time, Evidence: auditEvidence(best)}
		if best.HasIntent {
			c.Intent = best.Intent
		}
		return c, false
	}
	if f.Manager != "" && !f.ManagedAt.IsZero() {
		return Change{
			Actor:       f.Manager,
			Attribution: AttributionManagedFields,
			Claimed:     AttributionManagedFields,
			At:          f.ManagedAt,
			Evidence: fmt.Sprintf(
				"managedFields: %s last written by manager %s at %s (no audit event of the write)",
				f.Path,
				f.Manager,
				f.ManagedAt.UTC().Format(time.RFC3339),
			),
		}, false
	}
	return Change{Attribution: AttributionUnknown, Claimed: AttributionUnknown}, false
}

// writtenAt is what e's request body set at the field.
func (e *AuditEvent) writtenAt(segs []yamlnode.Segment, live map[string]any) (Written, bool) {
	if !e.HasBody {
		return Written{}, false
	}
	verb := e.Verb
	if verb != "patch" {
		verb = "update"
	}
	return writtenAt(verb, e.body, segs, live)
}

// valueMismatch says why the latest write of a field does not explain it.
func valueMismatch(f Field, e *AuditEvent, w Written, known bool) string {
	live := fmt.Sprint(f.Live)
	if f.Removed {
		live = "(removed)"
	}
	if !known {
		return fmt.Sprintf(
			"value not attributed: %s is %s live, and audit event %s (%s by %s) does not record what it set there",
			f.Path,
			live,
			e.AuditID,
			e.Verb,
			e.User,
		)
	}
	return fmt.Sprintf("value mismatch: %s is %s live, but the latest audited write, event %s (%s by %s), set %s",
		f.Path, live, e.AuditID, e.Verb, e.User, w)
}

// admittedField returns the confirmed records that set f to its live value
// in the latest write the watch confirmed for it: records confirmed at the
// same resourceVersion are about the same change.
func admittedField(f Field, segs []yamlnode.Segment, reviews []*AdmissionRecord) []*AdmissionRecord {
	var out []*AdmissionRecord
	for _, r := range reviews {
		if !recordSets(r, f, segs) {
			continue
		}
		switch {
		case len(out) == 0 || newerVersion(r.ConfirmedVersion, out[0].ConfirmedVersion):
			out = []*AdmissionRecord{r}
		case r.ConfirmedVersion == out[0].ConfirmedVersion:
			out = append(out, r)
		}
	}
	return out
}

// recordSets reports whether a confirmed field of r covers f and set it to
// f's live value (or removed it where f is removed).
func recordSets(r *AdmissionRecord, f Field, segs []yamlnode.Segment) bool {
	for _, af := range r.Fields {
		if !af.Confirmed || !covers(af.segs, segs) {
			continue
		}
		if af.Removed {
			if len(af.segs) == len(segs) && f.Holds(Written{Removed: true}) {
				return true
			}
			continue
		}
		v, ok := valueAt(af.Value, segs[len(af.segs):])
		if f.Holds(Written{Value: v, Removed: !ok}) {
			return true
		}
	}
	return false
}

// admissionChange is the change of a field that confirmed records set: their
// user when they, and the audit event when there is one, all name the same
// user; unknown, naming the disagreement, when they do not.
func admissionChange(f Field, event *AuditEvent, records []*AdmissionRecord) Change {
	first := records[0]
	for _, r := range records {
		if r.Disputed != "" {
			// Records of one write that disagree: nobody is known to have
			// made it, whoever the newest says.
			return Change{Attribution: AttributionUnknown, Claimed: AttributionUnknown,
				Evidence: fmt.Sprintf("the attributions of %s disagree: %s", f.Path, r.Disputed)}
		}
	}
	var claims []string
	agree := true
	for _, r := range records {
		claims = append(claims, fmt.Sprintf("admission review %s says %s", r.ReviewUID, r.User))
		if r.User != first.User {
			agree = false
		}
	}
	if event != nil {
		claims = append(claims, fmt.Sprintf("audit event %s says %s", event.AuditID, event.User))
		if event.User != first.User {
			agree = false
		}
	}
	if !agree {
		return Change{Attribution: AttributionUnknown, Claimed: AttributionUnknown,
			Evidence: fmt.Sprintf("the attributions of %s disagree: %s", f.Path, strings.Join(claims, "; "))}
	}
	var evidence []string
	for _, r := range records {
		evidence = append(evidence, admissionEvidence(r))
	}
	c := Change{Actor: first.User, Groups: append([]string(nil), first.Groups...), Attribution: AttributionAdmission,
		Claimed: AttributionAdmission, At: first.Received}
	if first.HasIntent {
		c.Intent = first.Intent
	}
	if event != nil {
		// The audit log names the same user: its level holds.
		c.Attribution, c.Claimed, c.At = AttributionAuditLog, AttributionAuditLog, event.Time
		c.Groups = append([]string(nil), event.Groups...)
		evidence = append([]string{auditEvidence(event)}, evidence...)
		if event.HasIntent {
			c.Intent = event.Intent
		}
	}
	c.Evidence = strings.Join(evidence, "; ")
	return c
}

// setsField reports whether event e wrote field f.
func setsField(e *AuditEvent, f Field, segs []yamlnode.Segment, live map[string]any) bool {
	if f.Manager != "" {
		if e.Manager != f.Manager {
			return false
		}
		if f.Subresource != "" && e.Object.Subresource != f.Subresource {
			return false
		}
		if !f.ManagedAt.IsZero() && e.Time.After(f.ManagedAt.Add(managedFieldsSlack)) {
			return false
		}
	}
	if !e.HasBody {
		// A Metadata-level event does not say which fields it set; only
		// managedFields naming its manager ties it to the field.
		return f.Manager != "" && !f.ManagedAt.IsZero()
	}
	for _, p := range e.sets {
		if (covers(p, segs) || covers(segs, p)) && mergeKeysHold(p, segs, live) {
			return true
		}
	}
	return false
}

// mergeKeysHold checks, against the live object when there is one, that
// each list item a strategic merge patch named by its merge key is the
// item at the field's index. Without the live object an item named by key
// matches any index.
func mergeKeysHold(p, field []yamlnode.Segment, live map[string]any) bool {
	if live == nil {
		return true
	}
	var cur any = live
	for i := 0; i < len(p) && i < len(field); i++ {
		s := field[i]
		if p[i].AnyIndex && p[i].MergeKey != "" && s.IsIndex {
			list, ok := cur.([]any)
			if !ok || s.Index >= len(list) {
				return false
			}
			item, _ := list[s.Index].(map[string]any)
			if fmt.Sprint(item[p[i].MergeKey]) != p[i].MergeValue {
				return false
			}
		}
		switch {
		case s.IsIndex:
			list, ok := cur.([]any)
			if !ok || s.Index >= len(list) {
				return true
			}
			cur = list[s.Index]
		default:
			m, ok := cur.(map[string]any)
			if !ok {
				return true
			}
			cur = m[s.Key]
		}
	}
	return true
}

func auditEvidence(e *AuditEvent) string {
	who := e.User
	if len(e.Groups) > 0 {
		who += " (groups " + strings.Join(e.Groups, ", ") + ")"
	}
	if e.ImpersonatedBy != "" {
		who += ", impersonated by " + e.ImpersonatedBy
	}
	return fmt.Sprintf("Kubernetes audit event %s: %s %s by %s at %s, read from %s",
		e.AuditID, e.Verb, e.Object, who, e.Time.UTC().Format(time.RFC3339), e.Origin)
}

// commonChange is the observation-level change of its fields' changes.
func commonChange(people []*Change, fields []Field) Change {
	first := people[0]
	same := first.Actor != ""
	weakest := first.Attribution
	for _, c := range people[1:] {
		if c.Actor != first.Actor {
			same = false
		}
		if c.Attribution.Rank() < weakest.Rank() {
			weakest = c.Attribution
		}
	}
	if !same {
		var who []string
		for _, f := range fields {
			if f.Cause == CauseForwardApply || f.By == nil {
				continue
			}
			actor := f.By.Actor
			if actor == "" {
				actor = "unknown"
			}
			who = append(who, f.Path+": "+actor)
		}
		return Change{Attribution: AttributionUnknown, Claimed: AttributionUnknown,
			Evidence: "the fields were not changed by one known actor (" + strings.Join(who, "; ") + ")"}
	}
	out := Change{Actor: first.Actor, Attribution: weakest, Claimed: weakest}
	var evidence []string
	seen := map[string]bool{}
	var latest *Change
	for _, c := range people {
		if latest == nil || !c.At.Before(latest.At) {
			latest = c
		}
		if c.Evidence != "" && !seen[c.Evidence] {
			seen[c.Evidence] = true
			evidence = append(evidence, c.Evidence)
		}
		if c.Intent != "" {
			out.Intent = c.Intent
		}
	}
	out.Groups, out.At = latest.Groups, latest.At
	out.Evidence = strings.Join(evidence, "; ")
	return out
}

// SplitAPIVersion splits apps/v1 into apps and v1, and v1 into "" and v1.
func SplitAPIVersion(apiVersion string) (group, version string) {
	if g, v, ok := strings.Cut(apiVersion, "/"); ok {
		return g, v
	}
	return "", apiVersion
}

// kindResource is the resource name the API server (and so the audit log)
// uses for a kind: its lowercase plural, guessed by the rules Kubernetes
// itself guesses it by (apimachinery's UnsafeGuessKindToResource; a test
// holds the two together), so that the model links no Kubernetes library.
func kindResource(kind string) string {
	if kind == "" {
		return ""
	}
	r := strings.ToLower(kind)
	switch {
	case strings.HasSuffix(r, "endpoints"):
		return r
	case strings.HasSuffix(r, "s"):
		return r + "es"
	case strings.HasSuffix(r, "y"):
		return strings.TrimSuffix(r, "y") + "ies"
	}
	return r + "s"
}
