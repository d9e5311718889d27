package localhub

import (
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v4"
)

func signJWT(t *testing.T, key *rsa.PrivateKey, iss string, iat, exp time.Time) string {
	t.Helper()
	s, err := jwt.NewWithClaims(jwt.SigningMethodRS256, jwt.RegisteredClaims{
		Issuer: iss, IssuedAt: jwt.NewNumericDate(iat), ExpiresAt: jwt.NewNumericDate(exp),
	}).SignedString(key)
	if err != nil {
		t.Fatalf("signing: %v", err)
	}
	return s
}

func rawGet(t *testing.T, url, auth string) (int, map[string]any, http.Header) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var body map[string]any
	_ = json.Unmarshal(b, &body)
	return resp.StatusCode, body, resp.Header
}

func TestAppJWTRules(t *testing.T) {
	e := newEnv(t, Options{})
	other, err := rsa.GenerateKey(rand.Reader, 1024)
	if err != nil {
		t.Fatal(err)
	}
	now := e.clock.Now()
	id := strconv.FormatInt(e.hub.AppID(), 10)
	cases := []struct {
		name   string
		token  string
		status int
		msg    string
	}{
		// why: GitHub's own advice (iat 60 s in the past, exp 10 min ahead) is valid
		{"valid", signJWT(t, appKey(t), id, now.Add(-time.Minute), now.Add(9*time.Minute)), 200, ""},
		// why: an expired JWT is refused
		{"expired", signJWT(t, appKey(t), id, now.Add(-20*time.Minute), now.Add(-11*time.Minute)), 401, "'Expiration time' claim ('exp') must be a numeric value"},
		// why: exp more than 10 minutes after iat is refused
		{"too long", signJWT(t, appKey(t), id, now, now.Add(11*time.Minute)), 401, "too far in the future"},
		// why: iat in the future beyond the skew allowance is refused
		{"iat in future", signJWT(t, appKey(t), id, now.Add(5*time.Minute), now.Add(8*time.Minute)), 401, "'Issued at' claim"},
		// why: another App's id as issuer is refused
		{"wrong issuer", signJWT(t, appKey(t), "999999", now, now.Add(5*time.Minute)), 401, "Integration not found"},
		// why: an installation token is not a JWT
		{"not a JWT", "ghs_notajwt", 401, "could not be decoded"},
		// why: a JWT signed by another key is refused
		{"wrong key", signJWT(t, other, id, now, now.Add(5*time.Minute)), 401, "could not be decoded"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			status, body, _ := rawGet(t, e.srv.URL+"/app", "Bearer "+tc.token)
			if status != tc.status {
				t.Fatalf("status %d, want %d (%v)", status, tc.status, body)
			}
			if tc.msg != "" {
				if msg, _ := body["message"].(string); !strings.Contains(msg, tc.msg) {
					t.Fatalf("message %q, want %q", msg, tc.msg)
				}
				if body["documentation_url"] == nil {
					t.Fatalf("no documentation_url in %v", body)
				}
			}
		})
	}
}

func TestAppEndpointsAndTokenExpiry(t *testing.T) {
	e := newEnv(t, Options{})
	app := e.appClient(t)
	a, resp, err := app.Apps.Get(e.ctx, "")
	mustStatus(t, "GET /app", resp, err, 200)
	if a.GetID() != e.hub.AppID() {
		t.Fatalf("app id %d, want %d", a.GetID(), e.hub.AppID())
	}
	insts, resp, err := app.Apps.ListInstallations(e.ctx, nil)
	mustStatus(t, "list installations", resp, err, 200)
	if len(insts) != 1 || insts[0].GetID() != e.inst || insts[0].GetAccount().GetLogin() != testOwner {
		t.Fatalf("installations %v", insts)
	}
	inst, resp, err := app.Apps.FindRepositoryInstallation(e.ctx, testOwner, testRepo)
	mustStatus(t, "repo installation", resp, err, 200)
	if inst.GetID() != e.inst {
		t.Fatalf("installation %d", inst.GetID())
	}
	_, resp, err = app.Apps.FindRepositoryInstallation(e.ctx, testOwner, "nope")
	mustStatus(t, "unknown repo installation", resp, err, 404)
	_, resp, err = app.Apps.CreateInstallationToken(e.ctx, 424242, nil)
	mustStatus(t, "token for unknown installation", resp, err, 404)

	// An App JWT does not open installation endpoints.
	_, resp, err = app.Repositories.Get(e.ctx, testOwner, testRepo)
	mustStatus(t, "repo with JWT", resp, err, 401)

	tok, resp, err := app.Apps.CreateInstallationToken(e.ctx, e.inst, nil)
	mustStatus(t, "create token", resp, err, 201)
	if want := e.clock.Now().Add(time.Hour); tok.GetExpiresAt().Sub(want).Abs() > time.Second {
		t.Fatalf("expires_at %v, want %v", tok.GetExpiresAt(), want)
	}
	c := e.tokenClient(t, tok.GetToken())
	repos, resp, err := c.Apps.ListRepos(e.ctx, nil)
	mustStatus(t, "installation repos", resp, err, 200)
	if repos.GetTotalCount() != 1 || repos.Repositories[0].GetFullName() != testFull {
		t.Fatalf("repos %v", repos)
	}

	// Scoped to an unknown repository: refused like GitHub.
	_, resp, err = app.Apps.CreateInstallationToken(e.ctx, e.inst, &githubTokenOptions{Repositories: []string{"missing"}})
	mustStatus(t, "token for unknown repo", resp, err, 422)

	e.clock.Advance(time.Hour + time.Second)
	_, resp, err = c.Repositories.Get(e.ctx, testOwner, testRepo)
	mustStatus(t, "expired token", resp, err, 401)
	if !strings.Contains(err.Error(), "Bad credentials") {
		t.Fatalf("error %v, want Bad credentials", err)
	}

	status, body, _ := rawGet(t, e.srv.URL+"/repos/acme/gitops", "")
	if status != 401 || body["message"] != "Requires authentication" {
		t.Fatalf("no auth: %d %v", status, body)
	}
}
