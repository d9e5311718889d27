package github

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync"

	"github.com/bradleyfalzon/ghinstallation/v2"
	jwt "github.com/golang-jwt/jwt/v4"
	gh "github.com/google/go-github/v62/github"

	"github.com/backflow-dev/backflow/internal/forge"
)

// Adapter implements forge.Forge for a GitHub App.
type Adapter struct {
	// StepsOn offers forge.Steps' operations over the adapter's own calls.
	forge.StepsOn

	cfg     Config
	appsTr  *ghinstallation.AppsTransport
	app     appAPI
	appGate *gate
	count   counters
	baseURL *url.URL

	mu       sync.Mutex
	installs map[int64]*installation
	repoInst map[string]int64
	identity *forge.App
	allow    map[string]bool

	trees treeCache
}

var _ forge.Forge = (*Adapter)(nil)

// installation holds one installation's cached token transport, client and
// gate; ghinstallation refreshes its token before expiry.
type installation struct {
	id    int64
	tr    *tokenTransport
	api   installationAPI
	gate  *gate
	cache *etagCache
}

// New builds an adapter. It parses the key but sends no request.
func New(cfg Config) (*Adapter, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	key, err := jwt.ParseRSAPrivateKeyFromPEM(cfg.PrivateKey)
	if err != nil {
		// The message names the parse failure, never the key.
		return nil, fmt.Errorf("github app %d: could not parse private key: %w", cfg.AppID, err)
	}
	// JWTs are dated by the forge's clock, learned from its Date headers,
	// so that a host clock minutes off does not get every App call refused.
	st := &serverTime{clock: cfg.Clock}
	appsTr, err := ghinstallation.NewAppsTransportWithOptions(dateWatch{next: cfg.Transport, st: st}, cfg.AppID,
		ghinstallation.WithSigner(jwtSigner{key: key, now: st.Now}))
	if err != nil {
		return nil, fmt.Errorf("github app %d: %w", cfg.AppID, err)
	}
	cfg.PrivateKey = nil // held by the transport only
	appsTr.BaseURL = strings.TrimSuffix(cfg.BaseURL, "/")
	base, _ := url.Parse(cfg.BaseURL)
	a := &Adapter{
		cfg:      cfg,
		appsTr:   appsTr,
		baseURL:  base,
		installs: map[int64]*installation{},
		repoInst: map[string]int64{},
	}
	a.Self = a
	a.appGate = a.newGate()
	// A refused JWT is signed again after the refusal's Date header.
	a.app = client{a.newClient(appsTr, a.appGate, newETagCache(), func() {})}
	if len(cfg.Allowlist) > 0 {
		a.allow = map[string]bool{}
		for _, r := range cfg.Allowlist {
			a.allow[strings.ToLower(r)] = true
		}
	}
	return a, nil
}

func (a *Adapter) newGate() *gate {
	return &gate{
		clock:     a.cfg.Clock,
		sleep:     a.cfg.Sleep,
		waited:    a.cfg.waitedGate,
		maxWait:   a.cfg.MaxWait,
		perMinute: a.cfg.WritesPerMinute,
		perHour:   a.cfg.WritesPerHour,
	}
}

// newClient builds a paced client on tr; refresh renews tr's credential
// after GitHub refused it (401).
func (a *Adapter) newClient(tr http.RoundTripper, g *gate, cache *etagCache, refresh func()) *gh.Client {
	p := &pacer{next: tr, gate: g, cfg: &a.cfg, count: &a.count, cache: cache, refresh: refresh}
	c := gh.NewClient(&http.Client{Transport: p})
	c.BaseURL, c.UploadURL = a.baseURL, a.baseURL
	return c
}

// Counts returns the requests sent so far.
func (a *Adapter) Counts() Counts {
	c := Counts{Reads: a.count.reads.Load(), Writes: a.count.writes.Load(), NotModified: a.count.notModified.Load(),
		Retries: a.count.retries.Load(), RateLimited: a.count.rateLimited.Load()}
	a.mu.Lock()
	gates := []*gate{a.appGate}
	for _, in := range a.installs {
		gates = append(gates, in.gate)
	}
	a.mu.Unlock()
	for _, g := range gates {
		g.mu.Lock()
		c.PeakWritesPerMinute = max(c.PeakWritesPerMinute, g.peak)
		g.mu.Unlock()
	}
	return c
}

// installation returns the cached installation id's client, creating it.
func (a *Adapter) installation(id int64) *installation {
	a.mu.Lock()
	defer a.mu.Unlock()
	if in, ok := a.installs[id]; ok {
		return in
	}
	tr := newTokenTransport(func() *ghinstallation.Transport {
		t := ghinstallation.NewFromAppsTransport(a.appsTr, id)
		t.BaseURL = a.appsTr.BaseURL
		return t
	})
	in := &installation{id: id, tr: tr, gate: a.newGate(), cache: newETagCache()}
	in.api = client{a.newClient(tr, in.gate, in.cache, tr.renew)}
	a.installs[id] = in
	return in
}

// forRepo finds the installation that can see owner/name
// (GET /repos/{owner}/{repo}/installation once, then cached).
func (a *Adapter) forRepo(ctx context.Context, owner, name string) (*installation, error) {
	key := strings.ToLower(owner + "/" + name)
	a.mu.Lock()
	id, ok := a.repoInst[key]
	a.mu.Unlock()
	if !ok {
		inst, _, err := a.app.FindRepositoryInstallation(ctx, owner, name)
		if err != nil {
			return nil, mapErr(err, "finding the installation for %s/%s", owner, name)
		}
		id = inst.GetID()
		a.mu.Lock()
		a.repoInst[key] = id
		a.mu.Unlock()
	}
	return a.installation(id), nil
}

// App implements forge.Forge (GET /app once, then cached).
func (a *Adapter) App(ctx context.Context) (forge.App, error) {
	a.mu.Lock()
	if a.identity != nil {
		defer a.mu.Unlock()
		return *a.identity, nil
	}
	a.mu.Unlock()
	app, _, err := a.app.GetApp(ctx)
	if err != nil {
		return forge.App{}, mapErr(err, "reading the app")
	}
	id := forge.App{ID: app.GetID(), Slug: app.GetSlug(), Login: app.GetSlug() + "[bot]"}
	a.mu.Lock()
	a.identity = &id
	a.mu.Unlock()
	return id, nil
}

// login is the App's account, for telling its own comments and pull
// requests from people's; an unknown identity matches nothing.
func (a *Adapter) login(ctx context.Context) string {
	id, err := a.App(ctx)
	if err != nil {
		return ""
	}
	return id.Login
}

// transient reports failures worth a re-check and another try.
func transient(err error) bool {
	return errors.Is(err, forge.ErrUnavailable)
}

// create runs a non-idempotent write. When it fails in a way that leaves its
// effect unknown (5xx, reset, timeout), check looks for the effect before
// trying again, so a lost response never produces a duplicate. A timed-out
// write is not sent again: it may be processed after the check.
func (a *Adapter) create(ctx context.Context, do func(context.Context) error,
	check func(context.Context) (bool, error)) error {
	bo := newBackoff(&a.cfg)
	var err error
	for attempt := 1; attempt <= a.cfg.Attempts; attempt++ {
		if err = do(ctx); err == nil || !transient(err) {
			return err
		}
		done, cerr := check(ctx)
		if cerr == nil && done {
			return nil
		}
		if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
			// The attempt timed out: the request may still be in flight at
			// the forge and land after the check, so sending it again could
			// write it twice. The caller's next try checks again.
			return err
		}
		if attempt == a.cfg.Attempts {
			break
		}
		d := bo.NextBackOff()
		a.cfg.Logger.Warn("retrying a create after re-checking", "err", err, "wait", d)
		a.cfg.waited(WaitCreateRetry, d)
		if serr := a.cfg.Sleep(ctx, d); serr != nil {
			return serr
		}
	}
	return err
}

var (
	conflictText = regexp.MustCompile(
		`(?i)already exists|not a fast.?forward|head (ref|branch) (has moved|was modified)|expected head`,
	)
	missingText = regexp.MustCompile(`(?i)reference does not exist|does not exist|not found`)
)

// mapErr turns a go-github or transport error into the forge vocabulary,
// naming what was being done. Messages carry the status and GitHub's text,
// never request headers (where the token lives).
func mapErr(err error, format string, args ...any) error {
	if err == nil {
		return nil
	}
	what := fmt.Sprintf(format, args...)
	var rl *forge.RateLimitError
	if errors.As(err, &rl) {
		return fmt.Errorf("error %s: %w", what, rl)
	}
	var ghRL *gh.RateLimitError
	if errors.As(err, &ghRL) {
		return fmt.Errorf("error %s: %w", what, &forge.RateLimitError{Until: ghRL.Rate.Reset.Time, Reason: "primary"})
	}
	var abuse *gh.AbuseRateLimitError
	if errors.As(err, &abuse) {
		return fmt.Errorf("error %s: %w", what, &forge.RateLimitError{Reason: "secondary"})
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		if !errors.Is(err, forge.ErrUnavailable) {
			return fmt.Errorf("error %s: %w", what, err)
		}
	}
	if errors.Is(err, forge.ErrUnavailable) {
		return fmt.Errorf("error %s: %w", what, stripURL(err))
	}
	var er *gh.ErrorResponse
	if errors.As(err, &er) && er.Response != nil {
		msg := er.Message
		for _, e := range er.Errors {
			if e.Message != "" {
				msg += "; " + e.Message
			}
		}
		return fmt.Errorf("error %s: %d %s: %w", what, er.Response.StatusCode, msg, sentinelFor(er.Response.StatusCode, msg))
	}
	return fmt.Errorf("error %s: %w", what, err)
}

// stripURL drops the *url.Error wrapper's URL: the message is enough.
func stripURL(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return fmt.Errorf("%s: %w", ue.Op, ue.Err)
	}
	return err
}

func sentinelFor(status int, msg string) error {
	switch {
	case status == http.StatusNotFound:
		return forge.ErrNotFound
	case status == http.StatusUnauthorized, status == http.StatusForbidden:
		return forge.ErrUnauthorized
	case status == http.StatusConflict:
		return forge.ErrConflict
	case status == http.StatusMethodNotAllowed:
		return forge.ErrNotMergeable
	case status >= 500:
		return forge.ErrUnavailable
	case status == http.StatusUnprocessableEntity && conflictText.MatchString(msg):
		return forge.ErrConflict
	case status == http.StatusUnprocessableEntity && missingText.MatchString(msg):
		return forge.ErrNotFound
	}
	return forge.ErrInvalid
}
