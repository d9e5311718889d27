package cli

import (
	"bytes"
	"encoding/base64"
	"html"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/backflow-dev/backflow/internal/botconfig"
	"github.com/backflow-dev/backflow/internal/localhub"
	"sigs.k8s.io/yaml"
)

// lineWriter hands the first line written to it to a channel.
type lineWriter struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	first chan string
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	had := bytes.IndexByte(w.buf.Bytes(), '\n') >= 0
	w.buf.Write(p)
	if i := bytes.IndexByte(w.buf.Bytes(), '\n'); !had && i >= 0 {
		w.first <- w.buf.String()[:i]
	}
	return len(p), nil
}

var (
	formAction   = regexp.MustCompile(`action="([^"]+)"`)
	formManifest = regexp.MustCompile(`name="manifest" value="([^"]+)"`)
	pageURL      = regexp.MustCompile(`Open (http://127\.0\.0\.1:[0-9]+/) `)
)

// The whole manifest flow over HTTP against the local hub, as a browser
// drives it: the local form page posts the manifest to the hub's
// organizations/ORG/settings/apps/new, the hub redirects back with a code,
// the command exchanges it and writes the App's files where the bot config
// and the chart read them.
func TestAppCreateManifestFlow(t *testing.T) {
	hub, err := localhub.New(localhub.Options{AppSlug: "backflow"})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(hub)
	hub.SetBaseURL(srv.URL)
	t.Cleanup(func() {
		srv.Close()
		hub.Close()
	})
	hubURL := srv.URL
	out := t.TempDir()
	stdout := &lineWriter{first: make(chan string, 1)}
	var stderr bytes.Buffer
	code := make(chan int, 1)
	go func() {
		code <- Run([]string{"app", "create", "--org", "acme", "--url", "https://backflow.acme.example",
			"--github-url", hubURL, "--api-url", hubURL + "/", "--out", out}, stdout, &stderr)
	}()
	var line string
	select {
	case line = <-stdout.first:
	case c := <-code:
		t.Fatalf("app create ended with %d before serving its page: %s", c, stderr.String())
	}
	m := pageURL.FindStringSubmatch(line)
	if m == nil {
		t.Fatalf("first line %q names no local page", line)
	}
	resp, err := http.Get(m[1])
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	action, manifest := formAction.FindSubmatch(page), formManifest.FindSubmatch(page)
	if action == nil || manifest == nil {
		t.Fatalf("form page without action or manifest:\n%s", page)
	}
	target := html.UnescapeString(string(action[1]))
	if !strings.HasPrefix(target, hubURL+"/organizations/acme/settings/apps/new?state=") {
		t.Fatalf("form posts to %q", target)
	}
	mj := html.UnescapeString(string(manifest[1]))
	if !strings.Contains(mj, `"url":"https://backflow.acme.example/webhook"`) || !strings.Contains(mj, `"redirect_url":"`+strings.TrimSuffix(m[1], "/")+`/callback"`) {
		t.Fatalf("manifest %s: want the real webhook URL and the local callback", mj)
	}
	// The browser posts the form and follows GitHub's redirect back.
	resp, err = http.PostForm(target, url.Values{"manifest": {mj}})
	if err != nil {
		t.Fatal(err)
	}
	done, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !bytes.Contains(done, []byte("Created")) {
		t.Fatalf("callback page %d: %s", resp.StatusCode, done)
	}
	if c := <-code; c != 0 {
		t.Fatalf("app create: exit %d: %s", c, stderr.String())
	}

	read := func(name string) []byte {
		b, err := os.ReadFile(filepath.Join(out, name))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	if info, err := os.Stat(filepath.Join(out, "private-key.pem")); err != nil || info.Mode().Perm() != 0o600 {
		t.Errorf("private-key.pem: %v, mode %v, want 0600", err, info.Mode())
	}
	if !bytes.Equal(read("private-key.pem"), hub.PrivateKeyPEM()) || string(read("webhook-secret")) != hub.WebhookSecret() {
		t.Error("the key or the webhook secret written are not the App's")
	}
	if strings.TrimSpace(string(read("app-id"))) != strconv.FormatInt(hub.AppID(), 10) {
		t.Errorf("app-id %q, want %d", read("app-id"), hub.AppID())
	}
	// The bot config written is one backflow serve reads, with the secrets.
	cfg, err := botconfig.LoadServeConfig(filepath.Join(out, "backflow.yaml"))
	if err != nil {
		t.Fatalf("backflow.yaml: %v", err)
	}
	if cfg.Bot.GitHub.AppID != hub.AppID() || string(cfg.Server.WebhookSecret.Reveal()) != hub.WebhookSecret() {
		t.Errorf("backflow.yaml reads as app %d", cfg.Bot.GitHub.AppID)
	}
	// The Secret carries the chart's keys.
	var sec struct {
		APIVersion string            `json:"apiVersion"`
		Type       string            `json:"type"`
		Kind       string            `json:"kind"`
		Metadata   map[string]string `json:"metadata"`
		Data       map[string]string `json:"data"`
	}
	if err := yaml.UnmarshalStrict(read("secret.yaml"), &sec); err != nil {
		t.Fatal(err)
	}
	key, _ := base64.StdEncoding.DecodeString(sec.Data["private-key.pem"])
	hook, _ := base64.StdEncoding.DecodeString(sec.Data["webhook-secret"])
	if sec.APIVersion != "v1" || sec.Kind != "Secret" || sec.Metadata["name"] != "backflow-app" || !bytes.Equal(key, hub.PrivateKeyPEM()) || string(hook) != hub.WebhookSecret() {
		t.Errorf("secret.yaml: %+v", sec)
	}
	// Run again into the same folder: nothing is overwritten.
	if c, _, errOut := runCLI(t, "app", "create", "--org", "acme", "--github-url", hubURL, "--api-url", hubURL+"/", "--out", out); c != 2 || !strings.Contains(errOut, "exists") {
		t.Errorf("second create into %s: exit %d, %s", out, c, errOut)
	}
}

// The manifest create registers is the one the repository documents.
func TestAppManifestIsConfigs(t *testing.T) {
	if !bytes.Equal(appManifest, read(t, "../../config/github-app-manifest.json")) {
		t.Error("internal/cli/app-manifest.json differs from config/github-app-manifest.json: copy the config's")
	}
}

// The files land all or none, and never over one that appeared after the
// start-up check: two runs that both reach GitHub's answer keep the first
// App's key.
func TestAppFilesNeverReplaced(t *testing.T) {
	contents := func(tag string) map[string][]byte {
		m := map[string][]byte{}
		for _, n := range appFiles {
			m[n] = []byte(tag + " " + n)
		}
		return m
	}
	leftovers := func(t *testing.T, dir string) {
		t.Helper()
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), ".") {
				t.Errorf("left %s behind", e.Name())
			}
		}
	}
	t.Run("a file that appeared", func(t *testing.T) {
		// why: the start-up check ran before the browser came back; a
		// key written since (another run) must survive.
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "private-key.pem"), []byte("first"), 0o600); err != nil {
			t.Fatal(err)
		}
		err := writeNew(dir, appFiles, contents("second"))
		if err == nil || !strings.Contains(err.Error(), filepath.Join(dir, "private-key.pem")+" exists") {
			t.Fatalf("got %v, want the existing key named", err)
		}
		if got, _ := os.ReadFile(filepath.Join(dir, "private-key.pem")); string(got) != "first" {
			t.Errorf("the key is now %q", got)
		}
		for _, n := range appFiles {
			if _, err := os.Lstat(filepath.Join(dir, n)); n != "private-key.pem" && err == nil {
				t.Errorf("%s landed though the write failed", n)
			}
		}
		leftovers(t, dir)
	})
	t.Run("runs at once", func(t *testing.T) {
		// why: concurrent runs into one folder: one wins whole, the others
		// write nothing.
		dir := t.TempDir()
		var wg sync.WaitGroup
		errs := make([]error, 8)
		for i := range errs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[i] = writeNew(dir, appFiles, contents(strconv.Itoa(i)))
			}()
		}
		wg.Wait()
		won := -1
		for i, err := range errs {
			if err == nil {
				if won >= 0 {
					t.Fatalf("runs %d and %d both wrote", won, i)
				}
				won = i
			}
		}
		if won < 0 {
			t.Fatalf("no run wrote: %v", errs)
		}
		for _, n := range appFiles {
			if got, _ := os.ReadFile(filepath.Join(dir, n)); string(got) != strconv.Itoa(won)+" "+n {
				t.Errorf("%s holds %q, not run %d's", n, got, won)
			}
			if info, err := os.Stat(filepath.Join(dir, n)); err != nil || info.Mode().Perm() != 0o600 {
				t.Errorf("%s: %v, mode %v, want 0600", n, err, info.Mode())
			}
		}
		leftovers(t, dir)
	})
}

// The page answers only loopback Host names on its own port: a name that
// rebinds to 127.0.0.1 is refused (DNS rebinding).
func TestAppPageLoopbackHostOnly(t *testing.T) {
	h := loopbackOnly("8080", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("state")) }))
	for host, want := range map[string]int{
		"127.0.0.1:8080":        http.StatusOK,
		"127.1.2.3:8080":        http.StatusOK,
		"localhost:8080":        http.StatusOK,
		"LocalHost:8080":        http.StatusOK,
		"[::1]:8080":            http.StatusOK,
		"rebind.example:8080":   http.StatusMisdirectedRequest,
		"127.0.0.1.nip.io:8080": http.StatusMisdirectedRequest,
		"10.0.0.1:8080":         http.StatusMisdirectedRequest,
		"127.0.0.1:9090":        http.StatusMisdirectedRequest,
		"127.0.0.1":             http.StatusMisdirectedRequest,
		"":                      http.StatusMisdirectedRequest,
	} {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		r.Host = host
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != want {
			t.Errorf("Host %q: %d, want %d", host, w.Code, want)
		}
	}
}
