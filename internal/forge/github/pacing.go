package github

import (
	"bytes"
	"container/list"
	"context"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cenkalti/backoff/v5"

	"github.com/backflow-dev/backflow/internal/forge"
)

// gate is shared by every request of one installation: GitHub's limits are
// per installation, so one embargo must hold back all of its callers.
type gate struct {
	clock     Clock
	sleep     SleepFunc
	waited    func(reason string, d time.Duration) // told of every wait before it starts; optional
	maxWait   time.Duration
	perMinute int
	perHour   int

	mu     sync.Mutex
	until  time.Time
	reason string
	writes []time.Time // send times of the writes of the last hour
	peak   int         // most writes seen in any one-minute window
}

// embargo forbids requests until t (keeping the later of two embargoes).
func (g *gate) embargo(t time.Time, reason string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if t.After(g.until) {
		g.until, g.reason = t, reason
	}
}

// wait blocks until a request may be sent. A write also needs room in the
// sliding minute and the sliding hour (GitHub's secondary limits are 80
// content-creating requests a minute AND 500 an hour): a log of send times
// rather than a refilling bucket, because a bucket of 80 refilled at 80/min
// lets 160 through in one minute. A wait for the hour's room longer than
// maxWait fails with *forge.RateLimitError rather than holding the cycle.
func (g *gate) wait(ctx context.Context, write bool) error {
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		g.mu.Lock()
		now := g.clock.Now()
		var d time.Duration
		var why string
		if now.Before(g.until) {
			d, why = g.until.Sub(now), "embargo-"+g.reason
			if d > g.maxWait {
				until, reason := g.until, g.reason
				g.mu.Unlock()
				return &forge.RateLimitError{Until: until, Reason: reason}
			}
		} else if write {
			cut := 0
			for cut < len(g.writes) && !g.writes[cut].After(now.Add(-time.Hour)) {
				cut++
			}
			g.writes = g.writes[cut:]
			minute := 0
			for minute < len(g.writes) && !g.writes[minute].After(now.Add(-time.Minute)) {
				minute++
			}
			inMinute := len(g.writes) - minute
			switch {
			case g.perHour > 0 && len(g.writes) >= g.perHour:
				d, why = g.writes[len(g.writes)-g.perHour].Add(time.Hour).Sub(now), WaitWritesPerHour
				if d > g.maxWait {
					until := now.Add(d)
					g.mu.Unlock()
					why := fmt.Sprintf("%d content-creating requests in the last hour", g.perHour)
					return &forge.RateLimitError{Until: until, Reason: why}
				}
			case inMinute >= g.perMinute:
				d, why = g.writes[len(g.writes)-g.perMinute].Add(time.Minute).Sub(now), WaitWritesPerMinute
			default:
				g.writes = append(g.writes, now)
				g.peak = max(g.peak, inMinute+1)
			}
		}
		g.mu.Unlock()
		if d <= 0 {
			return nil
		}
		if g.waited != nil {
			g.waited(why, d)
		}
		if err := g.sleep(ctx, d); err != nil {
			return err
		}
	}
}

// The reasons the adapter waits before sending a request, as Config.Waited
// and the log name them. An embargo's reason is "embargo-" and what imposed
// it: primary (no requests left until the reset), secondary (GitHub's
// secondary limits or Retry-After) or 429.
const (
	WaitEmbargoPrimary   = "embargo-primary"
	WaitEmbargoSecondary = "embargo-secondary"
	WaitEmbargo429       = "embargo-429"
	// WaitWritesPerMinute: the minute's content-creating requests are used up.
	WaitWritesPerMinute = "writes-per-minute"
	// WaitWritesPerHour: the hour's content-creating requests are used up.
	WaitWritesPerHour = "writes-per-hour"
	// WaitRetry: the backoff before repeating a failed idempotent request.
	WaitRetry = "retry"
	// WaitCreateRetry: the backoff before repeating a create whose effect
	// was checked and found missing.
	WaitCreateRetry = "create-retry"
)

// WaitReasons are every reason the adapter waits for, for pre-initialising
// a metric by reason.
var WaitReasons = []string{
	WaitEmbargoPrimary,
	WaitEmbargoSecondary,
	WaitEmbargo429,
	WaitWritesPerMinute,
	WaitWritesPerHour,
	WaitRetry,
	WaitCreateRetry,
}

// counters are the adapter's request counts, for reports and metrics.
type counters struct {
	reads, writes, notModified, retries, rateLimited atomic.Int64
}

// Counts reports the requests an adapter sent.
type Counts struct {
	// Reads are GET/HEAD requests and git fetches, retries included.
	Reads int64
	// Writes are content-creating requests and git pushes, retries included.
	Writes int64
	// NotModified are conditional reads answered 304 (free on GitHub).
	NotModified int64
	// Retries are attempts after the first, for any reason.
	Retries int64
	// RateLimited are responses that imposed an embargo.
	RateLimited int64
	// PeakWritesPerMinute is the most writes one installation sent in any
	// one-minute window.
	PeakWritesPerMinute int
}

type ctxKey int

// idempotentKey marks a non-GET request that may be repeated blindly.
const idempotentKey ctxKey = 1

// idempotent marks requests made with ctx as safe to repeat on failure.
func idempotent(ctx context.Context) context.Context {
	return context.WithValue(ctx, idempotentKey, true)
}

// pacer is the RoundTripper in front of one installation's (or the App's)
// authenticated transport.
type pacer struct {
	next  http.RoundTripper
	gate  *gate
	cfg   *Config
	count *counters
	cache *etagCache
	// refresh renews the credential after a 401; nil means never retry one.
	refresh func()
}

const maxRateLimitWaits = 3

func (p *pacer) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	write := req.Method != http.MethodGet && req.Method != http.MethodHead
	repeatable := !write || ctx.Value(idempotentKey) != nil
	route := routeOf(req.URL.Path)
	var cached *etagEntry
	key := req.Method + " " + req.URL.String() + " " + req.Header.Get("Accept")
	if req.Method == http.MethodGet && req.Header.Get("If-None-Match") == "" {
		cached = p.cache.get(key)
	}
	bo := newBackoff(p.cfg)
	rateWaits := 0
	refreshed := false
	for attempt := 1; ; attempt++ {
		if err := p.gate.wait(ctx, write); err != nil {
			return nil, err
		}
		if attempt > 1 {
			p.count.retries.Add(1)
		}
		if write {
			p.count.writes.Add(1)
		} else {
			p.count.reads.Add(1)
		}
		resp, err := p.once(ctx, req, cached)
		ev := forge.RequestEvent{Kind: forge.KindRead, Method: req.Method, Route: route, Attempt: attempt}
		if write {
			ev.Kind = forge.KindWrite
		}
		if resp != nil {
			ev.Status = resp.StatusCode
		}
		if until, reason, limited := p.rateLimit(resp); limited {
			p.count.rateLimited.Add(1)
			p.gate.embargo(until, reason)
			p.observe(ev)
			rateWaits++
			p.cfg.Logger.Warn("rate limited", "route", route, "reason", reason, "until", until)
			if rateWaits > maxRateLimitWaits {
				return nil, &forge.RateLimitError{Until: until, Reason: reason}
			}
			// A rate-limited request was not processed: repeating it is
			// safe even for a create.
			continue
		}
		if resp != nil && resp.StatusCode == http.StatusUnauthorized && p.refresh != nil && !refreshed {
			// An expired token or a JWT dated by a skewed clock: the request
			// was refused, not processed, so one more try with a fresh
			// credential is safe even for a create.
			refreshed = true
			p.observe(ev)
			p.cfg.Logger.Warn("credential refused; retrying with a fresh one", "route", route)
			p.refresh()
			continue
		}
		transient := err != nil || resp.StatusCode >= 500
		if err != nil && ctx.Err() != nil {
			p.observe(ev)
			return nil, ctx.Err()
		}
		if transient && repeatable && attempt < p.cfg.Attempts {
			p.observe(ev)
			d := bo.NextBackOff()
			p.cfg.Logger.Warn("retrying", "route", route, "attempt", attempt, "status", ev.Status, "wait", d)
			p.cfg.waited(WaitRetry, d)
			if err := p.cfg.Sleep(ctx, d); err != nil {
				return nil, err
			}
			continue
		}
		if err != nil {
			p.observe(ev)
			return nil, fmt.Errorf("%s %s: %w: %w", req.Method, route, forge.ErrUnavailable, err)
		}
		if resp.StatusCode == http.StatusNotModified && cached != nil {
			ev.NotModified = true
			p.count.notModified.Add(1)
			resp = cached.response(req, resp.Header)
		} else if req.Method == http.MethodGet && resp.StatusCode == http.StatusOK {
			p.cache.put(key, resp)
		}
		p.observe(ev)
		p.trackRemaining(resp)
		return resp, nil
	}
}

// once sends one attempt with its own timeout; the body is read here so the
// timeout covers it and the attempt's context can end.
func (p *pacer) once(ctx context.Context, req *http.Request, cached *etagEntry) (*http.Response, error) {
	actx, cancel := context.WithTimeout(ctx, p.cfg.RequestTimeout)
	defer cancel()
	r := req.Clone(actx)
	if req.GetBody != nil {
		body, err := req.GetBody()
		if err != nil {
			return nil, err
		}
		r.Body = body
	}
	if cached != nil {
		r.Header.Set("If-None-Match", cached.etag)
	}
	resp, err := p.next.RoundTrip(r)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	resp.ContentLength = int64(len(body))
	return resp, nil
}

// newBackoff is the jittered exponential schedule of retries; only its
// delays are used, the waiting is cfg.Sleep's.
func newBackoff(cfg *Config) *backoff.ExponentialBackOff {
	b := backoff.NewExponentialBackOff()
	b.InitialInterval = cfg.Backoff
	b.MaxInterval = 30 * time.Second
	b.RandomizationFactor = 0.5
	return b
}

func (p *pacer) observe(ev forge.RequestEvent) {
	if p.cfg.Observer != nil {
		p.cfg.Observer(ev)
	}
}

var secondaryText = regexp.MustCompile(`(?i)secondary rate limit|abuse detection`)

// rateLimit recognises every way GitHub says "slow down": a 429 (which
// go-github v62 does not classify), a 403 with no requests remaining
// (primary), and a 403 with Retry-After or the secondary-limit message.
func (p *pacer) rateLimit(resp *http.Response) (time.Time, string, bool) {
	if resp == nil || (resp.StatusCode != http.StatusTooManyRequests && resp.StatusCode != http.StatusForbidden) {
		return time.Time{}, "", false
	}
	now := p.cfg.Clock.Now()
	retryAfter, hasRetry := parseRetryAfter(resp.Header.Get("Retry-After"), now)
	reset, hasReset := parseReset(resp.Header.Get("X-RateLimit-Reset"))
	remaining := resp.Header.Get("X-RateLimit-Remaining")
	var body []byte
	if resp.Body != nil {
		body, _ = io.ReadAll(resp.Body)
		resp.Body = io.NopCloser(bytes.NewReader(body))
	}
	switch {
	case resp.StatusCode == http.StatusTooManyRequests:
		switch {
		case hasRetry:
			return retryAfter, "429", true
		case hasReset:
			return reset, "429", true
		}
		return now.Add(time.Minute), "429", true
	case hasRetry:
		return retryAfter, "secondary", true
	case remaining == "0" && hasReset:
		return reset, "primary", true
	case secondaryText.Match(body):
		return now.Add(time.Minute), "secondary", true
	}
	return time.Time{}, "", false
}

// trackRemaining embargoes until the reset once a response says nothing
// remains, so the next request is not sent only to be refused. The header is
// then hidden from go-github, whose own wall-clock check would otherwise
// refuse requests our gate has already cleared.
func (p *pacer) trackRemaining(resp *http.Response) {
	if resp.Header.Get("X-RateLimit-Remaining") != "0" {
		return
	}
	if reset, ok := parseReset(resp.Header.Get("X-RateLimit-Reset")); ok {
		p.gate.embargo(reset, "primary")
	}
	resp.Header.Del("X-RateLimit-Remaining")
	resp.Header.Del("X-RateLimit-Reset")
}

func parseRetryAfter(v string, now time.Time) (time.Time, bool) {
	if v == "" {
		return time.Time{}, false
	}
	if secs, err := strconv.Atoi(strings.TrimSpace(v)); err == nil && secs >= 0 {
		return now.Add(time.Duration(secs) * time.Second), true
	}
	if t, err := http.ParseTime(v); err == nil {
		return t, true
	}
	return time.Time{}, false
}

func parseReset(v string) (time.Time, bool) {
	secs, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if err != nil || secs <= 0 {
		return time.Time{}, false
	}
	return time.Unix(secs, 0), true
}

// etagCache remembers GET responses by URL so a repeated read can be a
// conditional request, which GitHub answers 304 without charging the limit.
// It is bounded in entries and bytes, sized by the installation's fleet
// (resize), and evicts the least recently used entry first: a repository's
// handful of reads stay cached however many repositories cycle between two
// of its cycles.
type etagCache struct {
	mu       sync.Mutex
	entries  map[string]*list.Element // of *etagEntry, most recently used at the front
	lru      *list.List
	bytes    int
	maxItems int
	maxBytes int
}

type etagEntry struct {
	key    string
	etag   string
	header http.Header
	body   []byte
}

// The cache's floor, and what each repository of the installation adds to
// it; a body over etagCacheBody is never cached. An evicted entry only
// costs one full read.
const (
	etagCacheEntries      = 1024
	etagCacheBody         = 1 << 20
	etagCacheBytes        = 16 << 20
	etagEntriesPerRepo    = 16
	etagBytesPerRepo      = 64 << 10
	etagCacheBytesCeiling = 256 << 20
)

func newETagCache() *etagCache {
	return &etagCache{
		entries:  map[string]*list.Element{},
		lru:      list.New(),
		maxItems: etagCacheEntries,
		maxBytes: etagCacheBytes,
	}
}

// resize sizes the cache for an installation of repos repositories.
func (c *etagCache) resize(repos int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.maxItems = max(etagCacheEntries, repos*etagEntriesPerRepo)
	c.maxBytes = min(max(etagCacheBytes, repos*etagBytesPerRepo), etagCacheBytesCeiling)
	c.evict(0)
}

func (c *etagCache) get(key string) *etagEntry {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.entries[key]
	if !ok {
		return nil
	}
	c.lru.MoveToFront(el)
	return el.Value.(*etagEntry)
}

func (c *etagCache) put(key string, resp *http.Response) {
	etag := resp.Header.Get("ETag")
	if etag == "" {
		return
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body = io.NopCloser(bytes.NewReader(body))
	if len(body) > etagCacheBody {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.entries[key]; ok {
		c.bytes -= len(el.Value.(*etagEntry).body)
		c.lru.Remove(el)
		delete(c.entries, key)
	}
	c.evict(len(body))
	c.entries[key] = c.lru.PushFront(&etagEntry{key: key, etag: etag, header: resp.Header.Clone(), body: body})
	c.bytes += len(body)
}

// evict drops the least recently used entries until one more of size
// bytes fits.
func (c *etagCache) evict(size int) {
	for c.lru.Len() > 0 && (len(c.entries) >= c.maxItems || c.bytes+size > c.maxBytes) {
		el := c.lru.Back()
		e := el.Value.(*etagEntry)
		c.bytes -= len(e.body)
		c.lru.Remove(el)
		delete(c.entries, e.key)
	}
}

// response rebuilds the cached 200 for a 304, with the 304's rate headers.
func (e *etagEntry) response(req *http.Request, fresh http.Header) *http.Response {
	h := e.header.Clone()
	for k, v := range fresh {
		if strings.HasPrefix(strings.ToLower(k), "x-ratelimit-") {
			h[k] = v
		}
	}
	return &http.Response{Status: "200 OK", StatusCode: http.StatusOK, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: h, Body: io.NopCloser(bytes.NewReader(e.body)), ContentLength: int64(len(e.body)), Request: req}
}

var (
	hexID   = regexp.MustCompile(`^[0-9a-f]{40}$`)
	numeric = regexp.MustCompile(`^[0-9]+$`)
)

// routeOf turns a request path into a template for counting:
// /repos/acme/gitops/pulls/12 -> /repos/{owner}/{repo}/pulls/{n}.
func routeOf(path string) string {
	segs := strings.Split(strings.Trim(path, "/"), "/")
	// Enterprise roots (/api/v3/...) are not part of the route.
	if len(segs) >= 2 && segs[0] == "api" && segs[1] == "v3" {
		segs = segs[2:]
	}
	for i := 0; i < len(segs); i++ {
		switch {
		case i == 1 && segs[0] == "repos":
			segs[1] = "{owner}"
		case i == 2 && segs[0] == "repos":
			segs[2] = "{repo}"
		case i > 0 && (segs[i-1] == "ref" || segs[i-1] == "refs" || segs[i-1] == "contents") && segs[0] == "repos":
			return "/" + strings.Join(
				append(segs[:i], "{"+map[bool]string{true: "path", false: "ref"}[segs[i-1] == "contents"]+"}"),
				"/",
			)
		case hexID.MatchString(segs[i]):
			segs[i] = "{sha}"
		case numeric.MatchString(segs[i]):
			segs[i] = "{n}"
		case i > 0 && segs[i-1] == "labels" && segs[0] == "repos":
			segs[i] = "{name}"
		}
	}
	return "/" + strings.Join(segs, "/")
}
