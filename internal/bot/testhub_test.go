package bot

import (
	"context"
	"log/slog"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	gh "github.com/google/go-github/v62/github"

	"github.com/backflow-dev/backflow/internal/forge"
	"github.com/backflow-dev/backflow/internal/forge/forgetest"
	ghforge "github.com/backflow-dev/backflow/internal/forge/github"
	"github.com/backflow-dev/backflow/internal/localhub"
)

// testHub is the local hub in process with the App installed on acme, the
// GitHub adapter the bot writes through, wrapped in a recorder of its
// writes, and people's clients for what the tests do by hand.
type testHub struct {
	t       *testing.T
	ctx     context.Context
	hub     *localhub.Hub
	url     string
	adapter *ghforge.Adapter
	*forgetest.Recorder
}

func newTestHub(t *testing.T, clock *localhub.FakeClock) *testHub {
	t.Helper()
	hubKeyOnce.Do(func() { hubKey = newKey(t) })
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
	if _, err := h.Install("acme"); err != nil {
		t.Fatalf("Install: %v", err)
	}
	a, err := ghforge.New(ghforge.Config{AppID: h.AppID(), PrivateKey: h.PrivateKeyPEM(), BaseURL: srv.URL + "/", Clock: clock,
		Backoff: 100 * time.Millisecond, Logger: slog.New(slog.DiscardHandler),
		Sleep: func(ctx context.Context, d time.Duration) error {
			clock.Advance(d)
			return ctx.Err()
		}})
	if err != nil {
		t.Fatalf("adapter: %v", err)
	}
	return &testHub{t: t, ctx: context.Background(), hub: h, url: srv.URL, adapter: a, Recorder: forgetest.NewRecorder(a)}
}

// AddRepo creates a repository of acme holding files, auto-merge allowed.
func (h *testHub) AddRepo(full string, files map[string]string) forge.Repo {
	h.t.Helper()
	owner, name, _ := strings.Cut(full, "/")
	if err := h.hub.CreateRepo(localhub.RepoOptions{Owner: owner, Name: name, Files: files, AllowAutoMerge: true}); err != nil {
		h.t.Fatalf("CreateRepo: %v", err)
	}
	return forge.Repo{Owner: owner, Name: name, DefaultBranch: "main"}
}

// SetRequiredChecks protects branch with the required checks.
func (h *testHub) SetRequiredChecks(full, branch string, checks ...string) {
	h.t.Helper()
	if err := h.hub.SetBranchProtection(full, branch, checks...); err != nil {
		h.t.Fatal(err)
	}
}

// person is a GitHub client acting as login with a personal token.
func (h *testHub) person(login string) *gh.Client {
	h.t.Helper()
	tok, err := h.hub.IssueUserToken(login)
	if err != nil {
		h.t.Fatal(err)
	}
	c, err := gh.NewClient(nil).WithAuthToken(tok).WithEnterpriseURLs(h.url+"/", h.url+"/")
	if err != nil {
		h.t.Fatal(err)
	}
	c.BaseURL.Path = "/"
	return c
}

func repoOf(full string) forge.Repo {
	owner, name, _ := strings.Cut(full, "/")
	return forge.Repo{Owner: owner, Name: name, DefaultBranch: "main"}
}

// File reads path at ref (a branch or a commit); ok is false when it is
// not there.
func (h *testHub) File(full, ref, path string) (string, bool) {
	h.t.Helper()
	repo := repoOf(full)
	sha := ref
	if head, err := h.adapter.BranchHead(h.ctx, repo, ref); err == nil {
		sha = head
	}
	data, err := h.adapter.ReadFile(h.ctx, repo, sha, path)
	if err != nil {
		return "", false
	}
	return string(data), true
}

// Push commits files on top of branch (created from main when missing) as
// a person whose commit names author.
func (h *testHub) Push(full, branch string, author forge.Author, message string, files map[string]string) string {
	h.t.Helper()
	c, repo, ctx := h.person("carol"), repoOf(full), h.ctx
	var entries []*gh.TreeEntry
	for _, p := range slices.Sorted(func(yield func(string) bool) {
		for p := range files {
			if !yield(p) {
				return
			}
		}
	}) {
		entries = append(entries, &gh.TreeEntry{Path: gh.String(p), Mode: gh.String("100644"), Type: gh.String("blob"), Content: gh.String(files[p])})
	}
	ref, _, err := c.Git.GetRef(ctx, repo.Owner, repo.Name, "heads/"+branch)
	create := err != nil
	if create {
		if ref, _, err = c.Git.GetRef(ctx, repo.Owner, repo.Name, "heads/main"); err != nil {
			h.t.Fatalf("reading main: %v", err)
		}
	}
	parent, _, err := c.Git.GetCommit(ctx, repo.Owner, repo.Name, ref.GetObject().GetSHA())
	if err != nil {
		h.t.Fatalf("reading the head of %s: %v", branch, err)
	}
	tree, _, err := c.Git.CreateTree(ctx, repo.Owner, repo.Name, parent.GetTree().GetSHA(), entries)
	if err != nil {
		h.t.Fatalf("tree: %v", err)
	}
	name, email := author.Name, author.Email
	if email == "" {
		email = name + "@example.com"
	}
	commit, _, err := c.Git.CreateCommit(ctx, repo.Owner, repo.Name, &gh.Commit{Message: gh.String(message), Tree: tree, Parents: []*gh.Commit{{SHA: parent.SHA}},
		Author: &gh.CommitAuthor{Name: gh.String(name), Email: gh.String(email)}}, nil)
	if err != nil {
		h.t.Fatalf("commit: %v", err)
	}
	newRef := &gh.Reference{Ref: gh.String("refs/heads/" + branch), Object: &gh.GitObject{SHA: commit.SHA}}
	if create {
		_, _, err = c.Git.CreateRef(ctx, repo.Owner, repo.Name, newRef)
	} else {
		_, _, err = c.Git.UpdateRef(ctx, repo.Owner, repo.Name, newRef, false)
	}
	if err != nil {
		h.t.Fatalf("moving %s: %v", branch, err)
	}
	return commit.GetSHA()
}

// Branches lists the repository's branches and their heads.
func (h *testHub) Branches(full string) map[string]string {
	h.t.Helper()
	repo := repoOf(full)
	bs, _, err := h.person("auditor").Repositories.ListBranches(h.ctx, repo.Owner, repo.Name, &gh.BranchListOptions{ListOptions: gh.ListOptions{PerPage: 100}})
	if err != nil {
		h.t.Fatal(err)
	}
	out := map[string]string{}
	for _, b := range bs {
		out[b.GetName()] = b.GetCommit().GetSHA()
	}
	return out
}

// closeAsPerson closes pull request n without merging it, as a person.
func (h *testHub) closeAsPerson(repo forge.Repo, n int) {
	h.t.Helper()
	if _, _, err := h.person("carol").PullRequests.Edit(h.ctx, repo.Owner, repo.Name, n, &gh.PullRequest{State: gh.String("closed")}); err != nil {
		h.t.Fatalf("closing #%d: %v", n, err)
	}
}
