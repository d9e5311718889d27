package receipt

import (
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/backflow-dev/backflow/internal/policy"
	"github.com/backflow-dev/backflow/internal/values"
)

// Violation is one failed property of a receipt (or a policy).
type Violation struct {
	// Path is the property's dotted path with list indexes; the spec's
	// properties are named without `spec.` (`bounds.changedFields[0].to`).
	Path    string
	Message string
}

// String writes the violation as "<property>: <message>".
func (v Violation) String() string { return v.Path + ": " + v.Message }

// JoinViolations writes violations on one line, separated by "; ", for an
// error that must say every property a receipt failed.
func JoinViolations(vs []Violation) string {
	msgs := make([]string, len(vs))
	for i, v := range vs {
		msgs[i] = v.String()
	}
	return strings.Join(msgs, "; ")
}

// methodsByStatus lists the write-back methods each known status allows.
var methodsByStatus = map[string][]string{
	StatusDesignExample: {MethodManualFixture},
	StatusProposed:      {MethodPullRequest, MethodConfigHubRevision},
	StatusProven:        {MethodPullRequest, MethodCubReverseReconcile, MethodConfigHubRevision},
}

var commitSHA = regexp.MustCompile(`^([0-9a-f]{40}|[0-9a-f]{64})$`)

// FieldKey is how bounds.unauthorizedFieldsChanged names a field:
// "<object> <field>".
func FieldKey(object, field string) string { return object + " " + field }

// PolicyRef is the reference a receipt must name for the policy at path: the
// path as given, cleaned and `/`-separated, relative to workdir when it is
// absolute.
func PolicyRef(path, workdir string) (string, error) {
	if filepath.IsAbs(path) {
		rel, err := filepath.Rel(workdir, path)
		if err != nil {
			return "", fmt.Errorf("error relating policy path %s to %s: %w", path, workdir, err)
		}
		path = rel
	}
	return filepath.ToSlash(filepath.Clean(path)), nil
}

// Verify checks every property of r that the seed's verifier checks, with
// backflow's additions, against pol (whose path is policyRef), and returns
// every violation in a stable order. A receipt passes only as an authorized
// write-back. A nil or invalid pol authorizes nothing.
//
// The comments below number the seed verifier's rules: 1 the policy's kind
// and default (checked by policy.Load, whose errors callers report), 2 kind,
// 3 status, 4 notClaimed, 5 trigger.role, 6 trigger.class, 7 policyRef,
// 8 changedFields, 9 each field's authorization, 10-13 the scope claims,
// 14 desiredValueAfter, 15-16 the round trip, 17 provenance, 18 method.
// backflow adds that no value is an observer's placeholder (see
// IsPlaceholder).
func Verify(r *Receipt, pol *policy.Policy, policyRef string) []Violation {
	v := &verifier{out: slices.Clone(r.decodeErrors)}
	s := &r.Spec
	switch r.APIVersion {
	case SeedAPIVersion, APIVersion:
	default:
		v.fail("apiVersion", "must be %s or %s, got %q", SeedAPIVersion, APIVersion, r.APIVersion)
	}
	// Rule 2.
	if r.Kind != Kind {
		v.fail("kind", "must be %s, got %q", Kind, r.Kind)
	}
	// Rule 3.
	methods, knownStatus := methodsByStatus[s.Status]
	if !knownStatus {
		v.fail("status", "must be one of %s, %s, %s; got %q", StatusDesignExample, StatusProposed, StatusProven, s.Status)
	}
	// Rule 4.
	if len(s.NotClaimed) == 0 {
		v.fail("notClaimed", "must list at least one honesty marker")
	}
	for i, m := range s.NotClaimed {
		if strings.TrimSpace(m) == "" {
			v.fail("notClaimed["+strconv.Itoa(i)+"]", "must not be empty")
		}
	}
	if s.Environment == "" {
		v.fail("environment", "required")
	}
	// Rule 5.
	if s.Trigger.Role == "" {
		v.fail("trigger.role", "required")
	}
	// Rule 6.
	if s.Trigger.Class != ClassAuthorized && s.Trigger.Class != ClassUnauthorized {
		v.fail("trigger.class", "must be %s or %s, got %q", ClassAuthorized, ClassUnauthorized, s.Trigger.Class)
	}
	v.rfc3339("trigger.at", s.Trigger.At)
	// Rule 7.
	if s.Authority.PolicyRef != policyRef {
		v.fail("authority.policyRef", "is %q, want the policy's path %q", s.Authority.PolicyRef, policyRef)
	}
	v.scope(s, pol)
	v.observation(s)
	// Rule 14.
	switch {
	case !s.WriteBack.DesiredValueAfter.Set:
		v.fail("writeBack.desiredValueAfter", "required")
	case s.Observation.LiveValue.Set && !values.Equal(s.WriteBack.DesiredValueAfter.V, s.Observation.LiveValue.V):
		v.fail("writeBack.desiredValueAfter", "is %s, want observation.liveValue %s (same value and type)",
			show(s.WriteBack.DesiredValueAfter.V), show(s.Observation.LiveValue.V))
	}
	v.placeholders(s)
	// Rule 15.
	if len(s.RoundTrip.ResidualDrift) > 0 {
		v.fail("roundTrip.residualDrift", "must be empty, has %d item(s)", len(s.RoundTrip.ResidualDrift))
	}
	// Rule 16.
	if p := s.RoundTrip.DesiredAfterMatchesObserved; p == nil || !*p {
		v.fail("roundTrip.desiredAfterMatchesObserved", "must be true")
	}
	if s.RoundTrip.Result != ResultClosed {
		v.fail("roundTrip.result", "must be %s, got %q", ResultClosed, s.RoundTrip.Result)
	}
	// Rule 17, with backflow's additions: the authority is the policyRef,
	// and the time is an RFC 3339 time.
	prov := s.WriteBack.Provenance
	for _, f := range []struct{ name, value string }{
		{"who", prov.Who}, {"when", prov.When}, {"operation", prov.Operation}, {"authority", prov.Authority},
		{"intent", prov.Intent},
	} {
		if strings.TrimSpace(f.value) == "" {
			v.fail("writeBack.provenance."+f.name, "required")
		}
	}
	if prov.When != "" {
		v.rfc3339("writeBack.provenance.when", prov.When)
	}
	if prov.Authority != "" && prov.Authority != s.Authority.PolicyRef {
		v.fail("writeBack.provenance.authority", "is %q, want authority.policyRef %q", prov.Authority, s.Authority.PolicyRef)
	}
	// Rule 18.
	if knownStatus && !slices.Contains(methods, s.WriteBack.Method) {
		v.fail(
			"writeBack.method",
			"status %s requires method %s, got %q",
			s.Status,
			strings.Join(methods, " or "),
			s.WriteBack.Method,
		)
	}
	if mc := s.WriteBack.MergeCommit; mc != "" && !commitSHA.MatchString(mc) {
		v.fail("writeBack.mergeCommit", "must be a full lowercase hexadecimal commit SHA, got %q", mc)
	}
	v.render(s)
	v.confighub(s)
	v.expiry(s, pol)
	return v.out
}

var chartDigest = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)

// render checks backflow's optional render witness rule: a receipt with a
// render section names how the chart was rendered, its changed fields are
// exactly bounds.changedFields (each rendered after the edit as its to),
// every one on a compared object, and the round trip claims the rendering
// matches the observation. A receipt without the section must not claim it.
func (v *verifier) render(s *Spec) {
	r := s.Render
	claim := s.RoundTrip.RenderedAfterMatchesObserved
	if r == nil {
		if claim != nil {
			v.fail("roundTrip.renderedAfterMatchesObserved", "needs a render section to rest on")
		}
		return
	}
	if claim == nil || !*claim {
		v.fail("roundTrip.renderedAfterMatchesObserved", "must be true with a render section")
	}
	for _, f := range []struct{ name, value string }{
		{"chart", r.Chart}, {"version", r.Version}, {"renderer", r.Renderer}, {"releaseName", r.ReleaseName},
		{"kubeVersion", r.KubeVersion},
	} {
		// A kustomize build (render.files) renders no chart.
		if strings.TrimSpace(f.value) == "" && (len(r.Files) == 0 || f.name == "renderer") {
			v.fail("render."+f.name, "required")
		}
	}
	if !chartDigest.MatchString(r.Digest) {
		v.fail("render.digest", "must be sha256:<64 lowercase hexadecimal digits>, got %q", r.Digest)
	}
	bounds := map[string]ChangedField{}
	for _, cf := range s.Bounds.ChangedFields {
		bounds[FieldKey(cf.Object, cf.Field)] = cf
	}
	seen := map[string]bool{}
	for i, rf := range r.ChangedFields {
		at := "render.changedFields[" + strconv.Itoa(i) + "]"
		k := FieldKey(rf.Object, rf.Field)
		if seen[k] {
			v.fail(at, "lists %s twice", k)
			continue
		}
		seen[k] = true
		if !slices.Contains(r.ObjectsCompared, rf.Object) {
			v.fail(at+".object", "%s is not among render.objectsCompared", rf.Object)
		}
		cf, ok := bounds[k]
		switch {
		case !ok:
			v.fail(at, "the rendering changes %s, which bounds.changedFields does not list", k)
		case !rf.After.Set:
			v.fail(at+".after", "required")
		case cf.To.Set && !values.Equal(rf.After.V, cf.To.V):
			v.fail(at+".after", "is %s, want the accepted to %s", show(rf.After.V), show(cf.To.V))
		}
	}
	for _, cf := range s.Bounds.ChangedFields {
		if k := FieldKey(cf.Object, cf.Field); !seen[k] {
			v.fail("render.changedFields", "has no entry for the accepted field %s: the rendering does not witness it", k)
		}
	}
}

type verifier struct{ out []Violation }

func (v *verifier) fail(path, format string, a ...any) {
	v.out = append(v.out, Violation{Path: path, Message: fmt.Sprintf(format, a...)})
}

func (v *verifier) rfc3339(path, s string) {
	if s == "" {
		v.fail(path, "required: an RFC 3339 time")
		return
	}
	if _, err := time.Parse(time.RFC3339, s); err != nil {
		v.fail(path, "must be an RFC 3339 time, got %q", s)
	}
}

// scope checks rules 8 to 13 and what passes: each changed field is decided
// by the policy's matcher, and the receipt's claims about scope must agree
// with those decisions and describe an authorized write-back.
func (v *verifier) scope(s *Spec, pol *policy.Policy) {
	// Rule 8.
	if len(s.Bounds.ChangedFields) == 0 {
		v.fail("bounds.changedFields", "must list at least one changed field")
	}
	var roles []string
	if s.Trigger.Role != "" {
		roles = []string{s.Trigger.Role}
	}
	unauthorized := []string{}
	var rendered []string
	for i, cf := range s.Bounds.ChangedFields {
		// The property's path is spelt only for a violation: most
		// receipts have none.
		at := func(suffix string) string { return "bounds.changedFields[" + strconv.Itoa(i) + "]" + suffix }
		named := []struct{ name, value string }{{"object", cf.Object}, {"field", cf.Field}, {"valuePath", cf.ValuePath}}
		for _, f := range named {
			if f.value == "" && (f.name != "valuePath" || cf.WrittenFile == "") {
				v.fail(at("."+f.name), "required")
			}
		}
		v.written(cf, at, &rendered, s)
		if !cf.From.Set {
			v.fail(at(".from"), "required")
		}
		if !cf.To.Set {
			v.fail(at(".to"), "required")
		}
		if cf.DesiredValueAfter.Set && cf.To.Set && !values.Equal(cf.DesiredValueAfter.V, cf.To.V) {
			v.fail(
				at(".desiredValueAfter"),
				"is %s, want its to %s (same value and type)",
				show(cf.DesiredValueAfter.V),
				show(cf.To.V),
			)
		}
		if cf.ValuesFile != "" && rendered == nil {
			rendered = RenderedFiles(s.Unit.DesiredRender)
		}
		if cf.ValuesFile != "" && !slices.Contains(rendered, cf.ValuesFile) {
			v.fail(at(".valuesFile"), "%s is not one of unit.desiredRender's files", cf.ValuesFile)
		}
		// Rule 9.
		d := pol.Evaluate(policy.Request{
			Roles: roles, Environment: s.Environment,
			Object: cf.Object, Field: cf.Field, ValuePath: cf.ValuePath,
			Value: cf.To.V, HasValue: cf.To.Set,
		})
		if !d.Allowed {
			msgs := make([]string, len(d.Reasons))
			for j, r := range d.Reasons {
				msgs[j] = r.Message
			}
			v.fail(
				at(""),
				"%s %s is not authorized for role %q in %q: %s",
				cf.Object,
				cf.Field,
				s.Trigger.Role,
				s.Environment,
				strings.Join(msgs, "; "),
			)
			unauthorized = append(unauthorized, FieldKey(cf.Object, cf.Field))
		}
	}
	// Rule 10.
	slices.Sort(unauthorized)
	claimed := slices.Sorted(slices.Values(s.Bounds.UnauthorizedFieldsChanged))
	if claimed == nil {
		claimed = []string{}
	}
	if !slices.Equal(unauthorized, claimed) {
		v.fail("bounds.unauthorizedFieldsChanged", "is %s, want %s", showList(claimed), showList(unauthorized))
	}
	within := len(unauthorized) == 0
	// Rule 11.
	if w := s.Bounds.WithinAuthorizedScope; w == nil || *w != within {
		v.fail("bounds.withinAuthorizedScope", "must be %t: %s", within, scopeWord(within))
	}
	// Rule 12 and what passes: only an authorized write-back passes.
	switch {
	case !within && s.Authority.Decision != DecisionDeny:
		v.fail("authority.decision", "must be %s: %s", DecisionDeny, scopeWord(within))
	case !within:
		v.fail("authority.decision", "is %s: unauthorized drift is reported, never receipted as a write-back", DecisionDeny)
	case s.Authority.Decision != DecisionAllow:
		v.fail("authority.decision", "must be %s: %s, got %q", DecisionAllow, scopeWord(within), s.Authority.Decision)
	}
	// Rule 13 and what passes. A class that is neither is rule 6's to report.
	switch {
	case !within && s.Trigger.Class == ClassAuthorized:
		v.fail("trigger.class", "must be %s: %s", ClassUnauthorized, scopeWord(within))
	case !within && s.Trigger.Class == ClassUnauthorized:
		v.fail("trigger.class", "is %s: unauthorized drift is reported, never receipted as a write-back", ClassUnauthorized)
	case within && s.Trigger.Class == ClassUnauthorized:
		v.fail("trigger.class", "must be %s: %s", ClassAuthorized, scopeWord(within))
	}
}

func scopeWord(within bool) string {
	if within {
		return "every changed field is authorized"
	}
	return "a changed field is not authorized"
}

// written checks a field written as itself: writtenFile and writtenPath
// come together, in place of valuePath and valuesFile, and the file is one
// of unit.desiredRender's.
func (v *verifier) written(cf ChangedField, at func(string) string, rendered *[]string, s *Spec) {
	if cf.WrittenFile == "" && cf.WrittenPath == "" {
		return
	}
	switch {
	case cf.WrittenFile == "":
		v.fail(at(".writtenFile"), "required with writtenPath")
	case cf.WrittenPath == "":
		v.fail(at(".writtenPath"), "required with writtenFile")
	}
	if cf.ValuePath != "" || cf.ValuesFile != "" {
		v.fail(at(""), "names writtenFile and a values path or file: a field is written either at a values path or as itself")
	}
	if cf.WrittenFile == "" {
		return
	}
	if *rendered == nil {
		*rendered = RenderedFiles(s.Unit.DesiredRender)
	}
	if !slices.Contains(*rendered, cf.WrittenFile) {
		v.fail(at(".writtenFile"), "%s is not one of unit.desiredRender's files", cf.WrittenFile)
	}
}

// observation checks backflow's addition: the observed field's changedFields
// entry goes from observation.desiredValueBefore to observation.liveValue.
func (v *verifier) observation(s *Spec) {
	o := s.Observation
	self := slices.ContainsFunc(s.Bounds.ChangedFields, func(cf ChangedField) bool {
		return cf.Object == o.Object && cf.Field == o.Field && cf.WrittenFile != ""
	})
	named := []struct{ name, value string }{{"object", o.Object}, {"field", o.Field}, {"valuePath", o.ValuePath}}
	for _, f := range named {
		if f.value == "" && (f.name != "valuePath" || !self) {
			v.fail("observation."+f.name, "required")
		}
	}
	if !o.LiveValue.Set {
		v.fail("observation.liveValue", "required")
	}
	if !o.DesiredValueBefore.Set {
		v.fail("observation.desiredValueBefore", "required")
	}
	if o.Object == "" || o.Field == "" {
		return
	}
	i := slices.IndexFunc(s.Bounds.ChangedFields, func(cf ChangedField) bool {
		return cf.Object == o.Object && cf.Field == o.Field
	})
	if i < 0 {
		v.fail("bounds.changedFields", "has no entry for the observed field %s %s", o.Object, o.Field)
		return
	}
	cf := s.Bounds.ChangedFields[i]
	at := "bounds.changedFields[" + strconv.Itoa(i) + "]"
	if cf.ValuePath != o.ValuePath {
		v.fail(at+".valuePath", "is %q, want observation.valuePath %q", cf.ValuePath, o.ValuePath)
	}
	if cf.From.Set && o.DesiredValueBefore.Set && !values.Equal(cf.From.V, o.DesiredValueBefore.V) {
		v.fail(
			at+".from",
			"is %s, want observation.desiredValueBefore %s (same value and type)",
			show(cf.From.V),
			show(o.DesiredValueBefore.V),
		)
	}
	if cf.To.Set && o.LiveValue.Set && !values.Equal(cf.To.V, o.LiveValue.V) {
		v.fail(at+".to", "is %s, want observation.liveValue %s (same value and type)", show(cf.To.V), show(o.LiveValue.V))
	}
}

// IsPlaceholder reports an observer's rendering of nothing: cub-scout prints
// "-" for a missing, null or empty value. It is never a value: a receipt
// that records one as a live value or as the desired value written back
// would write the placeholder into desired state. "<nil>" is not one:
// cub-scout prints nil as "-", so "<nil>" is a string a field held.
func IsPlaceholder(v any) bool {
	s, ok := v.(string)
	return ok && s == "-"
}

// placeholders refuses a placeholder wherever a receipt records a value
// observed live or written back.
func (v *verifier) placeholders(s *Spec) {
	check := func(path func() string, val Value) {
		if val.Set && IsPlaceholder(val.V) {
			v.fail(
				path(),
				"is %s, an observer's placeholder for nothing, not a value: a field absent live is a removal, which is never "+
					"written back",
				show(val.V),
			)
		}
	}
	check(func() string { return "observation.liveValue" }, s.Observation.LiveValue)
	check(func() string { return "writeBack.desiredValueAfter" }, s.WriteBack.DesiredValueAfter)
	for i, cf := range s.Bounds.ChangedFields {
		check(func() string { return "bounds.changedFields[" + strconv.Itoa(i) + "].to" }, cf.To)
		check(
			func() string { return "bounds.changedFields[" + strconv.Itoa(i) + "].desiredValueAfter" },
			cf.DesiredValueAfter,
		)
	}
}

// show writes a value for a message, with its type where a bare value would
// hide the difference between 4 and "4".
func show(x any) string {
	if s, ok := x.(string); ok {
		return strconv.Quote(s)
	}
	return values.Format(x)
}

func showList(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = strconv.Quote(s)
	}
	return "[" + strings.Join(q, ", ") + "]"
}

// RenderedFiles splits unit.desiredRender into the values files it names.
func RenderedFiles(desiredRender string) []string {
	var out []string
	for _, f := range strings.Split(desiredRender, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}
