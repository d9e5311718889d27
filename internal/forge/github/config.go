package github

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/backflow-dev/backflow/internal/forge"
)

// Clock tells the time; the adapter never reads the wall clock directly so
// that tests control waits.
type Clock interface {
	Now() time.Time
}

// SystemClock is the wall clock.
type SystemClock struct{}

// Now implements Clock.
func (SystemClock) Now() time.Time { return time.Now() }

// SleepFunc waits for d or until ctx ends.
type SleepFunc func(ctx context.Context, d time.Duration) error

// RealSleep waits on a real timer.
func RealSleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// DefaultBaseURL is github.com's REST API.
const DefaultBaseURL = "https://api.github.com/"

// Config configures the adapter. Only AppID and a private key are required.
type Config struct {
	// AppID is the GitHub App's id.
	AppID int64
	// PrivateKey is the App's PEM private key. When empty, PrivateKeyFile or
	// PrivateKeyEnv supplies it.
	PrivateKey []byte
	// PrivateKeyFile is a path to the PEM private key.
	PrivateKeyFile string
	// PrivateKeyEnv names an environment variable holding the PEM key.
	PrivateKeyEnv string
	// BaseURL is the REST API root, ending in "/": https://api.github.com/,
	// https://HOST/api/v3/ for Enterprise, or the local hub's URL.
	BaseURL string
	// GraphQLURL is the GraphQL endpoint; empty derives it from BaseURL
	// (api.github.com/graphql, HOST/api/graphql, or BaseURL+"graphql").
	GraphQLURL string
	// GitURL is the root of clone URLs ("https://github.com/"); empty
	// derives it from BaseURL.
	GitURL string
	// Allowlist limits Repositories to these "owner/name"s; empty allows all.
	Allowlist []string

	// Transport is the HTTP transport under the adapter; nil means
	// http.DefaultTransport.
	Transport http.RoundTripper
	// Clock supplies the time; nil means the wall clock.
	Clock Clock
	// Sleep waits; nil means real timers. Tests pass one that advances a
	// fake clock.
	Sleep SleepFunc
	// MaxWait is the longest rate-limit embargo waited out inside a call;
	// longer ones fail with *forge.RateLimitError. Zero means 2 minutes.
	MaxWait time.Duration
	// WritesPerMinute caps content-creating requests per installation in any
	// minute; zero means 80, GitHub's limit.
	WritesPerMinute int
	// WritesPerHour caps content-creating requests per installation in any
	// hour; zero means 500, GitHub's limit.
	WritesPerHour int
	// Attempts bounds tries of a failing idempotent request (5xx, timeouts,
	// resets); zero means 4.
	Attempts int
	// RequestTimeout bounds one HTTP attempt; zero means 30 seconds.
	RequestTimeout time.Duration
	// Backoff is the first retry delay, doubled with jitter up to 30s;
	// zero means 500ms.
	Backoff time.Duration
	// Observer receives every request; optional.
	Observer forge.Observer
	// Waited is told of every wait before a request (a rate-limit embargo,
	// the write pacing, a retry's backoff) with its reason (one of
	// WaitReasons) and length, before the wait starts; optional. Every wait
	// is logged too.
	Waited func(reason string, d time.Duration)
	// Logger receives retries and waits; nil discards.
	Logger *slog.Logger
}

// waited tells Waited of a wait about to start.
func (c *Config) waited(reason string, d time.Duration) {
	if c.Waited != nil {
		c.Waited(reason, d)
	}
}

// waitedGate is the gates' waited: those waits are the pacing's and the
// rate limits', which hold a cycle back, so each is logged as a warning
// with its reason and length.
func (c *Config) waitedGate(reason string, d time.Duration) {
	c.Logger.Warn("waiting before a request", "reason", reason, "wait", d.String())
	c.waited(reason, d)
}

// withDefaults validates c and fills defaults.
func (c Config) withDefaults() (Config, error) {
	if c.AppID <= 0 {
		return c, errors.New("github app: app id is required")
	}
	if len(c.PrivateKey) == 0 {
		switch {
		case c.PrivateKeyFile != "":
			b, err := os.ReadFile(c.PrivateKeyFile)
			if err != nil {
				// The path is not secret; the contents are never shown.
				return c, fmt.Errorf("github app: reading private key file %s: %w", c.PrivateKeyFile, errors.Unwrap(err))
			}
			c.PrivateKey = b
		case c.PrivateKeyEnv != "":
			v := os.Getenv(c.PrivateKeyEnv)
			if v == "" {
				return c, fmt.Errorf("github app: environment variable %s is empty", c.PrivateKeyEnv)
			}
			c.PrivateKey = []byte(v)
		default:
			return c, errors.New("github app: a private key is required (key, key file or environment variable)")
		}
	}
	if c.BaseURL == "" {
		c.BaseURL = DefaultBaseURL
	}
	if !strings.HasSuffix(c.BaseURL, "/") {
		return c, fmt.Errorf("github app: base URL %q must end with /", c.BaseURL)
	}
	base, err := url.Parse(c.BaseURL)
	if err != nil || base.Scheme == "" || base.Host == "" {
		return c, fmt.Errorf("github app: base URL %q is not an absolute URL", c.BaseURL)
	}
	if c.GraphQLURL == "" {
		c.GraphQLURL = deriveGraphQL(base)
	}
	if c.GitURL == "" {
		c.GitURL = deriveGit(base)
	}
	if !strings.HasSuffix(c.GitURL, "/") {
		c.GitURL += "/"
	}
	if c.Transport == nil {
		c.Transport = http.DefaultTransport
	}
	if c.Clock == nil {
		c.Clock = SystemClock{}
	}
	if c.Sleep == nil {
		c.Sleep = RealSleep
	}
	if c.MaxWait == 0 {
		c.MaxWait = 2 * time.Minute
	}
	if c.WritesPerHour == 0 {
		c.WritesPerHour = 500
	}
	if c.WritesPerMinute == 0 {
		c.WritesPerMinute = 80
	}
	if c.Attempts == 0 {
		c.Attempts = 4
	}
	if c.RequestTimeout == 0 {
		c.RequestTimeout = 30 * time.Second
	}
	if c.Backoff == 0 {
		c.Backoff = 500 * time.Millisecond
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c, nil
}

// deriveGraphQL follows GitHub's layout: api.github.com/graphql,
// HOST/api/graphql for Enterprise's HOST/api/v3/, else BASE/graphql.
func deriveGraphQL(base *url.URL) string {
	u := *base
	switch {
	case strings.HasSuffix(u.Path, "/api/v3/"):
		u.Path = strings.TrimSuffix(u.Path, "v3/") + "graphql"
	default:
		u.Path += "graphql"
	}
	return u.String()
}

// deriveGit maps the API root to the web root clone URLs live under:
// api.github.com -> github.com, HOST/api/v3/ -> HOST/, else unchanged.
func deriveGit(base *url.URL) string {
	u := *base
	u.Host = strings.TrimPrefix(u.Host, "api.")
	u.Path = strings.TrimSuffix(u.Path, "api/v3/")
	return u.String()
}
