package reliability

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/backflow-dev/backflow/internal/app"
	"github.com/backflow-dev/backflow/internal/cli"
	"github.com/backflow-dev/backflow/internal/localhub"
	"github.com/backflow-dev/backflow/internal/plan"
	"github.com/backflow-dev/backflow/internal/render"
)

var (
	appPage     = regexp.MustCompile(`Open (http://127\.0\.0\.1:[0-9]+)/ `)
	appAction   = regexp.MustCompile(`action="([^"]+)"`)
	appManifest = regexp.MustCompile(`name="manifest" value="([^"]+)"`)
)

// appCreateRun is one backflow app create process, started against a
// local hub and serving its page.
type appCreateRun struct {
	page   string
	code   chan int
	stderr bytes.Buffer
}

// startAppCreate starts backflow app create for acme against hub into
// out and waits until it serves its page (its start-up checks are done):
// the page's address is the first line of its stdout, which is read
// through a pipe and then drained.
func startAppCreate(t *testing.T, hubURL, out string) *appCreateRun {
	t.Helper()
	r := &appCreateRun{code: make(chan int, 1)}
	pr, pw := io.Pipe()
	go func() {
		code := cli.Run([]string{"app", "create", "--org", "acme", "--url", "https://backflow.acme.example",
			"--github-url", hubURL, "--api-url", hubURL + "/", "--out", out}, pw, &r.stderr)
		pw.Close()
		r.code <- code
	}()
	stdout := bufio.NewReader(pr)
	line, err := stdout.ReadString('\n')
	go io.Copy(io.Discard, stdout)
	m := appPage.FindStringSubmatch(line)
	if m == nil {
		t.Fatalf("app create's first line %q names no page (%v): exit %d: %s", line, err, <-r.code, r.stderr.String())
	}
	r.page = m[1]
	return r
}

// get fetches the run's page with host as the Host header.
func (r *appCreateRun) get(t *testing.T, host string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, r.page+"/", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Host = host
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, body
}

// complete drives the run's flow as a browser does (the form posted to the
// hub, the hub's redirect back followed) and returns its exit code.
func (r *appCreateRun) complete(t *testing.T) int {
	t.Helper()
	_, page := r.get(t, strings.TrimPrefix(r.page, "http://"))
	action, manifest := appAction.FindSubmatch(page), appManifest.FindSubmatch(page)
	if action == nil || manifest == nil {
		t.Fatalf("the page has no form:\n%s", page)
	}
	resp, err := http.PostForm(html.UnescapeString(string(action[1])), url.Values{"manifest": {html.UnescapeString(string(manifest[1]))}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return <-r.code
}

// newManifestHub is a local hub of its own (its own App key) on loopback.
func newManifestHub(t *testing.T) (*localhub.Hub, string) {
	t.Helper()
	s, err := localhub.Listen("127.0.0.1:0", localhub.Options{AppSlug: "backflow"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s.Hub, s.URL
}

// chartIndex is a Helm chart repository on loopback (TLS) serving the
// archives by name: index.yaml lists each at version 1.0.0 (lib at 0.1.0).
func chartIndex(t *testing.T, archives map[string]string) *httptest.Server {
	t.Helper()
	var idx strings.Builder
	idx.WriteString("apiVersion: v1\nentries:\n")
	for name, data := range archives {
		version := "1.0.0"
		if name == "lib" {
			version = "0.1.0"
		}
		sum := sha256.Sum256([]byte(data))
		fmt.Fprintf(&idx, "  %s:\n    - {name: %s, version: %s, urls: [charts/%s.tgz], digest: %s}\n", name, name, version, name, hex.EncodeToString(sum[:]))
	}
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name, ok := strings.CutPrefix(r.URL.Path, "/stable/charts/")
		switch {
		case r.URL.Path == "/stable/index.yaml":
			io.WriteString(w, idx.String())
		case ok && archives[strings.TrimSuffix(name, ".tgz")] != "":
			io.WriteString(w, archives[strings.TrimSuffix(name, ".tgz")])
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// redirectAll answers every request with a redirect to the same path on to.
func redirectAll(t *testing.T, to string) *httptest.Server {
	t.Helper()
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, to+r.URL.Path, http.StatusFound)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// indexPointing is a Helm chart repository on loopback (TLS) whose
// index.yaml names chart name's archive (version 1.0.0, data) on to.
func indexPointing(t *testing.T, name, data, to string) *httptest.Server {
	t.Helper()
	sum := sha256.Sum256([]byte(data))
	idx := fmt.Sprintf("apiVersion: v1\nentries:\n  %s:\n    - {name: %s, version: 1.0.0, urls: [%q], digest: %s}\n",
		name, name, to+"/stable/charts/"+name+".tgz", hex.EncodeToString(sum[:]))
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/stable/index.yaml" {
			http.NotFound(w, r)
			return
		}
		io.WriteString(w, idx)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// Case 30: the smaller edges. Two backflow app create runs into one
// folder, both past their start-up checks, both completing: the second
// writes nothing and the first App's private key stays; the page refuses a
// Host that is not a loopback name (DNS rebinding). A unit's remote chart
// whose repository redirects to another host, or from https to http, or
// whose index names the archive on another host or over http, one whose
// Chart.lock pins a dependency to a host the unit's chart does not name,
// and one whose Chart.lock pins it over http on an allowed host, are
// denied naming the refusal; the same chart served directly is witnessed
// and allowed (the control).
func TestCase30AppCreateAndFetchEdges(t *testing.T) {
	hubA, urlA := newManifestHub(t)
	_, urlB := newManifestHub(t)
	out := t.TempDir()
	first := startAppCreate(t, urlA, out)
	second := startAppCreate(t, urlB, out)
	foreign := 0
	hosts := []string{"rebind.example", "127.0.0.1.nip.io", "backflow.acme.example"}
	for _, h := range hosts {
		_, port, _ := strings.Cut(strings.TrimPrefix(second.page, "http://"), ":")
		if status, body := second.get(t, h+":"+port); status == http.StatusMisdirectedRequest && !bytes.Contains(body, []byte("manifest")) {
			foreign++
		} else {
			t.Errorf("Host %s: %d, the page answered", h, status)
		}
	}
	if c := first.complete(t); c != 0 {
		t.Fatalf("the first run: exit %d: %s", c, first.stderr.String())
	}
	keyPath := filepath.Join(out, "private-key.pem")
	before, err := os.Stat(keyPath)
	if err != nil {
		t.Fatal(err)
	}
	c := second.complete(t)
	after, err := os.Stat(keyPath)
	key, _ := os.ReadFile(keyPath)
	kept := 0
	if err == nil && os.SameFile(before, after) && bytes.Equal(key, hubA.PrivateKeyPEM()) {
		kept = 1
	} else {
		t.Errorf("the second run replaced the first App's key (same file %v)", err == nil && os.SameFile(before, after))
	}
	if c != 2 || !strings.Contains(second.stderr.String(), keyPath+" exists") && !strings.Contains(second.stderr.String(), "app-id exists") {
		t.Errorf("the second run: exit %d: %s; want 2 naming an existing file", c, second.stderr.String())
	}
	entries, _ := os.ReadDir(out)
	if len(entries) != 5 {
		t.Errorf("%d entries in the folder, want the first run's 5", len(entries))
	}

	// The fetch edges, through the bot and the render witness.
	chart := redisChart("redis", nil)
	lib := tgz(t, "lib", map[string]string{"Chart.yaml": "apiVersion: v2\nname: lib\nversion: 0.1.0\n"})
	other := chartIndex(t, map[string]string{"lib": lib})
	deps := "dependencies:\n  - name: lib\n    version: 0.1.0\n    repository: " + other.URL + "/stable\n"
	locked := redisChart("redis", map[string]string{
		"Chart.yaml": chart["Chart.yaml"] + deps,
		"Chart.lock": deps + "digest: sha256:0000000000000000000000000000000000000000000000000000000000000000\ngenerated: \"2026-12-01T00:00:00Z\"\n",
	})
	repo := chartIndex(t, map[string]string{"redis": tgz(t, "redis", chart)})
	lockRepo := chartIndex(t, map[string]string{"redis": tgz(t, "redis", locked)})
	plain := httptest.NewServer(repo.Config.Handler)
	t.Cleanup(plain.Close)
	plainLib := httptest.NewServer(other.Config.Handler)
	t.Cleanup(plainLib.Close)
	plainDeps := "dependencies:\n  - name: lib\n    version: 0.1.0\n    repository: " + plainLib.URL + "/stable\n"
	plainLocked := redisChart("redis", map[string]string{
		"Chart.yaml": chart["Chart.yaml"] + plainDeps,
		"Chart.lock": plainDeps + "digest: sha256:0000000000000000000000000000000000000000000000000000000000000000\n",
	})
	plainLockRepo := chartIndex(t, map[string]string{"redis": tgz(t, "redis", plainLocked)})
	archive := tgz(t, "redis", chart)
	tlsConfig := repo.Client().Transport.(*http.Transport).TLSClientConfig
	denied := map[string]int{}
	var controlOutcome string
	for _, tc := range []struct {
		name, repository, want string
		allowed                []string
	}{
		{"served directly", repo.URL, "", nil},
		{"redirect to another host", redirectAll(t, repo.URL).URL, "redirect refused", nil},
		{"redirect from https to http", redirectAll(t, plain.URL).URL, "redirect refused", nil},
		{"index naming another host", indexPointing(t, "redis", archive, repo.URL).URL, "chart URL refused", nil},
		{"index naming http", indexPointing(t, "redis", archive, plain.URL).URL, "chart URL refused", []string{"127.0.0.1"}},
		{"Chart.lock naming another host", lockRepo.URL, "host not allowed", nil},
		{"Chart.lock over http, host allowed", plainLockRepo.URL, "https to http refused", []string{"127.0.0.1"}},
	} {
		files := gitopsFiles(t)
		reviewOnly(files)
		withUnitChart(t, files, fmt.Sprintf("{name: redis, version: 1.0.0, repository: %q}", tc.repository+"/stable"), "", nil)
		fetch := render.NewFetcher(render.FetchOptions{CacheDir: t.TempDir(), TLS: tlsConfig.Clone(), AllowedHosts: tc.allowed})
		outcome, reasons, prs := renderDecision(newHubEnv(t, files), app.RendererWith(fetch, render.Bounds{}))
		t.Logf("%s: %s: %s", tc.name, outcome, reasons)
		switch {
		case tc.want == "":
			controlOutcome = outcome
			if outcome != string(plan.Allow) {
				t.Errorf("%s: %q, want allowed: %s", tc.name, outcome, reasons)
			}
		case outcome == string(plan.Deny) && prs == 0 && strings.Contains(reasons, tc.want):
			denied[tc.want]++
		default:
			t.Errorf("%s: %q with %d pull requests, want a deny saying %q: %s", tc.name, outcome, prs, tc.want, reasons)
		}
	}
	report(t, "30", "app-create-and-fetch-edges", "first_key_kept", kept, "second_run_exit", c,
		"foreign_hosts_refused", fmt.Sprintf("%d/%d", foreign, len(hosts)),
		"redirects_refused", fmt.Sprintf("%d/2", denied["redirect refused"]), "chart_lock_hosts_refused", fmt.Sprintf("%d/1", denied["host not allowed"]),
		"index_urls_refused", fmt.Sprintf("%d/2", denied["chart URL refused"]),
		"chart_lock_downgrades_refused", fmt.Sprintf("%d/1", denied["https to http refused"]),
		"control_allowed", controlOutcome == string(plan.Allow))
}
