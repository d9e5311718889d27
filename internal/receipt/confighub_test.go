package receipt

import (
	"slices"
	"testing"
)

// configHubCopy is the multi-field receipt written into a ConfigHub Unit.
func configHubCopy(t *testing.T) string {
	multi := readFile(t, "testdata/multi-field.yaml")
	return edit(t, multi,
		"desiredRender: envs/prod-us-east/redis/values.yaml", "desiredRender: confighub://prod-us-east/redis",
		"method: pull-request", "method: confighub-revision",
		"newRevision: backflow/prod-us-east/redis", "newRevision: confighub:prod-us-east/redis@7",
		"        desiredValueAfter: 2\n", "        desiredValueAfter: 2\n        valuesFile: confighub://prod-us-east/redis\n",
		"        desiredValueAfter: 1Gi\n", "        desiredValueAfter: 1Gi\n        valuesFile: confighub://prod-us-east/redis\n")
}

func TestConfigHubRevisionRules(t *testing.T) {
	pol := loadPolicy(t, "testdata/policy.yaml")
	ok := configHubCopy(t)
	if vs := verifyText(t, ok, pol, multiPolicyRef); len(vs) != 0 {
		t.Fatalf("the ConfigHub receipt fails: %v", vs)
	}
	if vs := verifyText(t, edit(t, ok, "status: proposed", "status: proven"), pol, multiPolicyRef); len(vs) != 0 {
		t.Fatalf("the proven ConfigHub receipt fails: %v", vs)
	}
	for _, tc := range []struct {
		why  string
		doc  string
		want []string
	}{
		{"the revision is named by space, unit and number", edit(t, ok, "@7", ""), []string{"writeBack.newRevision"}},
		{"revision 0 does not exist", edit(t, ok, "@7", "@0"), []string{"writeBack.newRevision"}},
		{"a slug ConfigHub could not have made", edit(t, ok, "confighub:prod-us-east/", "confighub:prod us-east/"), []string{"writeBack.newRevision"}},
		{"a field in another Unit than the revision's", edit(t, ok, "newRevision: confighub:prod-us-east/redis@7", "newRevision: confighub:prod-us-east/cache@7"),
			[]string{"bounds.changedFields[0].valuesFile", "bounds.changedFields[1].valuesFile"}},
		{"a field in no Unit", edit(t, ok, "        valuesFile: confighub://prod-us-east/redis\n", ""), []string{"bounds.changedFields[0].valuesFile"}},
		{"a Unit's field written by a pull request", edit(t, ok, "method: confighub-revision", "method: pull-request"),
			[]string{"bounds.changedFields[0].valuesFile", "bounds.changedFields[1].valuesFile"}},
		{"a design example is not a revision", edit(t, ok, "status: proposed", "status: design-example"), []string{"writeBack.method"}},
	} {
		got := paths(verifyText(t, tc.doc, pol, multiPolicyRef))
		for _, w := range tc.want {
			if !slices.Contains(got, w) {
				t.Errorf("%s: violations %v, want %s", tc.why, got, w)
			}
		}
	}
	if s, u, n, ok := ParseConfigHubRevision(ConfigHubRevision("prod", "redis", 12)); !ok || s != "prod" || u != "redis" || n != 12 {
		t.Errorf("round trip: %s %s %d %v", s, u, n, ok)
	}
}
