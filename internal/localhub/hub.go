package localhub

import (
	"bytes"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

const (
	docsURL          = "https://docs.github.com/rest"
	defaultRateLimit = 5000
	tokenLifetime    = time.Hour
)

// Options configures a Hub. The zero value is a working in-memory hub.
type Options struct {
	// Dir is the state folder (state.json and bare repositories). Empty means
	// a temporary folder removed by Close.
	Dir string
	// Clock gives the time; nil means the wall clock.
	Clock Clock
	// AppKey is the App's private key; nil means the one in the state folder,
	// or a new 2048-bit key.
	AppKey *rsa.PrivateKey
	// AppSlug names the App; its bot user is "<slug>[bot]".
	AppSlug string
	// WebhookURL receives the App's webhook deliveries; empty disables them.
	WebhookURL string
	// WebhookSecret signs deliveries; empty means the stored one or a new one.
	WebhookSecret string
	// RateLimit is the hourly request budget per installation (GitHub: 5,000).
	RateLimit int
	// Seed makes fault injection by share deterministic.
	Seed int64
	// GitHTTPBackend is the path of git-http-backend; empty means the one in
	// git's exec path.
	GitHTTPBackend string
	// Logger receives one line per failed internal operation; nil discards.
	Logger *slog.Logger
	// Permissions are the App's permissions, which every installation token
	// is limited to (a call outside them gets GitHub's 403); nil means
	// DefaultPermissions, the App manifest's.
	Permissions map[string]string
	// Mounts serve other services beside the hub on its listener (a
	// stand-in of another API a test needs): a request whose path is a
	// key, or is under a key ending in "/", goes to that handler (the
	// longest key wins) before any of the hub's routes, unchanged.
	Mounts map[string]http.Handler
}

// Hub is a GitHub-compatible server. It is an http.Handler; all methods are
// safe for concurrent use.
type Hub struct {
	opts    Options
	clock   Clock
	dir     string
	ownDir  bool
	backend string
	key     *rsa.PrivateKey
	routes  []*route
	logger  *slog.Logger

	mu      sync.Mutex // guards st, rate, baseURL and every git write
	st      *state
	rate    map[string]*rateWindow
	baseURL string
	// autoMerging is set while tryAutoMerge runs, so merges it makes do not re-enter it.
	autoMerging bool
	// manifestCodes are the App manifest flow's codes not yet exchanged.
	manifestCodes map[string]manifestCode

	// perms are the App's permissions.
	perms map[string]string

	faults *Faults
	reqlog *RequestLog
	hooks  *webhooks
}

// New creates a hub, loading the state folder when one is given.
func New(opts Options) (*Hub, error) {
	if opts.Dir != "" {
		// git runs in other working directories (a repository's own, the
		// import's): a relative state folder must not move with it.
		abs, err := filepath.Abs(opts.Dir)
		if err != nil {
			return nil, fmt.Errorf("state folder %s: %w", opts.Dir, err)
		}
		opts.Dir = abs
	}
	h := &Hub{
		perms:   clonePermissions(opts.Permissions),
		opts:    opts,
		clock:   opts.Clock,
		dir:     opts.Dir,
		backend: opts.GitHTTPBackend,
		logger:  opts.Logger,
		rate:    map[string]*rateWindow{},
	}
	if h.clock == nil {
		h.clock = SystemClock{}
	}
	if h.backend == "" {
		// git-http-backend lives in git's exec path (/usr/lib/git-core on Debian).
		out, err := exec.Command("git", "--exec-path").Output()
		if err != nil {
			return nil, fmt.Errorf("finding git-http-backend: %w", err)
		}
		h.backend = filepath.Join(strings.TrimSpace(string(out)), "git-http-backend")
	}
	if h.logger == nil {
		h.logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if opts.RateLimit <= 0 {
		h.opts.RateLimit = defaultRateLimit
	}
	var err error
	if h.dir == "" {
		if h.dir, err = os.MkdirTemp("", "localhub-"); err != nil {
			return nil, fmt.Errorf("creating hub folder: %w", err)
		}
		h.ownDir = true
	} else if err := os.MkdirAll(h.dir, 0o700); err != nil {
		return nil, fmt.Errorf("creating hub folder: %w", err)
	}
	if h.st, err = loadState(h.dir); err != nil {
		return nil, err
	}
	if err := h.initApp(); err != nil {
		return nil, err
	}
	h.faults = newFaults(opts.Seed)
	h.reqlog = &RequestLog{}
	h.hooks = newWebhooks(h, opts.WebhookURL, h.st.WebhookSecret)
	h.registerRoutes()
	if err := h.persist(); err != nil {
		return nil, err
	}
	return h, nil
}

func (h *Hub) initApp() error {
	st := h.st
	if st.App.ID == 0 {
		st.App = appState{ID: st.newID(), Slug: "local-app", Name: "Local App", Owner: "local"}
	}
	if h.opts.AppSlug != "" {
		st.App.Slug, st.App.Name = h.opts.AppSlug, h.opts.AppSlug
	}
	switch {
	case h.opts.AppKey != nil:
		h.key = h.opts.AppKey
	case st.App.KeyPEM != "":
		block, _ := pem.Decode([]byte(st.App.KeyPEM))
		if block == nil {
			return errors.New("hub state: app key: not PEM")
		}
		key, err := x509.ParsePKCS1PrivateKey(block.Bytes)
		if err != nil {
			return fmt.Errorf("hub state: app key: %w", err)
		}
		h.key = key
	default:
		key, err := rsa.GenerateKey(rand.Reader, 2048)
		if err != nil {
			return fmt.Errorf("generating the app key: %w", err)
		}
		h.key = key
	}
	st.App.KeyPEM = string(
		pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(h.key)}),
	)
	switch {
	case h.opts.WebhookSecret != "":
		st.WebhookSecret = h.opts.WebhookSecret
	case st.WebhookSecret == "":
		st.WebhookSecret = randomHex(20)
	}
	return nil
}

// persist saves the state; callers hold h.mu (or own h exclusively).
func (h *Hub) persist() error {
	return saveState(h.dir, h.st)
}

// Close stops webhook deliveries and removes a temporary state folder.
func (h *Hub) Close() error {
	h.hooks.close()
	if h.ownDir {
		return os.RemoveAll(h.dir)
	}
	return nil
}

// SetBaseURL sets the URL clients reach the hub at (http://127.0.0.1:port),
// used in the URLs of responses and webhook payloads.
func (h *Hub) SetBaseURL(u string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.baseURL = strings.TrimSuffix(u, "/")
}

// AppID is the App's id (the JWT issuer).
func (h *Hub) AppID() int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.st.App.ID
}

// AppOwner is the account that owns the App.
func (h *Hub) AppOwner() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.st.App.Owner
}

// AppSlug is the App's slug.
func (h *Hub) AppSlug() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.st.App.Slug
}

// PrivateKeyPEM is the App's private key in PKCS#1 PEM, as GitHub hands it out.
func (h *Hub) PrivateKeyPEM() []byte {
	h.mu.Lock()
	defer h.mu.Unlock()
	return []byte(h.st.App.KeyPEM)
}

// WebhookSecret is the secret that signs deliveries.
func (h *Hub) WebhookSecret() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.st.WebhookSecret
}

// SetWebhookURL points deliveries at url (empty disables them).
func (h *Hub) SetWebhookURL(url string) { h.hooks.setURL(url) }

// Faults is the run-time fault injection switchboard.
func (h *Hub) Faults() *Faults { return h.faults }

// Requests is the log of requests served.
func (h *Hub) Requests() *RequestLog { return h.reqlog }

// Webhooks is the record of webhook deliveries.
func (h *Hub) Webhooks() *WebhookLog { return &h.hooks.log }

func (h *Hub) botLogin() string { return h.st.App.Slug + "[bot]" }

func (h *Hub) now() time.Time { return h.clock.Now().UTC().Truncate(time.Second) }

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // crypto/rand.Read never returns an error (Go 1.24+)
	return hex.EncodeToString(b)
}

// mounted is the handler Options.Mounts gives path, or nil.
func (h *Hub) mounted(path string) http.Handler {
	best := ""
	for k := range h.opts.Mounts {
		if (path == k || strings.HasSuffix(k, "/") && strings.HasPrefix(path, k)) && len(k) > len(best) {
			best = k
		}
	}
	if best == "" {
		return nil
	}
	return h.opts.Mounts[best]
}

// ServeHTTP serves the REST API, GraphQL and git smart HTTP.
func (h *Hub) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if m := h.mounted(r.URL.Path); m != nil {
		m.ServeHTTP(w, r)
		return
	}
	reqID := strings.ToUpper(randomHex(4)) + ":" + strings.ToUpper(randomHex(6))
	w.Header().Set("X-GitHub-Request-Id", reqID)
	// The Date header is the hub's own time, as GitHub's is GitHub's: a
	// client that dates its JWTs by it stays valid whatever the skew.
	w.Header().Set("Date", h.clock.Now().UTC().Format(http.TimeFormat))
	h.mu.Lock()
	if h.baseURL == "" && r.Host != "" {
		h.baseURL = "http://" + r.Host
	}
	h.mu.Unlock()
	path := r.URL.EscapedPath()
	// GitHub Enterprise base URLs (go-github's WithEnterpriseURLs) add /api/v3
	// and /api/graphql; serve both shapes from one hub.
	switch {
	case path == "/api/graphql":
		path = "/graphql"
	case strings.HasPrefix(path, "/api/v3/"):
		path = strings.TrimPrefix(path, "/api/v3")
	}
	if owner, repo, rest, ok := gitPath(path); ok {
		h.serveGit(w, r, owner, repo, rest)
		return
	}
	if h.serveManifest(w, r, path) {
		return
	}
	segs := strings.Split(strings.Trim(path, "/"), "/")
	var rt *route
	var params map[string]string
	for _, cand := range h.routes {
		if cand.method != r.Method {
			continue
		}
		if p, ok := cand.match(segs); ok {
			rt, params = cand, p
			break
		}
	}
	template := "unknown"
	if rt != nil {
		template = rt.template
	}
	entry := h.reqlog.add(r.Method, template, r.URL.Path, h.clock.Now())
	if h.faults.apply(w, r, template, h.clock.Now()) {
		entry.setStatus(-1)
		return
	}
	bw := &bufWriter{header: http.Header{}, status: http.StatusOK}
	c := &call{h: h, r: r, w: bw, p: params}
	if rt == nil {
		c.fail(http.StatusNotFound, "Not Found")
		h.flush(w, r, c, nil)
		entry.setStatus(bw.status)
		return
	}
	c.route = rt
	var window *rateWindow
	if ok := h.authenticate(c, rt); ok {
		h.mu.Lock()
		window = h.rateWindow(c, rt.resource)
		if window.remaining() <= 0 {
			c.rateLimited(window)
		} else {
			rt.handle(c)
			if r.Method != http.MethodGet && r.Method != http.MethodHead && bw.status < 400 {
				if err := h.persist(); err != nil {
					h.logger.Error("saving hub state", "err", err)
				}
			}
		}
		h.mu.Unlock()
	}
	h.flush(w, r, c, window)
	entry.setStatus(bw.status)
}

// flush writes the buffered response with GitHub's headers: ETag and 304 for
// conditional GETs (free of rate limit), and the X-RateLimit-* set.
func (h *Hub) flush(w http.ResponseWriter, r *http.Request, c *call, window *rateWindow) {
	bw := c.w
	hdr := w.Header()
	for k, v := range bw.header {
		hdr[k] = v
	}
	if (bw.body.Len() > 0 || bw.status >= 400) && hdr.Get("Content-Type") == "" {
		hdr.Set("Content-Type", "application/json; charset=utf-8")
	}
	if r.Method == http.MethodGet && bw.status == http.StatusOK {
		sum := sha256.Sum256(bw.body.Bytes())
		etag := `W/"` + hex.EncodeToString(sum[:16]) + `"`
		hdr.Set("ETag", etag)
		if inm := r.Header.Get("If-None-Match"); inm != "" && etagMatch(inm, etag) {
			bw.status = http.StatusNotModified
			bw.body.Reset()
			hdr.Del("Content-Type")
		}
	}
	if window != nil {
		h.mu.Lock()
		if bw.status != http.StatusNotModified && !c.limited {
			window.used++
		}
		window.setHeaders(hdr)
		h.mu.Unlock()
	}
	w.WriteHeader(bw.status)
	if r.Method != http.MethodHead {
		_, _ = w.Write(bw.body.Bytes())
	}
}

func etagMatch(header, etag string) bool {
	strip := func(s string) string { return strings.TrimPrefix(strings.TrimSpace(s), "W/") }
	for _, t := range strings.Split(header, ",") {
		if t = strings.TrimSpace(t); t == "*" || strip(t) == strip(etag) {
			return true
		}
	}
	return false
}

// bufWriter holds a response until the hub has decided its headers.
type bufWriter struct {
	header http.Header
	status int
	body   bytes.Buffer
}

// obj is a JSON object in a response.
type obj = map[string]any

// call is one API request being served.
type call struct {
	h       *Hub
	r       *http.Request
	w       *bufWriter
	p       map[string]string
	route   *route
	inst    *installation // nil for App (JWT) calls
	tok     *accessToken
	limited bool
	repo    *repoState
	git     *gitRepo
	// refCommit is the commit the last resolveRef found (contents URLs name it).
	refCommit string
}

func (c *call) json(status int, v any) {
	c.w.status = status
	c.w.body.Reset()
	if v == nil {
		return
	}
	b, err := json.Marshal(v)
	if err != nil {
		c.w.status = http.StatusInternalServerError
		b = []byte(`{"message":"Server Error"}`)
	}
	c.w.body.Write(b)
}

// raw answers with bytes, as GitHub does for the raw media type.
func (c *call) raw(data []byte) {
	c.w.status = http.StatusOK
	c.w.body.Reset()
	c.w.body.Write(data)
	c.w.header.Set("Content-Type", "application/octet-stream")
}

// wantsRaw reports whether the client asked for the raw media type.
func (c *call) wantsRaw() bool { return strings.Contains(c.r.Header.Get("Accept"), ".raw") }

// fail answers with GitHub's error body.
func (c *call) fail(status int, msg string) {
	c.json(status, obj{"message": msg, "documentation_url": docsURL})
}

// invalid answers 422 with GitHub's validation error shape.
func (c *call) invalid(msg string, errs ...obj) {
	body := obj{"message": msg, "documentation_url": docsURL}
	if len(errs) > 0 {
		body["errors"] = errs
	}
	c.json(http.StatusUnprocessableEntity, body)
}

// internal answers 500 and logs the cause, which clients never see.
func (c *call) internal(err error) {
	c.h.logger.Error("serving request", "route", c.route.template, "err", err)
	c.fail(http.StatusInternalServerError, "Server Error")
}

// decode reads the JSON body; on failure it has already answered 400.
func (c *call) decode(v any) bool {
	b, err := io.ReadAll(io.LimitReader(c.r.Body, 32<<20))
	if err == nil && len(bytes.TrimSpace(b)) == 0 {
		return true
	}
	if err == nil {
		err = json.Unmarshal(b, v)
	}
	if err != nil {
		c.fail(http.StatusBadRequest, "Problems parsing JSON")
		return false
	}
	return true
}

func (c *call) query(name string) string { return c.r.URL.Query().Get(name) }

// paginate slices items by per_page/page (GitHub's defaults: 30, at most 100)
// and sets the Link header go-github reads NextPage from.
func paginate[T any](c *call, items []T) []T {
	per, _ := strconv.Atoi(c.query("per_page"))
	if per <= 0 {
		per = 30
	}
	per = min(per, 100)
	page, _ := strconv.Atoi(c.query("page"))
	page = max(page, 1)
	last := max((len(items)+per-1)/per, 1)
	var links []string
	link := func(p int, rel string) {
		q := c.r.URL.Query()
		q.Set("page", strconv.Itoa(p))
		q.Set("per_page", strconv.Itoa(per))
		links = append(links, fmt.Sprintf(`<%s%s?%s>; rel="%s"`, c.base(), c.r.URL.Path, q.Encode(), rel))
	}
	if page < last {
		link(page+1, "next")
		link(last, "last")
	}
	if page > 1 {
		link(1, "first")
		link(page-1, "prev")
	}
	if len(links) > 0 {
		c.w.header.Set("Link", strings.Join(links, ", "))
	}
	from := min((page-1)*per, len(items))
	to := min(from+per, len(items))
	out := items[from:to]
	if out == nil {
		out = []T{}
	}
	return out
}

func (c *call) base() string { return c.h.baseURL }

// loadRepo finds {owner}/{repo} and checks the token may see it; GitHub
// answers 404, not 403, for repositories a token cannot see.
func (c *call) loadRepo() bool {
	full := c.p["owner"] + "/" + c.p["repo"]
	rs := c.h.repoByName(full)
	if rs == nil || !c.canSee(rs) {
		c.fail(http.StatusNotFound, "Not Found")
		return false
	}
	c.repo, c.git = rs, c.h.gitFor(rs)
	return true
}

func (c *call) canSee(rs *repoState) bool {
	if c.inst == nil {
		return true // the App itself, or a person (people see every repository here)
	}
	return c.h.tokenCovers(c.inst, c.tok, rs)
}

func (h *Hub) tokenCovers(inst *installation, tok *accessToken, rs *repoState) bool {
	if !strings.EqualFold(inst.Account, rs.Owner) {
		return false
	}
	if tok == nil || len(tok.Repos) == 0 {
		return true
	}
	for _, r := range tok.Repos {
		if strings.EqualFold(r, rs.fullName()) {
			return true
		}
	}
	return false
}

func (h *Hub) repoByName(full string) *repoState {
	for k, rs := range h.st.Repos {
		if strings.EqualFold(k, full) {
			return rs
		}
	}
	return nil
}

func (h *Hub) gitFor(rs *repoState) *gitRepo {
	return &gitRepo{dir: h.repoDir(rs.Owner, rs.Name)}
}

func (h *Hub) repoDir(owner, name string) string {
	return filepath.Join(h.dir, "repos", owner, name+".git")
}

// actor is the login acting in this call: the App's bot user, or the
// person whose token it is.
func (c *call) actor() string {
	if c.tok != nil && c.tok.User != "" {
		return c.tok.User
	}
	return c.h.botLogin()
}
