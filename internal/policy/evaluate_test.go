package policy

import (
	"slices"
	"testing"
)

const (
	replicas = "apps/v1|StatefulSet|redis|redis-replicas"
	master   = "apps/v1|StatefulSet|redis|redis-master"
	memField = "spec.template.spec.containers[0].resources.limits.memory"
	imgField = "spec.template.spec.containers[0].image"
)

func TestEvaluate(t *testing.T) {
	p, err := Load("testdata/bounds-and-globs.yaml")
	if err != nil {
		t.Fatal(err)
	}
	scale := func(mod func(*Request)) Request {
		r := Request{Roles: []string{"platform-sre"}, Environment: "prod-us-east", Object: replicas, Field: "spec.replicas", ValuePath: "replica.replicaCount", Value: 4, HasValue: true}
		if mod != nil {
			mod(&r)
		}
		return r
	}
	memory := func(v any) Request {
		return Request{Roles: []string{"platform-sre"}, Environment: "prod-eu-west", Object: master, Field: memField, ValuePath: "replica.resources.limits.memory", Value: v, HasValue: true}
	}
	count := func(v any) Request {
		return Request{Roles: []string{"platform-sre"}, Environment: "staging", Object: "apps/v1|StatefulSet|redis|redis-master", Field: "spec.replicas", ValuePath: "master.count", Value: v, HasValue: true}
	}
	tag := func(v any) Request {
		return Request{Roles: []string{"dba"}, Environment: "staging", Object: master, Field: imgField, ValuePath: "image.tag", Value: v, HasValue: true}
	}
	type want struct {
		allow     bool
		rule, acc int
		autoMerge bool
		kinds     []ReasonKind
		roles     []string // the role each reason is about, when it matters
	}
	allow := func(rule, acc int, autoMerge bool) want {
		return want{allow: true, rule: rule, acc: acc, autoMerge: autoMerge}
	}
	deny := func(kinds ...ReasonKind) want { return want{kinds: kinds} }
	for _, tc := range []struct {
		why  string
		req  Request
		want want
	}{
		{"the seed's incident: SRE scales redis-replicas in prod", scale(nil), allow(0, 0, false)},
		{"no value is fine for an unbounded entry", scale(func(r *Request) { r.HasValue = false }), allow(0, 0, false)},
		{"a role without rules", scale(func(r *Request) { r.Roles = []string{"developer"} }), deny(NoRuleForRole)},
		{"no role at all (unknown actor)", scale(func(r *Request) { r.Roles = nil }), deny(NoRuleForRole)},
		{"the role's rules do not accept the field", scale(func(r *Request) { r.Field = "spec.minReadySeconds" }), deny(FieldNotAccepted)},
		{"the same field at another value path is not accepted", scale(func(r *Request) { r.ValuePath = "replicaCount" }), deny(FieldNotAccepted)},
		{"object not listed", scale(func(r *Request) { r.Object = master }), deny(ObjectNotListed)},
		{"environment not listed", scale(func(r *Request) { r.Environment = "staging" }), deny(EnvironmentNotListed)},
		{"every reason of an entry is reported", scale(func(r *Request) { r.Object = master; r.Environment = "staging" }), deny(ObjectNotListed, EnvironmentNotListed)},
		{"two roles: the second one's rule authorizes", scale(func(r *Request) { r.Roles = []string{"developer", "platform-sre"} }), allow(0, 0, false)},
		{"two roles: every role's reasons are reported, in the request's order",
			scale(func(r *Request) { r.Roles = []string{"dba", "developer"} }),
			want{kinds: []ReasonKind{FieldNotAccepted, NoRuleForRole}, roles: []string{"dba", "developer"}}},
		{"a repeated role counts once", scale(func(r *Request) { r.Roles = []string{"developer", "developer"} }), deny(NoRuleForRole)},
		{"a role with several rules: the second rule authorizes", memory("512Mi"), allow(1, 0, false)},
		{"glob in the last object segment and in the environment", memory("2Gi"), allow(1, 0, false)},
		{"the pattern must match the whole value", memory("512Mix"), deny(ValueOutOfBounds)},
		{"a pattern bounds strings only", memory(512), deny(ValueOutOfBounds)},
		{"a bounded entry needs a value", func() Request { r := memory(nil); r.HasValue = false; return r }(), deny(ValueMissing)},
		{"an environment glob does not match another prefix", func() Request { r := memory("1Gi"); r.Environment = "preprod-x"; return r }(), deny(EnvironmentNotListed)},
		{"a `*` never crosses a `|`", func() Request { r := memory("1Gi"); r.Object = "apps/v1|StatefulSet|redis|a|b"; return r }(), deny(ObjectNotListed)},
		{"a `*` segment needs the same number of segments", func() Request { r := memory("1Gi"); r.Object = "apps/v1|StatefulSet|redis"; return r }(), deny(ObjectNotListed)},
		{"a glob segment in the middle: any kind, within bounds, auto-merge", count(3), allow(1, 1, true)},
		{"numbers compare by value whatever their type", count(5.0), allow(1, 1, true)},
		{"a `*` environment matches every environment", func() Request { r := count(1); r.Environment = "prod-us-east"; return r }(), allow(1, 1, true)},
		{"below the minimum", count(0), deny(ValueOutOfBounds)},
		{"above the maximum", count(6), deny(ValueOutOfBounds)},
		{"a numeric string is not a number", count("3"), deny(ValueOutOfBounds)},
		{"the name glob redis-* does not match another name", func() Request { r := count(3); r.Object = "apps/v1|Deployment|redis|sentinel"; return r }(), deny(ObjectNotListed)},
		{"a glob does not match another namespace", func() Request { r := count(3); r.Object = "apps/v1|Deployment|cache|redis-x"; return r }(), deny(ObjectNotListed)},
		{"oneOf: a listed string", tag("7.4"), allow(2, 0, false)},
		{"oneOf: a listed number", tag(8.0), allow(2, 0, false)},
		{"oneOf: a string never equals a number", tag("8"), deny(ValueOutOfBounds)},
		{"oneOf: an unlisted value", tag("6.2"), deny(ValueOutOfBounds)},
		{"oneOf: reasons from every bound and place add up", func() Request { r := tag("6.2"); r.Environment = "prod"; return r }(), deny(EnvironmentNotListed, ValueOutOfBounds)},
	} {
		t.Run(tc.why, func(t *testing.T) {
			d := p.Evaluate(tc.req)
			if d.Allowed != tc.want.allow {
				t.Fatalf("allowed = %v, want %v; reasons %v", d.Allowed, tc.want.allow, d.Reasons)
			}
			if d.Allowed {
				m := d.Match
				if m == nil || m.Rule != tc.want.rule || m.Accept != tc.want.acc || m.AutoMerge != tc.want.autoMerge || m.Role != p.Rules[m.Rule].Role || m.Reason == "" || len(d.Reasons) != 0 {
					t.Fatalf("match %+v, reasons %v; want rule %d entry %d autoMerge %v", m, d.Reasons, tc.want.rule, tc.want.acc, tc.want.autoMerge)
				}
				return
			}
			var kinds []ReasonKind
			var roles []string
			for _, r := range d.Reasons {
				kinds = append(kinds, r.Kind)
				roles = append(roles, r.Role)
				if r.Message == "" || r.Kind.String() == "unknown" {
					t.Errorf("reason without a message or kind: %+v", r)
				}
			}
			if d.Match != nil || !slices.Equal(kinds, tc.want.kinds) {
				t.Fatalf("reasons %v, want kinds %v", d.Reasons, tc.want.kinds)
			}
			if tc.want.roles != nil && !slices.Equal(roles, tc.want.roles) {
				t.Fatalf("reason roles %v, want %v", roles, tc.want.roles)
			}
		})
	}
}

func TestEvaluateFirstMatchInFileOrder(t *testing.T) {
	// why: when two entries authorize, the decision names the first in the
	// file, so that explanations and receipts are stable.
	p, err := Parse("p.yaml", []byte(minimal+"    - role: other\n      mayAccept:\n"+
		"        - {valuePath: a.b, field: spec.replicas, objects: ['apps/v1|*|ns|name'], environments: [prod], autoMerge: true}\n"))
	if err != nil {
		t.Fatal(err)
	}
	d := p.Evaluate(Request{Roles: []string{"other", "sre"}, Environment: "prod", Object: "apps/v1|StatefulSet|ns|name", Field: "spec.replicas", ValuePath: "a.b"})
	if !d.Allowed || d.Match.Rule != 0 || d.Match.Role != "sre" || d.Match.Path() != "spec.rules[0].mayAccept[0]" {
		t.Fatalf("got %+v", d.Match)
	}
}

func TestEvaluateMessages(t *testing.T) {
	p, err := Load("testdata/bounds-and-globs.yaml")
	if err != nil {
		t.Fatal(err)
	}
	d := p.Evaluate(Request{Roles: []string{"platform-sre"}, Environment: "staging", Object: master, Field: "spec.replicas", ValuePath: "master.count", Value: 9, HasValue: true})
	got := make([]string, len(d.Reasons))
	for i, r := range d.Reasons {
		got[i] = r.String()
	}
	want := []string{`value-out-of-bounds: spec.rules[1].mayAccept[1] (role platform-sre): value 9 is above maximum 5`}
	if !slices.Equal(got, want) {
		t.Fatalf("got %q\nwant %q", got, want)
	}
	var nilPolicy *Policy
	if d := nilPolicy.Evaluate(Request{Roles: []string{"x"}}); d.Allowed || d.Reasons[0].Kind != InvalidPolicy {
		t.Fatalf("a nil policy must deny as invalid: %+v", d)
	}
}

func TestGlob(t *testing.T) {
	for _, tc := range []struct {
		pattern, name string
		want          bool
		why           string
	}{
		{"prod-*", "prod-us-east", true, "a prefix glob"},
		{"prod-*", "prod-", true, "a star may match nothing"},
		{"prod-*", "staging", false, "another prefix"},
		{"*-east", "prod-us-east", true, "a suffix glob"},
		{"p*d-*-e*t", "prod-us-east", true, "several stars backtrack"},
		{"a*a*a*b", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", false, "a pathological pattern ends without a match"},
		{"prod", "prod", true, "no star is an exact match"},
		{"prod", "prod-us", false, "no star is not a prefix match"},
		{"", "", true, "empty matches empty"},
	} {
		if got := Glob(tc.pattern, tc.name); got != tc.want {
			t.Errorf("Glob(%q, %q) = %v, want %v (%s)", tc.pattern, tc.name, got, tc.want, tc.why)
		}
	}
	for _, tc := range []struct {
		pattern, name string
		want          bool
		why           string
	}{
		{"apps/v1|StatefulSet|redis|*", "apps/v1|StatefulSet|redis|redis-master", true, "a star segment"},
		{"apps/v1|StatefulSet|*", "apps/v1|StatefulSet|redis|redis-master", false, "a star never crosses a |"},
		{"apps/v1|*|redis|redis-*", "apps/v1|Deployment|redis|redis-x", true, "stars in two segments"},
		{"v1|Namespace||*", "v1|Namespace||kube-system", true, "an empty namespace segment"},
		{"apps/v1|StatefulSet|redis|redis-replicas", "apps/v1|StatefulSet|redis|redis-replicas", true, "an exact key"},
	} {
		if got := MatchKey(tc.pattern, tc.name); got != tc.want {
			t.Errorf("MatchKey(%q, %q) = %v, want %v (%s)", tc.pattern, tc.name, got, tc.want, tc.why)
		}
	}
}
