package localhub

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"reflect"
	"strings"
	"testing"
)

// The hub's App has exactly the permissions the App manifest asks for.
func TestDefaultPermissionsAreTheManifests(t *testing.T) {
	data, err := os.ReadFile("../../config/github-app-manifest.json")
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		DefaultPermissions map[string]string `json:"default_permissions"`
	}
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(m.DefaultPermissions, DefaultPermissions) {
		t.Errorf("manifest %v, hub %v", m.DefaultPermissions, DefaultPermissions)
	}
}

// A call outside the App's permissions gets GitHub's 403 body; one inside
// them is served.
func TestTokensLimitedToPermissions(t *testing.T) {
	e := newEnv(t, Options{})
	c := e.client(t)
	for _, tc := range []struct {
		name, method, path string
		want               int
	}{
		{"commit statuses are not asked for", "POST", "/repos/acme/gitops/statuses/" + e.head(t, c, "main"), 403},
		{"branch protection needs administration", "GET", "/repos/acme/gitops/branches/main/protection", 403},
		{"contents are", "GET", "/repos/acme/gitops/contents/README.md", 200},
		{"check runs are", "GET", "/repos/acme/gitops/commits/main/check-runs", 200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest(tc.method, e.srv.URL+tc.path, strings.NewReader(`{"state":"success"}`))
			req.Header.Set("Authorization", "token "+e.token(t))
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tc.want {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tc.want, body)
			}
			if tc.want == 403 && !strings.Contains(string(body), `"message":"Resource not accessible by integration"`) {
				t.Errorf("body %s", body)
			}
		})
	}
}

// A suspended installation answers 403 for its repositories and its new
// tokens; another installation is unaffected; unsuspended, it works again.
func TestSuspendedInstallation(t *testing.T) {
	e := newEnv(t, Options{})
	if err := e.hub.CreateRepo(RepoOptions{Owner: "other", Name: "gitops", Files: map[string]string{"a.txt": "a\n"}}); err != nil {
		t.Fatal(err)
	}
	other, err := e.hub.Install("other")
	if err != nil {
		t.Fatal(err)
	}
	c := e.tokenClient(t, e.token(t)) // a token issued before the suspension
	if err := e.hub.Suspend(e.inst, true); err != nil {
		t.Fatal(err)
	}
	_, resp, err := c.Repositories.Get(e.ctx, testOwner, testRepo)
	mustStatus(t, "a suspended installation's repository", resp, err, 403)
	if !strings.Contains(err.Error(), "suspended") {
		t.Errorf("error %v", err)
	}
	insts, _, err := e.appClient(t).Apps.ListInstallations(e.ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	suspended := map[int64]bool{}
	for _, in := range insts {
		suspended[in.GetID()] = in.SuspendedAt != nil
	}
	if !suspended[e.inst] || suspended[other] {
		t.Errorf("suspended_at %v", suspended)
	}
	_, resp, err = e.appClient(t).Apps.CreateInstallationToken(e.ctx, e.inst, nil)
	mustStatus(t, "a token of a suspended installation", resp, err, 403)
	tok, _, err := e.hub.IssueToken(other)
	if err != nil {
		t.Fatal(err)
	}
	_, resp, err = e.tokenClient(t, tok).Repositories.Get(e.ctx, "other", "gitops")
	mustStatus(t, "another installation", resp, err, 200)
	if err := e.hub.Suspend(e.inst, false); err != nil {
		t.Fatal(err)
	}
	_, resp, err = e.client(t).Repositories.Get(e.ctx, testOwner, testRepo)
	mustStatus(t, "unsuspended", resp, err, 200)
}
