package github

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/backflow-dev/backflow/internal/forge"
	"github.com/backflow-dev/backflow/internal/forge/forgetest"
	"github.com/backflow-dev/backflow/internal/localhub"
)

// The RSA key is made once per test binary: generation dominates start-up.
var (
	keyOnce sync.Once
	key     *rsa.PrivateKey
)

func appKey(t *testing.T) *rsa.PrivateKey {
	t.Helper()
	keyOnce.Do(func() {
		k, err := rsa.GenerateKey(rand.Reader, 2048)
		if err != nil {
			t.Fatalf("generating key: %v", err)
		}
		key = k
	})
	return key
}

func keyPEM(k *rsa.PrivateKey) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(k)})
}

// env is a local hub over real HTTP with the App installed on "acme" and a
// repository acme/gitops, and an adapter whose clock is the hub's.
type env struct {
	hub    *localhub.Hub
	srv    *httptest.Server
	clock  *localhub.FakeClock
	inst   int64
	repo   forge.Repo
	a      *Adapter
	ctx    context.Context
	mu     sync.Mutex
	events []forge.RequestEvent
	slept  []time.Duration
	// wrap, when set, sees every request before the hub.
	wrap func(w http.ResponseWriter, r *http.Request, next http.Handler)
}

type envOption func(*Config)

func newEnv(t *testing.T, opts ...envOption) *env {
	t.Helper()
	return newEnvWith(t, localhub.Options{}, opts...)
}

func newEnvWith(t *testing.T, hubOpts localhub.Options, opts ...envOption) *env {
	t.Helper()
	// The fake clock starts at wall-clock time: ghinstallation signs its JWTs
	// with the real clock and the hub checks them against its own.
	clock := localhub.NewFakeClock(time.Now())
	hubOpts.Clock, hubOpts.AppKey = clock, appKey(t)
	h, err := localhub.New(hubOpts)
	if err != nil {
		t.Fatalf("localhub.New: %v", err)
	}
	e := &env{hub: h, clock: clock, ctx: context.Background()}
	e.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		e.mu.Lock()
		wrap := e.wrap
		e.mu.Unlock()
		if wrap != nil {
			wrap(w, r, h)
			return
		}
		h.ServeHTTP(w, r)
	}))
	h.SetBaseURL(e.srv.URL)
	t.Cleanup(func() {
		e.srv.Close()
		if err := h.Close(); err != nil {
			t.Errorf("hub Close: %v", err)
		}
	})
	files := map[string]string{}
	for p, c := range forgetest.ContractFiles {
		files[p] = c
	}
	if err := h.CreateRepo(localhub.RepoOptions{Owner: "acme", Name: "gitops", Files: files, AllowAutoMerge: true}); err != nil {
		t.Fatalf("CreateRepo: %v", err)
	}
	if e.inst, err = h.Install("acme"); err != nil {
		t.Fatalf("Install: %v", err)
	}
	e.repo = forge.Repo{Owner: "acme", Name: "gitops", DefaultBranch: "main"}
	cfg := Config{
		AppID: h.AppID(), PrivateKey: h.PrivateKeyPEM(), BaseURL: e.srv.URL + "/",
		Clock: clock, Sleep: e.sleep, Backoff: 100 * time.Millisecond,
		Observer: func(ev forge.RequestEvent) {
			e.mu.Lock()
			defer e.mu.Unlock()
			e.events = append(e.events, ev)
		},
	}
	for _, o := range opts {
		o(&cfg)
	}
	if e.a, err = New(cfg); err != nil {
		t.Fatalf("New: %v", err)
	}
	return e
}

// sleep advances the shared fake clock instead of waiting.
func (e *env) sleep(ctx context.Context, d time.Duration) error {
	e.mu.Lock()
	e.slept = append(e.slept, d)
	e.mu.Unlock()
	e.clock.Advance(d)
	return ctx.Err()
}

func (e *env) setWrap(f func(w http.ResponseWriter, r *http.Request, next http.Handler)) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.wrap = f
}

// harness exposes the env to the shared forge contract.
func (e *env) harness(t *testing.T) forgetest.Harness {
	return forgetest.Harness{
		Forge: e.a,
		Repo:  e.repo,
		Person: func(t *testing.T, branch string, files map[string]string) string {
			t.Helper()
			return e.personCommit(t, branch, files)
		},
		RequireChecks: func(t *testing.T, checks ...string) {
			if err := e.hub.SetBranchProtection("acme/gitops", "main", checks...); err != nil {
				t.Fatalf("SetBranchProtection: %v", err)
			}
		},
	}
}

// personCommit commits as Alice on top of branch (created from main).
func (e *env) personCommit(t *testing.T, branch string, files map[string]string) string {
	t.Helper()
	head, err := e.a.BranchHead(e.ctx, e.repo, branch)
	expected := head
	if err != nil {
		head, err = e.a.BranchHead(e.ctx, e.repo, "main")
		if err != nil {
			t.Fatalf("BranchHead: %v", err)
		}
		expected = ""
	}
	fs := map[string][]byte{}
	for p, c := range files {
		fs[p] = []byte(c)
	}
	sha, err := e.a.Commit(e.ctx, forge.CommitRequest{Repo: e.repo, Branch: branch, BaseSHA: head, ExpectedHead: expected, Files: fs,
		Message: "hand edit\n", Author: forge.Author{Name: "Alice", Email: "alice@example.com"}, Method: forge.CommitAPI})
	if err != nil {
		t.Fatalf("a person's commit: %v", err)
	}
	return sha
}

// hubCount counts the hub's logged requests for method and route template.
func (e *env) hubCount(method, route string) int { return e.hub.Requests().Count(method, route) }

func (e *env) hubTotal() int { return len(e.hub.Requests().All()) }
