package source

import (
	"bytes"
	"crypto/tls"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/backflow-dev/backflow/internal/observe"
)

// readReview reads an AdmissionReview body the real API server sent (see
// internal/observe/testdata/admission/SOURCES.md).
func readReview(t *testing.T, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "testdata", "admission", name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func postReview(h http.Handler, body []byte, overTLS bool) *httptest.ResponseRecorder {
	r := httptest.NewRequest(http.MethodPost, "/admission", bytes.NewReader(body))
	if overTLS {
		r.TLS = &tls.ConnectionState{}
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

func allowedUID(t *testing.T, w *httptest.ResponseRecorder) string {
	t.Helper()
	var a struct {
		Response struct {
			UID     string `json:"uid"`
			Allowed bool   `json:"allowed"`
		} `json:"response"`
	}
	if w.Code != http.StatusOK || json.Unmarshal(w.Body.Bytes(), &a) != nil || !a.Response.Allowed {
		t.Fatalf("status %d body %s: want 200 and allowed: true", w.Code, w.Body)
	}
	return a.Response.UID
}

func TestAdmissionHandler(t *testing.T) {
	var logs bytes.Buffer
	l := &observe.AdmissionLog{}
	h := &AdmissionHandler{Log: l, Options: observe.AdmissionOptions{GitOpsUsers: []string{"flux"}}, MaxBytes: 64 << 10, Logger: slog.New(slog.NewJSONHandler(&logs, nil))}
	smp := readReview(t, "strategic-merge-patch")
	cases := []struct {
		why     string
		body    []byte
		overTLS bool
		uid     string
		kept    int
	}{
		{"a review of a change is kept and answered allowed", smp, true, "", 1},
		{"a dry run is answered and not kept", readReview(t, "dry-run"), true, "", 1},
		{"the GitOps controller's write is not kept", readReview(t, "gitops-apply"), true, "", 1},
		{"a review not over TLS is allowed and not kept", readReview(t, "scale"), false, "", 1},
		{"malformed JSON is allowed", []byte(`{"request":`), true, "", 1},
		{"a body over the cap is allowed", bytes.Repeat([]byte("x"), 65<<10), true, "", 1},
		{"a review of resourceVersion 0 is allowed, refused and reported", bytes.Replace(readReview(t, "scale"), []byte(`"resourceVersion": "204"`), []byte(`"resourceVersion": "0"`), 2), true, "", 1},
	}
	for _, c := range cases {
		w := postReview(h, c.body, c.overTLS)
		uid := allowedUID(t, w)
		if want := observe.AdmissionUID(c.body); c.overTLS && len(c.body) < 64<<10 && uid != want {
			t.Errorf("%s: uid %q, want %q", c.why, uid, want)
		}
		if st := l.Stats(); st.Pending != c.kept {
			t.Errorf("%s: %d pending, want %d", c.why, st.Pending, c.kept)
		}
	}
	// Nothing of a value is logged: only the key, the user and field names.
	out := logs.String()
	for _, want := range []string{"redis-replicas", `"user":"alice"`, "spec.template.spec.containers[0].image", `"kept":false,"refused":"version"`} {
		if !strings.Contains(out, want) {
			t.Errorf("the log lacks %q:\n%s", want, out)
		}
	}
	for _, secret := range []string{"debug", "bitnami", "REDIS_REPLICATION_MODE"} {
		if strings.Contains(out, secret) {
			t.Errorf("the log carries a value (%q):\n%s", secret, out)
		}
	}
	r := httptest.NewRequest(http.MethodGet, "/admission", nil)
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	if w.Code != http.StatusMethodNotAllowed {
		t.Errorf("GET: %d", w.Code)
	}
}
