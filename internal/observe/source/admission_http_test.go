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
	"sync"
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

// stalledBody is a request body that says when it is first read, then
// gives its bytes only once released.
type stalledBody struct {
	r        *bytes.Reader
	reading  chan struct{}
	released chan struct{}
	once     sync.Once
}

func (b *stalledBody) Read(p []byte) (int, error) {
	b.once.Do(func() { close(b.reading) })
	<-b.released
	return b.r.Read(p)
}

func TestAdmissionHandlerBoundsBytesInFlight(t *testing.T) {
	scale := readReview(t, "scale")
	busy := 0
	h := &AdmissionHandler{Log: &observe.AdmissionLog{}, MaxBytes: 64 << 10, MaxInFlightBytes: 3 * int64(len(scale)) / 2,
		OnBusy: func() { busy++ }}
	// One review is being read (its body stalls): it holds its weight.
	first := &stalledBody{r: bytes.NewReader(scale), reading: make(chan struct{}), released: make(chan struct{})}
	r := httptest.NewRequest(http.MethodPost, "/admission", first)
	r.ContentLength, r.TLS = int64(len(scale)), &tls.ConnectionState{}
	done := make(chan *httptest.ResponseRecorder)
	go func() {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		done <- w
	}()
	<-first.reading
	if got := h.InFlightBytes(); got != int64(len(scale)) {
		t.Fatalf("%d bytes in flight, want the review's %d", got, len(scale))
	}
	for _, c := range []struct {
		why  string
		body []byte
		want int
	}{
		// why: a second review of the same size does not fit beside the
		// first: answered 429 with Retry-After before its body is read,
		// which the API server's client retries.
		{"over the bound", scale, http.StatusTooManyRequests},
		// why: a small review still fits beside it.
		{"within the bound", []byte(`{"request":{"uid":"small"}}`), http.StatusOK},
	} {
		w := postReview(h, c.body, true)
		if w.Code != c.want {
			t.Errorf("%s: status %d, want %d", c.why, w.Code, c.want)
		}
		if c.want == http.StatusTooManyRequests && w.Header().Get("Retry-After") != AdmissionRetryAfter {
			t.Errorf("%s: Retry-After %q, want %q", c.why, w.Header().Get("Retry-After"), AdmissionRetryAfter)
		}
	}
	close(first.released)
	allowedUID(t, <-done)
	if got := h.InFlightBytes(); got != 0 || busy != 1 {
		t.Errorf("after the reviews: %d bytes in flight and %d busy answers, want 0 and 1", got, busy)
	}
	// why: once the first is read, the same review fits again; and one
	// review larger than the whole bound is read when nothing else is.
	allowedUID(t, postReview(h, scale, true))
	h.MaxInFlightBytes = 16
	allowedUID(t, postReview(h, scale, true))
}
