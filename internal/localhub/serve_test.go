package localhub

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bradleyfalzon/ghinstallation/v2"
	"github.com/google/go-github/v62/github"
)

func TestRunServesImportedRepositories(t *testing.T) {
	runServes(t, t.TempDir(), t.TempDir())
}

// The README's own form: --dir ./state --repo o/n=./folder, relative to
// the working directory.
func TestRunWithRelativePaths(t *testing.T) {
	t.Chdir(t.TempDir())
	runServes(t, "./state", "./folder")
}

func runServes(t *testing.T, dir, src string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(src, "envs"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(src, "envs", "values.yaml"), []byte("replicas: 3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan Endpoints, 1)
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, ServeConfig{Listen: "127.0.0.1:0", Dir: dir, Repos: []RepoImport{{Owner: "acme", Name: "gitops", Dir: src}}}, func(ep Endpoints) { ready <- ep })
	}()
	var ep Endpoints
	select {
	case ep = <-ready:
	case err := <-done:
		t.Fatalf("Run: %v", err)
	}
	if !strings.HasSuffix(ep.APIURL, "/") || ep.AppID == 0 || ep.InstallationID == 0 {
		t.Fatalf("endpoints %+v", ep)
	}
	info, err := os.Stat(ep.PrivateKeyPath)
	if err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("key file: %v %v", info, err)
	}
	key, _ := os.ReadFile(ep.PrivateKeyPath)
	tr, err := ghinstallation.New(http.DefaultTransport, ep.AppID, ep.InstallationID, key)
	if err != nil {
		t.Fatal(err)
	}
	tr.BaseURL = strings.TrimSuffix(ep.APIURL, "/")
	c, err := github.NewClient(&http.Client{Transport: tr}).WithEnterpriseURLs(ep.APIURL, ep.APIURL)
	if err != nil {
		t.Fatal(err)
	}
	c.BaseURL.Path = "/"
	fc, _, resp, err := c.Repositories.GetContents(ctx, "acme", "gitops", "envs/values.yaml", nil)
	mustStatus(t, "contents", resp, err, 200)
	if s, _ := fc.GetContent(); s != "replicas: 3\n" {
		t.Fatalf("content %q", s)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run after cancel: %v", err)
	}
}
