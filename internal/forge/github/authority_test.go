package github

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/backflow-dev/backflow/internal/forge"
)

// An issue created without labels sends "labels": [] as GitHub's REST
// description has it (an array), never null.
func TestCreateIssueWithoutLabelsSendsEmptyArray(t *testing.T) {
	e := newEnv(t)
	var mu sync.Mutex
	var body string
	e.setWrap(func(w http.ResponseWriter, r *http.Request, next http.Handler) {
		if r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/issues") {
			data, _ := io.ReadAll(r.Body)
			mu.Lock()
			body = string(data)
			mu.Unlock()
			r.Body = io.NopCloser(bytes.NewReader(data))
		}
		next.ServeHTTP(w, r)
	})
	if _, err := e.a.CreateIssue(e.ctx, e.repo, forge.NewIssue{Title: "drift", Body: "b"}); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if !strings.Contains(body, `"labels":[]`) {
		t.Errorf("request body %s, want \"labels\":[]", body)
	}
}
