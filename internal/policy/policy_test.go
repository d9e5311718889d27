package policy

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const seedPolicy = "../../testdata/seed/data/reverse-reconcile/authority-policy.yaml"

func TestLoadSeedPolicy(t *testing.T) {
	p, err := Load(seedPolicy)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if !p.Valid() || p.APIVersion != SeedAPIVersion || p.Name != "redis-reverse-reconcile-authority" || p.Chart != "bitnami/redis" || p.Default != "deny" {
		t.Fatalf("unexpected policy header: %+v", p)
	}
	if len(p.Rules) != 1 || p.Rules[0].Role != "platform-sre" || len(p.Rules[0].MayAccept) != 1 {
		t.Fatalf("unexpected rules: %+v", p.Rules)
	}
	a := p.Rules[0].MayAccept[0]
	if a.ValuePath != "replica.replicaCount" || a.Field != "spec.replicas" ||
		strings.Join(a.Objects, ",") != "apps/v1|StatefulSet|redis|redis-replicas" ||
		strings.Join(a.Environments, ",") != "prod-us-east,prod-eu-west" || a.AutoMerge || a.hasBounds() {
		t.Fatalf("unexpected entry: %+v", a)
	}
}

func TestLoadExtensions(t *testing.T) {
	p, err := Load("testdata/bounds-and-globs.yaml")
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	mem := p.Rules[1].MayAccept[0]
	count := p.Rules[1].MayAccept[1]
	tag := p.Rules[2].MayAccept[0]
	if mem.Pattern != "[0-9]+(Mi|Gi)" || mem.pattern == nil {
		t.Errorf("pattern not loaded: %+v", mem)
	}
	if count.Minimum == nil || *count.Minimum != 1 || count.Maximum == nil || *count.Maximum != 5 || !count.AutoMerge {
		t.Errorf("numeric bounds or autoMerge not loaded: %+v", count)
	}
	if len(tag.OneOf) != 3 || tag.OneOf[0] != "7.2" || tag.OneOf[2] != 8 {
		t.Errorf("oneOf not loaded with its types: %#v", tag.OneOf)
	}
	if p, err := Load("testdata/anchors.yaml"); err != nil || len(p.Rules[0].MayAccept[1].Environments) != 2 {
		t.Errorf("aliased list not followed: %v", err)
	}
}

// minimal is a valid policy that the invalid cases below break one place at a time.
const minimal = `apiVersion: backflow.dev/v1alpha1
kind: ReverseReconcilePolicy
metadata:
  name: p
spec:
  default: deny
  rules:
    - role: sre
      mayAccept:
        - valuePath: a.b
          field: spec.replicas
          objects: ["apps/v1|StatefulSet|ns|name"]
          environments: [prod]
`

func TestParseValidationErrors(t *testing.T) {
	entry := "        - valuePath: a.b\n          field: spec.replicas\n          objects: [\"apps/v1|StatefulSet|ns|name\"]\n          environments: [prod]\n"
	for _, tc := range []struct {
		why  string
		doc  string
		want []string
	}{
		{"the issue's example: a missing field in the second entry",
			minimal + entry[:len("        - valuePath: a.b\n")] + "          objects: [\"apps/v1|StatefulSet|ns|name\"]\n          environments: [prod]\n",
			[]string{"policy.yaml: spec.rules[0].mayAccept[1].field: required"}},
		{"unknown keys are errors at every level",
			strings.Replace(strings.Replace(minimal, "  name: p\n", "  name: p\n  owner: me\n", 1), "          field:", "          feild: x\n          field:", 1),
			[]string{"policy.yaml: metadata.owner: unknown key", "policy.yaml: spec.rules[0].mayAccept[0].feild: unknown key"}},
		{"an unknown top-level key",
			minimal + "status: {}\n",
			[]string{"policy.yaml: status: unknown key"}},
		{"default must be deny",
			strings.Replace(minimal, "default: deny", "default: allow", 1),
			[]string{`policy.yaml: spec.default: must be "deny" (the policy is default-deny), got "allow"`}},
		{"default is required",
			strings.Replace(minimal, "  default: deny\n", "", 1),
			[]string{`policy.yaml: spec.default: required: must be "deny"`}},
		{"kind must be the policy kind",
			strings.Replace(minimal, "kind: ReverseReconcilePolicy", "kind: ReverseReconcileReceipt", 1),
			[]string{`policy.yaml: kind: must be ReverseReconcilePolicy, got "ReverseReconcileReceipt"`}},
		{"an unknown apiVersion",
			strings.Replace(minimal, "backflow.dev/v1alpha1", "example.com/v1", 1),
			[]string{`policy.yaml: apiVersion: must be helm-expt.confighub.com/v1alpha1 or backflow.dev/v1alpha1, got "example.com/v1"`}},
		{"role and field are required (valuePath is not: manifests write the field itself); objects and environments must not be empty",
			strings.Replace(strings.Replace(strings.Replace(strings.Replace(strings.Replace(minimal, "role: sre", "role: ''", 1), "valuePath: a.b", "valuePath: ~", 1), "field: spec.replicas", "field:", 1), `["apps/v1|StatefulSet|ns|name"]`, "[]", 1), "[prod]", "", 1),
			[]string{
				"policy.yaml: spec.rules[0].mayAccept[0].field: required",
				"policy.yaml: spec.rules[0].mayAccept[0].objects: required: list at least one object",
				"policy.yaml: spec.rules[0].mayAccept[0].environments: required: list at least one environment",
				"policy.yaml: spec.rules[0].role: required",
			}},
		{"wrong shapes name their place",
			strings.Replace(strings.Replace(minimal, "objects: [\"apps/v1|StatefulSet|ns|name\"]", "objects: \"apps/v1|StatefulSet|ns|name\"", 1), "role: sre", "role: [sre]", 1),
			[]string{
				"policy.yaml: spec.rules[0].role: want a string",
				"policy.yaml: spec.rules[0].mayAccept[0].objects: want a list",
				"policy.yaml: spec.rules[0].mayAccept[0].objects: required: list at least one object",
				"policy.yaml: spec.rules[0].role: required",
			}},
		{"bounds: non-numbers, a bad RE2 pattern, an empty oneOf, a non-boolean autoMerge",
			minimal + "          minimum: \"1\"\n          maximum: [2]\n          pattern: \"(\"\n          oneOf: []\n          autoMerge: \"yes\"\n",
			[]string{
				"policy.yaml: spec.rules[0].mayAccept[0].minimum: want a number",
				"policy.yaml: spec.rules[0].mayAccept[0].maximum: want a number",
				"policy.yaml: spec.rules[0].mayAccept[0].pattern: invalid RE2 expression: error parsing regexp: missing closing ): `(`",
				"policy.yaml: spec.rules[0].mayAccept[0].autoMerge: want true or false",
				"policy.yaml: spec.rules[0].mayAccept[0].oneOf: must list at least one value",
			}},
		{"an empty bound is refused, not read as no bound",
			minimal + "          minimum:\n          maximum: ~\n          pattern:\n          oneOf:\n          autoMerge:\n",
			[]string{
				"policy.yaml: spec.rules[0].mayAccept[0].minimum: want a number",
				"policy.yaml: spec.rules[0].mayAccept[0].maximum: want a number",
				"policy.yaml: spec.rules[0].mayAccept[0].pattern: want a string",
				"policy.yaml: spec.rules[0].mayAccept[0].oneOf: want a list",
				"policy.yaml: spec.rules[0].mayAccept[0].autoMerge: want true or false",
			}},
		{"oneOf items are scalars",
			minimal + "          oneOf: [a, [b]]\n",
			[]string{"policy.yaml: spec.rules[0].mayAccept[0].oneOf[1]: want a scalar"}},
		{"minimum above maximum",
			minimal + "          minimum: 5\n          maximum: 1.5\n",
			[]string{"policy.yaml: spec.rules[0].mayAccept[0].minimum: is greater than maximum (5 > 1.5)"}},
		{"pattern with numeric bounds could never hold",
			minimal + "          minimum: 1\n          pattern: x\n",
			[]string{"policy.yaml: spec.rules[0].mayAccept[0].pattern: cannot be combined with minimum or maximum"}},
		{"a pattern cannot escape its anchoring",
			minimal + "          pattern: \"a)|(b\"\n",
			[]string{"policy.yaml: spec.rules[0].mayAccept[0].pattern: invalid RE2 expression: error parsing regexp: unexpected ): `a)|(b`"}},
		{"malformed globs name the list item",
			strings.Replace(strings.Replace(minimal, `["apps/v1|StatefulSet|ns|name"]`, `["apps/v1|StatefulSet|name", "apps/v1|**|ns|x"]`, 1), "[prod]", "[prod, '', 'prod-**']", 1),
			[]string{
				"policy.yaml: spec.rules[0].mayAccept[0].objects[0]: must be an object key apiVersion|kind|namespace|name (4 segments separated by |), got 3 segment(s)",
				"policy.yaml: spec.rules[0].mayAccept[0].objects[1]: `**` is not a glob here: `*` matches any run of characters within one segment",
				"policy.yaml: spec.rules[0].mayAccept[0].environments[1]: must not be empty",
				"policy.yaml: spec.rules[0].mayAccept[0].environments[2]: `**` is not a glob here: `*` matches any run of characters within one segment",
			}},
		{"duplicate and merge keys are refused",
			strings.Replace(minimal, "  name: p\n", "  name: p\n  name: q\n", 1) + "x: &m {a: 1}\ny:\n  <<: *m\n",
			[]string{"policy.yaml: metadata.name: duplicate key", "policy.yaml: x: unknown key", "policy.yaml: y: unknown key"}},
		{"a rule must be a mapping",
			strings.Replace(minimal, "  rules:\n", "  rules:\n    - just-a-string\n", 1),
			[]string{"policy.yaml: spec.rules[0]: want a mapping"}},
		{"spec is required",
			"apiVersion: backflow.dev/v1alpha1\nkind: ReverseReconcilePolicy\n",
			[]string{"policy.yaml: spec: required"}},
	} {
		t.Run(tc.why, func(t *testing.T) {
			p, err := Parse("policy.yaml", []byte(tc.doc))
			var verr *ValidationError
			if !errors.As(err, &verr) {
				t.Fatalf("want a ValidationError, got %v", err)
			}
			if got := strings.Split(verr.Error(), "\n"); strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("errors:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
			if p == nil || p.Valid() {
				t.Fatalf("an invalid policy must come back marked invalid")
			}
			if d := p.Evaluate(Request{Roles: []string{"sre"}, Environment: "prod", Object: "apps/v1|StatefulSet|ns|name", Field: "spec.replicas", ValuePath: "a.b", Value: 3, HasValue: true}); d.Allowed || d.Reasons[0].Kind != InvalidPolicy {
				t.Errorf("an invalid policy must deny: %+v", d)
			}
		})
	}
}

// A place the decoder refused carries its line; the text of a scalar is
// read as written wherever the policy wants a string.
func TestParseLinesAndText(t *testing.T) {
	doc := strings.Replace(minimal, "role: sre", "role: 2024", 1) + "          autoMerge: 1\n"
	p, err := Parse("policy.yaml", []byte(doc))
	var verr *ValidationError
	if !errors.As(err, &verr) || len(verr.Errors) != 1 {
		t.Fatalf("want one validation error, got %v", err)
	}
	if fe := verr.Errors[0]; fe.Path != "spec.rules[0].mayAccept[0].autoMerge" || fe.Line != 14 {
		t.Errorf("error %+v: want autoMerge at line 14", fe)
	}
	if p.Rules[0].Role != "2024" {
		t.Errorf("role %q: want the scalar's text 2024", p.Rules[0].Role)
	}
}

func TestParseUnparseable(t *testing.T) {
	// Each rule is an alias of the first, whose mayAccept list aliases one
	// entry many times: a few kilobytes that would expand to a million entries.
	bomb := "apiVersion: backflow.dev/v1alpha1\nkind: ReverseReconcilePolicy\nspec:\n  default: deny\n  rules:\n" +
		"    - &r {role: sre, mayAccept: [&e {valuePath: a, field: b, objects: ['a|b|c|d'], environments: [p]}" + strings.Repeat(", *e", 1000) + "]}\n" +
		strings.Repeat("    - *r\n", 1000)
	for _, tc := range []struct {
		why  string
		doc  string
		want string
	}{
		{"not YAML", "a: [", "did not find expected"},
		{"empty file", "", "empty document"},
		{"a list is not a policy", "- a\n", "not a YAML mapping"},
		{"two documents", minimal + "---\n" + minimal, "more than one YAML document"},
		{"an alias bomb is refused rather than expanded", bomb, "excessive aliasing"},
		{"a huge file is refused before parsing", minimal + "#" + strings.Repeat("x", MaxSize), "larger than"},
	} {
		t.Run(tc.why, func(t *testing.T) {
			p, err := Parse("policy.yaml", []byte(tc.doc))
			if p != nil || !errors.Is(err, ErrUnparseable) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "policy.yaml") {
				t.Fatalf("got %v, %v; want ErrUnparseable mentioning %q and the file", p, err, tc.want)
			}
		})
	}
}

func TestLoadUnreadable(t *testing.T) {
	_, err := Load(filepath.Join(t.TempDir(), "missing.yaml"))
	if !errors.Is(err, ErrUnparseable) || !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("want ErrUnparseable wrapping ErrNotExist, got %v", err)
	}
}
