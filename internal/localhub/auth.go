package localhub

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v4"
)

// GitHub's JWT rules: iat must not be in the future (a minute of clock skew
// is tolerated here, as GitHub's own docs advise backdating iat by 60 s), and
// exp at most ten minutes after iat and after now.
const (
	jwtSkew   = 60 * time.Second
	jwtMaxTTL = 10 * time.Minute
)

// authenticate checks the call's credential against the route's kind and
// answers 401 itself when it fails.
func (h *Hub) authenticate(c *call, rt *route) bool {
	scheme, cred, _ := strings.Cut(c.r.Header.Get("Authorization"), " ")
	scheme = strings.ToLower(scheme)
	cred = strings.TrimSpace(cred)
	if cred == "" || (scheme != "bearer" && scheme != "token") {
		c.fail(http.StatusUnauthorized, "Requires authentication")
		return false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if rt.auth == authJWT {
		if msg := h.verifyJWT(cred); msg != "" {
			c.fail(http.StatusUnauthorized, msg)
			return false
		}
		return true
	}
	tok, ok := h.st.Tokens[cred]
	if !ok || tok.expired(h.clock.Now()) {
		c.fail(http.StatusUnauthorized, "Bad credentials")
		return false
	}
	if tok.User != "" {
		if rt.template == "/installation/repositories" {
			c.fail(
				http.StatusForbidden,
				"You must authenticate with an installation access token in order to list repositories for an installation.",
			)
			return false
		}
		c.tok = tok
		return true
	}
	for _, inst := range h.st.Installations {
		if inst.ID == tok.Installation {
			if inst.SuspendedAt != nil {
				c.fail(http.StatusForbidden, suspendedMessage)
				return false
			}
			c.inst, c.tok = inst, tok
			return h.permits(c, rt)
		}
	}
	// The installation was removed after the token was issued.
	c.fail(http.StatusUnauthorized, "Bad credentials")
	return false
}

// verifyJWT returns GitHub's message for a refused App JWT, or "".
func (h *Hub) verifyJWT(raw string) string {
	if strings.Count(raw, ".") != 2 {
		return "A JSON web token could not be decoded"
	}
	parser := jwt.NewParser(jwt.WithValidMethods([]string{"RS256"}), jwt.WithoutClaimsValidation())
	claims := jwt.MapClaims{}
	key := func(*jwt.Token) (any, error) { return &h.key.PublicKey, nil }
	if _, err := parser.ParseWithClaims(raw, claims, key); err != nil {
		return "A JSON web token could not be decoded"
	}
	now := h.clock.Now()
	num := func(k string) (time.Time, bool) {
		v, ok := claims[k].(float64)
		return time.Unix(int64(v), 0), ok
	}
	iat, ok := num("iat")
	if !ok || iat.After(now.Add(jwtSkew)) {
		return "'Issued at' claim ('iat') must be an Integer representing a time in the past"
	}
	exp, ok := num("exp")
	if !ok || !exp.After(now) {
		return "'Expiration time' claim ('exp') must be a numeric value representing the future time at which the " +
			"assertion expires"
	}
	if exp.Sub(iat) > jwtMaxTTL || exp.Sub(now) > jwtMaxTTL+jwtSkew {
		return "'Expiration time' claim ('exp') is too far in the future"
	}
	var iss string
	switch v := claims["iss"].(type) {
	case string:
		iss = v
	case float64:
		iss = strconv.FormatInt(int64(v), 10)
	}
	if iss != strconv.FormatInt(h.st.App.ID, 10) && iss != h.st.App.Slug {
		return "Integration not found"
	}
	return ""
}

// issueToken creates an installation access token; callers hold h.mu.
func (h *Hub) issueToken(inst *installation, repos []string) (string, *accessToken) {
	token := "ghs_" + randomHex(18)
	at := &accessToken{Installation: inst.ID, ExpiresAt: h.now().Add(tokenLifetime), Repos: repos}
	h.st.Tokens[token] = at
	// Drop expired tokens so the state file does not grow without bound.
	for k, t := range h.st.Tokens {
		if t.expired(h.clock.Now()) {
			delete(h.st.Tokens, k)
		}
	}
	return token, at
}

func (t *accessToken) expired(now time.Time) bool {
	return !t.ExpiresAt.IsZero() && !now.Before(t.ExpiresAt)
}

// IssueUserToken returns a personal access token acting as login, for tests
// that need a person (a reviewer, someone pushing to the bot's branch) rather
// than the App. It does not expire.
func (h *Hub) IssueUserToken(login string) (string, error) {
	if !validLogin(login) {
		return "", fmt.Errorf("user token: invalid login %q", login)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	token := "ghp_" + randomHex(18)
	h.st.Tokens[token] = &accessToken{User: login}
	return token, h.persist()
}

// IssueToken issues an installation token as POST /app/installations/{id}/access_tokens does.
func (h *Hub) IssueToken(installationID int64) (string, time.Time, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, inst := range h.st.Installations {
		if inst.ID == installationID {
			tok, at := h.issueToken(inst, nil)
			return tok, at.ExpiresAt, h.persist()
		}
	}
	return "", time.Time{}, fmt.Errorf("installation %d: not found", installationID)
}

// rateWindow is one hour of one installation's budget for one resource.
type rateWindow struct {
	limit    int
	used     int
	reset    time.Time
	resource string
}

func (w *rateWindow) remaining() int { return w.limit - w.used }

func (w *rateWindow) setHeaders(hdr http.Header) {
	hdr.Set("X-RateLimit-Limit", strconv.Itoa(w.limit))
	hdr.Set("X-RateLimit-Remaining", strconv.Itoa(max(w.remaining(), 0)))
	hdr.Set("X-RateLimit-Reset", strconv.FormatInt(w.reset.Unix(), 10))
	hdr.Set("X-RateLimit-Used", strconv.Itoa(w.used))
	hdr.Set("X-RateLimit-Resource", w.resource)
}

// rateWindow returns the call's current window, opening a new hour when the
// last one has passed; callers hold h.mu.
func (h *Hub) rateWindow(c *call, resource string) *rateWindow {
	key := "app:" + resource
	if c.inst != nil {
		key = fmt.Sprintf("installation:%d:%s", c.inst.ID, resource)
	}
	now := h.clock.Now()
	w := h.rate[key]
	if w == nil || !now.Before(w.reset) {
		w = &rateWindow{limit: h.opts.RateLimit, reset: now.Add(time.Hour).Truncate(time.Second), resource: resource}
		h.rate[key] = w
	}
	return w
}

// rateLimited answers GitHub's primary rate limit refusal.
func (c *call) rateLimited(w *rateWindow) {
	c.limited = true
	msg := "API rate limit exceeded for the app."
	if c.inst != nil {
		msg = fmt.Sprintf("API rate limit exceeded for installation ID %d.", c.inst.ID)
	}
	c.json(
		http.StatusForbidden,
		obj{
			"message":           msg,
			"documentation_url": "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api#about-primary-rate-limits",
		},
	)
}
