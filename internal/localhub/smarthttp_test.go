package localhub

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-git/go-billy/v5/memfs"
	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	"github.com/go-git/go-git/v5/storage/memory"
	"github.com/google/go-github/v62/github"
)

// receiver is a webhook endpoint that checks signatures as the App must.
type receiver struct {
	secret string
	mu     sync.Mutex
	got    []received
}

type received struct {
	event, delivery, action string
	validSig                bool
	body                    map[string]any
}

func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	mac := hmac.New(sha256.New, []byte(rc.secret))
	mac.Write(b)
	want := "sha256=" + hex.EncodeToString(mac.Sum(nil))
	var body map[string]any
	_ = json.Unmarshal(b, &body)
	action, _ := body["action"].(string)
	rc.mu.Lock()
	rc.got = append(rc.got, received{event: r.Header.Get("X-GitHub-Event"), delivery: r.Header.Get("X-GitHub-Delivery"), action: action,
		validSig: hmac.Equal([]byte(want), []byte(r.Header.Get("X-Hub-Signature-256"))), body: body})
	rc.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

func TestGitPushThroughHTTPBackend(t *testing.T) {
	rc := &receiver{secret: "s3cret"}
	hook := httptest.NewServer(rc)
	defer hook.Close()
	e := newEnv(t, Options{WebhookURL: hook.URL, WebhookSecret: "s3cret"})
	c := e.client(t)
	url := e.srv.URL + "/" + testFull + ".git"
	auth := &githttp.BasicAuth{Username: "x-access-token", Password: e.token(t)}

	_, err := git.Clone(memory.NewStorage(), memfs.New(), &git.CloneOptions{URL: url, Auth: &githttp.BasicAuth{Username: "x-access-token", Password: "ghs_wrong"}})
	if err == nil {
		t.Fatal("clone with a wrong token succeeded")
	}

	fs := memfs.New()
	repo, err := git.Clone(memory.NewStorage(), fs, &git.CloneOptions{URL: url, Auth: auth, Depth: 1, SingleBranch: true, Tags: git.NoTags})
	if err != nil {
		t.Fatalf("clone: %v", err)
	}
	wt, _ := repo.Worktree()
	if err := wt.Checkout(&git.CheckoutOptions{Branch: plumbing.NewBranchReferenceName("backflow/prod/redis"), Create: true}); err != nil {
		t.Fatal(err)
	}
	f, _ := fs.Create("envs/prod/redis/values.yaml")
	_, _ = f.Write([]byte("replicas: 4\nimage:\n  tag: \"7.2\"\n"))
	f.Close()
	if _, err := wt.Add("envs/prod/redis/values.yaml"); err != nil {
		t.Fatal(err)
	}
	sig := &object.Signature{Name: "backflow", Email: "bot@example.com", When: time.Now()}
	sha, err := wt.Commit("Accept redis replicas 4\n\nBackflow-Receipt: .backflow/receipts/x.yaml\n", &git.CommitOptions{Author: sig})
	if err != nil {
		t.Fatal(err)
	}
	refspec := config.RefSpec("refs/heads/backflow/prod/redis:refs/heads/backflow/prod/redis")
	if err := repo.Push(&git.PushOptions{Auth: auth, RefSpecs: []config.RefSpec{refspec}}); err != nil {
		t.Fatalf("push: %v", err)
	}

	// The pushed commit, seen through REST.
	br, resp, err := c.Repositories.GetBranch(e.ctx, testOwner, testRepo, "backflow/prod/redis", 0)
	mustStatus(t, "branch after push", resp, err, 200)
	if br.GetCommit().GetSHA() != sha.String() {
		t.Fatalf("branch at %s, pushed %s", br.GetCommit().GetSHA(), sha)
	}
	rcommit, _, _ := c.Repositories.GetCommit(e.ctx, testOwner, testRepo, sha.String(), nil)
	if rcommit.GetCommit().GetAuthor().GetEmail() != "bot@example.com" || rcommit.GetCommit().GetVerification().GetVerified() {
		t.Fatalf("commit %v", rcommit.GetCommit())
	}
	pr := openPull(t, e, c, "backflow/prod/redis")

	// A second push to the PR's head: synchronize.
	f, _ = fs.Create("envs/prod/redis/values.yaml")
	_, _ = f.Write([]byte("replicas: 5\n"))
	f.Close()
	_, _ = wt.Add("envs/prod/redis/values.yaml")
	sha2, _ := wt.Commit("five", &git.CommitOptions{Author: sig})
	if err := repo.Push(&git.PushOptions{Auth: auth, RefSpecs: []config.RefSpec{refspec}}); err != nil {
		t.Fatalf("second push: %v", err)
	}
	got, _, _ := c.PullRequests.Get(e.ctx, testOwner, testRepo, pr.GetNumber())
	if got.GetHead().GetSHA() != sha2.String() {
		t.Fatalf("PR head %s, pushed %s", got.GetHead().GetSHA(), sha2)
	}

	// push (new branch), pull_request opened, push, pull_request synchronize.
	ctx, cancel := context.WithTimeout(e.ctx, 10*time.Second)
	defer cancel()
	deliveries, err := e.hub.Webhooks().Wait(ctx, 4)
	if err != nil {
		t.Fatal(err)
	}
	wantEvents := []string{"push", "pull_request/opened", "push", "pull_request/synchronize"}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if len(rc.got) != len(wantEvents) {
		t.Fatalf("received %d deliveries, want %d", len(rc.got), len(wantEvents))
	}
	ids := map[string]bool{}
	for i, d := range rc.got {
		name := d.event
		if d.action != "" {
			name += "/" + d.action
		}
		if name != wantEvents[i] || !d.validSig || len(d.delivery) != 36 || ids[d.delivery] {
			t.Fatalf("delivery %d: %s sig=%v id=%q, want %s", i, name, d.validSig, d.delivery, wantEvents[i])
		}
		ids[d.delivery] = true
		if deliveries[i].Status != http.StatusNoContent {
			t.Fatalf("recorded status %d", deliveries[i].Status)
		}
	}
	if rc.got[0].body["ref"] != "refs/heads/backflow/prod/redis" || rc.got[0].body["after"] != sha.String() {
		t.Fatalf("push payload %v", rc.got[0].body)
	}
	var ev github.PullRequestEvent
	b, _ := json.Marshal(rc.got[3].body)
	if err := json.Unmarshal(b, &ev); err != nil || ev.GetPullRequest().GetHead().GetSHA() != sha2.String() || ev.GetInstallation().GetID() != e.inst {
		t.Fatalf("synchronize payload: %v %v", err, ev)
	}
}

func TestGitPushRespectsBranchProtection(t *testing.T) {
	e := newEnv(t, Options{})
	c := e.client(t)
	if err := e.hub.SetBranchProtection(testFull, "main", "ci"); err != nil {
		t.Fatal(err)
	}
	auth := &githttp.BasicAuth{Username: "x-access-token", Password: e.token(t)}
	fs := memfs.New()
	// Without ".git", as GitHub also serves it.
	repo, err := git.Clone(memory.NewStorage(), fs, &git.CloneOptions{URL: e.srv.URL + "/" + testFull, Auth: auth})
	if err != nil {
		t.Fatalf("clone: %v", err)
	}
	wt, _ := repo.Worktree()
	f, _ := fs.Create("README.md")
	_, _ = f.Write([]byte("direct\n"))
	f.Close()
	_, _ = wt.Add("README.md")
	sha, err := wt.Commit("direct push", &git.CommitOptions{Author: &object.Signature{Name: "a", Email: "a@example.com", When: time.Now()}})
	if err != nil {
		t.Fatal(err)
	}
	push := func() error {
		return repo.Push(&git.PushOptions{Auth: auth, RefSpecs: []config.RefSpec{"refs/heads/main:refs/heads/main"}})
	}
	if err := push(); err == nil || !strings.Contains(err.Error(), "pre-receive hook declined") {
		t.Fatalf("a push to a protected branch without green checks: %v", err)
	}
	before, _, _ := c.Git.GetRef(e.ctx, testOwner, testRepo, "heads/main")
	if before.GetObject().GetSHA() == sha.String() {
		t.Fatal("main moved despite the refusal")
	}
	// The same commit with its required check green: accepted, as on GitHub.
	_, resp, err := c.Checks.CreateCheckRun(e.ctx, testOwner, testRepo, github.CreateCheckRunOptions{Name: "ci", HeadSHA: sha.String(), Conclusion: github.String("success")})
	if resp == nil || resp.StatusCode != 422 {
		// The commit is not on the hub yet: GitHub refuses check runs for unknown commits.
		t.Fatalf("check run for an unpushed commit: %v %v", resp, err)
	}
	if err := repo.Push(&git.PushOptions{Auth: auth, RefSpecs: []config.RefSpec{"refs/heads/main:refs/heads/side"}}); err != nil {
		t.Fatalf("push side branch: %v", err)
	}
	_, resp, err = c.Checks.CreateCheckRun(e.ctx, testOwner, testRepo, github.CreateCheckRunOptions{Name: "ci", HeadSHA: sha.String(), Conclusion: github.String("success")})
	mustStatus(t, "check run", resp, err, 201)
	if err := push(); err != nil {
		t.Fatalf("push with green checks: %v", err)
	}
	after, _, _ := c.Git.GetRef(e.ctx, testOwner, testRepo, "heads/main")
	if after.GetObject().GetSHA() != sha.String() {
		t.Fatal("main did not move")
	}
}
