package receipt

import (
	"errors"
	"slices"
	"strings"
	"testing"

	yaml "go.yaml.in/yaml/v3"

	"github.com/backflow-dev/backflow/internal/policy"
	"github.com/backflow-dev/backflow/internal/values"
)

// keyOrder lists every mapping key of a YAML document as a dotted path, in
// document order.
func keyOrder(t *testing.T, data []byte) []string {
	t.Helper()
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	var out []string
	var walk func(n *yaml.Node, path string)
	walk = func(n *yaml.Node, path string) {
		switch n.Kind {
		case yaml.DocumentNode:
			walk(n.Content[0], path)
		case yaml.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				p := path + "." + n.Content[i].Value
				out = append(out, p)
				walk(n.Content[i+1], p)
			}
		case yaml.SequenceNode:
			for i, item := range n.Content {
				walk(item, path+"[]"+string(rune('0'+i%10)))
			}
		}
	}
	walk(&doc, "")
	return out
}

func TestMarshalKeepsTheSeedsKeyOrder(t *testing.T) {
	for _, path := range []string{seedReceiptPath, "testdata/multi-field.yaml"} {
		t.Run(path, func(t *testing.T) {
			orig := []byte(readFile(t, path))
			r, _, err := Parse(path, orig)
			if err != nil {
				t.Fatal(err)
			}
			out, err := Marshal(r)
			if err != nil {
				t.Fatal(err)
			}
			if got, want := keyOrder(t, out), keyOrder(t, orig); !slices.Equal(got, want) {
				t.Fatalf("key order changed:\n got %v\nwant %v", got, want)
			}
			var a, b any
			if err := yaml.Unmarshal(orig, &a); err != nil {
				t.Fatal(err)
			}
			if err := yaml.Unmarshal(out, &b); err != nil {
				t.Fatal(err)
			}
			if !values.Equal(a, b) {
				t.Fatalf("marshal changed the content:\n%s", out)
			}
		})
	}
}

func TestMarshalOmitsOnlyExtensions(t *testing.T) {
	// why: a receipt built in code carries the seed's keys even when empty,
	// so the verifier reports them rather than a reader guessing; only
	// backflow's optional extensions are left out when unset.
	out, err := Marshal(&Receipt{Kind: Kind})
	if err != nil {
		t.Fatal(err)
	}
	s := string(out)
	for _, want := range []string{"unauthorizedFieldsChanged: []", "residualDrift: []", "liveValue: null", "notClaimed: []"} {
		if !strings.Contains(s, want) {
			t.Errorf("missing %q in\n%s", want, s)
		}
	}
	if strings.Contains(s, "mergeCommit") {
		t.Errorf("an unset mergeCommit must be omitted:\n%s", s)
	}
	r := &Receipt{Spec: Spec{Bounds: Bounds{ChangedFields: []ChangedField{{To: ValueOf(nil), DesiredValueAfter: ValueOf("x")}}}}}
	out, err = Marshal(r)
	if err != nil || !strings.Contains(string(out), "to: null") || !strings.Contains(string(out), "desiredValueAfter: x") {
		t.Errorf("set values must be written, null included: %v\n%s", err, out)
	}
}

func TestParseWarningsAndShapes(t *testing.T) {
	seed := readFile(t, seedReceiptPath)
	doc := edit(t, seed,
		"kind: ReverseReconcileReceipt", "kind: ReverseReconcileReceipt\nstatus: {}",
		"  chart: bitnami/redis", "  chart: bitnami/redis\n  cluster: us-east-1",
		"        to: 4\n", "        to: 4\n        note: scaled\n",
		"liveValue: 4", "liveValue: null",
		"    desiredValueBefore: 3\n", "",
		"  unit:\n", "  unit: [a]\n  unitX:\n")
	r, warnings, err := Parse("r.yaml", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, w := range warnings {
		got = append(got, w.String())
	}
	want := []string{"status: unknown key, ignored", "cluster: unknown key, ignored", "unitX: unknown key, ignored", "bounds.changedFields[0].note: unknown key, ignored"}
	if !slices.Equal(got, want) {
		t.Errorf("warnings %q, want %q", got, want)
	}
	if !r.Spec.Observation.LiveValue.Set || r.Spec.Observation.LiveValue.V != nil {
		t.Errorf("an explicit null must be a present null value: %+v", r.Spec.Observation.LiveValue)
	}
	if r.Spec.Observation.DesiredValueBefore.Set {
		t.Errorf("a missing value must be unset")
	}
	vs := Verify(r, nil, seedPolicyRef)
	if !slices.Contains(paths(vs), "unit") {
		t.Errorf("a mapping given as a list must be reported at its place: %v", vs)
	}
	if !slices.Contains(paths(vs), "observation.desiredValueBefore") {
		t.Errorf("a missing desiredValueBefore must be reported: %v", vs)
	}
}

func TestParseUnparseable(t *testing.T) {
	seed := readFile(t, seedReceiptPath)
	bomb := "a: &a [x, x, x, x, x, x, x, x, x, x]\n"
	prev := "a"
	for _, name := range []string{"b", "c", "d", "e", "f", "g", "h", "i"} {
		bomb += name + ": &" + name + " [" + strings.Repeat("*"+prev+", ", 9) + "*" + prev + "]\n"
		prev = name
	}
	for _, tc := range []struct{ why, doc, want string }{
		{"not YAML", "a: [", "did not find expected"},
		{"empty", "", "empty document"},
		{"a list", "- a\n", "not a YAML mapping"},
		{"two documents", seed + "---\n" + seed, "more than one YAML document"},
		{"too large", seed + "#" + strings.Repeat("x", MaxSize), "larger than"},
		{"an alias bomb in a value", "kind: x\nspec:\n  observation:\n    liveValue: *i\n" + strings.Replace(bomb, "a: &a", "x: &a", 1), "excessive aliasing"},
	} {
		t.Run(tc.why, func(t *testing.T) {
			doc := tc.doc
			if tc.why == "an alias bomb in a value" {
				// Anchors must come before their aliases.
				doc = "metadata:\n  labels:\n" + indent(strings.Replace(bomb, "a: &a", "x: &a", 1)) + "kind: x\nspec:\n  observation:\n    liveValue: *i\n"
			}
			r, _, err := Parse("r.yaml", []byte(doc))
			if r != nil && err == nil {
				// yaml.v3 refuses the expansion when decoding the value;
				// it is reported at the place, not expanded.
				vs := Verify(r, nil, "")
				if !slices.ContainsFunc(vs, func(v Violation) bool { return strings.Contains(v.Message, tc.want) }) {
					t.Fatalf("got %v, want a violation mentioning %q", vs, tc.want)
				}
				return
			}
			if !errors.Is(err, ErrUnparseable) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "r.yaml") {
				t.Fatalf("got %v, want ErrUnparseable mentioning %q and the file", err, tc.want)
			}
		})
	}
}

func indent(s string) string {
	lines := strings.SplitAfter(s, "\n")
	for i, l := range lines {
		if l != "" {
			lines[i] = "    " + l
		}
	}
	return strings.Join(lines, "")
}

func TestTable(t *testing.T) {
	seed, _, err := Load(seedReceiptPath)
	if err != nil {
		t.Fatal(err)
	}
	multi, _, err := Load("testdata/multi-field.yaml")
	if err != nil {
		t.Fatal(err)
	}
	odd, _, err := Parse("odd.yaml", []byte("metadata: {name: \"a|b\"}\nspec:\n  chart: c\n  environment: e\n  bounds:\n    changedFields:\n      - {valuePath: x, from: \"`p|q`\"}\n    withinAuthorizedScope: false\n"))
	if err != nil {
		t.Fatal(err)
	}
	got := Table([]*Receipt{seed, multi, odd})
	want := "| Receipt | Chart | Env | Accepted change | Authority | Bounded | Round-trip | Status |\n" +
		"| --- | --- | --- | --- | --- | --- | --- | --- |\n" +
		"| `redis-prod-us-east-replica-incident` | bitnami/redis@25.5.3 | prod-us-east | `replica.replicaCount: 3 -> 4` | allow | yes | closed | design-example |\n" +
		"| `redis-prod-us-east-master-resize` | bitnami/redis@25.5.3 | prod-us-east | `master.count: 1 -> 2`; `master.resources.limits.memory: 512Mi -> 1Gi` | allow | yes | closed | proposed |\n" +
		"| `a\\|b` | c | e | ``x: `p\\|q` -> ?`` |  | **no** |  |  |\n"
	if got != want {
		t.Fatalf("got:\n%s\nwant:\n%s", got, want)
	}
}

// FuzzParseReceipt checks that parsing and verifying never panic.
func FuzzParseReceipt(f *testing.F) {
	for _, p := range []string{seedReceiptPath, "testdata/multi-field.yaml"} {
		b, err := readFileBytes(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	pol, err := policy.Load(seedPolicyPath)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		r, _, err := Parse("fuzz.yaml", data)
		if err != nil {
			if r != nil {
				t.Fatal("an unparseable receipt came back")
			}
			return
		}
		Verify(r, pol, seedPolicyRef)
		TableRow(r)
		if _, err := Marshal(r); err != nil {
			t.Fatalf("a parsed receipt must marshal: %v", err)
		}
	})
}
