package receipt

import (
	"slices"
	"strings"
	"testing"
)

// renderSection witnesses both changed fields of testdata/multi-field.yaml.
const renderSection = `  render:
    chart: redis
    version: 25.5.3
    digest: sha256:01a8943cb272ab3a4790e716dada4d267b350450e2682c692290274caf1c5d3e
    renderer: helm.sh/helm/v4 v4.3.1
    releaseName: redis
    namespace: redis
    kubeVersion: v1.34.0
    objectsCompared: ["apps/v1|StatefulSet|redis|redis-master", "apps/v1|StatefulSet|redis|redis-replicas"]
    changedFields:
      - object: "apps/v1|StatefulSet|redis|redis-master"
        field: spec.replicas
        before: 1
        after: 2
      - object: "apps/v1|StatefulSet|redis|redis-master"
        field: spec.template.spec.containers[0].resources.limits.memory
        before: 512Mi
        after: 1Gi
  roundTrip:
    desiredAfterMatchesObserved: true
    renderedAfterMatchesObserved: true
`

func TestRenderRule(t *testing.T) {
	base := readFile(t, "testdata/multi-field.yaml")
	pol := loadPolicy(t, "testdata/policy.yaml")
	witnessed := edit(t, base, "  roundTrip:\n    desiredAfterMatchesObserved: true\n", renderSection)
	cases := []struct {
		name, why string
		doc       string
		want      []string
	}{
		{"witnessed", "a render section that witnesses exactly the changed fields passes", witnessed, nil},
		{"no section", "a receipt without a render section is unchanged by the rule", base, nil},
		{"claim without section", "the rendered round trip needs the section it rests on",
			edit(t, base, "    desiredAfterMatchesObserved: true\n", "    desiredAfterMatchesObserved: true\n    renderedAfterMatchesObserved: true\n"),
			[]string{"roundTrip.renderedAfterMatchesObserved"}},
		{"claim false", "a section whose round trip does not hold does not pass",
			edit(t, witnessed, "renderedAfterMatchesObserved: true", "renderedAfterMatchesObserved: false"),
			[]string{"roundTrip.renderedAfterMatchesObserved"}},
		{"missing field", "every changed field of the bounds must be witnessed",
			edit(t, witnessed, "      - object: \"apps/v1|StatefulSet|redis|redis-master\"\n        field: spec.replicas\n        before: 1\n        after: 2\n", ""),
			[]string{"render.changedFields"}},
		{"extra field", "a rendered change the bounds do not list is a change not accepted",
			edit(t, witnessed, "        after: 1Gi\n", "        after: 1Gi\n      - object: \"apps/v1|StatefulSet|redis|redis-replicas\"\n        field: spec.replicas\n        before: 3\n        after: 4\n"),
			[]string{"render.changedFields[2]"}},
		{"wrong after", "the rendered value after the edit must be the accepted to",
			edit(t, witnessed, "        after: 2\n", "        after: 3\n"), []string{"render.changedFields[0].after"}},
		{"typed after", "\"2\" is not 2",
			edit(t, witnessed, "        after: 2\n", "        after: \"2\"\n"), []string{"render.changedFields[0].after"}},
		{"object not compared", "a changed object must be among those compared",
			edit(t, witnessed, `objectsCompared: ["apps/v1|StatefulSet|redis|redis-master", `, `objectsCompared: [`),
			[]string{"render.changedFields[0].object", "render.changedFields[1].object"}},
		{"bad digest", "the digest names the chart exactly",
			edit(t, witnessed, "digest: sha256:01a8", "digest: md5:01a8"), []string{"render.digest"}},
		{"no renderer", "the renderer is named",
			edit(t, witnessed, "    renderer: helm.sh/helm/v4 v4.3.1\n", ""), []string{"render.renderer"}},
	}
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			got := paths(verifyText(t, tt.doc, pol, multiPolicyRef))
			if !slices.Equal(got, tt.want) {
				t.Errorf("%s: violations at %q, want %q", tt.why, got, tt.want)
			}
		})
	}
}

func TestRenderSectionRoundTrips(t *testing.T) {
	// why: a receipt backflow writes must read back to the same section.
	doc := edit(t, readFile(t, "testdata/multi-field.yaml"), "  roundTrip:\n    desiredAfterMatchesObserved: true\n", renderSection)
	r, warnings, err := Parse("receipt.yaml", []byte(doc))
	if err != nil || len(warnings) > 0 {
		t.Fatalf("Parse: %v %v", err, warnings)
	}
	out, err := Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	again, _, err := Parse("again.yaml", out)
	if err != nil {
		t.Fatal(err)
	}
	if again.Spec.Render == nil || len(again.Spec.Render.ChangedFields) != 2 || again.Spec.Render.ChangedFields[1].After.V != "1Gi" ||
		!strings.Contains(string(out), "renderedAfterMatchesObserved: true") {
		t.Errorf("round trip lost the section:\n%s", out)
	}
}
