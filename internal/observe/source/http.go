package source

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/backflow-dev/backflow/internal/observe"
)

// DefaultHTTPTimeout bounds one poll of an HTTP source.
const DefaultHTTPTimeout = 10 * time.Second

// HTTPSource polls a URL that serves any format observe.Parse reads. It sends the
// last ETag as If-None-Match; a 304 answer returns the previous result
// without reading a body. It is safe for concurrent use.
type HTTPSource struct {
	// URL is polled with GET; http and https only.
	URL string
	// Client sends the requests; nil means http.DefaultClient.
	Client *http.Client
	// Header is added to every request (an Authorization header, say).
	Header http.Header
	// Timeout bounds one poll; zero means DefaultHTTPTimeout.
	Timeout time.Duration
	// MaxBytes caps the response body; zero means observe.DefaultMaxBytes.
	MaxBytes int64
	// Ceiling is the trust ceiling of what the URL serves; empty means
	// DefaultCeiling.
	Ceiling observe.Attribution

	mu   sync.Mutex
	etag string
	last observe.Result
}

// Poll fetches the URL. changed is false when the server answered 304 Not
// Modified and res is the previous result. A transport or HTTP failure is
// returned as err, naming the URL (without any password in it).
func (s *HTTPSource) Poll(ctx context.Context) (res observe.Result, changed bool, err error) {
	u, err := url.Parse(s.URL)
	if err != nil {
		return observe.Result{}, false, fmt.Errorf("observation URL: %w", err)
	}
	shown := u.Redacted()
	if u.Scheme != "http" && u.Scheme != "https" {
		return observe.Result{}, false, fmt.Errorf("observation URL %s: want http or https", shown)
	}
	timeout := s.Timeout
	if timeout <= 0 {
		timeout = DefaultHTTPTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return observe.Result{}, false, fmt.Errorf("polling %s: %w", shown, err)
	}
	for k, vs := range s.Header {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	req.Header.Set("Accept", "application/json, application/yaml, application/x-ndjson, */*")
	s.mu.Lock()
	etag := s.etag
	s.mu.Unlock()
	if etag != "" {
		req.Header.Set("If-None-Match", etag)
	}
	client := s.Client
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // url.Error repeats the unredacted URL
		}
		return observe.Result{}, false, fmt.Errorf("polling %s: %w", shown, err)
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusNotModified:
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.etag == "" {
			return observe.Result{}, false, fmt.Errorf("polling %s: 304 Not Modified, but nothing was fetched before", shown)
		}
		return s.last, false, nil
	case resp.StatusCode < 200 || resp.StatusCode > 299:
		return observe.Result{}, false, fmt.Errorf("polling %s: %s", shown, resp.Status)
	}
	limit := s.MaxBytes
	if limit <= 0 {
		limit = observe.DefaultMaxBytes
	}
	if resp.ContentLength > limit {
		return observe.Result{}, false, fmt.Errorf(
			"polling %s: %w: %d bytes, more than %d",
			shown,
			observe.ErrTooLarge,
			resp.ContentLength,
			limit,
		)
	}
	data, err := observe.ReadCapped(resp.Body, limit)
	if err != nil {
		return observe.Result{}, false, fmt.Errorf("polling %s: %w", shown, err)
	}
	res = observe.ParseBytes(data, observe.Options{Name: shown, Ceiling: s.Ceiling, MaxBytes: limit})
	s.mu.Lock()
	s.etag, s.last = resp.Header.Get("ETag"), res
	s.mu.Unlock()
	return res, true, nil
}
