package github

import (
	"context"
	"crypto/rsa"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bradleyfalzon/ghinstallation/v2"
	jwt "github.com/golang-jwt/jwt/v4"
)

// serverTime is the forge's clock as far as the adapter can tell: its own
// clock plus the offset that the Date header of the forge's latest response
// showed. GitHub checks an App JWT's iat and exp against its own clock, so
// a host whose clock is a few minutes off would have every App request
// refused if JWTs were dated by the host's clock alone.
type serverTime struct {
	clock  Clock
	offset atomic.Int64 // nanoseconds, the forge's clock minus ours
}

// Now is the forge's time.
func (s *serverTime) Now() time.Time {
	return s.clock.Now().Add(time.Duration(s.offset.Load()))
}

// dateWatch is the transport under every request: it learns the forge's
// time from each response's Date header.
type dateWatch struct {
	next http.RoundTripper
	st   *serverTime
}

func (d dateWatch) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := d.next.RoundTrip(r)
	if err == nil {
		if t, perr := http.ParseTime(resp.Header.Get("Date")); perr == nil {
			d.st.offset.Store(int64(t.Sub(d.st.clock.Now())))
		}
	}
	return resp, err
}

// jwtSigner signs the App's JWTs dated by the forge's clock rather than
// ghinstallation's wall clock, with the same shape: iat backdated 30
// seconds, as GitHub advises for drift, and exp two minutes after it.
type jwtSigner struct {
	key *rsa.PrivateKey
	now func() time.Time
}

func (s jwtSigner) Sign(claims jwt.Claims) (string, error) {
	var issuer string
	if rc, ok := claims.(*jwt.RegisteredClaims); ok {
		issuer = rc.Issuer
	}
	iat := s.now().Add(-30 * time.Second).Truncate(time.Second)
	c := &jwt.RegisteredClaims{
		IssuedAt:  jwt.NewNumericDate(iat),
		ExpiresAt: jwt.NewNumericDate(iat.Add(2 * time.Minute)),
		Issuer:    issuer,
	}
	return jwt.NewWithClaims(jwt.SigningMethodRS256, c).SignedString(s.key)
}

// tokenTransport is one installation's token transport. ghinstallation
// renews a token by the wall clock shortly before the expiry GitHub stated;
// when the clocks disagree (or the token was revoked) GitHub refuses it
// first, and renew starts over with a fresh transport and a fresh token.
type tokenTransport struct {
	mu   sync.Mutex
	cur  *ghinstallation.Transport
	make func() *ghinstallation.Transport
}

func newTokenTransport(mint func() *ghinstallation.Transport) *tokenTransport {
	return &tokenTransport{cur: mint(), make: mint}
}

func (t *tokenTransport) current() *ghinstallation.Transport {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.cur
}

// RoundTrip sends r with the current token.
func (t *tokenTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	return t.current().RoundTrip(r)
}

// Token returns the current token, for git over HTTPS.
func (t *tokenTransport) Token(ctx context.Context) (string, error) {
	return t.current().Token(ctx)
}

// renew drops the current token; the next request gets a new one.
func (t *tokenTransport) renew() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.cur = t.make()
}
