package localhub

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/google/go-github/v62/github"
)

// manifestCodeFor posts a manifest as the flow's form does and returns the
// code the hub redirects with.
func manifestCodeFor(t *testing.T, base, manifest string) string {
	t.Helper()
	loc, status := postManifest(t, base, manifest, "s1")
	if status != http.StatusFound {
		t.Fatalf("manifest form: status %d", status)
	}
	u, err := url.Parse(loc)
	if err != nil || u.Query().Get("code") == "" || u.Query().Get("state") != "s1" || !strings.HasPrefix(loc, "http://127.0.0.1:1/callback?") {
		t.Fatalf("redirect %q: want the redirect_url with code and state", loc)
	}
	return u.Query().Get("code")
}

func postManifest(t *testing.T, base, manifest, state string) (location string, status int) {
	t.Helper()
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.PostForm(base+"/organizations/acme/settings/apps/new?state="+state, url.Values{"manifest": {manifest}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.Header.Get("Location"), resp.StatusCode
}

// The manifest flow names the App, points its webhooks at the manifest's
// URL, and hands out the App's credentials once per code.
func TestManifestFlow(t *testing.T) {
	e := newEnv(t, Options{})
	code := manifestCodeFor(t, e.srv.URL, `{"name":"backflow-acme","url":"https://example.com","redirect_url":"http://127.0.0.1:1/callback","hook_attributes":{"url":"https://backflow.acme.example/webhook"},"default_permissions":{"contents":"write","checks":"write"},"default_events":["push","check_run"]}`)
	anon := e.withBase(t, github.NewClient(nil))
	cfg, _, err := anon.Apps.CompleteAppManifest(context.Background(), code)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.GetID() != e.hub.AppID() || cfg.GetPEM() != string(e.hub.PrivateKeyPEM()) || cfg.GetWebhookSecret() != e.hub.WebhookSecret() || cfg.GetName() != "backflow-acme" || cfg.GetClientID() == "" {
		t.Errorf("conversion %+v: want the hub's App, named by the manifest, with its key and secret", cfg)
	}
	e.hub.hooks.mu.Lock()
	got := e.hub.hooks.url
	e.hub.hooks.mu.Unlock()
	if got != "https://backflow.acme.example/webhook" {
		t.Errorf("webhooks go to %q, want the manifest's URL", got)
	}
	// A code is exchanged once.
	_, resp, err := anon.Apps.CompleteAppManifest(context.Background(), code)
	var ge *github.ErrorResponse
	if !errors.As(err, &ge) || resp.StatusCode != http.StatusNotFound {
		t.Errorf("second exchange: %v, want 404", err)
	}
	for _, tc := range []struct{ why, manifest string }{
		{"a manifest that is not JSON", `{"name":`},
		{"no name", `{"url":"https://e.com","redirect_url":"http://127.0.0.1:1/cb","hook_attributes":{"url":"https://e.com/h"}}`},
		{"an active webhook without a URL", `{"name":"b","url":"https://e.com","redirect_url":"http://127.0.0.1:1/cb","hook_attributes":{"active":true}}`},
		{"no redirect URL", `{"name":"b","url":"https://e.com","hook_attributes":{"url":"https://e.com/h"}}`},
	} {
		if _, status := postManifest(t, e.srv.URL, tc.manifest, ""); status/100 != 4 {
			t.Errorf("%s: status %d, want 4xx", tc.why, status)
		}
	}
}
