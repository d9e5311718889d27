package localhub

import "testing"

func TestSmoke(t *testing.T) {
	e := newEnv(t, Options{})
	c := e.client(t)
	repo, resp, err := c.Repositories.Get(e.ctx, testOwner, testRepo)
	mustStatus(t, "get repo", resp, err, 200)
	if repo.GetDefaultBranch() != "main" {
		t.Fatalf("default branch %q", repo.GetDefaultBranch())
	}
	fc, _, resp, err := c.Repositories.GetContents(e.ctx, testOwner, testRepo, "envs/prod/redis/values.yaml", nil)
	mustStatus(t, "contents", resp, err, 200)
	s, _ := fc.GetContent()
	if s != testFiles["envs/prod/redis/values.yaml"] {
		t.Fatalf("content %q", s)
	}
}
