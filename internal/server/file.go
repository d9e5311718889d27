package server

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"
)

// FileConfig is the server section of backflow serve's config file
// (server: in YAML). Secrets are never in it: it names the file or the
// environment variable that holds each one.
type FileConfig struct {
	// Listen is host:port; default ":8080".
	Listen string `yaml:"listen"`
	// Schedule is a cron expression or descriptor; default "*/5 * * * *".
	Schedule string `yaml:"schedule"`
	// Jitter delays each scheduled run by up to this; default 30s, 0 disables.
	Jitter *time.Duration `yaml:"jitter"`
	// MaxBodyBytes caps observation bodies; default 2 MiB.
	MaxBodyBytes int64 `yaml:"maxBodyBytes"`
	// MaxWebhookBytes caps webhook bodies; default 25 MiB (GitHub's cap).
	MaxWebhookBytes int64 `yaml:"maxWebhookBytes"`
	// ShutdownTimeout bounds how long running cycles may finish; default 30s.
	ShutdownTimeout time.Duration `yaml:"shutdownTimeout"`
	// Revalidate is the longest a repository's cached state is trusted
	// without a check; default 10m.
	Revalidate time.Duration `yaml:"revalidate"`
	// MaxConcurrent bounds cycles running at once; default 4.
	MaxConcurrent int `yaml:"maxConcurrent"`
	// MaxConcurrentPerInstallation bounds the cycles of one installation's
	// repositories running at once; default 4.
	MaxConcurrentPerInstallation int `yaml:"maxConcurrentPerInstallation"`
	// Webhook holds the GitHub App's webhook secret. Required.
	Webhook SecretRef `yaml:"webhook"`
	// Observations enables POST /observations; absent disables it.
	Observations *PushConfig `yaml:"observations"`
}

// SecretRef names where a secret is: a file (as a Kubernetes Secret is
// mounted) or an environment variable; exactly one.
type SecretRef struct {
	// SecretFile is a path; one trailing newline is ignored.
	SecretFile string `yaml:"secretFile"`
	// SecretEnv names an environment variable.
	SecretEnv string `yaml:"secretEnv"`
}

// PushConfig is how pushes to /observations are authenticated and trusted.
type PushConfig struct {
	// SecretFile/SecretEnv hold the HMAC secret of X-Backflow-Signature-256.
	SecretFile string `yaml:"secretFile"`
	SecretEnv  string `yaml:"secretEnv"`
	// TokenFile/TokenEnv hold the bearer token.
	TokenFile string `yaml:"tokenFile"`
	TokenEnv  string `yaml:"tokenEnv"`
	// URLTokensFile/URLTokensEnv hold the tokens of the secret URL
	// /observations/{token}: one per line in the file, comma-separated in
	// the variable. Each is at least MinURLTokenLength characters.
	URLTokensFile string `yaml:"urlTokensFile"`
	URLTokensEnv  string `yaml:"urlTokensEnv"`
	// URLTrust is the trust ceiling of documents pushed to the secret URL;
	// default asserted. The token travels in the URL, where proxies and
	// access logs may keep it, so it is believed no further unless the
	// operator says so. Passed to the sink.
	URLTrust string `yaml:"urlTrust"`
	// Trust is the trust ceiling of pushed observations (unknown, asserted,
	// managed-fields, admission, audit-log); default asserted. The server passes it to
	// the observation sink without reading it.
	Trust string `yaml:"trust"`
	// Cluster, when set, is the cluster pushed documents are of: documents
	// that name no cluster are taken to be of it, and documents that name
	// another are refused. Passed to the sink too.
	Cluster string `yaml:"cluster"`
}

// Resolve turns the file config into a Config, reading each secret with
// readFile or lookupEnv (os.ReadFile and os.LookupEnv in the command).
// Errors name the key and the file or variable, never a secret's value.
func (f FileConfig) Resolve(
	readFile func(string) ([]byte, error),
	lookupEnv func(string) (string, bool),
) (Config, error) {
	c := DefaultConfig()
	if f.Listen != "" {
		c.Listen = f.Listen
	}
	if f.Schedule != "" {
		c.Schedule = f.Schedule
	}
	if f.Jitter != nil {
		c.Jitter = *f.Jitter
	}
	if f.MaxBodyBytes != 0 {
		c.MaxBodyBytes = f.MaxBodyBytes
	}
	if f.MaxWebhookBytes != 0 {
		c.MaxWebhookBytes = f.MaxWebhookBytes
	}
	if f.ShutdownTimeout != 0 {
		c.ShutdownTimeout = f.ShutdownTimeout
	}
	if f.Revalidate != 0 {
		c.Revalidate = f.Revalidate
	}
	if f.MaxConcurrent != 0 {
		c.MaxConcurrent = f.MaxConcurrent
	}
	if f.MaxConcurrentPerInstallation != 0 {
		c.MaxConcurrentPerInstallation = f.MaxConcurrentPerInstallation
	}
	load := func(key, file, env string, required bool) (Secret, error) {
		switch {
		case file != "" && env != "":
			return Secret{}, fmt.Errorf("server.%s: secretFile and secretEnv are exclusive", key)
		case file != "":
			b, err := readFile(file)
			if err != nil {
				var pe *os.PathError
				if errors.As(err, &pe) {
					err = pe.Err
				}
				return Secret{}, fmt.Errorf("server.%s: reading %s: %w", key, file, err)
			}
			b = bytes.TrimSuffix(bytes.TrimSuffix(b, []byte("\n")), []byte("\r"))
			if len(b) == 0 {
				return Secret{}, fmt.Errorf("server.%s: %s is empty", key, file)
			}
			return NewSecret(b), nil
		case env != "":
			v, ok := lookupEnv(env)
			if !ok || v == "" {
				return Secret{}, fmt.Errorf("server.%s: environment variable %s is empty or unset", key, env)
			}
			return NewSecret([]byte(v)), nil
		case required:
			return Secret{}, fmt.Errorf("server.%s: a secretFile or secretEnv is required: %w", key, ErrNoWebhookSecret)
		}
		return Secret{}, nil
	}
	var err error
	if c.WebhookSecret, err = load("webhook", f.Webhook.SecretFile, f.Webhook.SecretEnv, true); err != nil {
		return c, err
	}
	if p := f.Observations; p != nil {
		if c.ObservationSecret, err = load("observations", p.SecretFile, p.SecretEnv, false); err != nil {
			return c, err
		}
		if p.TokenFile != "" && p.TokenEnv != "" {
			return c, errors.New("server.observations: tokenFile and tokenEnv are exclusive")
		}
		if c.ObservationToken, err = load("observations", p.TokenFile, p.TokenEnv, false); err != nil {
			return c, err
		}
		if c.ObservationURLTokens, err = loadURLTokens(p, readFile, lookupEnv); err != nil {
			return c, err
		}
		if c.ObservationSecret.Empty() && c.ObservationToken.Empty() && len(c.ObservationURLTokens) == 0 {
			return c, errors.New(
				"server.observations: a secret (secretFile or secretEnv), a bearer token (tokenFile or tokenEnv) or secret-URL " +
					"tokens (urlTokensFile or urlTokensEnv) are required",
			)
		}
	}
	if _, err := c.check(f.Observations != nil); err != nil {
		return c, fmt.Errorf("server: %w", err)
	}
	return c, nil
}

// MinURLTokenLength is the shortest secret-URL token accepted: the token is
// the URL's only credential, so it must not be guessable.
const MinURLTokenLength = 32

// loadURLTokens reads the secret-URL tokens: one per line of the file (blank
// lines and lines starting with # are skipped), or comma-separated in the
// variable. Errors name the file or variable and the line, never a token.
func loadURLTokens(
	p *PushConfig,
	readFile func(string) ([]byte, error),
	lookupEnv func(string) (string, bool),
) ([]Secret, error) {
	var raw []string
	var from string
	switch {
	case p.URLTokensFile != "" && p.URLTokensEnv != "":
		return nil, errors.New("server.observations: urlTokensFile and urlTokensEnv are exclusive")
	case p.URLTokensFile != "":
		from = p.URLTokensFile
		b, err := readFile(p.URLTokensFile)
		if err != nil {
			var pe *os.PathError
			if errors.As(err, &pe) {
				err = pe.Err
			}
			return nil, fmt.Errorf("server.observations.urlTokensFile: reading %s: %w", p.URLTokensFile, err)
		}
		raw = strings.Split(string(b), "\n")
	case p.URLTokensEnv != "":
		from = "$" + p.URLTokensEnv
		v, ok := lookupEnv(p.URLTokensEnv)
		if !ok || v == "" {
			return nil, fmt.Errorf("server.observations.urlTokensEnv: environment variable %s is empty or unset", p.URLTokensEnv)
		}
		raw = strings.Split(v, ",")
	default:
		return nil, nil
	}
	var out []Secret
	for i, t := range raw {
		t = strings.TrimSpace(t)
		if t == "" || strings.HasPrefix(t, "#") {
			continue
		}
		if len(t) < MinURLTokenLength || strings.ContainsAny(t, "/?#% ") {
			return nil, fmt.Errorf(
				"server.observations: %s: token %d is shorter than %d characters or holds a character a URL path cannot carry as "+
					"it is (/ ? # %% or a space)",
				from,
				i+1,
				MinURLTokenLength,
			)
		}
		out = append(out, NewSecret([]byte(t)))
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("server.observations: %s holds no token", from)
	}
	return out, nil
}
