package reliability

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	gh "github.com/google/go-github/v62/github"

	"github.com/backflow-dev/backflow/internal/app"
	"github.com/backflow-dev/backflow/internal/bot"
	"github.com/backflow-dev/backflow/internal/forge"
	"github.com/backflow-dev/backflow/internal/forge/forgetest"
	ghforge "github.com/backflow-dev/backflow/internal/forge/github"
	"github.com/backflow-dev/backflow/internal/localhub"
	"github.com/backflow-dev/backflow/internal/observe"
)

const (
	owner      = "acme"
	repoName   = "gitops"
	fullName   = owner + "/" + repoName
	usEast     = "prod-us-east"
	usEastNode = "prod-us-east-1"
	euWestNode = "prod-eu-west-1"
	branchEast = "backflow/prod-us-east/redis"
	branchEU   = "backflow/prod-eu-west/redis"
	valuesEast = "envs/prod-us-east/redis/values.yaml"
	policyPath = ".github/reverse-reconcile-policy.yaml"
	configPath = ".github/backflow.yaml"
)

// The App key is made once per test binary: generation dominates start-up.
var (
	appKeyOnce sync.Once
	appKey     *rsa.PrivateKey
)

func theAppKey(t testing.TB) *rsa.PrivateKey {
	t.Helper()
	appKeyOnce.Do(func() {
		k, err := rsa.GenerateKey(rand.Reader, 2048)
		if err != nil {
			t.Fatalf("generating key: %v", err)
		}
		appKey = k
	})
	return appKey
}

// gitopsFiles is the test GitOps repository, by path.
func gitopsFiles(t testing.TB) map[string]string {
	t.Helper()
	return forgetest.ReadFiles(t, filepath.Join("testdata", "gitops"))
}

// reviewOnly turns auto-merge off in the repo config.
func reviewOnly(files map[string]string) {
	files[configPath] = strings.Replace(files[configPath], "autoMerge:\n  enabled: true", "autoMerge:\n  enabled: false", 1)
}

// hubEnv is the local hub over real HTTP and git with the App installed on
// acme, and the test GitOps repository acme/gitops. Every log line of the
// hub, the adapters and the bots goes to the suite's capture, where the
// canary case looks for secrets.
type hubEnv struct {
	t     testing.TB
	hub   *localhub.Hub
	clock *localhub.FakeClock
	url   string
	repo  forge.Repo
	ctx   context.Context
	log   *slog.Logger
}

func newHubEnv(t testing.TB, files map[string]string) *hubEnv {
	t.Helper()
	// The clock starts at wall-clock time: ghinstallation signs its JWTs
	// with the real clock and the hub checks them against its own.
	clock := localhub.NewFakeClock(time.Now().UTC().Truncate(time.Second))
	log := captureLogger()
	h, err := localhub.New(localhub.Options{Clock: clock, AppKey: theAppKey(t), AppSlug: "backflow", Logger: log, Seed: 8})
	if err != nil {
		t.Fatalf("localhub.New: %v", err)
	}
	srv := httptest.NewServer(h)
	h.SetBaseURL(srv.URL)
	e := &hubEnv{t: t, hub: h, clock: clock, url: srv.URL, ctx: context.Background(), log: log,
		repo: forge.Repo{Owner: owner, Name: repoName, DefaultBranch: "main"}}
	t.Cleanup(func() {
		e.capturePulls()
		srv.Close()
		if err := h.Close(); err != nil {
			t.Errorf("hub Close: %v", err)
		}
	})
	pem := h.PrivateKeyPEM()
	addCanary("app private key", string(pem))
	if lines := strings.Split(string(pem), "\n"); len(lines) > 2 {
		addCanary("app private key (a line of its base64)", lines[1])
	}
	addCanary("webhook secret of the hub", h.WebhookSecret())
	if files != nil {
		e.createRepo(repoName, files)
	}
	if _, err := h.Install(owner); err != nil {
		t.Fatalf("Install: %v", err)
	}
	return e
}

// createRepo adds a repository of acme whose main requires the receipt check.
func (e *hubEnv) createRepo(name string, files map[string]string) forge.Repo {
	e.t.Helper()
	if err := e.hub.CreateRepo(localhub.RepoOptions{Owner: owner, Name: name, Files: files, AllowAutoMerge: true}); err != nil {
		e.t.Fatalf("CreateRepo: %v", err)
	}
	if err := e.hub.SetBranchProtection(owner+"/"+name, "main", bot.CheckName); err != nil {
		e.t.Fatal(err)
	}
	return forge.Repo{Owner: owner, Name: name, DefaultBranch: "main"}
}

// adapter is a new GitHub adapter: a new process's view of GitHub, with no
// cached token, ETag or embargo. Its waits advance the hub's clock.
func (e *hubEnv) adapter(edit func(*ghforge.Config)) *ghforge.Adapter {
	e.t.Helper()
	cfg := ghforge.Config{AppID: e.hub.AppID(), PrivateKey: e.hub.PrivateKeyPEM(), BaseURL: e.url + "/", Clock: e.clock,
		Backoff: 100 * time.Millisecond, Logger: e.log, Transport: tokenSpy{next: http.DefaultTransport},
		Sleep: func(ctx context.Context, d time.Duration) error {
			e.clock.Advance(d)
			return ctx.Err()
		}}
	if edit != nil {
		edit(&cfg)
	}
	a, err := ghforge.New(cfg)
	if err != nil {
		e.t.Fatalf("adapter: %v", err)
	}
	return a
}

// newBot is a new backflow process on f reading src.
func (e *hubEnv) newBot(f bot.Forge, src bot.Source, method forge.CommitMethod) *bot.Bot {
	e.t.Helper()
	b, err := bot.New(bot.Options{Forge: f, Sources: []bot.Source{src}, Now: e.clock.Now, Logger: e.log, BotUserID: 4242,
		CommitMethod: method, CommitKey: []byte("reliability commit key"), Renderer: app.Renderer})
	if err != nil {
		e.t.Fatal(err)
	}
	return b
}

// cycle runs one cycle of b and returns its report; repository errors are
// logged (some cases provoke them) and captured.
func (e *hubEnv) cycle(b *bot.Bot) *bot.Report {
	e.t.Helper()
	rep, err := b.Cycle(e.ctx)
	if err != nil {
		captureText("cycle error: " + err.Error())
		e.t.Logf("cycle: %v", err)
		return rep
	}
	captureText(rep.Text())
	for _, rr := range rep.Repos {
		for _, msg := range rr.Errors {
			e.t.Logf("repository error: %s", msg)
		}
	}
	return rep
}

func isWrite(r localhub.Request) bool {
	if r.Method == http.MethodGet || r.Method == http.MethodHead {
		return false
	}
	// A clone's negotiation is a POST that writes nothing.
	return !strings.HasSuffix(r.Path, "/git-upload-pack")
}

// person is a GitHub client acting as login with a personal token.
func (e *hubEnv) person(login string) *gh.Client {
	e.t.Helper()
	tok, err := e.hub.IssueUserToken(login)
	if err != nil {
		e.t.Fatal(err)
	}
	c, err := gh.NewClient(nil).WithAuthToken(tok).WithEnterpriseURLs(e.url+"/", e.url+"/")
	if err != nil {
		e.t.Fatal(err)
	}
	c.BaseURL.Path = "/"
	return c
}

// pushAs commits files on top of branch's head (creating branch from base
// when it does not exist) as a person, through the git data API.
func (e *hubEnv) pushAs(c *gh.Client, repo forge.Repo, branch, base string, files map[string]string, msg string) string {
	e.t.Helper()
	var entries []*gh.TreeEntry
	for _, p := range sortedKeys(files) {
		entries = append(entries, &gh.TreeEntry{Path: gh.String(p), Mode: gh.String("100644"), Type: gh.String("blob"), Content: gh.String(files[p])})
	}
	return e.pushTree(c, repo, branch, base, entries, msg)
}

// pushTree commits tree entries (any mode: symlinks, submodules) as pushAs does.
func (e *hubEnv) pushTree(c *gh.Client, repo forge.Repo, branch, base string, entries []*gh.TreeEntry, msg string) string {
	e.t.Helper()
	ctx := e.ctx
	ref, _, err := c.Git.GetRef(ctx, repo.Owner, repo.Name, "heads/"+branch)
	create := err != nil
	from := branch
	if create {
		from = base
		if ref, _, err = c.Git.GetRef(ctx, repo.Owner, repo.Name, "heads/"+base); err != nil {
			e.t.Fatalf("reading %s: %v", base, err)
		}
	}
	parent, _, err := c.Git.GetCommit(ctx, repo.Owner, repo.Name, ref.GetObject().GetSHA())
	if err != nil {
		e.t.Fatalf("reading the head of %s: %v", from, err)
	}
	tree, _, err := c.Git.CreateTree(ctx, repo.Owner, repo.Name, parent.GetTree().GetSHA(), entries)
	if err != nil {
		e.t.Fatalf("tree: %v", err)
	}
	commit, _, err := c.Git.CreateCommit(ctx, repo.Owner, repo.Name, &gh.Commit{Message: gh.String(msg), Tree: tree, Parents: []*gh.Commit{{SHA: parent.SHA}},
		Author: &gh.CommitAuthor{Name: gh.String("carol"), Email: gh.String("carol@example.com")}}, nil)
	if err != nil {
		e.t.Fatalf("commit: %v", err)
	}
	if create {
		_, _, err = c.Git.CreateRef(ctx, repo.Owner, repo.Name, &gh.Reference{Ref: gh.String("refs/heads/" + branch), Object: &gh.GitObject{SHA: commit.SHA}})
	} else {
		_, _, err = c.Git.UpdateRef(ctx, repo.Owner, repo.Name, &gh.Reference{Ref: gh.String("refs/heads/" + branch), Object: &gh.GitObject{SHA: commit.SHA}}, false)
	}
	if err != nil {
		e.t.Fatalf("moving %s: %v", branch, err)
	}
	return commit.GetSHA()
}

// changedFiles lists the files that differ between base and head.
func (e *hubEnv) changedFiles(c *gh.Client, repo forge.Repo, base, head string) []string {
	e.t.Helper()
	cmp, _, err := c.Repositories.CompareCommits(e.ctx, repo.Owner, repo.Name, base, head, nil)
	if err != nil {
		e.t.Fatalf("comparing %s...%s: %v", base, head, err)
	}
	var out []string
	for _, f := range cmp.Files {
		out = append(out, f.GetFilename())
	}
	return out
}

// pulls lists every pull request of repo as the App sees them.
func (e *hubEnv) pulls(a *ghforge.Adapter, repo forge.Repo) []forge.PullRequest {
	e.t.Helper()
	prs, err := a.ListPullRequests(e.ctx, repo, forge.PullRequestFilter{State: forge.StateAll})
	if err != nil {
		e.t.Fatal(err)
	}
	return prs
}

// branches lists repo's branches under prefix.
func (e *hubEnv) branches(repo forge.Repo, prefix string) map[string]string {
	e.t.Helper()
	c := e.person("auditor")
	out := map[string]string{}
	opts := &gh.BranchListOptions{ListOptions: gh.ListOptions{PerPage: 100}}
	for {
		bs, resp, err := c.Repositories.ListBranches(e.ctx, repo.Owner, repo.Name, opts)
		if err != nil {
			e.t.Fatal(err)
		}
		for _, b := range bs {
			if strings.HasPrefix(b.GetName(), prefix) {
				out[b.GetName()] = b.GetCommit().GetSHA()
			}
		}
		if resp.NextPage == 0 {
			return out
		}
		opts.Page = resp.NextPage
	}
}

// capturePulls copies every pull request body and comment of the hub's
// repositories into the capture, for the canary case.
func (e *hubEnv) capturePulls() {
	c, err := e.hub.IssueUserToken("auditor")
	if err != nil {
		return
	}
	client, err := gh.NewClient(nil).WithAuthToken(c).WithEnterpriseURLs(e.url+"/", e.url+"/")
	if err != nil {
		return
	}
	client.BaseURL.Path = "/"
	ctx := context.Background()
	for _, name := range []string{repoName} {
		prs, _, err := client.PullRequests.List(ctx, owner, name, &gh.PullRequestListOptions{State: "all", ListOptions: gh.ListOptions{PerPage: 100}})
		if err != nil {
			continue
		}
		for _, pr := range prs {
			captureText(pr.GetTitle() + "\n" + pr.GetBody())
			comments, _, err := client.Issues.ListComments(ctx, owner, name, pr.GetNumber(), &gh.IssueListCommentsOptions{ListOptions: gh.ListOptions{PerPage: 100}})
			if err != nil {
				continue
			}
			for _, cm := range comments {
				captureText(cm.GetBody())
			}
		}
	}
}

// staticSource serves fixed observations, replaceable between cycles.
type staticSource struct {
	mu  sync.Mutex
	res observe.Result
}

func (s *staticSource) Name() string { return "test" }

func (s *staticSource) Read(context.Context) observe.Result {
	s.mu.Lock()
	defer s.mu.Unlock()
	return observe.Result{Observations: slices.Clone(s.res.Observations), Triggers: slices.Clone(s.res.Triggers)}
}

func (s *staticSource) set(obs ...observe.Observation) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.res = observe.Result{Observations: obs}
}

// replicas is alice's audit-logged observation of redis-replicas in
// cluster by the kubernetes watch: spec.replicas live (desired 3), at the
// given time.
func replicas(cluster string, live any, at time.Time) observe.Observation {
	return observe.Observation{
		Source: observe.SourceKubernetes, Cluster: cluster, ObservedAt: at, Trust: observe.AttributionAuditLog,
		Object: observe.ObjectKey{APIVersion: "apps/v1", Kind: "StatefulSet", Namespace: "redis", Name: "redis-replicas"},
		Change: observe.Change{Actor: "alice", Groups: []string{"sre"}, Attribution: observe.AttributionAuditLog, Claimed: observe.AttributionAuditLog,
			At: at.Add(-time.Minute), Intent: "incident-fix: scale replicas to absorb a load spike"},
		Fields: []observe.Field{{Path: "spec.replicas", Live: live, Desired: 3, HasDesired: true, Manager: "kubectl"}},
	}
}

// tokenSpy records every credential the adapter sends as a canary: the
// installation tokens are made by the hub, so this is where the suite
// learns them.
type tokenSpy struct{ next http.RoundTripper }

func (s tokenSpy) RoundTrip(r *http.Request) (*http.Response, error) {
	if auth := r.Header.Get("Authorization"); auth != "" {
		if _, cred, ok := strings.Cut(auth, " "); ok && strings.HasPrefix(cred, "ghs_") {
			addCanary("installation token", cred)
		}
		if strings.HasPrefix(auth, "Basic ") {
			if raw, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(auth, "Basic ")); err == nil {
				if _, pw, ok := strings.Cut(string(raw), ":"); ok {
					addCanary("installation token", pw)
				}
			}
		}
	}
	return s.next.RoundTrip(r)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
