package confighubtest

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// The worker route releases the Unit's head revision, as ConfigHub's
// worker applying it does, and answers its number and data; a request it
// cannot serve is refused with a StandardErrorResponse and releases
// nothing.
func TestApplyHandler(t *testing.T) {
	f := newFixture(t, Options{})
	if _, err := f.s.Write("prod", "redis", []byte(strings.Replace(manifests, "replicas: 3", "replicas: 4", 1)),
		other, "four"); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(f.s.ApplyHandler())
	t.Cleanup(srv.Close)
	for _, tc := range []struct {
		name, method, query, token string
		status                     int
		want                       string // in the body
	}{
		{"a GET", "GET", "space=prod&unit=redis", "tok", 405, "POST"},                       // why: applying changes state
		{"no token", "POST", "space=prod&unit=redis", "", 401, "Unauthorized"},              // why: the API's tokens guard it too
		{"a wrong token", "POST", "space=prod&unit=redis", "nope", 401, "Unauthorized"},     // why: only a known token
		{"no unit", "POST", "space=prod", "tok", 400, "space and unit"},                     // why: both slugs name the Unit
		{"no such unit", "POST", "space=prod&unit=cache", "tok", 404, "no unit prod/cache"}, // why: names what is missing
		{"the head", "POST", "space=prod&unit=redis", "tok", 200, `"RevisionNum":2`},        // why: the head is applied
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequest(tc.method, srv.URL+"?"+tc.query, nil)
			if err != nil {
				t.Fatal(err)
			}
			if tc.token != "" {
				req.Header.Set("Authorization", "Bearer "+tc.token)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var body json.RawMessage
			if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
				t.Fatalf("the answer is not JSON: %v", err)
			}
			if resp.StatusCode != tc.status || !strings.Contains(string(body), tc.want) {
				t.Fatalf("%d %s, want %d naming %q", resp.StatusCode, body, tc.status, tc.want)
			}
			f.s.mu.Lock()
			released := f.s.unitBySlugs("prod", "redis").lastReleased
			f.s.mu.Unlock()
			if tc.status != 200 {
				if released != 0 {
					t.Fatalf("a refused apply released revision %d", released)
				}
				return
			}
			var a Applied
			if err := json.Unmarshal(body, &a); err != nil {
				t.Fatal(err)
			}
			if a.RevisionNum != 2 || !strings.Contains(a.Data, "replicas: 4") || released != 2 {
				t.Fatalf("applied %d (released %d) with data %q, want revision 2 with replicas 4", a.RevisionNum,
					released, a.Data)
			}
		})
	}
}

func TestCheckManifests(t *testing.T) {
	for _, tc := range []struct {
		name, data, want string // want "" for accepted
	}{
		{"manifests", manifests, ""},                                      // why: what a Unit holds
		{"empty", "# nothing\n", "no manifest"},                           // why: a Unit of nothing applies nothing
		{"not YAML", "kind: [\n", "document 0"},                           // why: names the document that does not parse
		{"a list", "- a\n", "not a mapping"},                              // why: a manifest is a mapping
		{"no name", "apiVersion: v1\nkind: ConfigMap\n", "metadata.name"}, // why: a resource needs its name
		{"repeated", manifests + "---\n" + manifests[strings.Index(manifests, "apiVersion: apps"):], "repeats"}, // why: one document per resource
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckManifests([]byte(tc.data))
			if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
		})
	}
}
