package github

import (
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/backflow-dev/backflow/internal/forge"
)

// TestGitPushIsACompareAndSwap moves the branch after go-git has read the
// advertised refs and before receive-pack runs: the lease check alone would
// pass, so only receive-pack's old-id check can refuse the push.
func TestGitPushIsACompareAndSwap(t *testing.T) {
	cases := []struct {
		name   string
		why    string
		create bool
	}{
		{"create", "a branch created by someone else in between is not overwritten", true},
		{"append", "a person's commit pushed in between is not overwritten", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			const branch = "backflow/prod/redis"
			main, _ := e.a.BranchHead(e.ctx, e.repo, "main")
			author := forge.Author{Name: "backflow[bot]", Email: "1+backflow[bot]@users.noreply.github.com"}
			req := forge.CommitRequest{Repo: e.repo, Branch: branch, BaseSHA: main, Author: author, Message: "m\n",
				Files: map[string][]byte{"envs/prod/redis/values.yaml": []byte("replicas: 4\n")}}
			if !tc.create {
				first, err := e.a.Commit(e.ctx, req)
				if err != nil {
					t.Fatal(err)
				}
				req.BaseSHA, req.ExpectedHead = first, first
				req.Files = map[string][]byte{"envs/prod/redis/values.yaml": []byte("replicas: 5\n")}
			}
			var raced atomic.Bool
			var theirs string
			e.setWrap(func(w http.ResponseWriter, r *http.Request, next http.Handler) {
				if r.Method == "POST" && strings.HasSuffix(r.URL.Path, "/git-receive-pack") && !raced.Swap(true) {
					theirs = e.personCommit(t, branch, map[string]string{"README.md": "# theirs\n"})
				}
				next.ServeHTTP(w, r)
			})
			_, err := e.a.Commit(e.ctx, req)
			if !raced.Load() || !errors.Is(err, forge.ErrConflict) {
				t.Fatalf("%s: Commit racing a push = %v (raced %v), want ErrConflict", tc.why, err, raced.Load())
			}
			if head, _ := e.a.BranchHead(e.ctx, e.repo, branch); head != theirs {
				t.Fatalf("%s: branch = %s, want their commit %s kept", tc.why, head, theirs)
			}
		})
	}
}
