package cli

import (
	"strings"
	"testing"
)

// TestVerifyConfigHubRevision: `backflow verify` checks the ConfigHub
// rules: the seed's incident written into a ConfigHub Unit passes, and a
// receipt naming no revision, or a field of another Unit, fails naming
// the property.
func TestVerifyConfigHubRevision(t *testing.T) {
	asRevision := []string{
		"status: design-example", "status: proposed",
		"desiredRender: recipes/bitnami/redis/25.5.3/revisions/default/r001/rendered/release-objects.yaml", "desiredRender: confighub://prod-us-east/redis",
		"        to: 4\n", "        to: 4\n        valuesFile: confighub://prod-us-east/redis\n",
		"method: manual-fixture", "method: confighub-revision",
		`newRevision: "(frontier) a new desired-state revision r002 attributing the accepted change"`, "newRevision: confighub:prod-us-east/redis@2",
	}
	t.Run("passes", func(t *testing.T) {
		seedRepoWithEdits(t, "", asRevision...)
		if code, out, errOut := runCLI(t, "verify", "--policy", seedPolicy, seedReceipt); code != 0 || out != "verified 1 receipt(s)\n" {
			t.Fatalf("the ConfigHub receipt: exit %d, stdout %q, stderr %q", code, out, errOut)
		}
	})
	for _, tc := range []struct {
		why, old, new, want string
	}{
		{"no revision number", "newRevision: confighub:prod-us-east/redis@2", "newRevision: confighub:prod-us-east/redis", "writeBack.newRevision: method confighub-revision names the revision it writes"},
		{"a field of another Unit", "newRevision: confighub:prod-us-east/redis@2", "newRevision: confighub:prod-us-east/cache@2", "bounds.changedFields[0].valuesFile: must be confighub://prod-us-east/cache"},
	} {
		t.Run(tc.why, func(t *testing.T) {
			edits := append(append([]string{}, asRevision...), tc.old, tc.new)
			seedRepoWithEdits(t, "", edits...)
			code, out, _ := runCLI(t, "verify", "--policy", seedPolicy, seedReceipt)
			if code != 1 || !strings.Contains(out, seedReceipt+": "+tc.want) {
				t.Errorf("exit %d, stdout %q", code, out)
			}
		})
	}
}
