package localhub

import (
	"fmt"
	"math/rand"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// FaultKind is what an injected fault does to a request.
type FaultKind string

// The faults a hub can inject, each shaped as GitHub answers it.
const (
	// FaultStatus answers Status with GitHub's error body.
	FaultStatus FaultKind = "status"
	// FaultRateLimit answers 403 with X-RateLimit-Remaining: 0 and a reset
	// RetryAfter from now (go-github's RateLimitError).
	FaultRateLimit FaultKind = "rate-limit"
	// FaultSecondaryRateLimit answers 403 with Retry-After and the secondary
	// limit documentation URL (go-github's AbuseRateLimitError).
	FaultSecondaryRateLimit FaultKind = "secondary-rate-limit"
	// FaultTooManyRequests answers 429 with Retry-After.
	FaultTooManyRequests FaultKind = "too-many-requests"
	// FaultDelay holds the request for Delay, then serves it.
	FaultDelay FaultKind = "delay"
	// FaultReset drops the connection with a TCP reset and no response.
	FaultReset FaultKind = "reset"
	// FaultGraphQLError answers a GraphQL request 200 with Message in
	// "errors", as GitHub reports a refused mutation.
	FaultGraphQLError FaultKind = "graphql-error"
)

// Fault is one injection rule. A request matches when Method and Route (a
// route template such as "/repos/{owner}/{repo}/pulls", as the request log
// names it) match or are empty.
type Fault struct {
	Kind       FaultKind
	Method     string
	Route      string
	Share      float64 // of matching requests, 0 < Share < 1; otherwise all
	Times      int     // how many requests to fault; 0 means no limit
	Status     int
	Delay      time.Duration
	RetryAfter time.Duration
	// Message is the error message of FaultGraphQLError.
	Message string
}

// Faults holds the rules, switchable while the hub serves.
type Faults struct {
	mu    sync.Mutex
	rnd   *rand.Rand
	next  int
	rules map[int]*Fault
	order []int
}

func newFaults(seed int64) *Faults {
	return &Faults{rnd: rand.New(rand.NewSource(seed)), rules: map[int]*Fault{}}
}

// Add installs a rule and returns its id for Remove.
func (f *Faults) Add(rule Fault) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.next++
	r := rule
	f.rules[f.next] = &r
	f.order = append(f.order, f.next)
	return f.next
}

// Remove uninstalls one rule.
func (f *Faults) Remove(id int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.rules, id)
}

// Clear uninstalls every rule.
func (f *Faults) Clear() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rules, f.order = map[int]*Fault{}, nil
}

// pick returns the rules that fire for this request, in installation order.
func (f *Faults) pick(method, template string) []Fault {
	f.mu.Lock()
	defer f.mu.Unlock()
	var fired []Fault
	for _, id := range f.order {
		r, ok := f.rules[id]
		if !ok || (r.Method != "" && r.Method != method) ||
			(r.Route != "" && r.Route != "/"+trimSlash(template) && r.Route != template) {
			continue
		}
		if r.Share > 0 && r.Share < 1 && f.rnd.Float64() >= r.Share {
			continue
		}
		fired = append(fired, *r)
		if r.Times > 0 {
			if r.Times--; r.Times == 0 {
				delete(f.rules, id)
			}
		}
	}
	return fired
}

func trimSlash(s string) string {
	for len(s) > 0 && s[0] == '/' {
		s = s[1:]
	}
	return s
}

// apply injects the faults that fire; it reports whether it answered the
// request (or dropped the connection), so the hub must not serve it.
func (f *Faults) apply(w http.ResponseWriter, r *http.Request, template string, now time.Time) bool {
	for _, rule := range f.pick(r.Method, template) {
		retry := rule.RetryAfter
		if retry <= 0 {
			retry = time.Minute
		}
		hdr := w.Header()
		switch rule.Kind {
		case FaultDelay:
			select {
			case <-time.After(rule.Delay):
			case <-r.Context().Done():
				return true
			}
			continue
		case FaultReset:
			if hj, ok := w.(http.Hijacker); ok {
				if conn, _, err := hj.Hijack(); err == nil {
					if tc, ok := conn.(*net.TCPConn); ok {
						_ = tc.SetLinger(0) // close with RST, not FIN
					}
					_ = conn.Close()
					return true
				}
			}
			// Not hijackable (HTTP/2): the closest GitHub-side failure is a bad gateway.
			writeError(w, http.StatusBadGateway, "Server Error", docsURL)
		case FaultRateLimit:
			hdr.Set("X-RateLimit-Limit", "5000")
			hdr.Set("X-RateLimit-Remaining", "0")
			hdr.Set("X-RateLimit-Used", "5000")
			hdr.Set("X-RateLimit-Reset", strconv.FormatInt(now.Add(retry).Unix(), 10))
			hdr.Set("X-RateLimit-Resource", "core")
			writeError(
				w,
				http.StatusForbidden,
				"API rate limit exceeded for installation.",
				"https://docs.github.com/rest/overview/rate-limits-for-the-rest-api#about-primary-rate-limits",
			)
		case FaultSecondaryRateLimit:
			hdr.Set("Retry-After", strconv.Itoa(int(retry.Seconds())))
			writeError(
				w,
				http.StatusForbidden,
				"You have exceeded a secondary rate limit. Please wait a few minutes before you try again.",
				"https://docs.github.com/rest/overview/rate-limits-for-the-rest-api#about-secondary-rate-limits",
			)
		case FaultGraphQLError:
			hdr.Set("Content-Type", "application/json; charset=utf-8")
			w.WriteHeader(http.StatusOK)
			fmt.Fprintf(w, `{"data":null,"errors":[{"type":"UNPROCESSABLE","message":%q}]}`, rule.Message)
		case FaultTooManyRequests:
			hdr.Set("Retry-After", strconv.Itoa(int(retry.Seconds())))
			writeError(w, http.StatusTooManyRequests, "Too Many Requests", docsURL)
		default:
			status := rule.Status
			if status == 0 {
				status = http.StatusInternalServerError
			}
			writeError(w, status, http.StatusText(status), docsURL)
		}
		return true
	}
	return false
}

func writeError(w http.ResponseWriter, status int, msg, doc string) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	fmt.Fprintf(w, `{"message":%q,"documentation_url":%q}`, msg, doc)
}

// Request is one logged request.
type Request struct {
	Time   time.Time
	Method string
	Route  string // the route template, "unknown" when none matched
	Path   string
	Status int // -1 when a fault answered or dropped it
}

// RequestLog records every request the hub received.
type RequestLog struct {
	mu      sync.Mutex
	entries []*Request
}

type logEntry struct {
	log *RequestLog
	req *Request
}

func (l *RequestLog) add(method, route, path string, now time.Time) logEntry {
	l.mu.Lock()
	defer l.mu.Unlock()
	r := &Request{Time: now, Method: method, Route: route, Path: path}
	l.entries = append(l.entries, r)
	return logEntry{l, r}
}

func (e logEntry) setStatus(s int) {
	e.log.mu.Lock()
	defer e.log.mu.Unlock()
	e.req.Status = s
}

// All returns a copy of the log.
func (l *RequestLog) All() []Request {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]Request, len(l.entries))
	for i, r := range l.entries {
		out[i] = *r
	}
	return out
}

// Count returns how many requests hit method and route template.
func (l *RequestLog) Count(method, route string) int {
	return l.Counts()[method+" "+route]
}

// Counts returns request counts keyed "METHOD /route/{template}".
func (l *RequestLog) Counts() map[string]int {
	l.mu.Lock()
	defer l.mu.Unlock()
	counts := map[string]int{}
	for _, r := range l.entries {
		counts[r.Method+" "+r.Route]++
	}
	return counts
}

// Reset empties the log.
func (l *RequestLog) Reset() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.entries = nil
}
