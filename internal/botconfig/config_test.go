package botconfig

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/backflow-dev/backflow/internal/forge"
)

const minimalConfig = "version: 1\ngithub:\n  appId: 7\n  privateKeyEnv: KEY\n"

func TestParseConfig(t *testing.T) {
	cases := []struct {
		name, why, yaml, want string
	}{
		{"minimal", "an App id and a key are all that is required", minimalConfig, ""},
		{"unknown key", "unknown keys are errors naming their path", minimalConfig + "pacing:\n  writesPerMinit: 10\n", "backflow.yaml: line 6: unknown key pacing.writesPerMinit"},
		{"nested unknown", "unknown keys inside sources are named with the cluster and index", minimalConfig + "observations:\n  c1:\n    - path: x\n      trusted: audit-log\n", "line 8: unknown key observations.c1[0].trusted"},
		{"wrong type", "a string where an integer belongs", "version: 1\ngithub:\n  appId: seven\n  privateKeyEnv: KEY\n", "line 3: github.appId: want an integer"},
		{"no key", "a private key source is required", "version: 1\ngithub:\n  appId: 7\n", "github: one of privateKeyFile or privateKeyEnv is required"},
		{"two keys", "the key sources are exclusive", minimalConfig + "  privateKeyFile: k.pem\n", "privateKeyFile and privateKeyEnv are exclusive"},
		{"version", "only version 1 is read", "version: 2\ngithub:\n  appId: 7\n  privateKeyEnv: KEY\n", "version: must be 1"},
		{"method", "commit methods are git and api", minimalConfig + "commitMethod: ssh\n", "commitMethod: want git or api"},
		{"base URL slash", "go-github needs the trailing slash", minimalConfig + "  baseURL: https://ghe.example.com/api/v3\n", "github.baseURL: must end with /"},
		{"base URL credentials", "credentials never live in URLs", minimalConfig + "  baseURL: https://u:p@ghe.example.com/\n", "must not carry credentials"},
		{"repository name", "the allowlist names owner/name", minimalConfig + "repositories: [gitops]\n", `repositories[0]: want owner/name, got "gitops"`},
		{"trust", "trust ceilings are the four attribution levels", minimalConfig + "observations:\n  c1:\n    - path: x\n      trust: total\n", "observations.c1[0].trust: want unknown"},
		{"source", "a source is a path or a URL", minimalConfig + "observations:\n  c1:\n    - trust: asserted\n", "observations.c1[0]: one of path or url is required"},
		{"writes", "GitHub allows 80 content-creating requests a minute", minimalConfig + "pacing:\n  writesPerMinute: 100\n", "pacing.writesPerMinute: want 1 to 80"},
		{"duration", "durations are Go durations", minimalConfig + "pacing:\n  maxWait: soon\n", "line 6: pacing.maxWait: want a duration"},
		{"alias", "aliases are refused, so no alias bomb expands", "version: 1\ngithub: &g\n  appId: 7\n  privateKeyEnv: KEY\nrepositories: *g\n", "aliases are not allowed"},
		{"server section", "backflow serve's section is carried, not checked here", minimalConfig + "server:\n  listen: :8080\n", ""},
		{"empty", "an empty file is not a config", "", "empty file"},
		{"admission without TLS", "the webhook is served over TLS only", minimalConfig + "admission:\n  listen: :8443\n", "admission: certFile and keyFile are required"},
		{"admission listen", "the listener is host:port", minimalConfig + "admission:\n  listen: \"8443\"\n  certFile: c\n  keyFile: k\n", "admission.listen: want host:port"},
		{"admission identity", "an empty GitOps identity would match nobody's intent", minimalConfig + "admission:\n  certFile: c\n  keyFile: k\n  gitopsUsers: [\" \"]\n", "admission.gitopsUsers[0]: empty"},
		{"admission group", "an empty GitOps group is named with its index", minimalConfig + "admission:\n  certFile: c\n  keyFile: k\n  gitopsGroups: [flux, \"\"]\n", "admission.gitopsGroups[1]: empty"},
		{"GitOps manager", "an empty field manager is named with its index", minimalConfig + "gitopsManagers: [\"  \"]\n", "gitopsManagers[0]: empty"},
		{"charts", "the chart cache and the bounds of a fetch", minimalConfig + "charts:\n  cacheDir: cache\n  maxBytes: 1048576\n  timeout: 10s\n", ""},
		{"charts cap", "a fetch cap is a size", minimalConfig + "charts:\n  maxBytes: -1\n", "charts.maxBytes: must be positive"},
		{"charts timeout", "a fetch timeout is a duration", minimalConfig + "charts:\n  timeout: -1s\n", "charts.timeout: must be positive"},
		{"render bounds", "the bounds of one rendering", minimalConfig + "charts:\n  render:\n    timeout: 10s\n    maxMemory: 268435456\n    maxOutputBytes: 1048576\n    maxObjects: 500\n", ""},
		{"render memory", "a memory budget is a size", minimalConfig + "charts:\n  render:\n    maxMemory: -1\n", "charts.render.maxMemory: must not be negative"},
		{"charts hosts", "hosts a fetch may reach besides the chart's own", minimalConfig + "charts:\n  allowedHosts: [charts.example.com, \"registry.example.com:5000\"]\n", ""},
		{"charts host URL", "an allowed host is a host, not a URL", minimalConfig + "charts:\n  allowedHosts: [\"https://charts.example.com/x\"]\n", "charts.allowedHosts[0]"},
		{"admission", "a complete admission section", minimalConfig + "admission:\n  certFile: c\n  keyFile: k\n  gitopsUsers: [flux]\n  ttl: 1m\n  maxHeldBytes: 33554432\n  maxInFlightBytes: 8388608\n", ""},
		{"admission budget", "the records' budget is a size", minimalConfig + "admission:\n  certFile: c\n  keyFile: k\n  maxHeldBytes: -1\n", "admission.maxHeldBytes: must be positive"},
		{"admission in flight", "the bytes in flight are a size", minimalConfig + "admission:\n  certFile: c\n  keyFile: k\n  maxInFlightBytes: -1\n", "admission.maxInFlightBytes: must be positive"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseConfig("backflow.yaml", []byte(tc.yaml))
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("%s: %v", tc.why, err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("%s: error %v, want %q", tc.why, err, tc.want)
			case tc.want != "" && !errors.Is(err, ErrInvalidConfig):
				t.Fatalf("%s: %v does not wrap ErrInvalidConfig", tc.why, err)
			}
		})
	}
}

// The example config in the repository is valid and says what it shows.
func TestExampleConfig(t *testing.T) {
	c, err := LoadConfig(filepath.Join("..", "..", "config", "bot", "backflow.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if c.Method() != forge.CommitGit || len(c.Observations["prod-us-east-1"])+len(c.Observations["prod-eu-west-1"]) != 3 || c.GitHub.AppSlug != "backflow" || c.Charts.MaxBytes != 20<<20 {
		t.Errorf("example config read as %+v", c)
	}
}

// Relative paths are read from the config's folder.
func TestLoadConfigAnchorsPaths(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "bot.yaml")
	data := "version: 1\ngithub:\n  appId: 7\n  privateKeyFile: keys/app.pem\nobservations:\n  c1:\n    - path: obs\ncharts:\n  cacheDir: charts\n"
	if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := LoadConfig(p)
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(dir, "keys", "app.pem"); c.GitHub.PrivateKeyFile != want {
		t.Errorf("key file %s, want %s", c.GitHub.PrivateKeyFile, want)
	}
	if want := filepath.Join(dir, "charts"); c.Charts.CacheDir != want {
		t.Errorf("chart cache %s, want %s", c.Charts.CacheDir, want)
	}
	if src := c.Observations["c1"][0]; src.Path != filepath.Join(dir, "obs") {
		t.Errorf("source %+v", src)
	}
	if _, err := c.PrivateKey(); err == nil || !strings.Contains(err.Error(), "keys/app.pem") {
		t.Errorf("a missing key file: %v", err)
	}
}
