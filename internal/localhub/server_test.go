package localhub

import (
	"context"
	"net/http"
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

// TestListenAndPeople drives a Listen server as another package's test
// would, with a person pushing onto the bot's pull request branch.
func TestListenAndPeople(t *testing.T) {
	s, err := Listen("127.0.0.1:0", Options{AppKey: appKey(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	if err := s.CreateRepo(RepoOptions{Owner: testOwner, Name: testRepo, Files: testFiles}); err != nil {
		t.Fatal(err)
	}
	inst, err := s.Install(testOwner)
	if err != nil {
		t.Fatal(err)
	}
	botTok, _, err := s.IssueToken(inst)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	client := func(tok string) *github.Client {
		c, err := github.NewClient(nil).WithAuthToken(tok).WithEnterpriseURLs(s.APIURL(), s.APIURL())
		if err != nil {
			t.Fatal(err)
		}
		c.BaseURL.Path = "/"
		return c
	}
	bot := client(botTok)
	e := &env{hub: s.Hub, ctx: ctx}
	commitFile(t, e, bot, "main", "backflow/prod/redis", "envs/prod/redis/values.yaml", "replicas: 4\n", "four")
	pr := openPull(t, e, bot, "backflow/prod/redis")

	annTok, err := s.IssueUserToken("ann")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.IssueUserToken("not a login"); err == nil {
		t.Fatal("a user token for an invalid login was issued")
	}
	ann := client(annTok)
	cm, resp, err := ann.Issues.CreateComment(ctx, testOwner, testRepo, pr.GetNumber(), &github.IssueComment{Body: github.String("looks good")})
	mustStatus(t, "person comments", resp, err, 201)
	if cm.GetUser().GetLogin() != "ann" || cm.GetUser().GetType() != "User" {
		t.Fatalf("comment by %v", cm.GetUser())
	}
	_, resp, err = ann.Apps.ListRepos(ctx, nil)
	mustStatus(t, "person lists installation repositories", resp, err, http.StatusForbidden)

	// Ann pushes a commit of her own onto the bot's branch.
	auth := &githttp.BasicAuth{Username: "ann", Password: annTok}
	fs := memfs.New()
	repo, err := git.Clone(memory.NewStorage(), fs, &git.CloneOptions{URL: s.CloneURL(testFull), Auth: auth,
		ReferenceName: plumbing.NewBranchReferenceName("backflow/prod/redis"), SingleBranch: true})
	if err != nil {
		t.Fatalf("clone: %v", err)
	}
	wt, _ := repo.Worktree()
	f, _ := fs.Create("README.md")
	_, _ = f.Write([]byte("ann was here\n"))
	f.Close()
	_, _ = wt.Add("README.md")
	sha, err := wt.Commit("ann's change", &git.CommitOptions{Author: &object.Signature{Name: "Ann", Email: "ann@example.com", When: time.Now()}})
	if err != nil {
		t.Fatal(err)
	}
	if err := repo.Push(&git.PushOptions{Auth: auth, RefSpecs: []config.RefSpec{"refs/heads/backflow/prod/redis:refs/heads/backflow/prod/redis"}}); err != nil {
		t.Fatalf("push: %v", err)
	}
	got, _, _ := bot.PullRequests.Get(ctx, testOwner, testRepo, pr.GetNumber())
	if got.GetHead().GetSHA() != sha.String() {
		t.Fatalf("head %s, want ann's %s", got.GetHead().GetSHA(), sha)
	}
}

// Mounts serve other services on the hub's listener: a request for a
// mounted path reaches its handler unchanged, the longest key winning,
// and every other path is still the hub's.
func TestMounts(t *testing.T) {
	tag := func(name string) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("X-Mount", name+" "+r.URL.Path)
		})
	}
	s, err := Listen("127.0.0.1:0", Options{AppKey: appKey(t), Mounts: map[string]http.Handler{
		"/_other/": tag("tree"), "/_other/api/": tag("api"), "/_exact": tag("exact")}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	for _, tc := range []struct {
		path, want string
	}{
		{"/_other/apply", "tree /_other/apply"},        // why: a key ending in "/" serves its subtree
		{"/_other/api/space", "api /_other/api/space"}, // why: the longest key wins
		{"/_exact", "exact /_exact"},                   // why: a key without "/" serves that path
		{"/_exact/more", ""},                           // why: but nothing under it
		{"/rate_limit", ""},                            // why: every other path is still the hub's
	} {
		resp, err := http.Get(s.URL + tc.path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if got := resp.Header.Get("X-Mount"); got != tc.want {
			t.Errorf("%s: served by %q, want %q", tc.path, got, tc.want)
		}
		if hub := resp.Header.Get("X-GitHub-Request-Id") != ""; hub != (tc.want == "") {
			t.Errorf("%s: answered by the hub %v, want %v", tc.path, hub, tc.want == "")
		}
	}
}
