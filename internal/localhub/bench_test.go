package localhub

import (
	"testing"
)

// BenchmarkGetRepo measures one authenticated REST round trip over HTTP.
func BenchmarkGetRepo(b *testing.B) {
	e := newEnv(b, Options{})
	c := e.tokenClient(b, e.token(b))
	b.ResetTimer()
	for b.Loop() {
		if _, _, err := c.Repositories.Get(e.ctx, testOwner, testRepo); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkGetPull measures a pull request read, which runs the real merge
// check (git merge-tree) and the diff stats.
func BenchmarkGetPull(b *testing.B) {
	e := newEnv(b, Options{})
	c := e.tokenClient(b, e.token(b))
	commitFile(b, e, c, "main", "topic", "README.md", "x\n", "x")
	pr := openPull(b, e, c, "topic")
	b.ResetTimer()
	for b.Loop() {
		if _, _, err := c.PullRequests.Get(e.ctx, testOwner, testRepo, pr.GetNumber()); err != nil {
			b.Fatal(err)
		}
	}
}
