package cli

import (
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/backflow-dev/backflow/internal/localhub"
)

// runHub starts a local hub in-process with the test GitOps repository and
// the App installed, and writes a bot config for it. It returns the config
// path and the hub.
func runHub(t *testing.T) (string, *localhub.Hub) {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	h, err := localhub.New(localhub.Options{AppKey: key, AppSlug: "backflow"})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	h.SetBaseURL(srv.URL)
	t.Cleanup(func() {
		srv.Close()
		h.Close()
	})
	repoDir, _ := filepath.Abs(filepath.Join("testdata", "run", "gitops"))
	if err := h.CreateRepo(localhub.RepoOptions{Owner: "acme", Name: "gitops", Dir: repoDir, AllowAutoMerge: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Install("acme"); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "app.pem"), h.PrivateKeyPEM(), 0o600); err != nil {
		t.Fatal(err)
	}
	obs, _ := filepath.Abs(filepath.Join("testdata", "run", "observations"))
	cfg := fmt.Sprintf(`version: 1
github:
  appId: %d
  privateKeyFile: app.pem
  baseURL: %s/
  appSlug: backflow
  botUserId: 4242
repositories: [acme/gitops]
observations:
  prod-us-east-1:
    - path: %s
      trust: audit-log
`, h.AppID(), srv.URL, obs)
	path := filepath.Join(dir, "backflow.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return path, h
}

func TestRunOnce(t *testing.T) {
	path, h := runHub(t)

	// A dry run reads with the real credentials and writes nothing.
	code, out, errOut := runCLI(t, "run", "--once", "--config", path, "--dry-run")
	if code != 0 || !strings.Contains(out, "would open backflow/prod-us-east/redis") {
		t.Fatalf("dry run: code %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	for route := range h.Requests().Counts() {
		if !strings.HasPrefix(route, "GET ") && !strings.Contains(route, "access_tokens") && !strings.Contains(route, "upload-pack") {
			t.Errorf("the dry run sent %s", route)
		}
	}

	// The real run opens the pull request and merges it (pre-authorized).
	code, out, errOut = runCLI(t, "run", "--once", "--config", path, "--format", "json")
	if code != 0 {
		t.Fatalf("run: code %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	var rep struct {
		Repositories []struct {
			Repository string
			Actions    []struct{ Kind string }
			Decisions  []struct {
				Changes []struct{ From, To any }
			}
		}
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("json: %v\n%s", err, out)
	}
	// why: as plan does, the values keep their types (the numbers 3 and 4).
	if ds := rep.Repositories[0].Decisions; len(ds) != 1 || len(ds[0].Changes) != 1 || ds[0].Changes[0].From != float64(3) || ds[0].Changes[0].To != float64(4) {
		t.Errorf("decisions' changes: %+v", ds)
	}
	var kinds []string
	for _, a := range rep.Repositories[0].Actions {
		kinds = append(kinds, a.Kind)
	}
	if got := strings.Join(kinds, ","); got != "open,merge,cleanup" {
		t.Errorf("actions %s, want open,merge,cleanup\n%s", got, out)
	}

	// The next run has nothing to do.
	h.Requests().Reset()
	code, out, _ = runCLI(t, "run", "--once", "--config", path)
	if code != 0 || strings.Contains(out, "open ") {
		t.Fatalf("second run: code %d\n%s", code, out)
	}
	for route := range h.Requests().Counts() {
		if !strings.HasPrefix(route, "GET ") && !strings.Contains(route, "access_tokens") {
			t.Errorf("the second run sent %s", route)
		}
	}
}

func TestRunUsage(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("version: 1\ngithub: {appId: 1, privateKeyFile: k.pem}\nbogus: true\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		why  string
		args []string
		want string
	}{
		{"without --once, run is one cycle too", []string{"run", "--config", bad}, "line 3: unknown key bogus"},
		{"the config is required", []string{"run", "--once"}, "--config is required"},
		{"unknown keys are errors naming their path", []string{"run", "--once", "--config", bad}, "line 3: unknown key bogus"},
		{"an unknown format is a usage error", []string{"run", "--once", "--config", bad, "--format", "xml"}, "--format"},
		{"a missing file cannot be read", []string{"run", "--once", "--config", filepath.Join(dir, "none.yaml")}, "reading bot config"},
	} {
		code, _, errOut := runCLI(t, tc.args...)
		if code != 2 || !strings.Contains(errOut, tc.want) {
			t.Errorf("%s: code %d, stderr %q, want 2 and %q", tc.why, code, errOut, tc.want)
		}
	}
}
