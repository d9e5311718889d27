package github

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/backflow-dev/backflow/internal/forge"
	"github.com/backflow-dev/backflow/internal/localhub"
)

func TestConfigDefaultsAndKeySources(t *testing.T) {
	pemKey := keyPEM(appKey(t))
	dir := t.TempDir()
	keyFile := filepath.Join(dir, "app.pem")
	if err := os.WriteFile(keyFile, pemKey, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("BACKFLOW_TEST_KEY", string(pemKey))
	cases := []struct {
		name        string
		why         string
		cfg         Config
		wantErr     string
		wantGraphQL string
		wantGit     string
	}{
		{"github.com", "the defaults reach github.com's API, GraphQL and git hosts", Config{AppID: 1, PrivateKey: pemKey},
			"", "https://api.github.com/graphql", "https://github.com/"},
		{"enterprise", "Enterprise serves REST under /api/v3/ and GraphQL at /api/graphql", Config{AppID: 1, PrivateKeyFile: keyFile, BaseURL: "https://ghe.example.com/api/v3/"},
			"", "https://ghe.example.com/api/graphql", "https://ghe.example.com/"},
		{"local hub", "the local hub serves everything under one root", Config{AppID: 1, PrivateKeyEnv: "BACKFLOW_TEST_KEY", BaseURL: "http://127.0.0.1:8080/"},
			"", "http://127.0.0.1:8080/graphql", "http://127.0.0.1:8080/"},
		{"no slash", "go-github resolves paths against BaseURL, which must end with /", Config{AppID: 1, PrivateKey: pemKey, BaseURL: "https://ghe.example.com/api/v3"},
			"must end with /", "", ""},
		{"no app id", "an App id is required to sign JWTs", Config{PrivateKey: pemKey}, "app id is required", "", ""},
		{"no key", "a key from one of three sources is required", Config{AppID: 1}, "private key is required", "", ""},
		{"empty env", "an unset variable is reported by name, not silently empty", Config{AppID: 1, PrivateKeyEnv: "BACKFLOW_TEST_UNSET"}, "BACKFLOW_TEST_UNSET is empty", "", ""},
		{"missing file", "the path is named, the error kept", Config{AppID: 1, PrivateKeyFile: filepath.Join(dir, "nope.pem")}, "nope.pem", "", ""},
		{"bad key", "a malformed key fails at start, without echoing it", Config{AppID: 1, PrivateKey: []byte("-----BEGIN RSA PRIVATE KEY-----\nc2VjcmV0\n-----END RSA PRIVATE KEY-----\n")}, "app 1", "", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a, err := New(tc.cfg)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("%s: New error %v, want %q", tc.why, err, tc.wantErr)
				}
				if strings.Contains(err.Error(), "c2VjcmV0") || strings.Contains(err.Error(), "PRIVATE KEY") {
					t.Fatalf("%s: the error shows the key: %v", tc.why, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("%s: New: %v", tc.why, err)
			}
			if a.cfg.GraphQLURL != tc.wantGraphQL || a.cfg.GitURL != tc.wantGit {
				t.Fatalf("%s: GraphQL %q git %q, want %q %q", tc.why, a.cfg.GraphQLURL, a.cfg.GitURL, tc.wantGraphQL, tc.wantGit)
			}
		})
	}
}

func TestRepositoriesAcrossInstallationsWithAllowlist(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.Allowlist = []string{"acme/gitops", "Beta/Apps"} })
	for _, r := range []localhub.RepoOptions{{Owner: "acme", Name: "other"}, {Owner: "beta", Name: "apps"}, {Owner: "gamma", Name: "hidden"}} {
		r.Files = map[string]string{"README.md": "x\n"}
		if err := e.hub.CreateRepo(r); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := e.hub.Install("beta"); err != nil {
		t.Fatal(err)
	}
	repos, err := e.a.Repositories(e.ctx)
	if err != nil {
		t.Fatalf("Repositories: %v", err)
	}
	// Why: two installations are listed, the allowlist (case-insensitive)
	// drops acme/other, and gamma has no installation at all.
	want := []forge.Repo{{Owner: "acme", Name: "gitops", DefaultBranch: "main"}, {Owner: "beta", Name: "apps", DefaultBranch: "main"}}
	if len(repos) != 2 || repos[0] != want[0] || repos[1] != want[1] {
		t.Fatalf("Repositories = %+v, want %+v", repos, want)
	}
	// Listing taught the adapter each repository's installation: no lookup.
	if _, err := e.a.BranchHead(e.ctx, want[1], "main"); err != nil {
		t.Fatalf("BranchHead: %v", err)
	}
	if n := e.hubCount("GET", "/repos/{owner}/{repo}/installation"); n != 0 {
		t.Fatalf("installation lookups = %d, want 0 after listing", n)
	}
	_, err = e.a.GetRepo(e.ctx, "gamma", "hidden")
	if !errors.Is(err, forge.ErrNotFound) {
		t.Fatalf("GetRepo of a repository without the App = %v, want ErrNotFound", err)
	}
}

func TestInstallationLookupIsCached(t *testing.T) {
	e := newEnv(t)
	for range 3 {
		if _, err := e.a.BranchHead(e.ctx, e.repo, "main"); err != nil {
			t.Fatal(err)
		}
	}
	// Why: the installation is found once per repository, its token once
	// per installation (ghinstallation refreshes it before expiry).
	if n := e.hubCount("GET", "/repos/{owner}/{repo}/installation"); n != 1 {
		t.Fatalf("installation lookups = %d, want 1", n)
	}
	if n := e.hubCount("POST", "/app/installations/{id}/access_tokens"); n != 1 {
		t.Fatalf("token requests = %d, want 1", n)
	}
}

func TestWrongKeyIsUnauthorizedAndSecretFree(t *testing.T) {
	other, err := rsa.GenerateKey(rand.Reader, 1024)
	if err != nil {
		t.Fatal(err)
	}
	pemKey := keyPEM(other)
	e := newEnv(t, func(c *Config) { c.PrivateKey = pemKey })
	_, err = e.a.BranchHead(e.ctx, e.repo, "main")
	// Why: a refused JWT is an auth failure the operator must fix, and the
	// message must not carry the key.
	if !errors.Is(err, forge.ErrUnauthorized) {
		t.Fatalf("BranchHead with the wrong key = %v, want ErrUnauthorized", err)
	}
	if bytes.Contains([]byte(err.Error()), pemKey[40:80]) {
		t.Fatalf("error shows the key: %v", err)
	}
}

func TestGitErrorsCarryNoToken(t *testing.T) {
	e := newEnv(t)
	in, err := e.a.forRepo(e.ctx, "acme", "gitops")
	if err != nil {
		t.Fatal(err)
	}
	token, err := in.tr.Token(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	main, _ := e.a.BranchHead(e.ctx, e.repo, "main")
	// Why: a clone of a branch that does not exist fails inside go-git with
	// the remote URL in hand; the token must not leak into the message.
	bad := e.repo
	bad.DefaultBranch = "no-such-branch"
	_, err = e.a.Commit(e.ctx, forge.CommitRequest{Repo: bad, Branch: "x", BaseSHA: main, Files: map[string][]byte{"a": []byte("b")},
		Message: "m", Author: forge.Author{Name: "n", Email: "e@x"}})
	if err == nil || strings.Contains(err.Error(), token) {
		t.Fatalf("Commit from a missing branch = %v; want an error without the token", err)
	}
	if !errors.Is(err, forge.ErrNotFound) {
		t.Fatalf("Commit from a missing branch = %v, want ErrNotFound", err)
	}
}

func TestEnterpriseBaseURLIsTheSameCodePath(t *testing.T) {
	e := newEnv(t)
	a, err := New(Config{AppID: e.hub.AppID(), PrivateKey: e.hub.PrivateKeyPEM(), BaseURL: e.srv.URL + "/api/v3/", GitURL: e.srv.URL + "/",
		Clock: e.clock, Sleep: e.sleep})
	if err != nil {
		t.Fatal(err)
	}
	h := e.harness(t)
	h.Forge = a
	// Why: REST under /api/v3/ and GraphQL at /api/graphql, as on Enterprise.
	pr := openPRWith(t, a, e.repo, "backflow/dev/redis")
	if err := a.EnableAutoMerge(e.ctx, e.repo, pr, pr.HeadSHA, forge.MergeSquash); !errors.Is(err, forge.ErrAlreadyMergeable) {
		t.Fatalf("EnableAutoMerge over Enterprise GraphQL = %v, want ErrAlreadyMergeable", err)
	}
	if n := e.hubCount("POST", "/graphql"); n != 1 {
		t.Fatalf("GraphQL requests = %d, want 1", n)
	}
}

// openPRWith commits one values change through the API and opens a PR.
func openPRWith(t *testing.T, f forge.Forge, repo forge.Repo, branch string) forge.PullRequest {
	t.Helper()
	ctx := context.Background()
	main, err := f.BranchHead(ctx, repo, "main")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Commit(ctx, forge.CommitRequest{Repo: repo, Branch: branch, BaseSHA: main, Method: forge.CommitAPI,
		Files: map[string][]byte{"envs/dev/redis/values.yaml": []byte("replicas: 2\n")}, Message: "m\n", Author: forge.Author{Name: "backflow[bot]", Email: "1+backflow[bot]@users.noreply.github.com"}}); err != nil {
		t.Fatal(err)
	}
	pr, err := f.CreatePullRequest(ctx, repo, forge.NewPullRequest{Title: "t", Head: branch, Base: "main"})
	if err != nil {
		t.Fatal(err)
	}
	return pr
}

func TestAutoMergeNotAllowedArrivesAsGraphQLError(t *testing.T) {
	e := newEnv(t)
	if err := e.hub.SetAllowAutoMerge("acme/gitops", false); err != nil {
		t.Fatal(err)
	}
	if err := e.hub.SetBranchProtection("acme/gitops", "main", "backflow/receipt"); err != nil {
		t.Fatal(err)
	}
	pr := openPRWith(t, e.a, e.repo, "backflow/dev/redis")
	// Why: GraphQL answers HTTP 200 with "errors"; the refusal must still be
	// an error, and a distinct one.
	if err := e.a.EnableAutoMerge(e.ctx, e.repo, pr, pr.HeadSHA, forge.MergeSquash); !errors.Is(err, forge.ErrAutoMergeNotAllowed) {
		t.Fatalf("EnableAutoMerge = %v, want ErrAutoMergeNotAllowed", err)
	}
	// Without a node id the adapter looks it up first.
	pr.NodeID = ""
	if err := e.a.EnableAutoMerge(e.ctx, e.repo, pr, pr.HeadSHA, forge.MergeSquash); !errors.Is(err, forge.ErrAutoMergeNotAllowed) {
		t.Fatalf("EnableAutoMerge without a node id = %v, want ErrAutoMergeNotAllowed", err)
	}
}

func TestConditionalReadsAnswer304(t *testing.T) {
	e := newEnv(t)
	first, err := e.a.BranchHead(e.ctx, e.repo, "main")
	if err != nil {
		t.Fatal(err)
	}
	before := e.a.Counts()
	hubBefore := e.hubTotal()
	second, err := e.a.BranchHead(e.ctx, e.repo, "main")
	if err != nil {
		t.Fatal(err)
	}
	after := e.a.Counts()
	// Why: the default branch is read every cycle; unchanged, it must cost
	// one conditional request answered 304 (free on GitHub).
	if second != first || after.NotModified-before.NotModified != 1 || after.Reads-before.Reads != 1 || e.hubTotal()-hubBefore != 1 {
		t.Fatalf("second read: sha %s (want %s), 304s %d, reads %d, hub requests %d; want 1 each",
			second, first, after.NotModified-before.NotModified, after.Reads-before.Reads, e.hubTotal()-hubBefore)
	}
	t.Logf("idle repeated read: %d request(s), %d answered 304", e.hubTotal()-hubBefore, after.NotModified-before.NotModified)
	// A change is seen: the ETag no longer matches.
	moved := e.personCommit(t, "main", map[string]string{"README.md": "# moved\n"})
	third, err := e.a.BranchHead(e.ctx, e.repo, "main")
	if err != nil || third != moved {
		t.Fatalf("after a push BranchHead = %s, %v; want %s", third, err, moved)
	}
}

// requestsBetween returns the hub's requests logged at or after from and
// strictly before to.
func requestsBetween(e *env, from, to time.Time) []localhub.Request {
	var out []localhub.Request
	for _, r := range e.hub.Requests().All() {
		if !r.Time.Before(from) && r.Time.Before(to) {
			out = append(out, r)
		}
	}
	return out
}

func TestRateLimitsAreWaitedOutWithNoRequestDuringTheEmbargo(t *testing.T) {
	const refRoute = "/repos/{owner}/{repo}/git/ref/{ref...}"
	cases := []struct {
		name  string
		why   string
		fault localhub.Fault
		wait  time.Duration
	}{
		{"429 Retry-After", "go-github v62 leaves 429 unclassified: the adapter honours Retry-After itself",
			localhub.Fault{Kind: localhub.FaultTooManyRequests, Route: refRoute, Times: 1, RetryAfter: 30 * time.Second}, 30 * time.Second},
		{"primary 403 reset", "a 403 with nothing remaining waits for X-RateLimit-Reset",
			localhub.Fault{Kind: localhub.FaultRateLimit, Route: refRoute, Times: 1, RetryAfter: 40 * time.Second}, 40 * time.Second},
		{"secondary 403", "a secondary limit's Retry-After is honoured",
			localhub.Fault{Kind: localhub.FaultSecondaryRateLimit, Route: refRoute, Times: 1, RetryAfter: 20 * time.Second}, 20 * time.Second},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			if _, err := e.a.BranchHead(e.ctx, e.repo, "main"); err != nil { // token and installation first
				t.Fatal(err)
			}
			e.hub.Faults().Add(tc.fault)
			start := e.clock.Now()
			if _, err := e.a.BranchHead(e.ctx, e.repo, "main"); err != nil {
				t.Fatalf("%s: BranchHead: %v", tc.why, err)
			}
			// The reset is whole seconds: the wait is the fault's, give or
			// take the truncation.
			waited := e.clock.Now().Sub(start)
			if waited < tc.wait-time.Second || waited > tc.wait+time.Second {
				t.Fatalf("%s: waited %s, want about %s", tc.why, waited, tc.wait)
			}
			during := requestsBetween(e, start.Add(time.Nanosecond), start.Add(tc.wait-time.Second))
			if len(during) != 0 {
				t.Fatalf("%s: %d request(s) sent during the embargo: %+v", tc.why, len(during), during)
			}
			if c := e.a.Counts(); c.RateLimited != 1 {
				t.Fatalf("RateLimited = %d, want 1", c.RateLimited)
			}
		})
	}
}

func TestEmbargoIsSharedByTheInstallation(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.MaxWait = time.Minute })
	if _, err := e.a.BranchHead(e.ctx, e.repo, "main"); err != nil {
		t.Fatal(err)
	}
	e.hub.Faults().Add(localhub.Fault{Kind: localhub.FaultRateLimit, Route: "/repos/{owner}/{repo}/pulls", Times: 1, RetryAfter: 10 * time.Minute})
	hubBefore := e.hubTotal()
	_, err := e.a.ListPullRequests(e.ctx, e.repo, forge.PullRequestFilter{})
	rl, ok := forge.IsRateLimited(err)
	// Why: an embargo longer than MaxWait is returned, not slept through, so
	// the cycle can stop and resume after Until.
	if !ok || rl.Until.Before(e.clock.Now().Add(9*time.Minute)) {
		t.Fatalf("ListPullRequests = %v, want a RateLimitError about 10 minutes ahead", err)
	}
	// Why: every call of the installation now refuses locally; nothing is sent.
	if _, err := e.a.BranchHead(e.ctx, e.repo, "main"); !errors.Is(err, rl) && !isRL(err) {
		t.Fatalf("BranchHead during the embargo = %v, want a RateLimitError", err)
	}
	if _, err := e.a.Commit(e.ctx, forge.CommitRequest{Repo: e.repo, Branch: "b", BaseSHA: "0123456789012345678901234567890123456789",
		Files: map[string][]byte{"a": []byte("b")}, Message: "m", Author: forge.Author{Name: "n", Email: "e@x"}}); !isRL(err) {
		t.Fatalf("a git commit during the embargo = %v, want a RateLimitError", err)
	}
	if n := e.hubTotal() - hubBefore; n != 1 {
		t.Fatalf("hub saw %d requests, want only the refused one", n)
	}
	e.clock.Advance(10 * time.Minute)
	if _, err := e.a.ListPullRequests(e.ctx, e.repo, forge.PullRequestFilter{}); err != nil {
		t.Fatalf("after the reset: %v", err)
	}
}

func isRL(err error) bool { _, ok := forge.IsRateLimited(err); return ok }

func TestPrimaryBudgetSpentStopsBeforeTheRefusal(t *testing.T) {
	e := newEnvWith(t, localhub.Options{RateLimit: 4})
	var err error
	for i := range 6 {
		// Distinct reads: a repeated one would be a free 304.
		if _, err = e.a.ListIssues(e.ctx, e.repo, fmt.Sprint("label-", i), forge.StateOpen); err != nil {
			break
		}
	}
	// Why: the response that spends the last request says "0 remaining";
	// the next call must wait (here: refuse, the reset is an hour away)
	// without sending a request that GitHub would answer 403.
	if !isRL(err) {
		t.Fatalf("after the budget: %v, want a RateLimitError", err)
	}
	for _, r := range e.hub.Requests().All() {
		if r.Status == http.StatusForbidden {
			t.Fatalf("a request was refused by the hub: %+v", r)
		}
	}
}

func TestTransientFailuresOfReadsAreRetried(t *testing.T) {
	const refRoute = "/repos/{owner}/{repo}/git/ref/{ref...}"
	cases := []struct {
		name    string
		why     string
		fault   localhub.Fault
		timeout time.Duration
	}{
		{"502 twice", "5xx on a read is retried with backoff", localhub.Fault{Kind: localhub.FaultStatus, Status: 502, Route: refRoute, Times: 2}, 0},
		// Fresh connections: net/http itself silently retries a GET whose
		// reused connection was reset, which would hide the adapter's retry.
		{"reset", "a dropped connection is retried", localhub.Fault{Kind: localhub.FaultReset, Route: refRoute, Times: 1}, 0},
		{"timeout", "a request slower than RequestTimeout is abandoned and retried",
			localhub.Fault{Kind: localhub.FaultDelay, Route: refRoute, Times: 1, Delay: time.Minute}, 500 * time.Millisecond},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, func(c *Config) {
				if tc.timeout > 0 {
					c.RequestTimeout = tc.timeout
				}
				c.Transport = &http.Transport{DisableKeepAlives: true}
			})
			if _, err := e.a.BranchHead(e.ctx, e.repo, "main"); err != nil {
				t.Fatal(err)
			}
			e.hub.Faults().Add(tc.fault)
			before := e.a.Counts()
			if _, err := e.a.ListPullRequests(e.ctx, e.repo, forge.PullRequestFilter{}); err != nil {
				t.Fatal(err)
			}
			if _, err := e.a.BranchHead(e.ctx, e.repo, "main"); err != nil {
				t.Fatalf("%s: BranchHead: %v", tc.why, err)
			}
			want := int64(max(tc.fault.Times, 1))
			if got := e.a.Counts().Retries - before.Retries; got != want {
				t.Fatalf("%s: retries = %d, want %d", tc.why, got, want)
			}
		})
	}
}

func TestPersistentFailureIsUnavailable(t *testing.T) {
	e := newEnv(t)
	if _, err := e.a.BranchHead(e.ctx, e.repo, "main"); err != nil {
		t.Fatal(err)
	}
	e.hub.Faults().Add(localhub.Fault{Kind: localhub.FaultStatus, Status: 503, Route: "/repos/{owner}/{repo}/pulls"})
	_, err := e.a.ListPullRequests(e.ctx, e.repo, forge.PullRequestFilter{})
	// Why: retries are bounded; then the caller sees ErrUnavailable.
	if !errors.Is(err, forge.ErrUnavailable) {
		t.Fatalf("ListPullRequests = %v, want ErrUnavailable", err)
	}
	if n := e.hubCount("GET", "/repos/{owner}/{repo}/pulls"); n != 4 {
		t.Fatalf("attempts = %d, want 4", n)
	}
}

// loseResponses lets the hub process the first n requests of method and
// path suffix, then answers 502 instead of the hub's response: the write
// happened but the client cannot know it.
func loseResponses(e *env, method, suffix string, n int) *atomic.Int32 {
	var lost atomic.Int32
	e.setWrap(func(w http.ResponseWriter, r *http.Request, next http.Handler) {
		if r.Method == method && strings.HasSuffix(r.URL.Path, suffix) && lost.Load() < int32(n) {
			lost.Add(1)
			rec := httptest.NewRecorder()
			next.ServeHTTP(rec, r)
			http.Error(w, `{"message":"Server Error"}`, http.StatusBadGateway)
			return
		}
		next.ServeHTTP(w, r)
	})
	return &lost
}

func TestCreatesAreNotDuplicatedWhenResponsesAreLost(t *testing.T) {
	e := newEnv(t)
	pr := openPRWith(t, e.a, e.repo, "backflow/prod/redis")

	// A pull request whose creation response is lost.
	main, _ := e.a.BranchHead(e.ctx, e.repo, "main")
	if _, err := e.a.Commit(e.ctx, forge.CommitRequest{Repo: e.repo, Branch: "backflow/dev/x", BaseSHA: main, Method: forge.CommitAPI,
		Files: map[string][]byte{"x": []byte("y")}, Message: "m", Author: forge.Author{Name: "n", Email: "e@x"}}); err != nil {
		t.Fatal(err)
	}
	lost := loseResponses(e, "POST", "/pulls", 1)
	got, err := e.a.CreatePullRequest(e.ctx, e.repo, forge.NewPullRequest{Title: "t2", Head: "backflow/dev/x", Base: "main"})
	if err != nil || got.Number == 0 || lost.Load() != 1 {
		t.Fatalf("CreatePullRequest with a lost response = %+v, %v (lost %d)", got, err, lost.Load())
	}
	all, _ := e.a.ListPullRequests(e.ctx, e.repo, forge.PullRequestFilter{Head: "backflow/dev/x", State: forge.StateAll})
	// Why: the re-check found the pull request the lost request created.
	if len(all) != 1 || e.hubCount("POST", "/repos/{owner}/{repo}/pulls") != 2 {
		t.Fatalf("pull requests from the head = %d, POSTs %d; want 1 and 2 (the lost one and the first PR)", len(all), e.hubCount("POST", "/repos/{owner}/{repo}/pulls"))
	}

	// A comment whose response is lost.
	loseResponses(e, "POST", "/comments", 1)
	if _, err := e.a.CreateComment(e.ctx, e.repo, pr.Number, "once"); err != nil {
		t.Fatal(err)
	}
	comments, _ := e.a.ListComments(e.ctx, e.repo, pr.Number)
	if len(comments) != 1 {
		t.Fatalf("comments = %d, want 1", len(comments))
	}

	// A check run whose response is lost.
	loseResponses(e, "POST", "/check-runs", 1)
	if _, err := e.a.CreateCheckRun(e.ctx, e.repo, forge.CheckRun{Name: "backflow/receipt", HeadSHA: pr.HeadSHA, Conclusion: forge.ConclusionSuccess, Title: "ok", Summary: "ok"}); err != nil {
		t.Fatal(err)
	}
	runs, _ := e.a.ListCheckRuns(e.ctx, e.repo, pr.HeadSHA, "backflow/receipt")
	if len(runs) != 1 {
		t.Fatalf("check runs = %d, want 1", len(runs))
	}

	// An issue whose response is lost.
	loseResponses(e, "POST", "/issues", 1)
	if _, err := e.a.CreateIssue(e.ctx, e.repo, forge.NewIssue{Title: "drift", Labels: []string{"backflow-drift"}}); err != nil {
		t.Fatal(err)
	}
	issues, _ := e.a.ListIssues(e.ctx, e.repo, "backflow-drift", forge.StateAll)
	if len(issues) != 1 {
		t.Fatalf("issues = %d, want 1", len(issues))
	}

	// A merge whose response is lost: the re-check reads the merge commit.
	loseResponses(e, "PUT", "/merge", 1)
	sha, err := e.a.Merge(e.ctx, e.repo, pr.Number, pr.HeadSHA, forge.MergeSquash)
	if err != nil || sha == "" {
		t.Fatalf("Merge with a lost response = %q, %v", sha, err)
	}
	if head, _ := e.a.BranchHead(e.ctx, e.repo, "main"); head != sha {
		t.Fatalf("main = %s, want the merge %s", head, sha)
	}

	// A branch whose creation response is lost.
	loseResponses(e, "POST", "/git/refs", 1)
	if err := e.a.CreateBranch(e.ctx, e.repo, "topic", sha); err != nil {
		t.Fatalf("CreateBranch with a lost response: %v", err)
	}
}

func TestServerErrorBeforeACreateIsRetriedOnce(t *testing.T) {
	e := newEnv(t)
	main, _ := e.a.BranchHead(e.ctx, e.repo, "main")
	if _, err := e.a.Commit(e.ctx, forge.CommitRequest{Repo: e.repo, Branch: "backflow/dev/x", BaseSHA: main, Method: forge.CommitAPI,
		Files: map[string][]byte{"x": []byte("y")}, Message: "m", Author: forge.Author{Name: "n", Email: "e@x"}}); err != nil {
		t.Fatal(err)
	}
	e.hub.Faults().Add(localhub.Fault{Kind: localhub.FaultStatus, Status: 500, Method: "POST", Route: "/repos/{owner}/{repo}/pulls", Times: 1})
	if _, err := e.a.CreatePullRequest(e.ctx, e.repo, forge.NewPullRequest{Title: "t", Head: "backflow/dev/x", Base: "main"}); err != nil {
		t.Fatal(err)
	}
	all, _ := e.a.ListPullRequests(e.ctx, e.repo, forge.PullRequestFilter{State: forge.StateAll})
	// Why: nothing was created by the failed attempt; the re-check says so
	// and exactly one retry creates it.
	if len(all) != 1 || e.hubCount("POST", "/repos/{owner}/{repo}/pulls") != 2 {
		t.Fatalf("pull requests %d, POSTs %d; want 1 and 2", len(all), e.hubCount("POST", "/repos/{owner}/{repo}/pulls"))
	}
}

// peakPerMinute is the most requests in any 60-second window of times.
func peakPerMinute(times []time.Time) int {
	peak := 0
	for i := range times {
		n := 0
		for j := i; j < len(times) && times[j].Sub(times[i]) < time.Minute; j++ {
			n++
		}
		peak = max(peak, n)
	}
	return peak
}

func TestWritesArePacedAt80PerMinute(t *testing.T) {
	e := newEnv(t)
	pr := openPRWith(t, e.a, e.repo, "backflow/prod/redis")
	const writes = 200
	start := e.clock.Now()
	for i := range writes {
		if err := e.a.AddLabels(e.ctx, e.repo, pr.Number, "l"+string(rune('a'+i%26))); err != nil {
			t.Fatal(err)
		}
	}
	var times []time.Time
	for _, r := range e.hub.Requests().All() {
		if r.Method != "GET" && !strings.HasPrefix(r.Route, "/app/") {
			times = append(times, r.Time)
		}
	}
	peak := peakPerMinute(times)
	elapsed := e.clock.Now().Sub(start)
	t.Logf("%d writes (plus the PR's 4) took %s of fake time; peak %d writes in any minute (adapter: %d)", writes, elapsed, peak, e.a.Counts().PeakWritesPerMinute)
	// Why: GitHub allows 80 content-creating requests a minute; 204 writes
	// need at least two full minutes beyond the first 80.
	if peak > 80 || e.a.Counts().PeakWritesPerMinute != 80 || elapsed < 2*time.Minute {
		t.Fatalf("peak %d (adapter %d) in %s; want at most 80 a minute", peak, e.a.Counts().PeakWritesPerMinute, elapsed)
	}
}

func TestRequestCountsForOnePullRequest(t *testing.T) {
	for _, method := range []forge.CommitMethod{forge.CommitGit, forge.CommitAPI} {
		t.Run(string(method), func(t *testing.T) {
			e := newEnv(t)
			main, err := e.a.BranchHead(e.ctx, e.repo, "main")
			if err != nil {
				t.Fatal(err)
			}
			if _, err := e.a.App(e.ctx); err != nil {
				t.Fatal(err)
			}
			before, hubBefore := e.a.Counts(), e.hub.Requests().Counts()
			sha, err := e.a.Commit(e.ctx, forge.CommitRequest{Repo: e.repo, Branch: "backflow/prod/redis", BaseSHA: main, Method: method,
				Files:   map[string][]byte{"envs/prod/redis/values.yaml": []byte("replicas: 4\n"), ".backflow/receipts/a.yaml": []byte("r\n")},
				Message: "m\n", Author: forge.Author{Name: "backflow[bot]", Email: "1+backflow[bot]@users.noreply.github.com"}})
			if err != nil {
				t.Fatal(err)
			}
			pr, err := e.a.CreatePullRequest(e.ctx, e.repo, forge.NewPullRequest{Title: "t", Body: "b", Head: "backflow/prod/redis", Base: "main"})
			if err != nil {
				t.Fatal(err)
			}
			if err := e.a.AddLabels(e.ctx, e.repo, pr.Number, "reverse-reconcile", "env:prod", "pre-authorized"); err != nil {
				t.Fatal(err)
			}
			if _, err := e.a.CreateCheckRun(e.ctx, e.repo, forge.CheckRun{Name: "backflow/receipt", HeadSHA: sha, Conclusion: forge.ConclusionSuccess, Title: "ok", Summary: "ok"}); err != nil {
				t.Fatal(err)
			}
			if _, err := e.a.Merge(e.ctx, e.repo, pr.Number, sha, forge.MergeSquash); err != nil {
				t.Fatal(err)
			}
			after := e.a.Counts()
			hubAfter := e.hub.Requests().Counts()
			total := 0
			for k, v := range hubAfter {
				if d := v - hubBefore[k]; d > 0 {
					total += d
					t.Logf("  %-60s %d", k, d)
				}
			}
			t.Logf("%s: commit + PR + labels + check + merge: %d reads, %d writes (adapter); %d HTTP requests at the hub",
				method, after.Reads-before.Reads, after.Writes-before.Writes, total)
			// Why: the write budget per PR is what limits the bot: commit
			// (git: one push; api: tree, commit, ref), PR, labels, check, merge.
			wantWrites := map[forge.CommitMethod]int64{forge.CommitGit: 5, forge.CommitAPI: 7}[method]
			if got := after.Writes - before.Writes; got != wantWrites {
				t.Fatalf("writes = %d, want %d", got, wantWrites)
			}
		})
	}
}
