package localhub

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-github/v62/github"
)

func TestContentsBranchesAndETag(t *testing.T) {
	e := newEnv(t, Options{Permissions: widePermissions})
	c := e.client(t)
	cases := []struct {
		name, path, ref string
		status          int
		file            bool
	}{
		{"file", "envs/prod/redis/values.yaml", "", 200, true},            // why: a file comes back decoded
		{"file at branch", "README.md", "main", 200, true},                // why: ref may name a branch
		{"directory", "envs/prod", "", 200, false},                        // why: a folder lists its entries
		{"missing file", "envs/prod/nope.yaml", "", 404, false},           // why: absent paths are 404
		{"missing ref", "README.md", "no-such-branch", 404, false},        // why: unknown refs are 404
		{"nested missing dir", "no/such/dir/values.yaml", "", 404, false}, // why: absent parents are 404 too
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fc, dir, resp, err := c.Repositories.GetContents(e.ctx, testOwner, testRepo, tc.path, &github.RepositoryContentGetOptions{Ref: tc.ref})
			mustStatus(t, "contents", resp, err, tc.status)
			if tc.status != 200 {
				return
			}
			if tc.file {
				got, err := fc.GetContent()
				if err != nil || got != testFiles[tc.path] {
					t.Fatalf("content %q, %v", got, err)
				}
				return
			}
			if len(dir) != 1 || dir[0].GetType() != "dir" || dir[0].GetName() != "redis" {
				t.Fatalf("dir %v", dir)
			}
		})
	}

	// go-github's DownloadContents follows download_url with the same client.
	rc, resp, err := c.Repositories.DownloadContents(e.ctx, testOwner, testRepo, "envs/prod/redis/values.yaml", nil)
	mustStatus(t, "download", resp, err, 200)
	raw, _ := io.ReadAll(rc)
	rc.Close()
	if string(raw) != testFiles["envs/prod/redis/values.yaml"] {
		t.Fatalf("downloaded %q", raw)
	}

	branches, resp, err := c.Repositories.ListBranches(e.ctx, testOwner, testRepo, nil)
	mustStatus(t, "list branches", resp, err, 200)
	if len(branches) != 1 || branches[0].GetName() != "main" {
		t.Fatalf("branches %v", branches)
	}
	_, resp, err = c.Repositories.GetBranch(e.ctx, testOwner, testRepo, "nope", 0)
	mustStatus(t, "missing branch", resp, err, 404)
	_, resp, err = c.Repositories.GetBranchProtection(e.ctx, testOwner, testRepo, "main")
	mustStatus(t, "unprotected", resp, err, 404)
	if err := e.hub.SetBranchProtection(testFull, "main", "ci"); err != nil {
		t.Fatal(err)
	}
	prot, resp, err := c.Repositories.GetBranchProtection(e.ctx, testOwner, testRepo, "main")
	mustStatus(t, "protection", resp, err, 200)
	if got := prot.GetRequiredStatusChecks().Contexts; got == nil || len(*got) != 1 || (*got)[0] != "ci" {
		t.Fatalf("required checks %v", got)
	}
	_, resp, err = c.Repositories.Get(e.ctx, testOwner, "private-elsewhere")
	mustStatus(t, "unknown repo", resp, err, 404)

	// Conditional GET: the second request is a free 304.
	req, _ := c.NewRequest("GET", "repos/acme/gitops", nil)
	resp, err = c.Do(e.ctx, req, nil)
	mustStatus(t, "first GET", resp, err, 200)
	etag := resp.Header.Get("ETag")
	remaining := resp.Rate.Remaining
	if etag == "" || resp.Header.Get("X-GitHub-Request-Id") == "" || resp.Header.Get("X-RateLimit-Resource") != "core" {
		t.Fatalf("headers %v", resp.Header)
	}
	req, _ = c.NewRequest("GET", "repos/acme/gitops", nil)
	req.Header.Set("If-None-Match", etag)
	resp, err = c.Do(e.ctx, req, nil)
	mustStatus(t, "conditional GET", resp, err, http.StatusNotModified)
	if resp.Rate.Remaining != remaining {
		t.Fatalf("304 counted: remaining %d, was %d", resp.Rate.Remaining, remaining)
	}
}

func TestCommitsAndCompare(t *testing.T) {
	e := newEnv(t, Options{})
	c := e.client(t)
	main := commitFile(t, e, c, "main", "feature", "envs/prod/redis/values.yaml", "replicas: 4\n", "Scale redis")
	rc, resp, err := c.Repositories.GetCommit(e.ctx, testOwner, testRepo, "feature", nil)
	mustStatus(t, "get commit", resp, err, 200)
	if rc.GetSHA() == main || rc.GetCommit().GetMessage() != "Scale redis" || len(rc.Files) != 1 || rc.Files[0].GetStatus() != "modified" {
		t.Fatalf("commit %v", rc)
	}
	_, resp, err = c.Repositories.GetCommit(e.ctx, testOwner, testRepo, strings.Repeat("a", 40), nil)
	mustStatus(t, "missing commit", resp, err, 422)
	cmp, resp, err := c.Repositories.CompareCommits(e.ctx, testOwner, testRepo, "main", "feature", nil)
	mustStatus(t, "compare", resp, err, 200)
	if cmp.GetStatus() != "ahead" || cmp.GetAheadBy() != 1 || len(cmp.Files) != 1 {
		t.Fatalf("compare %v", cmp)
	}
	list, resp, err := c.Repositories.ListCommits(e.ctx, testOwner, testRepo, &github.CommitsListOptions{SHA: "feature"})
	mustStatus(t, "list commits", resp, err, 200)
	if len(list) != 2 {
		t.Fatalf("commits %d", len(list))
	}
}
