package hold

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/backflow-dev/backflow/internal/observe"
	"github.com/backflow-dev/backflow/internal/policy"
	"github.com/backflow-dev/backflow/internal/repoconfig"
	"github.com/backflow-dev/backflow/internal/yamlnode"
)

// Argo CD has no per-object hold: what keeps its self-heal off an accepted
// field is the Application's spec.ignoreDifferences, which leaves the field
// out of the comparison, with the sync option RespectIgnoreDifferences=true,
// which keeps the live value when a sync applies the rest of the object.
// The names below are Argo CD's, as its Application CRD
// (argoproj.io/v1alpha1) spells them.
const (
	// ArgoCDAPIVersion is the Application's API version.
	ArgoCDAPIVersion = "argoproj.io/v1alpha1"
	// ArgoCDKind is the Application's kind.
	ArgoCDKind = "Application"
	// RespectIgnoreDifferences is the sync option that makes a sync keep
	// the live value of an ignored field.
	RespectIgnoreDifferences = "RespectIgnoreDifferences=true"
)

// IgnoreDifference is one item of an Argo CD Application's
// spec.ignoreDifferences (Argo CD's ResourceIgnoreDifferences): the objects
// it applies to, by API group and kind (globs; "*" is any) and by name and
// namespace (exact; empty is any), and the fields left out of the
// comparison, as JSON pointers or jq path expressions.
type IgnoreDifference struct {
	Group             string   `json:"group"`
	Kind              string   `json:"kind"`
	Name              string   `json:"name,omitempty"`
	Namespace         string   `json:"namespace,omitempty"`
	JSONPointers      []string `json:"jsonPointers,omitempty"`
	JQPathExpressions []string `json:"jqPathExpressions,omitempty"`
}

// ArgoCDPatch is what one unit's Argo CD Application needs so that its
// self-heal leaves the fields the policy accepts for the unit alone: the
// ignoreDifferences items and the sync option, to be added to the
// Application's own lists.
type ArgoCDPatch struct {
	Unit        string
	Environment string
	// Application is the Application's name: the name of the Application
	// document the unit's values are read from (valuesRoot), else the
	// unit's name, which NameGuessed says.
	Application string
	NameGuessed bool
	Ignore      []IgnoreDifference
	// Notes say, per policy entry, what the items cannot express.
	Notes []string
}

// ArgoCDSkip is a unit of the environment that gets no patch, and why.
type ArgoCDSkip struct {
	Unit, Environment, Reason string
}

// ArgoCD builds, for every unit (of environment, when it is not empty),
// the patch that keeps Argo CD's self-heal off the fields the policy's
// mayAccept entries accept on the unit's objects. A unit that holds with a
// Flux controller, or whose objects no entry accepts, is skipped and says
// why. A field that is not a path of the one syntax is an error naming its
// entry.
func ArgoCD(c *repoconfig.Config, p *policy.Policy, environment string) ([]ArgoCDPatch, []ArgoCDSkip, error) {
	var (
		patches []ArgoCDPatch
		skips   []ArgoCDSkip
	)
	for i := range c.Units {
		u := &c.Units[i]
		if environment != "" && u.Environment != environment {
			continue
		}
		if h := c.HoldOf(u); h != nil {
			skips = append(skips, ArgoCDSkip{u.Name, u.Environment,
				"it holds with " + h.Controller + ", whose per-object mark backflow places"})
			continue
		}
		patch, err := argoCDUnit(u, c.Policy, p)
		if err != nil {
			return nil, nil, err
		}
		if len(patch.Ignore) == 0 {
			skips = append(skips, ArgoCDSkip{u.Name, u.Environment, "no mayAccept entry accepts a field of its objects"})
			continue
		}
		patches = append(patches, patch)
	}
	return patches, skips, nil
}

// argoCDUnit is one unit's patch.
func argoCDUnit(u *repoconfig.Unit, policyFile string, p *policy.Policy) (ArgoCDPatch, error) {
	patch := ArgoCDPatch{Unit: u.Name, Environment: u.Environment, Application: u.Name, NameGuessed: true}
	if u.ValuesRoot != nil {
		if name, ok := strings.CutPrefix(u.ValuesRoot.Document, ArgoCDKind+"/"); ok && name != "" {
			patch.Application, patch.NameGuessed = name, false
		}
	}
	items := map[string]*IgnoreDifference{}
	for ri, r := range p.Rules {
		for ai, a := range r.MayAccept {
			if !slices.ContainsFunc(a.Environments, func(e string) bool { return policy.Glob(e, u.Environment) }) {
				continue
			}
			place := fmt.Sprintf("%s: spec.rules[%d].mayAccept[%d]", policyFile, ri, ai)
			field, err := yamlnode.ParseSelectorPath(a.Field)
			if err != nil {
				return ArgoCDPatch{}, fmt.Errorf("%s.field: %w", place, err)
			}
			used := false
			for _, po := range a.Objects {
				for _, uo := range u.Objects {
					if !repoconfig.ObjectsOverlap(po, uo) {
						continue
					}
					pk, perr := observe.ParseObjectPattern(po)
					uk, uerr := observe.ParseObjectPattern(uo)
					if err := errors.Join(perr, uerr); err != nil {
						return ArgoCDPatch{}, fmt.Errorf("%s: %w", place, err)
					}
					used = true
					addIgnore(items, argoTarget(pk, uk), field)
				}
			}
			if used {
				patch.Notes = append(patch.Notes, entryNotes(place, a)...)
			}
		}
	}
	for _, k := range slices.Sorted(maps.Keys(items)) {
		it := items[k]
		slices.Sort(it.JSONPointers)
		slices.Sort(it.JQPathExpressions)
		patch.Ignore = append(patch.Ignore, *it)
	}
	return patch, nil
}

// entryNotes says what an entry holds that ignoreDifferences cannot: the
// item leaves the field out whatever its value, whoever changed it, for as
// long as it is in the Application.
func entryNotes(place string, a policy.Accept) []string {
	var notes []string
	var bounds []string
	if a.Minimum != nil {
		bounds = append(bounds, "minimum")
	}
	if a.Maximum != nil {
		bounds = append(bounds, "maximum")
	}
	if a.Pattern != "" {
		bounds = append(bounds, "pattern")
	}
	if a.OneOf != nil {
		bounds = append(bounds, "oneOf")
	}
	if len(bounds) > 0 {
		notes = append(notes, fmt.Sprintf("%s bounds %s (%s): Argo CD ignores the field whatever its value, "+
			"so a value out of bounds is denied by backflow but not reverted by self-heal",
			place, a.Field, strings.Join(bounds, ", ")))
	}
	if a.AcceptFor > 0 {
		notes = append(notes, fmt.Sprintf("%s accepts %s for %s only: remove the item when the term ends, "+
			"or Argo CD will not apply the pull request that restores the value", place, a.Field, a.AcceptForText))
	}
	return notes
}

// target is the objects one item applies to: Argo CD's group, kind, name
// and namespace, and the jq conditions for what those cannot say.
type target struct {
	group, kind, namespace, name string
	conds                        []string
}

// argoTarget is the objects matching both object-key globs po (the
// policy's) and uo (the unit's), which overlap. Per segment, a literal on
// either side is the intersection; "*" on both is any; any other glob
// becomes a jq condition on the object, since Argo CD matches names and
// namespaces exactly and backflow's apiVersion includes the version.
func argoTarget(po, uo observe.ObjectKey) target {
	ps, us := po.Segments(), uo.Segments()
	t := target{group: "*", kind: "*"}
	on := []string{".apiVersion", ".kind", `(.metadata.namespace // "")`, ".metadata.name"}
	for i, set := range []func(string){
		func(v string) { t.group = groupOf(v) },
		func(v string) { t.kind = v },
		func(v string) { t.namespace = v },
		func(v string) { t.name = v },
	} {
		literal, ok, globs := segment(ps[i], us[i])
		if ok {
			set(literal)
		}
		for _, g := range globs {
			t.conds = append(t.conds, on[i]+" | test("+jqString(globRegexp(g))+")")
		}
	}
	return t
}

// segment intersects two overlapping glob segments: the literal when
// either is one, else the globs other than "*".
func segment(p, q string) (literal string, ok bool, globs []string) {
	switch {
	case !strings.Contains(p, "*"):
		return p, true, nil
	case !strings.Contains(q, "*"):
		return q, true, nil
	}
	for _, g := range []string{p, q} {
		if g != "*" && !slices.Contains(globs, g) {
			globs = append(globs, g)
		}
	}
	return "", false, globs
}

// groupOf is the API group of an apiVersion: "" for the core group (v1).
func groupOf(apiVersion string) string {
	if i := strings.LastIndexByte(apiVersion, '/'); i >= 0 {
		return apiVersion[:i]
	}
	return ""
}

// globRegexp is a `*`-glob as an anchored regular expression.
func globRegexp(g string) string {
	parts := strings.Split(g, "*")
	for i, s := range parts {
		parts[i] = regexp.QuoteMeta(s)
	}
	return "^" + strings.Join(parts, ".*") + "$"
}

// addIgnore adds field on t's objects to the items, one item per target:
// a JSON pointer when one says it, else a jq path expression.
func addIgnore(items map[string]*IgnoreDifference, t target, field []yamlnode.Segment) {
	key := strings.Join([]string{t.group, t.kind, t.namespace, t.name, strings.Join(t.conds, " and ")}, "\x00")
	it := items[key]
	if it == nil {
		it = &IgnoreDifference{Group: t.group, Kind: t.kind, Name: t.name, Namespace: t.namespace}
		items[key] = it
	}
	if ptr, ok := jsonPointer(field); ok && len(t.conds) == 0 {
		if !slices.Contains(it.JSONPointers, ptr) {
			it.JSONPointers = append(it.JSONPointers, ptr)
		}
		return
	}
	expr := jqPath(field)
	switch len(t.conds) {
	case 0:
	case 1:
		expr = "select(" + t.conds[0] + ") | " + expr
	default:
		expr = "select((" + strings.Join(t.conds, ") and (") + ")) | " + expr
	}
	if !slices.Contains(it.JQPathExpressions, expr) {
		it.JQPathExpressions = append(it.JQPathExpressions, expr)
	}
}

// jsonPointer is field as an RFC 6901 JSON pointer; false when a segment
// names a list item by its content, which a pointer cannot.
func jsonPointer(field []yamlnode.Segment) (string, bool) {
	var b strings.Builder
	for _, s := range field {
		b.WriteByte('/')
		switch {
		case s.AnyIndex:
			return "", false
		case s.IsIndex:
			b.WriteString(strconv.Itoa(s.Index))
		default:
			b.WriteString(strings.NewReplacer("~", "~0", "/", "~1").Replace(s.Key))
		}
	}
	return b.String(), true
}

var jqIdent = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// jqPath is field as a jq path expression: a list item named by a merge
// key ([name=redis]) is every item whose key, read as text, is the value.
func jqPath(field []yamlnode.Segment) string {
	var b strings.Builder
	start := true
	for _, s := range field {
		switch {
		case s.AnyIndex:
			if start {
				b.WriteByte('.')
			}
			b.WriteString("[] | select((" + jqKey(s.MergeKey, true) + " | tostring) == " + jqString(s.MergeValue) + ")")
			b.WriteString(" | ")
			start = true
			continue
		case s.IsIndex:
			if start {
				b.WriteByte('.')
			}
			b.WriteString("[" + strconv.Itoa(s.Index) + "]")
		default:
			b.WriteString(jqKey(s.Key, start))
		}
		start = false
	}
	return strings.TrimSuffix(b.String(), " | ")
}

// jqKey is one key step: .key, or ["key"] (.["key"] first) for a key that
// is not an identifier.
func jqKey(k string, first bool) string {
	switch {
	case jqIdent.MatchString(k):
		return "." + k
	case first:
		return ".[" + jqString(k) + "]"
	}
	return "[" + jqString(k) + "]"
}

// jqString is s as a jq string literal (JSON's syntax).
func jqString(s string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	return strings.TrimSuffix(b.String(), "\n")
}
