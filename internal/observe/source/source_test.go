package source

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/backflow-dev/backflow/internal/observe"
)

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestLoadPathDirectory(t *testing.T) {
	dir := t.TempDir()
	doc := func(name string) string { return strings.Replace(seedObservation(t), "redis-replicas\"", name+"\"", 1) }
	writeFile(t, filepath.Join(dir, "b.yaml"), doc("b"))
	writeFile(t, filepath.Join(dir, "a", "z.yml"), doc("az"))
	writeFile(t, filepath.Join(dir, "a.json"), strings.Replace(observationJSON, `|cm"`, `|a-json"`, 1))
	writeFile(t, filepath.Join(dir, "c.txt"), doc("txt"))                            // why: not an observation extension
	writeFile(t, filepath.Join(dir, ".hidden", "h.yaml"), doc("hidden"))             // why: hidden directories (.git) are skipped
	writeFile(t, filepath.Join(dir, "d", "bad.yaml"), "kind: ObjectStateObserved\n") // why: reported, not fatal
	if err := os.Symlink(filepath.Join(dir, "b.yaml"), filepath.Join(dir, "link.yaml")); err != nil {
		t.Fatal(err)
	}
	res := LoadPath(dir, observe.Options{})
	var names []string
	for _, o := range res.Observations {
		names = append(names, o.Object.Name)
	}
	// why: files are read in lexical order of their paths, recursively.
	if got, want := strings.Join(names, ","), "a-json,az,b"; got != want {
		t.Errorf("observations %s, want %s", got, want)
	}
	if len(res.Errors) != 1 || !strings.Contains(res.Errors[0].Error(), filepath.Join(dir, "d", "bad.yaml")+":1:") {
		t.Errorf("errors %v: want one naming d/bad.yaml:1", res.Errors)
	}
	if res.Observations[2].Origin != filepath.Join(dir, "b.yaml")+":3" {
		t.Errorf("origin %q", res.Observations[2].Origin)
	}
}

func TestLoadPathFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "events.log")
	writeFile(t, p, `{"type":"drift.detected","timestamp":"2026-06-18T12:00:30Z","resource":{"kind":"Deployment","name":"api"},"details":{"category":"DRIFT"}}`)
	// why: a file named directly is read whatever its extension.
	if res := LoadPath(p, observe.Options{}); len(res.Triggers) != 1 || len(res.Errors) != 0 {
		t.Errorf("got %+v", res)
	}
	// why: a missing path is an error, not an empty result.
	if res := LoadPath(filepath.Join(dir, "nope"), observe.Options{}); len(res.Errors) != 1 {
		t.Errorf("got %+v", res)
	}
}

func TestHTTPSourceETag(t *testing.T) {
	var hits, notModified atomic.Int32
	body := seedObservation(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		if r.Header.Get("Authorization") != "Bearer t" {
			http.Error(w, "no", http.StatusUnauthorized)
			return
		}
		if r.Header.Get("If-None-Match") == `"v1"` {
			notModified.Add(1)
			w.WriteHeader(http.StatusNotModified)
			return
		}
		w.Header().Set("ETag", `"v1"`)
		_, _ = w.Write([]byte(body))
	}))
	defer srv.Close()
	src := &HTTPSource{URL: srv.URL, Header: http.Header{"Authorization": {"Bearer t"}}, Ceiling: observe.AttributionAuditLog}
	res, changed, err := src.Poll(context.Background())
	if err != nil || !changed || len(res.Observations) != 1 {
		t.Fatalf("first poll: %v %v %+v", err, changed, res)
	}
	// why: the second poll sends the ETag; the 304 keeps the last result.
	res, changed, err = src.Poll(context.Background())
	if err != nil || changed || len(res.Observations) != 1 || notModified.Load() != 1 {
		t.Fatalf("second poll: %v changed=%v %+v (304s: %d)", err, changed, res, notModified.Load())
	}
	if got := res.Observations[0].Origin; got != srv.URL+":3" {
		t.Errorf("origin %q: want the URL", got)
	}
}

func TestHTTPSourceErrors(t *testing.T) {
	big := strings.Repeat("#", 2048) + "\n"
	tests := []struct {
		why     string
		handler http.HandlerFunc
		max     int64
		timeout time.Duration
		want    string
	}{
		{
			why:     "a server error is an error naming the URL and status",
			handler: func(w http.ResponseWriter, r *http.Request) { http.Error(w, "boom", http.StatusInternalServerError) },
			want:    "500 Internal Server Error",
		},
		{
			why:     "a 304 with nothing fetched before cannot mean anything",
			handler: func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNotModified) },
			want:    "nothing was fetched before",
		},
		{
			why:     "a body over the cap is refused (declared length)",
			handler: func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte(big)) },
			max:     1024,
			want:    "input too large",
		},
		{
			why: "a body over the cap is refused (streamed, no length)",
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.(http.Flusher).Flush()
				_, _ = w.Write([]byte(big))
			},
			max:  1024,
			want: "input too large",
		},
		{
			why: "a server that does not answer in time is abandoned",
			handler: func(w http.ResponseWriter, r *http.Request) {
				<-r.Context().Done()
			},
			timeout: 20 * time.Millisecond,
			want:    "context deadline exceeded",
		},
	}
	for _, tt := range tests {
		srv := httptest.NewServer(tt.handler)
		src := &HTTPSource{URL: srv.URL + "/obs", MaxBytes: tt.max, Timeout: tt.timeout}
		_, _, err := src.Poll(context.Background())
		srv.Close()
		if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), srv.URL+"/obs") {
			t.Errorf("%s: err %v, want %q and the URL", tt.why, err, tt.want)
		}
		if tt.want == "input too large" && !errors.Is(err, observe.ErrTooLarge) {
			t.Errorf("%s: err %v is not observe.ErrTooLarge", tt.why, err)
		}
	}
}

func TestHTTPSourceURLs(t *testing.T) {
	// why: only http(s) is polled; a file: URL must not read local files.
	src := &HTTPSource{URL: "file:///etc/passwd"}
	if _, _, err := src.Poll(context.Background()); err == nil || !strings.Contains(err.Error(), "want http or https") {
		t.Errorf("got %v", err)
	}
	// why: a password in the URL is never printed.
	src = &HTTPSource{URL: "http://user:secret@127.0.0.1:1/x", Timeout: time.Second}
	if _, _, err := src.Poll(context.Background()); err == nil || strings.Contains(err.Error(), "secret") {
		t.Errorf("got %v", err)
	}
}

func TestEmptyObservationsAreErrors(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "a.json"), observationJSON)
	writeFile(t, filepath.Join(dir, "trace-diff.json"), "")  // cub-scout failed and wrote nothing
	writeFile(t, filepath.Join(dir, "watch.jsonl"), "\n \n") // only whitespace
	res := LoadPath(dir, observe.Options{})
	// why: an empty file was read as nothing to report, silently.
	if len(res.Observations) != 1 || len(res.Errors) != 2 ||
		!strings.HasPrefix(res.Errors[0].Error(), filepath.Join(dir, "trace-diff.json")+": empty input") ||
		!strings.HasPrefix(res.Errors[1].Error(), filepath.Join(dir, "watch.jsonl")+": empty input") {
		t.Errorf("got %d observations, errors %v", len(res.Observations), res.Errors)
	}
	for _, body := range []string{"", "  \n"} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte(body)) }))
		res, _, err := (&HTTPSource{URL: srv.URL}).Poll(context.Background())
		srv.Close()
		// why: an empty response body is no observation of nothing; the URL is named.
		if err != nil || len(res.Errors) != 1 || !errors.Is(res.Errors[0], observe.ErrEmpty) || !strings.HasPrefix(res.Errors[0].Error(), srv.URL+": empty input") {
			t.Errorf("body %q: %v %v", body, err, res.Errors)
		}
	}
}
