package localhub

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/bradleyfalzon/ghinstallation/v2"
	"github.com/google/go-github/v62/github"
)

// testKey is generated once: RSA key generation dominates hub start-up.
var (
	testKeyOnce sync.Once
	testKey     *rsa.PrivateKey
)

func appKey(t testing.TB) *rsa.PrivateKey {
	t.Helper()
	testKeyOnce.Do(func() {
		k, err := rsa.GenerateKey(rand.Reader, 2048)
		if err != nil {
			t.Fatalf("generating key: %v", err)
		}
		testKey = k
	})
	return testKey
}

// env is a hub served over real HTTP, with one repository "acme/gitops"
// and the App installed on "acme".
type env struct {
	hub   *Hub
	srv   *httptest.Server
	clock *FakeClock
	inst  int64
	ctx   context.Context
}

const (
	testOwner = "acme"
	testRepo  = "gitops"
	testFull  = testOwner + "/" + testRepo
)

var testFiles = map[string]string{
	"README.md":                       "# gitops\n",
	"envs/prod/redis/values.yaml":     "replicas: 3\nimage:\n  tag: \"7.2\"\n",
	"envs/staging/redis/values.yaml":  "replicas: 1\n",
	".github/backflow.yaml":           "version: 1\n",
	"charts/redis/templates/.keep":    "",
	"charts/redis/templates/sts.yaml": "kind: StatefulSet\n",
}

func newEnv(t testing.TB, opts Options) *env {
	t.Helper()
	// The fake clock starts at wall-clock time: ghinstallation signs its JWTs
	// with the real clock, and the hub checks them against its own.
	clock := NewFakeClock(time.Now())
	opts.Clock = clock
	opts.AppKey = appKey(t)
	h, err := New(opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	srv := httptest.NewServer(h)
	h.SetBaseURL(srv.URL)
	t.Cleanup(func() {
		srv.Close()
		if err := h.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	if !h.HasRepo(testFull) {
		if err := h.CreateRepo(RepoOptions{Owner: testOwner, Name: testRepo, Files: testFiles, AllowAutoMerge: true}); err != nil {
			t.Fatalf("CreateRepo: %v", err)
		}
	}
	inst, err := h.Install(testOwner)
	if err != nil {
		t.Fatalf("Install: %v", err)
	}
	return &env{hub: h, srv: srv, clock: clock, inst: inst, ctx: context.Background()}
}

// client is an installation client exactly as the GitHub adapter builds one.
func (e *env) client(t testing.TB) *github.Client {
	t.Helper()
	tr, err := ghinstallation.New(http.DefaultTransport, e.hub.AppID(), e.inst, e.hub.PrivateKeyPEM())
	if err != nil {
		t.Fatalf("ghinstallation.New: %v", err)
	}
	tr.BaseURL = e.srv.URL
	return e.withBase(t, github.NewClient(&http.Client{Transport: tr}))
}

// appClient authenticates as the App (JWT).
func (e *env) appClient(t testing.TB) *github.Client {
	t.Helper()
	tr, err := ghinstallation.NewAppsTransport(http.DefaultTransport, e.hub.AppID(), e.hub.PrivateKeyPEM())
	if err != nil {
		t.Fatalf("NewAppsTransport: %v", err)
	}
	return e.withBase(t, github.NewClient(&http.Client{Transport: tr}))
}

// tokenClient uses a fixed installation token, for expiry tests.
func (e *env) tokenClient(t testing.TB, token string) *github.Client {
	t.Helper()
	return e.withBase(t, github.NewClient(nil).WithAuthToken(token))
}

func (e *env) withBase(t testing.TB, c *github.Client) *github.Client {
	t.Helper()
	c, err := c.WithEnterpriseURLs(e.srv.URL+"/", e.srv.URL+"/")
	if err != nil {
		t.Fatalf("WithEnterpriseURLs: %v", err)
	}
	// Plain base URL, as the hub prints it, rather than Enterprise's /api/v3/.
	c.BaseURL.Path = "/"
	return c
}

func (e *env) token(t testing.TB) string {
	t.Helper()
	tok, _, err := e.hub.IssueToken(e.inst)
	if err != nil {
		t.Fatalf("IssueToken: %v", err)
	}
	return tok
}

func mustStatus(t testing.TB, what string, resp *github.Response, err error, want int) {
	t.Helper()
	got := 0
	if resp != nil {
		got = resp.StatusCode
	}
	if got != want {
		t.Fatalf("%s: status %d (err %v), want %d", what, got, err, want)
	}
}

type githubTokenOptions = github.InstallationTokenOptions

// userClient authenticates as a person with a user token.
func (e *env) userClient(t testing.TB, login string) *github.Client {
	t.Helper()
	tok, err := e.hub.IssueUserToken(login)
	if err != nil {
		t.Fatal(err)
	}
	return e.tokenClient(t, tok)
}

// head is a branch's head commit.
func (e *env) head(t testing.TB, c *github.Client, branch string) string {
	t.Helper()
	ref, resp, err := c.Git.GetRef(e.ctx, testOwner, testRepo, "heads/"+branch)
	mustStatus(t, "get ref", resp, err, 200)
	return ref.GetObject().GetSHA()
}

// pullFor is the open pull request of a head branch.
func (e *env) pullFor(t testing.TB, c *github.Client, branch string) *github.PullRequest {
	t.Helper()
	prs, resp, err := c.PullRequests.List(e.ctx, testOwner, testRepo, &github.PullRequestListOptions{Head: testOwner + ":" + branch})
	mustStatus(t, "list pulls", resp, err, 200)
	if len(prs) != 1 {
		t.Fatalf("%d pull requests for %s", len(prs), branch)
	}
	return prs[0]
}

// widePermissions add commit statuses and branch protection (read) to the
// manifest's, for tests of those endpoints.
var widePermissions = map[string]string{"contents": "write", "pull_requests": "write", "checks": "write", "issues": "write",
	"metadata": "read", "statuses": "write", "administration": "read"}
