package bot

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/backflow-dev/backflow/internal/forge"
	ghforge "github.com/backflow-dev/backflow/internal/forge/github"
	"github.com/backflow-dev/backflow/internal/lifecycle"
	"github.com/backflow-dev/backflow/internal/localhub"
)

func newKey(t *testing.T) *rsa.PrivateKey {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatalf("generating key: %v", err)
	}
	return k
}

// The App key is made once per test binary: generation dominates start-up.
var (
	hubKeyOnce sync.Once
	hubKey     *rsa.PrivateKey
)

// hubCommitKey keys the bot's commit tokens, as a key derived from the
// App's private key does in a real process.
var hubCommitKey = []byte("0123456789abcdef0123456789abcdef")

// hubEnv is the local hub over real HTTP and git, with the test GitOps
// repository, the App installed, and a bot driving it through the GitHub
// adapter. The adapter's waits advance the hub's clock.
type hubEnv struct {
	t       *testing.T
	hub     *localhub.Hub
	clock   *localhub.FakeClock
	adapter *ghforge.Adapter
	src     *staticSource
	bot     *Bot
	repo    forge.Repo
	ctx     context.Context
	logs    *syncBuffer
	srv     *httptest.Server
}

// syncBuffer is a log sink safe for the adapter's concurrent writes.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func newHubEnv(t *testing.T, method forge.CommitMethod, mutate func(map[string]string)) *hubEnv {
	t.Helper()
	hubKeyOnce.Do(func() { hubKey = newKey(t) })
	// The clock starts at wall-clock time: ghinstallation signs its JWTs
	// with the real clock and the hub checks them against its own.
	clock := localhub.NewFakeClock(time.Now().UTC().Truncate(time.Second))
	h, err := localhub.New(localhub.Options{Clock: clock, AppKey: hubKey, AppSlug: "backflow"})
	if err != nil {
		t.Fatalf("localhub.New: %v", err)
	}
	srv := httptest.NewServer(h)
	h.SetBaseURL(srv.URL)
	t.Cleanup(func() {
		srv.Close()
		if err := h.Close(); err != nil {
			t.Errorf("hub Close: %v", err)
		}
	})
	files := gitopsFiles(t)
	if mutate != nil {
		mutate(files)
	}
	if err := h.CreateRepo(localhub.RepoOptions{Owner: "acme", Name: "gitops", Files: files, AllowAutoMerge: true}); err != nil {
		t.Fatalf("CreateRepo: %v", err)
	}
	if err := h.SetBranchProtection(testRepo, "main", CheckName); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Install("acme"); err != nil {
		t.Fatalf("Install: %v", err)
	}
	logs := &syncBuffer{}
	logger := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	a, err := ghforge.New(ghforge.Config{AppID: h.AppID(), PrivateKey: h.PrivateKeyPEM(), BaseURL: srv.URL + "/", Clock: clock,
		Backoff: 100 * time.Millisecond, Logger: logger,
		Sleep: func(ctx context.Context, d time.Duration) error {
			clock.Advance(d)
			return ctx.Err()
		}})
	if err != nil {
		t.Fatalf("adapter: %v", err)
	}
	e := &hubEnv{t: t, hub: h, clock: clock, adapter: a, src: &staticSource{Label: "test"}, ctx: context.Background(), logs: logs, srv: srv,
		repo: forge.Repo{Owner: "acme", Name: "gitops", DefaultBranch: "main"}}
	e.bot, err = New(Options{Forge: a, Sources: []Source{e.src}, Now: clock.Now, BotUserID: 4242, CommitMethod: method,
		CommitKey: hubCommitKey, Logger: logger, Renderer: renderCharts})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// cycle runs one cycle and returns the report and the requests it sent,
// keyed "METHOD /route".
func (e *hubEnv) cycle() (*Report, ghforge.Counts, map[string]int) {
	e.t.Helper()
	e.hub.Requests().Reset()
	before := e.adapter.Counts()
	rep, err := e.bot.Cycle(e.ctx)
	if err != nil {
		e.t.Fatalf("cycle: %v", err)
	}
	for _, rr := range rep.Repos {
		for _, msg := range rr.Errors {
			e.t.Errorf("repository error: %s", msg)
		}
	}
	after := e.adapter.Counts()
	d := ghforge.Counts{Reads: after.Reads - before.Reads, Writes: after.Writes - before.Writes,
		NotModified: after.NotModified - before.NotModified, Retries: after.Retries - before.Retries, RateLimited: after.RateLimited - before.RateLimited}
	return rep, d, e.hub.Requests().Counts()
}

func (e *hubEnv) file(ref, p string) string {
	e.t.Helper()
	sha, err := e.adapter.BranchHead(e.ctx, e.repo, ref)
	if err != nil {
		e.t.Fatal(err)
	}
	data, err := e.adapter.ReadFile(e.ctx, e.repo, sha, p)
	if err != nil {
		e.t.Fatalf("reading %s at %s: %v", p, ref, err)
	}
	return string(data)
}

func (e *hubEnv) pulls() []forge.PullRequest {
	e.t.Helper()
	prs, err := e.adapter.ListPullRequests(e.ctx, e.repo, forge.PullRequestFilter{State: forge.StateAll})
	if err != nil {
		e.t.Fatal(err)
	}
	return prs
}

// The seed's incident over real HTTP and git, with both commit methods:
// one pull request with a one-line values diff plus the receipt, labels, a
// green check, merged; the receipt on the default branch verifies; the next
// cycle writes nothing.
func TestHubSeedIncident(t *testing.T) {
	for _, method := range []forge.CommitMethod{forge.CommitGit, forge.CommitAPI} {
		t.Run(string(method), func(t *testing.T) {
			e := newHubEnv(t, method, nil)
			before := e.file("main", valuesEast)
			e.src.Result.Observations = append(e.src.Result.Observations, replicas(4, 0))
			rep, first, routes := e.cycle()
			t.Logf("%s: first cycle (one pull request opened and merged): %d reads, %d writes, %d not modified; %v", method, first.Reads, first.Writes, first.NotModified, routes)
			prs := e.pulls()
			if len(prs) != 1 || !prs[0].Merged {
				t.Fatalf("want one merged pull request, got %+v\n%s", prs, rep.Text())
			}
			pr := prs[0]
			for _, l := range []string{"reverse-reconcile", "env:prod-us-east", "pre-authorized"} {
				if !slices.Contains(pr.Labels, l) {
					t.Errorf("label %s missing: %v", l, pr.Labels)
				}
			}
			if d := diffLines(before, e.file("main", valuesEast)); len(d) != 1 || !strings.Contains(d[0], "replicaCount: 4") {
				t.Errorf("values diff on main: %q", d)
			}
			m, ok := ParseMarker(pr.Body)
			if !ok || !m.BranchDeleted {
				t.Fatalf("marker: %+v", m)
			}
			runs, err := e.adapter.ListCheckRuns(e.ctx, e.repo, m.Commits[0], CheckName)
			if err != nil || len(runs) != 1 || runs[0].Conclusion != forge.ConclusionSuccess {
				t.Errorf("check runs on the head: %+v %v", runs, err)
			}
			commits, err := e.adapter.CommitsSince(e.ctx, e.repo, m.Base, m.Commits[0])
			if err != nil || len(commits) != 1 {
				t.Fatalf("the write-back's commits: %+v %v", commits, err)
			}
			msg := commits[0].Message
			for _, want := range []string{"Reverse-Reconcile-Actor: alice", "Reverse-Reconcile-Role: platform-sre", "Reverse-Reconcile-Intent: incident-fix",
				"Reverse-Reconcile-Receipt: " + m.Receipts[0], "Co-authored-by: alice-sre <alice-sre@users.noreply.github.com>"} {
				if !strings.Contains(msg, want) {
					t.Errorf("commit message lacks %q:\n%s", want, msg)
				}
			}
			if a := commits[0].Author; a.Name != "backflow[bot]" || a.Email != "4242+backflow[bot]@users.noreply.github.com" {
				t.Errorf("author %+v", a)
			}
			if _, err := e.adapter.BranchHead(e.ctx, e.repo, branchEast); err == nil {
				t.Error("the write-back branch was not deleted")
			}
			verifyWithPolicy(t, []byte(e.file("main", ".github/reverse-reconcile-policy.yaml")), []byte(e.file("main", m.Receipts[0])))
			e.noSecrets(rep, pr.Body)

			// The first cycle after the merge reads the files again at the
			// merge commit; from then on only the head and the pull requests.
			for i := range 2 {
				_, idle, routes := e.cycle()
				t.Logf("%s: cycle %d after the merge: %d reads (%d answered 304), %d writes; %v", method, i+2, idle.Reads, idle.NotModified, idle.Writes, routes)
				if idle.Writes != 0 {
					t.Errorf("cycle %d after the merge wrote %d times: %v", i+2, idle.Writes, routes)
				}
				if n := repoReads(routes); i == 1 && n > 2 {
					t.Errorf("idle cycle: %d reads of the repository, want at most 2: %v", n, routes)
				}
			}
		})
	}
}

// A pull request left for review: the idle cycle costs no write and only
// the default branch's head and the pull request list, both answered 304.
func TestHubIdleRequests(t *testing.T) {
	e := newHubEnv(t, forge.CommitGit, reviewOnly)
	e.src.Result.Observations = append(e.src.Result.Observations, replicas(4, 0))
	_, first, routes := e.cycle()
	t.Logf("first cycle (one pull request opened for review): %d reads, %d writes; %v", first.Reads, first.Writes, routes)
	prs := e.pulls()
	if len(prs) != 1 || prs[0].State != forge.StateOpen || prs[0].AutoMergeEnabled {
		t.Fatalf("want one open pull request without auto-merge: %+v", prs)
	}
	for i := range 2 {
		_, idle, routes := e.cycle()
		t.Logf("idle cycle %d: %d reads (%d answered 304), %d writes; %v", i, idle.Reads, idle.NotModified, idle.Writes, routes)
		if idle.Writes != 0 {
			t.Fatalf("idle cycle wrote: %v", routes)
		}
		if perRepo := repoReads(routes); perRepo > 2 {
			t.Errorf("idle cycle: %d reads of the repository, want at most 2: %v", perRepo, routes)
		}
	}
}

// Rate limits are waited out: no request reaches the hub during the
// embargo, and the cycle completes with one pull request.
func TestHubRateLimitWaitedOut(t *testing.T) {
	cases := []struct {
		name, why string
		kind      localhub.FaultKind
	}{
		{"429", "go-github v62 does not classify a 429; Retry-After is honoured anyway", localhub.FaultTooManyRequests},
		{"primary", "403 with X-RateLimit-Remaining: 0 waits for the reset", localhub.FaultRateLimit},
		{"secondary", "403 with Retry-After, GitHub's secondary limit", localhub.FaultSecondaryRateLimit},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newHubEnv(t, forge.CommitGit, reviewOnly)
			e.src.Result.Observations = append(e.src.Result.Observations, replicas(4, 0))
			const wait = 40 * time.Second
			e.hub.Faults().Add(localhub.Fault{Kind: tc.kind, Method: "POST", Route: "/repos/{owner}/{repo}/pulls", Times: 1, RetryAfter: wait})
			e.cycle()
			var faulted time.Time
			during := 0
			for _, r := range e.hub.Requests().All() {
				if r.Status == -1 && faulted.IsZero() {
					faulted = r.Time
					continue
				}
				if !faulted.IsZero() && r.Time.Before(faulted.Add(wait)) {
					during++
				}
			}
			if faulted.IsZero() {
				t.Fatal("the fault was not hit")
			}
			if during != 0 {
				t.Errorf("%s: %d requests during the embargo", tc.why, during)
			}
			if prs := e.pulls(); len(prs) != 1 {
				t.Fatalf("%s: want one pull request after the wait, got %d", tc.why, len(prs))
			}
		})
	}
}

// 5xx answers are retried without duplicating the pull request or the commit.
func TestHub5xxRetriedWithoutDuplicates(t *testing.T) {
	e := newHubEnv(t, forge.CommitAPI, reviewOnly)
	e.src.Result.Observations = append(e.src.Result.Observations, replicas(4, 0))
	for _, f := range []localhub.Fault{
		{Kind: localhub.FaultStatus, Status: 502, Method: "GET", Route: "/repos/{owner}/{repo}/git/ref/{ref...}", Times: 1},
		{Kind: localhub.FaultStatus, Status: 500, Method: "POST", Route: "/repos/{owner}/{repo}/pulls", Times: 1},
		{Kind: localhub.FaultStatus, Status: 503, Method: "POST", Route: "/repos/{owner}/{repo}/check-runs", Times: 1},
	} {
		e.hub.Faults().Add(f)
	}
	_, counts, routes := e.cycle()
	t.Logf("with 5xx faults: %d retries; %v", counts.Retries, routes)
	prs := e.pulls()
	if len(prs) != 1 {
		t.Fatalf("want one pull request, got %d", len(prs))
	}
	m, _ := ParseMarker(prs[0].Body)
	runs, err := e.adapter.ListCheckRuns(e.ctx, e.repo, prs[0].HeadSHA, CheckName)
	if err != nil || len(runs) != 1 {
		t.Errorf("check runs: %d %v", len(runs), err)
	}
	if len(m.Commits) != 1 {
		t.Errorf("commits recorded: %v", m.Commits)
	}
	if _, _, routes := e.cycle(); hasWrite(routes) {
		t.Errorf("not converged: %v", routes)
	}
}

// pushAsPerson commits a file to branch through the contents API with a
// person's token, authored with the bot's own name.
func (e *hubEnv) pushAsPerson(branch, path, content string) {
	e.t.Helper()
	token, err := e.hub.IssueUserToken("carol")
	if err != nil {
		e.t.Fatal(err)
	}
	body := fmt.Sprintf(`{"message":"keep notes","content":%q,"branch":%q,"author":{"name":"backflow[bot]","email":"4242+backflow[bot]@users.noreply.github.com"}}`,
		base64.StdEncoding.EncodeToString([]byte(content)), branch)
	req, _ := http.NewRequest(http.MethodPut, e.srv.URL+"/repos/acme/gitops/contents/"+path, strings.NewReader(body))
	req.Header.Set("Authorization", "token "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		e.t.Fatalf("pushing as a person: %s", resp.Status)
	}
}

// updateAsPerson replaces an existing file on branch through the contents
// API with a person's token.
func (e *hubEnv) updateAsPerson(branch, path, content string) {
	e.t.Helper()
	token, err := e.hub.IssueUserToken("carol")
	if err != nil {
		e.t.Fatal(err)
	}
	do := func(method, url, body string) map[string]any {
		req, _ := http.NewRequest(method, url, strings.NewReader(body))
		req.Header.Set("Authorization", "token "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			e.t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode/100 != 2 {
			e.t.Fatalf("%s %s as a person: %s", method, url, resp.Status)
		}
		var out map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&out)
		return out
	}
	cur := do(http.MethodGet, e.srv.URL+"/repos/acme/gitops/contents/"+path+"?ref="+branch, "")
	body := fmt.Sprintf(`{"message":"review","content":%q,"branch":%q,"sha":%q}`, base64.StdEncoding.EncodeToString([]byte(content)), branch, cur["sha"])
	do(http.MethodPut, e.srv.URL+"/repos/acme/gitops/contents/"+path, body)
}

// noSecrets checks that no credential reached the logs, the report or a
// pull request body: no line of the App's key, no token, not the commit key.
func (e *hubEnv) noSecrets(rep *Report, texts ...string) {
	e.t.Helper()
	js, _ := rep.JSON()
	texts = append(texts, e.logs.String(), rep.Text(), string(js))
	key := hubCommitKey
	needles := []string{"ghs_", "ghp_", "PRIVATE KEY", hex.EncodeToString(key), string(key)}
	for _, line := range strings.Split(string(e.hub.PrivateKeyPEM()), "\n") {
		if len(line) > 40 {
			needles = append(needles, line)
		}
	}
	for _, text := range texts {
		for _, n := range needles {
			if strings.Contains(text, n) {
				e.t.Errorf("a secret (%.8s...) reached the output", n)
			}
		}
	}
	if !strings.Contains(e.logs.String(), "repo=acme/gitops") {
		e.t.Errorf("logs lack the repo key:\n%s", e.logs.String())
	}
}

// repoReads counts the requests about the repository itself, leaving out
// the listing of installations and repositories done once per cycle.
func repoReads(routes map[string]int) int {
	n := 0
	for route, c := range routes {
		if strings.HasPrefix(route, "GET /repos/{owner}/{repo}/") {
			n += c
		}
	}
	return n
}

func hasWrite(routes map[string]int) bool {
	for r := range routes {
		if !strings.HasPrefix(r, "GET ") {
			return true
		}
	}
	return false
}

// The lifecycle over real HTTP and git with both commit methods: a new live
// value rewrites the branch (one commit on the default branch, not a
// stack); a person's commit on it gets one comment and is never
// overwritten.
func TestHubLifecycle(t *testing.T) {
	for _, method := range []forge.CommitMethod{forge.CommitGit, forge.CommitAPI} {
		t.Run(string(method), func(t *testing.T) {
			e := newHubEnv(t, method, reviewOnly)
			e.src.Result.Observations = append(e.src.Result.Observations, replicas(4, 0))
			e.cycle()

			e.src.Result.Observations = append(e.src.Result.Observations, replicas(5, time.Minute))
			_, counts, routes := e.cycle()
			t.Logf("%s: rewrite for a new live value: %d reads, %d writes; %v", method, counts.Reads, counts.Writes, routes)
			prs := e.pulls()
			if len(prs) != 1 || prs[0].State != forge.StateOpen || !strings.Contains(prs[0].Title, "3 -> 5") {
				t.Fatalf("after a new live value: %+v", prs)
			}
			if v := e.file(branchEast, valuesEast); !strings.Contains(v, "replicaCount: 5") {
				t.Errorf("branch not rewritten:\n%s", v)
			}
			commits, err := e.adapter.CommitsSince(e.ctx, e.repo, "main", branchEast)
			if err != nil || len(commits) != 1 {
				t.Fatalf("the branch holds %d commits (%v), want one", len(commits), err)
			}
			m, _ := ParseMarker(prs[0].Body)
			if !m.OwnsHead(commits[0].SHA) {
				t.Errorf("the marker does not record the new head %s: %v", commits[0].SHA, m.Commits)
			}
			if _, _, routes := e.cycle(); hasWrite(routes) {
				t.Errorf("the rewrite was repeated: %v", routes)
			}

			// A person pushes to the bot's branch (with the same author name
			// as the bot, which proves nothing): one comment, no update.
			e.pushAsPerson(branchEast, "notes.txt", "kept\n")
			e.src.Result.Observations = append(e.src.Result.Observations, replicas(6, 90*time.Second))
			_, _, routes = e.cycle()
			if routes["POST /repos/{owner}/{repo}/issues/{number}/comments"] != 1 || routes["POST /repos/{owner}/{repo}/git/commits"]+routes["POST /{owner}/{repo}.git/git-receive-pack"] != 0 {
				t.Fatalf("after a person's commit: %v", routes)
			}
			if v := e.file(branchEast, "notes.txt"); v != "kept\n" {
				t.Fatalf("the person's commit was overwritten: %q", v)
			}
			if _, _, routes := e.cycle(); hasWrite(routes) {
				t.Errorf("commented again: %v", routes)
			}
			e.src.Result.Observations = append(e.src.Result.Observations, withField(replicas(5, 2*time.Minute)))
			if _, _, routes := e.cycle(); hasWrite(routes) {
				t.Errorf("a branch with a person's commit was acted on: %v", routes)
			}
		})
	}
}

// Auto-merge waits for the other required checks: armed over GraphQL
// pinned to the head when the repository allows it, or merged over REST
// pinned to the head by a later cycle once the pull request is mergeable
// and green.
func TestHubAutoMergeWaitsForChecks(t *testing.T) {
	for _, allow := range []bool{true, false} {
		name := map[bool]string{true: "graphql", false: "rest"}[allow]
		t.Run(name, func(t *testing.T) {
			e := newHubEnv(t, forge.CommitGit, nil)
			if err := e.hub.SetBranchProtection(testRepo, "main", CheckName, "ci/test"); err != nil {
				t.Fatal(err)
			}
			if err := e.hub.SetAllowAutoMerge(testRepo, allow); err != nil {
				t.Fatal(err)
			}
			e.src.Result.Observations = append(e.src.Result.Observations, replicas(4, 0))
			rep, _, routes := e.cycle()
			prs := e.pulls()
			if len(prs) != 1 || prs[0].State != forge.StateOpen {
				t.Fatalf("want one open pull request waiting for ci/test: %+v\n%s", prs, rep.Text())
			}
			if got := routes["POST /graphql"]; got != 1 {
				t.Errorf("GraphQL auto-merge requests: %d, want 1", got)
			}
			if prs[0].AutoMergeEnabled != allow {
				t.Errorf("auto-merge armed %v, want %v", prs[0].AutoMergeEnabled, allow)
			}
			if _, err := e.adapter.CreateCheckRun(e.ctx, e.repo, forge.CheckRun{Name: "ci/test", HeadSHA: prs[0].HeadSHA, Status: forge.CheckCompleted, Conclusion: forge.ConclusionSuccess}); err != nil {
				t.Fatal(err)
			}
			e.cycle()
			prs = e.pulls()
			if !prs[0].Merged {
				t.Fatalf("not merged once green: %+v", prs[0])
			}
			if _, err := e.adapter.BranchHead(e.ctx, e.repo, branchEast); err == nil {
				t.Error("the merged branch was not deleted")
			}
		})
	}
}

// Live observed back at desired closes the pull request and deletes its
// branch over real HTTP; nothing is left to do after.
func TestHubConverged(t *testing.T) {
	e := newHubEnv(t, forge.CommitGit, reviewOnly)
	e.src.Result.Observations = append(e.src.Result.Observations, replicas(4, 0))
	e.cycle()
	e.src.Result.Observations = append(e.src.Result.Observations, withField(replicas(4, time.Minute)))
	_, _, routes := e.cycle()
	prs := e.pulls()
	if len(prs) != 1 || prs[0].State != forge.StateClosed || prs[0].Merged {
		t.Fatalf("after live came back: %+v; %v", prs, routes)
	}
	if _, err := e.adapter.BranchHead(e.ctx, e.repo, branchEast); err == nil {
		t.Error("the branch of the closed pull request was not deleted")
	}
	if m, _ := ParseMarker(prs[0].Body); m.Closed != lifecycle.ClosedConverged || !m.BranchDeleted {
		t.Errorf("marker %+v", m)
	}
	if _, _, routes := e.cycle(); hasWrite(routes) {
		t.Errorf("not converged after closing: %v", routes)
	}
}
