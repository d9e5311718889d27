package botconfig

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"

	yaml "go.yaml.in/yaml/v3"

	"github.com/backflow-dev/backflow/internal/forge"
	"github.com/backflow-dev/backflow/internal/observe"
	"github.com/backflow-dev/backflow/internal/repoconfig"
	"github.com/backflow-dev/backflow/internal/yamlnode"
)

// ConfigVersion is the only bot config version.
const ConfigVersion = 1

// maxConfigSize caps the bot config file.
const maxConfigSize = 1 << 20

// maxConfigNodes bounds the YAML nodes decoded, so an alias bomb is refused.
const maxConfigNodes = 20_000

// ErrInvalidConfig marks a bot config that was read but is not valid; other
// errors from LoadConfig mean it could not be read at all.
var ErrInvalidConfig = errors.New("invalid bot config")

// Config is the bot's own configuration (not a repository's): how it
// authenticates, which repositories it works on, how it commits, and where
// observations come from.
type Config struct {
	// Version must be 1.
	Version int `yaml:"version"`
	// GitHub says how the App reaches GitHub (or Enterprise, or the local hub).
	GitHub GitHub `yaml:"github"`
	// Repositories is the allowlist ("owner/name"); empty means every
	// repository the App's installations can see.
	Repositories []string `yaml:"repositories"`
	// CommitMethod is git (clone, commit, push; the default) or api (the
	// Git database API, signed by GitHub for the App).
	CommitMethod string `yaml:"commitMethod"`
	// Observations maps a cluster (kube context) to the sources that observe it.
	Observations map[string][]SourceConfig `yaml:"observations"`
	// GitOpsManagers are the field managers whose write of a field back to
	// its desired value is the GitOps controller's forward apply, not a
	// person undoing the change. Empty means bot.DefaultGitOpsManagers.
	GitOpsManagers []string `yaml:"gitopsManagers"`
	// Pacing tunes retries and the request budget.
	Pacing Pacing `yaml:"pacing"`
	// Charts bounds and caches the fetching of units' remote charts.
	Charts ChartsConfig `yaml:"charts"`
	// Audit attributes every source's observations from audit events.
	Audit AuditConfig `yaml:"audit"`
	// Admission serves the validating admission webhook (backflow serve)
	// whose confirmed records attribute every source's observations.
	Admission AdmissionConfig `yaml:"admission"`
	// ConfigHub is the ConfigHub server of units whose desired state is a
	// ConfigHub Unit (units[].confighub in a repo config).
	ConfigHub ConfigHubConfig `yaml:"confighub"`
	// Hold lets backflow write the hold's annotations on the watched
	// objects of units that opt in (internal/hold); off, it only reads
	// the clusters.
	Hold HoldConfig `yaml:"hold"`
	// Server is the section of backflow serve (listen address, schedule,
	// webhook secret), kept as it was written: the server reads it, with
	// its own strict rules.
	Server yaml.Node `yaml:"server"`

	// dir is the folder relative paths are read from.
	dir string
}

// GitHub says how to authenticate as the App and where its API is.
type GitHub struct {
	// AppID is the GitHub App's id.
	AppID int64 `yaml:"appId"`
	// PrivateKeyFile is the path of the App's PEM private key.
	PrivateKeyFile string `yaml:"privateKeyFile"`
	// PrivateKeyEnv names an environment variable holding the PEM key.
	PrivateKeyEnv string `yaml:"privateKeyEnv"`
	// BaseURL is the REST API root ending in "/"; empty means api.github.com.
	BaseURL string `yaml:"baseURL"`
	// GraphQLURL is the GraphQL endpoint; empty derives it from BaseURL.
	GraphQLURL string `yaml:"graphqlURL"`
	// GitURL is the root of clone URLs; empty derives it from BaseURL.
	GitURL string `yaml:"gitURL"`
	// AppSlug is the App's URL name, for the commit author; empty asks the forge.
	AppSlug string `yaml:"appSlug"`
	// BotUserID is the user id of "<appSlug>[bot]", for the commit author's
	// noreply address; zero leaves the id out of the address.
	BotUserID int64 `yaml:"botUserId"`
}

// SourceConfig is one observation source: a file or folder, a URL, or the
// cluster itself (kube).
type SourceConfig struct {
	// Path is a file or a folder of observation documents.
	Path string `yaml:"path"`
	// URL is polled over HTTP(S) with conditional requests.
	URL string `yaml:"url"`
	// Trust is the source's trust ceiling: unknown, asserted (the default),
	// managed-fields, admission or audit-log.
	Trust string `yaml:"trust"`
	// Timeout bounds one poll of a URL; zero means 10s.
	Timeout Duration `yaml:"timeout"`
	// MaxBytes caps one input; zero means 8 MiB.
	MaxBytes int64 `yaml:"maxBytes"`
	// Kube watches the cluster's live objects directly; its attributions
	// come from managedFields and the audit events, not from a ceiling.
	Kube KubeConfig `yaml:"kube"`
}

// HoldConfig turns holds on for the clusters watched with kube sources.
type HoldConfig struct {
	// Enabled lets backflow place and release holds on the watched objects
	// of the units whose repository config opts in (hold:).
	Enabled bool `yaml:"enabled"`
}

// KubeConfig is how to reach a cluster and which objects to watch in it
// (source.KubeConfig in the bot config's types).
type KubeConfig struct {
	// Kubeconfig is a kubeconfig file; empty uses $KUBECONFIG or ~/.kube/config.
	Kubeconfig string `yaml:"kubeconfig"`
	// Context is the kubeconfig context; empty means the current one.
	Context string `yaml:"context"`
	// InCluster uses the pod's service account instead of a kubeconfig.
	InCluster bool `yaml:"inCluster"`
	// Objects are the object keys to watch (the units' objects, with
	// literal apiVersion and Kind).
	Objects []string `yaml:"objects"`
	// IgnoreManagers are field managers whose writes are never live changes.
	IgnoreManagers []string `yaml:"ignoreManagers"`
	// Resync is the watches' re-list period; zero means 10m.
	Resync Duration `yaml:"resync"`
	// TransitionWindow is how long a person's change the watch saw is kept
	// after the write, so that a GitOps controller's revert before the
	// cycle, or before the audit event that attributes it arrives (the
	// audit webhook's batches), does not erase it; zero means 2m. It must
	// be longer than the attribution's delivery delay.
	TransitionWindow Duration `yaml:"transitionWindow"`
}

// AuditConfig names the Kubernetes audit logs that attribute live changes
// to authenticated users.
type AuditConfig struct {
	// LogFiles are audit log files (JSON lines), read as they grow.
	LogFiles []string `yaml:"logFiles"`
	// Webhook enables POST /audit on backflow serve, for the API server's
	// audit webhook backend.
	Webhook AuditWebhook `yaml:"webhook"`
}

// ConfigHubConfig names the ConfigHub server and its bearer token, by a
// file or an environment variable, never inline.
type ConfigHubConfig struct {
	// URL is the API's base, e.g. https://hub.confighub.com/api.
	URL string `yaml:"url"`
	// TokenFile is the path of the bearer token.
	TokenFile string `yaml:"tokenFile"`
	// TokenEnv names an environment variable holding the bearer token.
	TokenEnv string `yaml:"tokenEnv"`
	// Timeout bounds one request; zero means 30s.
	Timeout Duration `yaml:"timeout"`
	// MaxDataSize bounds a Unit's data in bytes; zero means 4 MiB.
	MaxDataSize int64 `yaml:"maxDataSize"`
}

// Enabled reports whether a ConfigHub server is configured.
func (c ConfigHubConfig) Enabled() bool { return c != ConfigHubConfig{} }

// validate checks the section; fail records a problem at a key.
func (c ConfigHubConfig) validate(fail failFunc) {
	if !c.Enabled() {
		return
	}
	if u, err := url.Parse(c.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		fail("confighub.url", "want an absolute http(s) URL (the API's base, e.g. https://hub.confighub.com/api)")
	} else if u.User != nil {
		fail("confighub.url", "must not carry credentials: name the token with tokenFile or tokenEnv")
	}
	switch {
	case c.TokenFile != "" && c.TokenEnv != "":
		fail("confighub", "tokenFile and tokenEnv are exclusive")
	case c.TokenFile == "" && c.TokenEnv == "":
		fail("confighub", "a bearer token (tokenFile or tokenEnv) is required")
	}
	if c.Timeout.Duration < 0 {
		fail("confighub.timeout", "must be positive")
	}
	if c.MaxDataSize < 0 {
		fail("confighub.maxDataSize", "must be positive")
	}
}

// ConfigHubToken reads the ConfigHub token from the file or environment
// variable the config names; the error names where, never what.
func (c *Config) ConfigHubToken() ([]byte, error) {
	return c.Secret("confighub", c.ConfigHub.TokenFile, c.ConfigHub.TokenEnv)
}

// AuditWebhook is the credential of POST /audit: a bearer token (what the
// webhook backend's kubeconfig sends), an HMAC secret, or both; each named
// by a file or an environment variable, never inline.
type AuditWebhook struct {
	TokenFile  string `yaml:"tokenFile"`
	TokenEnv   string `yaml:"tokenEnv"`
	SecretFile string `yaml:"secretFile"`
	SecretEnv  string `yaml:"secretEnv"`
	// MaxBytes caps one batch; zero means 16 MiB.
	MaxBytes int64 `yaml:"maxBytes"`
}

// Enabled reports whether the webhook is configured.
func (w AuditWebhook) Enabled() bool { return w != AuditWebhook{} }

// AdmissionConfig is the validating admission webhook of backflow serve:
// POST /admission on a TLS listener of its own.
type AdmissionConfig struct {
	// Listen is host:port of the TLS listener, ":8443" when unset.
	Listen string `yaml:"listen"`
	// CertFile and KeyFile are the serving certificate and key (PEM), as
	// cert-manager's or a kubernetes.io/tls Secret is mounted. Required.
	CertFile string `yaml:"certFile"`
	KeyFile  string `yaml:"keyFile"`
	// ClientCAFile, when set, requires API server client certificates
	// signed by it (self-managed API servers that present one).
	ClientCAFile string `yaml:"clientCAFile"`
	// GitOpsUsers and GitOpsGroups are the GitOps controllers' identities
	// (system:serviceaccount:flux-system:helm-controller, say): their
	// writes are desired state, not recorded as changes.
	GitOpsUsers  []string `yaml:"gitopsUsers"`
	GitOpsGroups []string `yaml:"gitopsGroups"`
	// MaxBytes caps one review; zero means 4 MiB.
	MaxBytes int64 `yaml:"maxBytes"`
	// TTL is how long a record waits for the watch to confirm it; zero
	// means 2m.
	TTL Duration `yaml:"ttl"`
	// MaxHeldBytes bounds the memory the records hold, waiting and
	// confirmed together; a review that does not fit is refused. Zero
	// means 16 MiB.
	MaxHeldBytes int64 `yaml:"maxHeldBytes"`
	// MaxInFlightBytes bounds the bytes of the reviews being read at once,
	// each weighed by its Content-Length (the body cap when it gives
	// none); a review that does not fit is answered 429 with Retry-After.
	// Zero means 8 MiB.
	MaxInFlightBytes int64 `yaml:"maxInFlightBytes"`
}

// Enabled reports whether the webhook is configured.
func (a AdmissionConfig) Enabled() bool { return !reflect.ValueOf(a).IsZero() }

// DefaultAdmissionListen is the admission listener's address when unset.
const DefaultAdmissionListen = ":8443"

// Pacing tunes how the forge adapter spends GitHub's request budget.
type Pacing struct {
	// WritesPerMinute caps content-creating requests; zero means 80.
	WritesPerMinute int `yaml:"writesPerMinute"`
	// MaxWait is the longest rate-limit embargo waited out inside a cycle;
	// longer ones end the cycle. Zero means 2m.
	MaxWait Duration `yaml:"maxWait"`
	// Attempts bounds tries of a failing idempotent request; zero means 4.
	Attempts int `yaml:"attempts"`
	// RequestTimeout bounds one HTTP attempt; zero means 30s.
	RequestTimeout Duration `yaml:"requestTimeout"`
	// Backoff is the first retry delay; zero means 500ms.
	Backoff Duration `yaml:"backoff"`
}

// ChartsConfig says where the render witness caches the charts units name
// in a chart repository or an OCI registry, and how far one fetch may go.
type ChartsConfig struct {
	// CacheDir holds fetched archives by digest; default
	// render.DefaultCacheDir (relative to the config file's folder).
	CacheDir string `yaml:"cacheDir"`
	// MaxBytes caps one fetch (default render.DefaultFetchMaxBytes).
	MaxBytes int64 `yaml:"maxBytes"`
	// Timeout bounds one fetch (default render.DefaultFetchTimeout).
	Timeout Duration `yaml:"timeout"`
	// AllowedHosts are the hosts (host, or host:port) a fetch may be
	// redirected to besides its own, a chart repository's index may name
	// the archive on besides its own, and a Chart.lock may pin
	// dependencies to besides the host of the unit's chart.
	AllowedHosts []string `yaml:"allowedHosts"`
	// Render bounds one rendering (render.Bounds, built by internal/app;
	// render's defaults where zero).
	Render RenderConfig `yaml:"render"`
}

// RenderConfig bounds one rendering of a unit's chart: its wall time, the
// memory of the process it runs in, and the bytes and documents it renders.
type RenderConfig struct {
	Timeout        Duration `yaml:"timeout"`
	MaxMemory      int64    `yaml:"maxMemory"`
	MaxOutputBytes int64    `yaml:"maxOutputBytes"`
	MaxObjects     int      `yaml:"maxObjects"`
}

// Duration is a Go duration string (30s, 10m, 1h), read as a repository
// config's durations are.
type Duration = repoconfig.Duration

// LoadConfig reads and validates the bot config at path. Relative paths in
// it (the private key file, observation paths) are made absolute against
// the config file's folder.
func LoadConfig(path string) (*Config, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("reading bot config: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxConfigSize+1))
	if err != nil {
		return nil, fmt.Errorf("reading bot config %s: %w", path, err)
	}
	if len(data) > maxConfigSize {
		return nil, fmt.Errorf("%s: larger than %d bytes: %w", path, maxConfigSize, ErrInvalidConfig)
	}
	c, err := ParseConfig(filepath.Base(path), data)
	if err != nil {
		return nil, err
	}
	c.dir = filepath.Dir(path)
	c.GitHub.PrivateKeyFile = c.Resolve(c.GitHub.PrivateKeyFile)
	c.Charts.CacheDir = c.Resolve(c.Charts.CacheDir)
	for _, sources := range c.Observations {
		for i := range sources {
			sources[i].Path = c.Resolve(sources[i].Path)
		}
	}
	return c, nil
}

// ParseConfig decodes and validates a bot config strictly: unknown keys and
// values of the wrong type are errors naming their path. file names the
// input in messages.
func ParseConfig(file string, data []byte) (*Config, error) {
	c := &Config{dir: "."}
	fieldErrs, err := yamlnode.DecodeFile(data, c, yamlnode.Options{MaxNodes: maxConfigNodes})
	if err != nil {
		return nil, fmt.Errorf("%s: %w: %w", file, err, ErrInvalidConfig)
	}
	var errs []string
	for _, e := range fieldErrs {
		errs = append(errs, e.FileMessage())
	}
	errs = append(errs, c.validate()...)
	if len(errs) > 0 {
		return nil, fmt.Errorf("%s: %s: %w", file, strings.Join(errs, "; "), ErrInvalidConfig)
	}
	return c, nil
}

// failFunc records a problem at a key of the bot config: the key's path
// (github.appId, observations.prod[0].url) and what is wrong with its value.
type failFunc func(path, format string, a ...any)

// blanks fails each item of list, the value at key, that is empty or
// only spaces.
func (fail failFunc) blanks(key string, list []string) {
	for i, v := range list {
		if strings.TrimSpace(v) == "" {
			fail(fmt.Sprintf("%s[%d]", key, i), "empty")
		}
	}
}

// validate checks the config section by section and returns its problems,
// each as "path: message", in the order of the sections.
func (c *Config) validate() []string {
	var errs []string
	fail := failFunc(func(path, format string, a ...any) { errs = append(errs, path+": "+fmt.Sprintf(format, a...)) })
	if c.Version != ConfigVersion {
		fail("version", "must be %d", ConfigVersion)
	}
	c.GitHub.validate(fail)
	c.validateRepositories(fail)
	switch c.CommitMethod {
	case "", string(forge.CommitGit), string(forge.CommitAPI):
	default:
		fail("commitMethod", "want git or api, got %q", c.CommitMethod)
	}
	c.validateObservations(fail)
	c.ConfigHub.validate(fail)
	c.Audit.Webhook.validate(fail)
	c.Admission.validate(fail)
	fail.blanks("gitopsManagers", c.GitOpsManagers)
	c.Pacing.validate(fail)
	c.Charts.validate(fail)
	return errs
}

// validate checks the App's credentials and its API roots: an id, one
// private key, and absolute http(s) URLs without credentials.
func (g GitHub) validate(fail failFunc) {
	if g.AppID <= 0 {
		fail("github.appId", "required: the GitHub App's id")
	}
	if g.PrivateKeyFile == "" && g.PrivateKeyEnv == "" {
		fail("github", "one of privateKeyFile or privateKeyEnv is required")
	}
	if g.PrivateKeyFile != "" && g.PrivateKeyEnv != "" {
		fail("github", "privateKeyFile and privateKeyEnv are exclusive")
	}
	for _, k := range []struct{ path, v string }{
		{"github.baseURL", g.BaseURL},
		{"github.graphqlURL", g.GraphQLURL},
		{"github.gitURL", g.GitURL},
	} {
		if k.v == "" {
			continue
		}
		if u, err := url.Parse(k.v); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			fail(k.path, "want an absolute http(s) URL")
		} else if u.User != nil {
			fail(k.path, "must not carry credentials")
		}
	}
	if g.BaseURL != "" && !strings.HasSuffix(g.BaseURL, "/") {
		fail("github.baseURL", "must end with /")
	}
	if g.BotUserID < 0 {
		fail("github.botUserId", "must be positive")
	}
}

// validateRepositories checks the allowlist: each entry is owner/name,
// listed once whatever its case.
func (c *Config) validateRepositories(fail failFunc) {
	seen := map[string]bool{}
	for i, r := range c.Repositories {
		owner, name, ok := strings.Cut(r, "/")
		if !ok || owner == "" || name == "" || strings.Contains(name, "/") {
			fail(fmt.Sprintf("repositories[%d]", i), "want owner/name, got %q", r)
		}
		if seen[strings.ToLower(r)] {
			fail(fmt.Sprintf("repositories[%d]", i), "%s is listed twice", r)
		}
		seen[strings.ToLower(r)] = true
	}
}

// validateObservations checks every cluster's sources, the clusters in
// the order of their names.
func (c *Config) validateObservations(fail failFunc) {
	for _, cluster := range slices.Sorted(maps.Keys(c.Observations)) {
		if cluster == "" {
			fail("observations", "a cluster name is empty")
		}
		for i, s := range c.Observations[cluster] {
			s.validate(fmt.Sprintf("observations.%s[%d]", cluster, i), fail)
		}
	}
}

// validate checks one observation source at path p: a kube source, or
// one of a path or a URL, with its trust ceiling and bounds.
func (s SourceConfig) validate(p string, fail failFunc) {
	kube := !reflect.ValueOf(s.Kube).IsZero()
	switch {
	case kube && (s.Path != "" || s.URL != "" || s.Trust != ""):
		fail(p, "kube excludes path, url and trust")
	case kube && len(s.Kube.Objects) == 0:
		fail(p+".kube.objects", "required: the object keys to watch")
	case kube && s.Kube.InCluster && (s.Kube.Kubeconfig != "" || s.Kube.Context != ""):
		fail(p+".kube", "inCluster excludes kubeconfig and context")
	case kube && s.Kube.TransitionWindow.Duration < 0:
		fail(p+".kube.transitionWindow", "must be positive")
	case kube:
	case s.Path == "" && s.URL == "":
		fail(p, "one of path or url is required (or kube)")
	case s.Path != "" && s.URL != "":
		fail(p, "path and url are exclusive")
	case s.URL != "":
		if u, err := url.Parse(s.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			fail(p+".url", "want an absolute http(s) URL")
		}
	}
	if s.Trust != "" {
		if _, err := observe.ParseAttribution(s.Trust); err != nil {
			fail(p+".trust", "want unknown, asserted, managed-fields, admission or audit-log, got %q", s.Trust)
		}
	}
	if s.MaxBytes < 0 {
		fail(p+".maxBytes", "must be positive")
	}
	if s.Timeout.Duration < 0 {
		fail(p+".timeout", "must be positive")
	}
}

// validate checks the audit webhook's credential and batch cap when the
// webhook is configured.
func (w AuditWebhook) validate(fail failFunc) {
	if !w.Enabled() {
		return
	}
	switch {
	case w.TokenFile != "" && w.TokenEnv != "":
		fail("audit.webhook", "tokenFile and tokenEnv are exclusive")
	case w.SecretFile != "" && w.SecretEnv != "":
		fail("audit.webhook", "secretFile and secretEnv are exclusive")
	case w.TokenFile == "" && w.TokenEnv == "" && w.SecretFile == "" && w.SecretEnv == "":
		fail("audit.webhook", "a bearer token (tokenFile or tokenEnv) or a secret (secretFile or secretEnv) is required")
	case w.MaxBytes < 0:
		fail("audit.webhook.maxBytes", "must be positive")
	}
}

// validate checks the admission webhook when it is configured: its TLS
// certificate and key, its bounds, its listener and the GitOps identities.
func (a AdmissionConfig) validate(fail failFunc) {
	if !a.Enabled() {
		return
	}
	switch {
	case a.CertFile == "" || a.KeyFile == "":
		fail("admission", "certFile and keyFile are required: the webhook is served over TLS only")
	case a.MaxBytes < 0:
		fail("admission.maxBytes", "must be positive")
	case a.TTL.Duration < 0:
		fail("admission.ttl", "must be positive")
	case a.MaxHeldBytes < 0:
		fail("admission.maxHeldBytes", "must be positive")
	case a.MaxInFlightBytes < 0:
		fail("admission.maxInFlightBytes", "must be positive")
	}
	if a.Listen != "" {
		if _, _, err := net.SplitHostPort(a.Listen); err != nil {
			fail("admission.listen", "want host:port: %v", err)
		}
	}
	fail.blanks("admission.gitopsUsers", a.GitOpsUsers)
	fail.blanks("admission.gitopsGroups", a.GitOpsGroups)
}

// validate checks the pacing against GitHub's write limit and its own
// bounds on attempts and durations.
func (p Pacing) validate(fail failFunc) {
	if p.WritesPerMinute < 0 || p.WritesPerMinute > 80 {
		fail("pacing.writesPerMinute", "want 1 to 80 (GitHub allows 80 content-creating requests a minute)")
	}
	if p.Attempts < 0 || p.Attempts > 10 {
		fail("pacing.attempts", "want 1 to 10")
	}
	for _, k := range []struct {
		path string
		d    Duration
	}{
		{"pacing.maxWait", p.MaxWait},
		{"pacing.requestTimeout", p.RequestTimeout},
		{"pacing.backoff", p.Backoff},
	} {
		if k.d.Duration < 0 {
			fail(k.path, "must be positive")
		}
	}
}

// validate checks the charts' fetch bounds, the hosts a fetch may reach
// and the bounds of one rendering.
func (c ChartsConfig) validate(fail failFunc) {
	if c.MaxBytes < 0 {
		fail("charts.maxBytes", "must be positive")
	}
	if c.Timeout.Duration < 0 {
		fail("charts.timeout", "must be positive")
	}
	for i, h := range c.AllowedHosts {
		if h == "" || strings.ContainsAny(h, "/@?# ") {
			fail(fmt.Sprintf("charts.allowedHosts[%d]", i), "%q is not a host or host:port", h)
		}
	}
	r := c.Render
	for _, k := range []struct {
		key      string
		negative bool
	}{
		{"timeout", r.Timeout.Duration < 0}, {"maxMemory", r.MaxMemory < 0},
		{"maxOutputBytes", r.MaxOutputBytes < 0}, {"maxObjects", r.MaxObjects < 0},
	} {
		if k.negative {
			fail("charts.render."+k.key, "must not be negative")
		}
	}
}

// Method is the commit method, git when unset.
func (c *Config) Method() forge.CommitMethod {
	if c.CommitMethod == "" {
		return forge.CommitGit
	}
	return forge.CommitMethod(c.CommitMethod)
}

// Resolve makes a path from the config absolute against the config's folder.
func (c *Config) Resolve(p string) string {
	if p == "" || filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(c.dir, p)
}
