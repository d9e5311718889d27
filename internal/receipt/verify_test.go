package receipt

import (
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/backflow-dev/backflow/internal/policy"
)

const (
	seedReceiptPath = "../../testdata/seed/data/reverse-reconcile/examples/redis-prod-us-east-replica-incident.yaml"
	seedPolicyPath  = "../../testdata/seed/data/reverse-reconcile/authority-policy.yaml"
	seedPolicyRef   = "data/reverse-reconcile/authority-policy.yaml"
	multiPolicyRef  = ".github/reverse-reconcile-policy.yaml"
)

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func loadPolicy(t *testing.T, path string) *policy.Policy {
	t.Helper()
	p, err := policy.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// edit returns doc with each old replaced by its new, failing when an old
// is not in doc, so that a broken copy breaks what it says it breaks.
func edit(t *testing.T, doc string, pairs ...string) string {
	t.Helper()
	for i := 0; i+1 < len(pairs); i += 2 {
		if !strings.Contains(doc, pairs[i]) {
			t.Fatalf("broken copy: %q not found", pairs[i])
		}
		doc = strings.Replace(doc, pairs[i], pairs[i+1], 1)
	}
	return doc
}

func verifyText(t *testing.T, doc string, pol *policy.Policy, ref string) []Violation {
	t.Helper()
	r, _, err := Parse("receipt.yaml", []byte(doc))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return Verify(r, pol, ref)
}

func paths(vs []Violation) []string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = v.Path
	}
	return out
}

func TestSeedReceiptVerifies(t *testing.T) {
	r, warnings, err := Load(seedReceiptPath)
	if err != nil || len(warnings) != 0 {
		t.Fatalf("Load: %v, warnings %v", err, warnings)
	}
	if vs := Verify(r, loadPolicy(t, seedPolicyPath), seedPolicyRef); len(vs) != 0 {
		t.Fatalf("the seed's receipt must verify, got %v", vs)
	}
}

func TestMultiFieldReceiptVerifies(t *testing.T) {
	r, warnings, err := Load("testdata/multi-field.yaml")
	if err != nil || len(warnings) != 0 {
		t.Fatalf("Load: %v, warnings %v", err, warnings)
	}
	if vs := Verify(r, loadPolicy(t, "testdata/policy.yaml"), multiPolicyRef); len(vs) != 0 {
		t.Fatalf("a proposed two-field receipt within bounds must verify, got %v", vs)
	}
}

// TestVerifyBrokenCopies breaks the seed's receipt one rule at a time and
// checks that the rule's property is among those reported.
func TestVerifyBrokenCopies(t *testing.T) {
	seed := readFile(t, seedReceiptPath)
	pol := loadPolicy(t, seedPolicyPath)
	cascade := []string{"bounds.changedFields[0]", "bounds.unauthorizedFieldsChanged", "bounds.withinAuthorizedScope", "authority.decision", "trigger.class"}
	for _, tc := range []struct {
		why     string
		doc     string
		want    []string
		notWant []string
	}{
		{"rule 2: the kind", edit(t, seed, "kind: ReverseReconcileReceipt", "kind: ReverseReconcileRecipe"), []string{"kind"}, nil},
		{"rule 3: an unknown status", edit(t, seed, "status: design-example", "status: done"), []string{"status"}, []string{"writeBack.method"}},
		{"rule 4: no honesty markers", seed[:strings.Index(seed, "  notClaimed:")] + "  notClaimed: []\n", []string{"notClaimed"}, nil},
		{"rule 4: an empty honesty marker", edit(t, seed, `- "Does not claim ConfigHub performs reverse reconciliation today."`, `- ""`), []string{"notClaimed[1]"}, nil},
		{"rule 5: no trigger role; nothing is authorized without one", edit(t, seed, "    role: platform-sre\n", ""), append([]string{"trigger.role"}, cascade...), nil},
		{"rule 6: an unknown trigger class", edit(t, seed, "class: authorized-live-change", "class: hotfix"), []string{"trigger.class"}, nil},
		{"rule 7: another policyRef", edit(t, seed, "policyRef: data/reverse-reconcile/authority-policy.yaml", "policyRef: policy.yaml"), []string{"authority.policyRef"}, nil},
		{"rule 8: no changed fields", edit(t, seed, "    changedFields:\n      - object: \"apps/v1|StatefulSet|redis|redis-replicas\"\n        field: spec.replicas\n        valuePath: replica.replicaCount\n        from: 3\n        to: 4\n", "    changedFields: []\n"),
			[]string{"bounds.changedFields"}, nil},
		{"rule 9: an environment the policy does not list; 10-13 break with it", edit(t, seed, "environment: prod-us-east", "environment: staging"), cascade, nil},
		{"rule 9: an object the policy does not list", edit(t, seed, "      - object: \"apps/v1|StatefulSet|redis|redis-replicas\"", "      - object: \"apps/v1|StatefulSet|redis|redis-master\""),
			append([]string{"bounds.changedFields"}, cascade...), nil},
		{"rule 9: a second, unauthorized field", edit(t, seed, "        to: 4\n", "        to: 4\n      - {object: \"apps/v1|StatefulSet|redis|redis-replicas\", field: spec.minReadySeconds, valuePath: replica.minReadySeconds, from: 0, to: 5}\n"),
			[]string{"bounds.changedFields[1]", "bounds.unauthorizedFieldsChanged", "bounds.withinAuthorizedScope", "authority.decision", "trigger.class"}, []string{"bounds.changedFields[0]"}},
		{"rule 10: an unauthorized field claimed that is authorized", edit(t, seed, "unauthorizedFieldsChanged: []", "unauthorizedFieldsChanged: [\"apps/v1|StatefulSet|redis|redis-replicas spec.replicas\"]"),
			[]string{"bounds.unauthorizedFieldsChanged"}, []string{"bounds.changedFields[0]"}},
		{"rule 11: out of scope claimed for an authorized change", edit(t, seed, "withinAuthorizedScope: true", "withinAuthorizedScope: false"), []string{"bounds.withinAuthorizedScope"}, nil},
		{"rule 11: the claim is missing", edit(t, seed, "    withinAuthorizedScope: true\n", ""), []string{"bounds.withinAuthorizedScope"}, nil},
		{"rule 12: deny for an authorized change", edit(t, seed, "decision: allow", "decision: deny"), []string{"authority.decision"}, nil},
		{"rule 13: drift for an authorized change", edit(t, seed, "class: authorized-live-change", "class: unauthorized-drift"), []string{"trigger.class"}, nil},
		{"rule 14: a string is not the number it spells", edit(t, seed, "desiredValueAfter: 4", `desiredValueAfter: "4"`), []string{"writeBack.desiredValueAfter"}, nil},
		{"rule 14: another value", edit(t, seed, "desiredValueAfter: 4", "desiredValueAfter: 5"), []string{"writeBack.desiredValueAfter"}, nil},
		{"rule 14: missing", edit(t, seed, "    desiredValueAfter: 4\n", ""), []string{"writeBack.desiredValueAfter"}, nil},
		{"no placeholder: cub-scout's \"-\" recorded as the live value and written back is refused wherever it appears",
			edit(t, seed, "liveValue: 4", `liveValue: "-"`, "        to: 4\n", "        to: \"-\"\n", "desiredValueAfter: 4", `desiredValueAfter: "-"`),
			[]string{"observation.liveValue", "writeBack.desiredValueAfter", "bounds.changedFields[0].to"}, nil},
		{"rule 15: residual drift", edit(t, seed, "residualDrift: []", "residualDrift: [spec.replicas]"), []string{"roundTrip.residualDrift"}, nil},
		{"rule 16: desired does not match observed", edit(t, seed, "desiredAfterMatchesObserved: true", "desiredAfterMatchesObserved: false"), []string{"roundTrip.desiredAfterMatchesObserved"}, nil},
		{"rule 16: the round trip is not closed", edit(t, seed, "result: closed", "result: open"), []string{"roundTrip.result"}, nil},
		{"rule 17: no who", edit(t, seed, "      who: platform-sre\n", ""), []string{"writeBack.provenance.who"}, nil},
		{"rule 17: no when", edit(t, seed, "      when: \"2026-06-18T12:00:05Z\"\n", ""), []string{"writeBack.provenance.when"}, nil},
		{"rule 17: no operation", edit(t, seed, "operation: reverse-reconcile", "operation: \"\""), []string{"writeBack.provenance.operation"}, nil},
		{"rule 17: no authority", edit(t, seed, "      authority: data/reverse-reconcile/authority-policy.yaml\n", ""), []string{"writeBack.provenance.authority"}, nil},
		{"rule 17: no intent", edit(t, seed, "      intent: \"incident-fix: scale replicas to absorb a load spike\"\n  roundTrip", "  roundTrip"), []string{"writeBack.provenance.intent"}, nil},
		{"rule 18: design-example needs manual-fixture", edit(t, seed, "method: manual-fixture", "method: pull-request"), []string{"writeBack.method"}, nil},
		{"rule 18: proven needs a real write-back", edit(t, seed, "status: design-example", "status: proven"), []string{"writeBack.method"}, nil},
		{"rule 18: proposed needs a pull request", edit(t, seed, "status: design-example", "status: proposed"), []string{"writeBack.method"}, nil},
		{"what passes: a self-consistent deny is reported, never receipted",
			edit(t, seed, "environment: prod-us-east", "environment: staging",
				"unauthorizedFieldsChanged: []", "unauthorizedFieldsChanged: [\"apps/v1|StatefulSet|redis|redis-replicas spec.replicas\"]",
				"withinAuthorizedScope: true", "withinAuthorizedScope: false",
				"decision: allow", "decision: deny",
				"class: authorized-live-change", "class: unauthorized-drift"),
			[]string{"bounds.changedFields[0]", "authority.decision", "trigger.class"},
			[]string{"bounds.unauthorizedFieldsChanged", "bounds.withinAuthorizedScope"}},
		{"provenance.authority must be the policyRef", edit(t, seed, "      authority: data/reverse-reconcile/authority-policy.yaml", "      authority: other.yaml"), []string{"writeBack.provenance.authority"}, []string{"authority.policyRef"}},
		{"trigger.at is an RFC 3339 time", edit(t, seed, `at: "2026-06-18T12:00:00Z"`, `at: "18 June 2026"`), []string{"trigger.at"}, nil},
		{"provenance.when is an RFC 3339 time", edit(t, seed, `when: "2026-06-18T12:00:05Z"`, `when: "2026-06-18 12:00"`), []string{"writeBack.provenance.when"}, nil},
		{"the observed field's entry starts at desiredValueBefore", edit(t, seed, "desiredValueBefore: 3", "desiredValueBefore: 2"), []string{"bounds.changedFields[0].from"}, nil},
		{"the observed field's entry ends at liveValue", edit(t, seed, "        to: 4", "        to: 5"), []string{"bounds.changedFields[0].to"}, nil},
		{"the observed field needs an entry", edit(t, seed, "    field: spec.replicas\n    valuePath", "    field: spec.template.spec.replicas\n    valuePath"), []string{"bounds.changedFields"}, nil},
		{"an entry's desiredValueAfter equals its to", edit(t, seed, "        to: 4\n", "        to: 4\n        desiredValueAfter: 4.5\n"), []string{"bounds.changedFields[0].desiredValueAfter"}, nil},
		{"a value of the wrong shape is reported at its place", edit(t, seed, "withinAuthorizedScope: true", `withinAuthorizedScope: "true"`), []string{"bounds.withinAuthorizedScope"}, nil},
		{"a list of the wrong shape is reported at its place", edit(t, seed, "residualDrift: []", "residualDrift: none"), []string{"roundTrip.residualDrift"}, nil},
		{"an unknown apiVersion", edit(t, seed, "apiVersion: helm-expt.confighub.com/v1alpha1", "apiVersion: v1"), []string{"apiVersion"}, nil},
		{"a merge commit must be a SHA", edit(t, seed, "    provenance:", "    mergeCommit: HEAD\n    provenance:"), []string{"writeBack.mergeCommit"}, nil},
	} {
		t.Run(tc.why, func(t *testing.T) {
			got := paths(verifyText(t, tc.doc, pol, seedPolicyRef))
			for _, w := range tc.want {
				if !slices.Contains(got, w) {
					t.Errorf("%s not reported; got %v", w, got)
				}
			}
			for _, w := range tc.notWant {
				if slices.Contains(got, w) {
					t.Errorf("%s reported but holds; got %v", w, got)
				}
			}
		})
	}
}

func TestVerifyPasses(t *testing.T) {
	seed := readFile(t, seedReceiptPath)
	multi := readFile(t, "testdata/multi-field.yaml")
	seedPol := loadPolicy(t, seedPolicyPath)
	multiPol := loadPolicy(t, "testdata/policy.yaml")
	for _, tc := range []struct {
		why string
		doc string
		pol *policy.Policy
		ref string
	}{
		{"proven by cub reverse-reconcile, with a merge commit", edit(t, seed, "status: design-example", "status: proven", "method: manual-fixture", "method: cub-reverse-reconcile",
			"    provenance:", "    mergeCommit: 0123456789abcdef0123456789abcdef01234567\n    provenance:"), seedPol, seedPolicyRef},
		{"proven through a pull request", edit(t, seed, "status: design-example", "status: proven", "method: manual-fixture", "method: pull-request"), seedPol, seedPolicyRef},
		{"numbers compare by value: 4.0 equals 4", edit(t, seed, "desiredValueAfter: 4", "desiredValueAfter: 4.0", "        to: 4", "        to: 4.0"), seedPol, seedPolicyRef},
		{"unknown keys are not failures", edit(t, seed, "  chart: bitnami/redis", "  chart: bitnami/redis\n  cluster: us-east-1", "kind: ReverseReconcileReceipt", "kind: ReverseReconcileReceipt\nextra: {a: 1}"), seedPol, seedPolicyRef},
		{"any order of changed fields", edit(t, multi,
			"      - object: \"apps/v1|StatefulSet|redis|redis-master\"\n        field: spec.replicas\n        valuePath: master.count\n        from: 1\n        to: 2\n        desiredValueAfter: 2\n", "",
			"    unauthorizedFieldsChanged", "      - {object: \"apps/v1|StatefulSet|redis|redis-master\", field: spec.replicas, valuePath: master.count, from: 1, to: 2}\n    unauthorizedFieldsChanged"), multiPol, multiPolicyRef},
	} {
		t.Run(tc.why, func(t *testing.T) {
			if vs := verifyText(t, tc.doc, tc.pol, tc.ref); len(vs) != 0 {
				t.Fatalf("want no violations, got %v", vs)
			}
		})
	}
}

func TestVerifyMultiFieldBounds(t *testing.T) {
	multi := readFile(t, "testdata/multi-field.yaml")
	pol := loadPolicy(t, "testdata/policy.yaml")
	for _, tc := range []struct {
		why  string
		doc  string
		want []string
	}{
		{"a value above the policy's maximum is not authorized",
			edit(t, multi, "liveValue: 2", "liveValue: 9", "        to: 2\n        desiredValueAfter: 2", "        to: 9\n        desiredValueAfter: 9", "  desiredValueAfter: 2", "  desiredValueAfter: 9"),
			[]string{"bounds.changedFields[0]", "bounds.unauthorizedFieldsChanged"}},
		{"a value outside the pattern is not authorized",
			edit(t, multi, "to: 1Gi\n        desiredValueAfter: 1Gi", "to: lots\n        desiredValueAfter: lots"),
			[]string{"bounds.changedFields[1]", "bounds.unauthorizedFieldsChanged"}},
	} {
		t.Run(tc.why, func(t *testing.T) {
			got := paths(verifyText(t, tc.doc, pol, multiPolicyRef))
			for _, w := range tc.want {
				if !slices.Contains(got, w) {
					t.Errorf("%s not reported; got %v", w, got)
				}
			}
		})
	}
}

func TestVerifyMessages(t *testing.T) {
	// why: the messages are what a user reads; pin the ones for the most
	// common failure, an unauthorized environment, and its cascade.
	seed := readFile(t, seedReceiptPath)
	vs := verifyText(t, edit(t, seed, "environment: prod-us-east", "environment: staging"), loadPolicy(t, seedPolicyPath), seedPolicyRef)
	var got []string
	for _, v := range vs {
		got = append(got, v.String())
	}
	want := []string{
		`bounds.changedFields[0]: apps/v1|StatefulSet|redis|redis-replicas spec.replicas is not authorized for role "platform-sre" in "staging": spec.rules[0].mayAccept[0] (role platform-sre): environment "staging" is not listed in environments [prod-us-east, prod-eu-west]`,
		`bounds.unauthorizedFieldsChanged: is [], want ["apps/v1|StatefulSet|redis|redis-replicas spec.replicas"]`,
		`bounds.withinAuthorizedScope: must be false: a changed field is not authorized`,
		`authority.decision: must be deny: a changed field is not authorized`,
		`trigger.class: must be unauthorized-drift: a changed field is not authorized`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("got:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestVerifyInvalidPolicyAuthorizesNothing(t *testing.T) {
	seed := readFile(t, seedReceiptPath)
	bad, err := policy.Parse("p.yaml", []byte(strings.Replace(readFile(t, seedPolicyPath), "default: deny", "default: allow", 1)))
	if err == nil {
		t.Fatal("a policy with default allow must not validate")
	}
	for _, pol := range []*policy.Policy{bad, nil} {
		got := paths(verifyText(t, seed, pol, seedPolicyRef))
		if !slices.Contains(got, "bounds.changedFields[0]") {
			t.Errorf("an invalid or missing policy must authorize nothing; got %v", got)
		}
	}
}

func TestPolicyRef(t *testing.T) {
	for _, tc := range []struct{ path, wd, want, why string }{
		{"data/reverse-reconcile/authority-policy.yaml", "/repo", "data/reverse-reconcile/authority-policy.yaml", "a relative path is kept"},
		{"./data//reverse-reconcile/../reverse-reconcile/authority-policy.yaml", "/repo", "data/reverse-reconcile/authority-policy.yaml", "a relative path is cleaned"},
		{"/repo/.github/policy.yaml", "/repo", ".github/policy.yaml", "an absolute path is made relative to the working directory"},
	} {
		if got, err := PolicyRef(tc.path, tc.wd); err != nil || got != tc.want {
			t.Errorf("PolicyRef(%q, %q) = %q, %v; want %q (%s)", tc.path, tc.wd, got, err, tc.want, tc.why)
		}
	}
}

func readFileBytes(path string) ([]byte, error) { return os.ReadFile(path) }

func TestJoinViolations(t *testing.T) {
	for _, tc := range []struct {
		why  string
		in   []Violation
		want string
	}{
		{"no violation says nothing", nil, ""},
		{"one violation is its own line", []Violation{{"status", "unknown"}}, "status: unknown"},
		{"several keep their order", []Violation{{"a", "x"}, {"b.c[0]", "y"}}, "a: x; b.c[0]: y"},
	} {
		if got := JoinViolations(tc.in); got != tc.want {
			t.Errorf("%s: got %q, want %q", tc.why, got, tc.want)
		}
	}
}
