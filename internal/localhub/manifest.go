package localhub

import (
	"encoding/json"
	"fmt"
	"html"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// GitHub's App manifest flow (docs.github.com, "Registering a GitHub App
// from a manifest"): a page POSTs the manifest as the form field "manifest"
// to /organizations/{org}/settings/apps/new (or /settings/apps/new for a
// user), GitHub creates the App once the user confirms and redirects to the
// manifest's redirect_url with a one-time code, and the code is exchanged
// within an hour, without credentials, at
// POST /app-manifests/{code}/conversions for the App's id, private key and
// webhook secret.
//
// The hub has one App: creating it from a manifest names it and sets its
// webhook URL as the manifest says, and the conversion hands out that App's
// credentials. There is no confirmation page: the form's POST is the
// user's confirmation.

// manifestCodeTTL is how long a code may be exchanged, as on GitHub.
const manifestCodeTTL = time.Hour

// appManifest is the part of a manifest the hub reads.
type appManifest struct {
	Name           string `json:"name"`
	URL            string `json:"url"`
	RedirectURL    string `json:"redirect_url"`
	HookAttributes struct {
		URL    string `json:"url"`
		Active *bool  `json:"active"`
	} `json:"hook_attributes"`
	DefaultPermissions map[string]string `json:"default_permissions"`
	DefaultEvents      []string          `json:"default_events"`
}

type manifestCode struct {
	manifest appManifest
	expires  time.Time
}

// serveManifest answers the manifest flow's two endpoints; false when the
// request is for neither.
func (h *Hub) serveManifest(w http.ResponseWriter, r *http.Request, path string) bool {
	segs := strings.Split(strings.Trim(path, "/"), "/")
	switch {
	case len(segs) == 5 && segs[0] == "organizations" && segs[2] == "settings" && segs[3] == "apps" && segs[4] == "new":
		h.createFromManifest(w, r)
	case len(segs) == 3 && segs[0] == "settings" && segs[1] == "apps" && segs[2] == "new":
		h.createFromManifest(w, r)
	case len(segs) == 3 && segs[0] == "app-manifests" && segs[2] == "conversions":
		h.convertManifest(w, r, segs[1])
	default:
		return false
	}
	return true
}

// createFromManifest is the form's POST: it checks the manifest, keeps it
// under a new code and redirects to redirect_url with the code and state.
func (h *Hub) createFromManifest(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.Error(w, "POST the manifest as the form field manifest", http.StatusMethodNotAllowed)
		return
	}
	if err := r.ParseForm(); err != nil {
		http.Error(w, "unreadable form: "+err.Error(), http.StatusBadRequest)
		return
	}
	var m appManifest
	dec := json.NewDecoder(strings.NewReader(r.PostForm.Get("manifest")))
	if err := dec.Decode(&m); err != nil {
		http.Error(w, "the manifest is not JSON: "+err.Error(), http.StatusBadRequest)
		return
	}
	var problems []string
	if strings.TrimSpace(m.Name) == "" {
		problems = append(problems, "name is required")
	}
	if m.URL == "" {
		problems = append(problems, "url is required")
	}
	redirect, err := url.Parse(m.RedirectURL)
	if m.RedirectURL == "" || err != nil || (redirect.Scheme != "http" && redirect.Scheme != "https") {
		problems = append(problems, "redirect_url must be an http(s) URL")
	}
	if active := m.HookAttributes.Active == nil || *m.HookAttributes.Active; active {
		if u, err := url.Parse(m.HookAttributes.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") {
			problems = append(problems, "hook_attributes.url must be an http(s) URL while the webhook is active")
		}
	}
	if len(problems) > 0 {
		http.Error(w, "invalid manifest: "+strings.Join(problems, "; "), http.StatusUnprocessableEntity)
		return
	}
	code := randomHex(20)
	h.mu.Lock()
	if h.manifestCodes == nil {
		h.manifestCodes = map[string]manifestCode{}
	}
	h.manifestCodes[code] = manifestCode{manifest: m, expires: h.clock.Now().Add(manifestCodeTTL)}
	h.mu.Unlock()
	q := redirect.Query()
	q.Set("code", code)
	if st := r.URL.Query().Get("state"); st != "" {
		q.Set("state", st)
	}
	redirect.RawQuery = q.Encode()
	w.Header().Set("Location", redirect.String())
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(http.StatusFound)
	fmt.Fprintf(
		w,
		"<a href=\"%s\">App %s created: continue</a>\n",
		html.EscapeString(redirect.String()),
		html.EscapeString(m.Name),
	)
}

// convertManifest exchanges a code, once, for the App and its credentials
// (201, GitHub's integration object with client_id, client_secret,
// webhook_secret and pem). An unknown, used or expired code is 404.
func (h *Hub) convertManifest(w http.ResponseWriter, r *http.Request, code string) {
	writeJSON := func(status int, v any) {
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(v)
	}
	if r.Method != http.MethodPost {
		writeJSON(http.StatusNotFound, obj{"message": "Not Found", "documentation_url": docsURL})
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	mc, ok := h.manifestCodes[code]
	delete(h.manifestCodes, code)
	if !ok || !h.clock.Now().Before(mc.expires) {
		writeJSON(http.StatusNotFound, obj{"message": "Not Found", "documentation_url": docsURL})
		return
	}
	m := mc.manifest
	h.st.App.Name = m.Name
	if err := h.persist(); err != nil {
		writeJSON(http.StatusInternalServerError, obj{"message": "Server Error", "documentation_url": docsURL})
		return
	}
	if m.HookAttributes.Active == nil || *m.HookAttributes.Active {
		h.hooks.setURL(m.HookAttributes.URL)
	}
	app := h.renderApp()
	if len(m.DefaultPermissions) > 0 {
		app["permissions"] = m.DefaultPermissions
	}
	if m.DefaultEvents != nil {
		app["events"] = m.DefaultEvents
	}
	app["external_url"] = m.URL
	app["client_id"] = "Iv1." + randomHex(8)
	app["client_secret"] = randomHex(20)
	app["webhook_secret"] = h.st.WebhookSecret
	app["pem"] = h.st.App.KeyPEM
	writeJSON(http.StatusCreated, app)
}
