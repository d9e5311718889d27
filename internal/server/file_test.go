package server

import (
	"errors"
	"io/fs"
	"strings"
	"testing"
	"time"
)

func TestFileConfigResolve(t *testing.T) {
	files := map[string]string{
		"/s/webhook": "hook-canary\n",
		"/s/token":   "token-canary",
		"/s/empty":   "\n",
		"/s/urls":    "# rotation: the old token, then the new\nurl-old-canary-0123456789abcdef0123\n\nurl-new-canary-0123456789abcdef0123\n",
		"/s/short":   "url-canary\n",
	}
	readFile := func(p string) ([]byte, error) {
		if v, ok := files[p]; ok {
			return []byte(v), nil
		}
		return nil, &fs.PathError{Op: "open", Path: p, Err: fs.ErrNotExist}
	}
	env := map[string]string{"HOOK": "env-hook-canary", "EMPTY": ""}
	lookupEnv := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	zero := time.Duration(0)

	for _, tc := range []struct {
		name    string
		fc      FileConfig
		wantErr string
		check   func(t *testing.T, c Config)
	}{
		{"defaults with a secret file", FileConfig{Webhook: SecretRef{SecretFile: "/s/webhook"}}, "", func(t *testing.T, c Config) {
			// One trailing newline (as `echo > file` writes it) is not part of the secret.
			if string(c.WebhookSecret.Reveal()) != "hook-canary" || c.Schedule != DefaultSchedule || c.Jitter != DefaultJitter || c.MaxBodyBytes != DefaultMaxBodyBytes {
				t.Errorf("got %+v", c)
			}
		}},
		{"secret from the environment, jitter off", FileConfig{Webhook: SecretRef{SecretEnv: "HOOK"}, Jitter: &zero, Schedule: "@every 1m"}, "", func(t *testing.T, c Config) {
			if string(c.WebhookSecret.Reveal()) != "env-hook-canary" || c.Jitter != 0 || c.Schedule != "@every 1m" {
				t.Errorf("got %+v", c)
			}
		}},
		{"observations with a token", FileConfig{Webhook: SecretRef{SecretEnv: "HOOK"}, Observations: &PushConfig{TokenFile: "/s/token"}}, "", func(t *testing.T, c Config) {
			if string(c.ObservationToken.Reveal()) != "token-canary" || !c.ObservationSecret.Empty() {
				t.Errorf("got %+v", c)
			}
		}},
		{"secret-URL tokens, several for rotation", FileConfig{Webhook: SecretRef{SecretEnv: "HOOK"}, Observations: &PushConfig{URLTokensFile: "/s/urls"}}, "", func(t *testing.T, c Config) {
			if len(c.ObservationURLTokens) != 2 || string(c.ObservationURLTokens[1].Reveal()) != "url-new-canary-0123456789abcdef0123" {
				t.Errorf("got %d tokens", len(c.ObservationURLTokens))
			}
		}},
		{"a short secret-URL token", FileConfig{Webhook: SecretRef{SecretEnv: "HOOK"}, Observations: &PushConfig{URLTokensFile: "/s/short"}}, "token 1 is shorter than 32 characters", nil}, // a guessable URL is no credential
		{"no webhook secret", FileConfig{}, "server.webhook: a secretFile or secretEnv is required", nil},                                                                                   // refuses to start
		{"both file and env", FileConfig{Webhook: SecretRef{SecretFile: "/s/webhook", SecretEnv: "HOOK"}}, "exclusive", nil},                                                                // ambiguous source
		{"missing file", FileConfig{Webhook: SecretRef{SecretFile: "/s/nope"}}, "server.webhook: reading /s/nope: file does not exist", nil},                                                // names the file
		{"empty file", FileConfig{Webhook: SecretRef{SecretFile: "/s/empty"}}, "server.webhook: /s/empty is empty", nil},                                                                    // an empty secret is no secret
		{"empty variable", FileConfig{Webhook: SecretRef{SecretEnv: "EMPTY"}}, "EMPTY is empty or unset", nil},                                                                              // same from the environment
		{"unset variable", FileConfig{Webhook: SecretRef{SecretEnv: "UNSET"}}, "UNSET is empty or unset", nil},                                                                              // a typo in the name
		{"observations without credentials", FileConfig{Webhook: SecretRef{SecretEnv: "HOOK"}, Observations: &PushConfig{Trust: "asserted"}}, "are required", nil},                          // unauthenticated pushes
		{"bad schedule", FileConfig{Webhook: SecretRef{SecretEnv: "HOOK"}, Schedule: "soon"}, `server: schedule "soon"`, nil},                                                               // not cron
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := tc.fc.Resolve(readFile, lookupEnv)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want %q", err, tc.wantErr)
				}
				if strings.Contains(err.Error(), "canary") {
					t.Errorf("error reveals a secret: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, c)
		})
	}
	if _, err := (FileConfig{}).Resolve(readFile, lookupEnv); !errors.Is(err, ErrNoWebhookSecret) {
		t.Errorf("without a webhook secret: %v, want ErrNoWebhookSecret", err)
	}
}
