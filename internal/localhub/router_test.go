package localhub

import (
	"strings"
	"testing"
)

func TestRouteMatching(t *testing.T) {
	cases := []struct {
		template, path string
		want           map[string]string // nil: no match
	}{
		// why: a ref with slashes still leaves the literal tail to the route
		{"/repos/{owner}/{repo}/commits/{ref...}/status", "/repos/a/b/commits/backflow/prod/redis/status", map[string]string{"owner": "a", "repo": "b", "ref": "backflow/prod/redis"}},
		// why: the plain commit route takes the whole ref
		{"/repos/{owner}/{repo}/commits/{ref...}", "/repos/a/b/commits/feature/x", map[string]string{"owner": "a", "repo": "b", "ref": "feature/x"}},
		// why: an escaped slash (go-github's url.PathEscape of a branch) is one segment
		{"/repos/{owner}/{repo}/branches/{branch}", "/repos/a/b/branches/backflow%2Fprod", map[string]string{"owner": "a", "repo": "b", "branch": "backflow/prod"}},
		// why: a one-segment wildcard does not swallow more segments
		{"/repos/{owner}/{repo}/branches/{branch}", "/repos/a/b/branches/x/y", nil},
		// why: a wildcard needs at least one segment
		{"/repos/{owner}/{repo}/git/ref/{ref...}", "/repos/a/b/git/ref", nil},
		// why: literals must match exactly
		{"/repos/{owner}/{repo}/pulls", "/repos/a/b/pull", nil},
	}
	for _, tc := range cases {
		rt := newRoute("GET", tc.template, authToken, nil)
		got, ok := rt.match(strings.Split(strings.Trim(tc.path, "/"), "/"))
		if ok != (tc.want != nil) {
			t.Fatalf("%s on %s: matched %v", tc.template, tc.path, ok)
		}
		for k, v := range tc.want {
			if got[k] != v {
				t.Fatalf("%s on %s: %s = %q, want %q", tc.template, tc.path, k, got[k], v)
			}
		}
	}
}
