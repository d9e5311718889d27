package botconfig

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestConfigHubSection(t *testing.T) {
	cases := []struct{ why, yaml, want string }{
		{"a server and a token file", "confighub:\n  url: https://hub.confighub.com/api\n  tokenFile: confighub-token\n  timeout: 10s\n", ""},
		{"a token from the environment", "confighub:\n  url: http://127.0.0.1:8081/api\n  tokenEnv: CONFIGHUB_TOKEN\n", ""},
		{"the URL is required", "confighub:\n  tokenEnv: T\n", "confighub.url: want an absolute http(s) URL"},
		{"no credentials in the URL", "confighub:\n  url: https://me:tok@hub.example/api\n  tokenEnv: T\n", "confighub.url: must not carry credentials"},
		{"a token is required", "confighub:\n  url: https://hub.example/api\n", "confighub: a bearer token (tokenFile or tokenEnv) is required"},
		{"one token source", "confighub:\n  url: https://hub.example/api\n  tokenEnv: T\n  tokenFile: t\n", "confighub: tokenFile and tokenEnv are exclusive"},
		{"never inline", "confighub:\n  url: https://hub.example/api\n  token: s3cret\n", "unknown key confighub.token"},
		{"a size bound is a size", "confighub:\n  url: https://hub.example/api\n  tokenEnv: T\n  maxDataSize: -1\n", "confighub.maxDataSize: must be positive"},
	}
	for _, tc := range cases {
		_, err := ParseConfig("backflow.yaml", []byte(minimalConfig+tc.yaml))
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.why, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want) || !errors.Is(err, ErrInvalidConfig)):
			t.Errorf("%s: error %v, want %q", tc.why, err, tc.want)
		}
	}
	if c, err := ParseConfig("backflow.yaml", []byte(minimalConfig)); err != nil || c.ConfigHub.Enabled() {
		t.Errorf("no section is no ConfigHub: %v", err)
	}
}

// TestConfigHubToken: the token is read from its file, relative to the
// config's folder; an error names the key and the file, never the token.
func TestConfigHubToken(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "token"), []byte("s3cret-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "backflow.yaml")
	cfg := minimalConfig + "confighub:\n  url: https://hub.example/api\n  tokenFile: token\n  timeout: 5s\n"
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := LoadConfig(path)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := c.ConfigHubToken()
	if err != nil || string(tok) != "s3cret-token" || c.ConfigHub.Timeout.Duration != 5*time.Second {
		t.Fatalf("token %q, %v, timeout %v", tok, err, c.ConfigHub.Timeout)
	}
	c.ConfigHub.TokenFile = "missing"
	if _, err := c.ConfigHubToken(); err == nil || !strings.HasPrefix(err.Error(), "confighub: ") || strings.Contains(err.Error(), "s3cret") {
		t.Fatalf("a missing token file: %v", err)
	}
}
