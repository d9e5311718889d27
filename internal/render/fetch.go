package render

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"helm.sh/helm/v4/pkg/registry"
	"sigs.k8s.io/yaml"

	"github.com/backflow-dev/backflow/internal/repoconfig"
)

// Bounds on fetching one remote chart.
const (
	// DefaultFetchMaxBytes is the most bytes one fetch may receive: the
	// repository's index, or the chart (an OCI pull's manifest, config and
	// chart layer together).
	DefaultFetchMaxBytes = 20 << 20
	// DefaultFetchTimeout bounds one fetch of the index or of the chart.
	DefaultFetchTimeout = 60 * time.Second
)

// Fetch errors, for errors.Is.
var (
	// ErrFetch marks a remote chart that could not be fetched.
	ErrFetch = errors.New("cannot fetch chart")
	// ErrFetchTooLarge marks a fetch that received more than its cap.
	ErrFetchTooLarge = errors.New("larger than the fetch cap")
	// ErrFetchTimeout marks a fetch that took longer than its timeout.
	ErrFetchTimeout = errors.New("took longer than the fetch timeout")
	// ErrFetchRedirect marks a redirect to another scheme or to a host
	// that is neither the request's nor an allowed one.
	ErrFetchRedirect = errors.New("redirect refused")
	// ErrFetchHost marks a dependency pinned to a host that neither the
	// unit's chart names nor the allowed hosts list.
	ErrFetchHost = errors.New("host not allowed")
	// ErrFetchIndexURL marks a chart URL in a repository's index that
	// names another scheme than the index's, or a host that is neither the
	// index's nor an allowed one.
	ErrFetchIndexURL = errors.New("chart URL refused")
	// ErrFetchDowngrade marks a dependency pinned over plain HTTP by a
	// chart fetched over TLS.
	ErrFetchDowngrade = errors.New("https to http refused")
	// ErrCacheTampered marks a cached chart whose bytes no longer have the
	// digest it was cached under.
	ErrCacheTampered = errors.New("cached chart does not match its digest")
)

// FetchOptions say where fetched charts are cached and how far a fetch may
// go.
type FetchOptions struct {
	// CacheDir holds the fetched archives by digest and the references
	// they were fetched for; DefaultCacheDir when empty.
	CacheDir string
	// MaxBytes caps what one fetch receives; DefaultFetchMaxBytes when zero.
	MaxBytes int64
	// Timeout bounds one fetch; DefaultFetchTimeout when zero.
	Timeout time.Duration
	// TLS, when set, is the TLS configuration for repositories and
	// registries (a private CA); the system's roots otherwise.
	TLS *tls.Config
	// AllowedHosts are the hosts ("host" for any port, or "host:port")
	// that a fetch may be redirected to besides the one it asked, and that
	// a Chart.lock may pin dependencies to besides the one the unit's
	// chart names.
	AllowedHosts []string
}

// DefaultCacheDir is the chart cache when none is given: backflow/charts
// in the user's cache folder (XDG_CACHE_HOME, ~/.cache) when it can be
// created there, else in the system's temporary folder (a container with a
// read-only root file system and an emptyDir on /tmp).
func DefaultCacheDir() string {
	if dir, err := os.UserCacheDir(); err == nil {
		dir = filepath.Join(dir, "backflow", "charts")
		if os.MkdirAll(dir, 0o755) == nil {
			return dir
		}
	}
	return filepath.Join(os.TempDir(), "backflow", "charts")
}

// Fetcher fetches the charts that units name in a Helm chart repository
// (its index.yaml, then the archive) or an OCI registry, with the Helm SDK,
// and caches the archives on disk by digest. A reference fetched once is
// read from the cache, its digest checked on every read. It is safe for
// concurrent use, and several processes may share one cache folder (files
// are written whole and renamed into place).
type Fetcher struct {
	dir     string
	max     int64
	timeout time.Duration
	tls     *tls.Config
	hosts   []string
	// mu serialises fetches of one reference.
	mu    sync.Mutex
	locks map[string]*sync.Mutex
}

// NewFetcher returns a fetcher with opts' bounds and cache.
func NewFetcher(opts FetchOptions) *Fetcher {
	f := &Fetcher{
		dir:     opts.CacheDir,
		max:     opts.MaxBytes,
		timeout: opts.Timeout,
		tls:     opts.TLS,
		hosts:   opts.AllowedHosts,
		locks:   map[string]*sync.Mutex{},
	}
	if f.dir == "" {
		f.dir = DefaultCacheDir()
	}
	if f.max <= 0 {
		f.max = DefaultFetchMaxBytes
	}
	if f.timeout <= 0 {
		f.timeout = DefaultFetchTimeout
	}
	return f
}

// Fetch returns the chart c names in a chart repository or an OCI
// registry, from the cache when it was fetched before. Its digest is the
// archive's sha256. Dependencies its charts/ folder lacks are fetched as
// its Chart.lock pins them (theirs are not: as helm dependency build, the
// dependencies' archives must hold their own).
func (f *Fetcher) Fetch(ctx context.Context, c *repoconfig.Chart) (*Chart, error) {
	return f.fetch(ctx, c, f)
}

// fetch fetches c; deps fetches its missing dependencies, when not nil.
func (f *Fetcher) fetch(ctx context.Context, c *repoconfig.Chart, deps *Fetcher) (*Chart, error) {
	if !c.Remote() {
		return nil, fmt.Errorf("%w: chart %s names no repository or OCI reference", ErrFetch, c.Name)
	}
	ref := c.Source()
	lock := f.lock(ref)
	lock.Lock()
	defer lock.Unlock()
	ctx = context.WithValue(ctx, fetching{}, c)
	if ch, err := f.cached(ctx, ref, deps); err != nil || ch != nil {
		return ch, err
	}
	var (
		data   []byte
		digest string
		err    error
	)
	if c.OCI != "" {
		data, digest, err = f.pull(ctx, c)
	} else {
		data, digest, err = f.download(ctx, c)
	}
	if err != nil {
		return nil, fmt.Errorf("%w %s: %w", ErrFetch, ref, err)
	}
	if sum := sha256.Sum256(data); digest != "" && digest != "sha256:"+hex.EncodeToString(sum[:]) {
		return nil, fmt.Errorf("%w %s: the archive's digest is sha256:%x, the source says %s", ErrFetch, ref, sum, digest)
	}
	ch, err := loadArchive(ctx, "chart "+ref, data, deps)
	if err != nil {
		return nil, err
	}
	if ch.Version != c.Version {
		return nil, fmt.Errorf("%w %s: the archive holds version %s of chart %s", ErrFetch, ref, ch.Version, ch.Name)
	}
	if c.Repository != "" && ch.Name != c.RepoChart() {
		return nil, fmt.Errorf("%w %s: the archive holds chart %s", ErrFetch, ref, ch.Name)
	}
	if err := f.store(ref, ch.Digest, data); err != nil {
		return nil, fmt.Errorf("%w %s: caching it in %s: %w", ErrFetch, ref, f.dir, err)
	}
	return ch, nil
}

// fetching is the context key of the chart (a *repoconfig.Chart) whose
// dependencies are being fetched.
type fetching struct{}

// allowed reports whether host (host or host:port, as a URL has it) is one
// of the allowed hosts.
func (f *Fetcher) allowed(host string) bool {
	name := host
	if h, _, err := net.SplitHostPort(host); err == nil {
		name = h
	}
	for _, a := range f.hosts {
		if strings.EqualFold(a, host) || (!strings.Contains(a, ":") && strings.EqualFold(a, name)) {
			return true
		}
	}
	return false
}

// chartHost is the host a remote chart names (host or host:port), "" for
// a chart in the repository.
func chartHost(c *repoconfig.Chart) string {
	switch {
	case c == nil:
		return ""
	case c.OCI != "":
		host, _, _ := strings.Cut(strings.TrimPrefix(c.OCI, "oci://"), "/")
		return host
	case c.Repository != "":
		if u, err := url.Parse(c.Repository); err == nil {
			return u.Host
		}
	}
	return ""
}

// beyond says why a fetch that started at from must not go on to to: to
// has another scheme (so never https to http, nor http to https, which
// only a redirect could do) or a host that is neither from's nor an
// allowed one; "" when it may.
func (f *Fetcher) beyond(from, to *url.URL) string {
	switch {
	case to.Scheme != from.Scheme:
		return fmt.Sprintf("from %s to %s", from.Scheme, to.Scheme)
	case !strings.EqualFold(to.Host, from.Host) && !f.allowed(to.Host):
		return "a host the allowed hosts (charts.allowedHosts, --allow-host) do not list"
	}
	return ""
}

// schemeOf is the scheme a remote chart is fetched over ("https" for an
// OCI registry), "" for a chart in the repository.
func schemeOf(c *repoconfig.Chart) string {
	switch {
	case c == nil:
		return ""
	case c.OCI != "":
		return "https"
	case c.Repository != "":
		if u, err := url.Parse(c.Repository); err == nil {
			return strings.ToLower(u.Scheme)
		}
	}
	return ""
}

// checkRedirect follows a redirect only to the scheme of the request that
// started it (so never from https to http) and to its host or an allowed
// one: a chart source cannot send backflow to another server, inside the
// cluster or out, by answering 302.
func (f *Fetcher) checkRedirect(req *http.Request, via []*http.Request) error {
	first := via[0].URL
	if len(via) >= 10 {
		return fmt.Errorf("%w: %s: more than 10 redirects", ErrFetchRedirect, first.Redacted())
	}
	if why := f.beyond(first, req.URL); why != "" {
		return fmt.Errorf("%w: %s redirects to %s, %s", ErrFetchRedirect, first.Redacted(), req.URL.Redacted(), why)
	}
	return nil
}

func (f *Fetcher) lock(ref string) *sync.Mutex {
	f.mu.Lock()
	defer f.mu.Unlock()
	l, ok := f.locks[ref]
	if !ok {
		l = &sync.Mutex{}
		f.locks[ref] = l
	}
	return l
}

// refPath is the file that holds the digest a reference was fetched as.
func (f *Fetcher) refPath(ref string) string {
	sum := sha256.Sum256([]byte(ref))
	return filepath.Join(f.dir, "refs", hex.EncodeToString(sum[:]))
}

// blobPath is the archive with digest sha256:<hex>.
func (f *Fetcher) blobPath(digest string) (string, error) {
	h, ok := strings.CutPrefix(digest, "sha256:")
	if _, err := hex.DecodeString(h); !ok || err != nil || len(h) != sha256.Size*2 {
		return "", fmt.Errorf("%q is not a sha256 digest", digest)
	}
	return filepath.Join(f.dir, "blobs", "sha256", h+".tgz"), nil
}

// cached returns the chart cached for ref, nil when there is none. An
// archive whose bytes no longer hash to its digest is removed, with its
// reference, and reported: the next fetch downloads it again.
func (f *Fetcher) cached(ctx context.Context, ref string, deps *Fetcher) (*Chart, error) {
	rp := f.refPath(ref)
	raw, err := os.ReadFile(rp)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%w %s: reading the cache: %w", ErrFetch, ref, err)
	}
	digest := strings.TrimSpace(string(raw))
	bp, err := f.blobPath(digest)
	if err != nil {
		os.Remove(rp)
		return nil, fmt.Errorf("%w %s: %s: %w: %w", ErrFetch, ref, rp, ErrCacheTampered, err)
	}
	data, err := readCapped(bp, f.max)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%w %s: reading the cache: %w", ErrFetch, ref, err)
	}
	if sum := sha256.Sum256(data); "sha256:"+hex.EncodeToString(sum[:]) != digest {
		os.Remove(bp)
		os.Remove(rp)
		return nil, fmt.Errorf(
			"%w %s: %s: %w %s (removed; the next fetch downloads it again)",
			ErrFetch,
			ref,
			bp,
			ErrCacheTampered,
			digest,
		)
	}
	return loadArchive(ctx, "chart "+ref, data, deps)
}

// chartLock is what backflow reads of a Chart.lock.
type chartLock struct {
	Dependencies []lockedDependency `json:"dependencies"`
}

type lockedDependency struct {
	Name       string `json:"name"`
	Version    string `json:"version"`
	Repository string `json:"repository"`
}

// dependencies fetches the named dependencies as the chart's Chart.lock
// (lock, nil when the chart has none) pins them, and returns their files
// as they would lie in the chart's charts/ folder.
func (f *Fetcher) dependencies(ctx context.Context, lock []byte, names []string) (map[string][]byte, error) {
	if lock == nil {
		return nil, fmt.Errorf(
			"dependencies %s are named in Chart.yaml but missing in charts/, and there is no Chart.lock to fetch them by",
			strings.Join(names, ", "),
		)
	}
	var l chartLock
	if err := yaml.Unmarshal(lock, &l); err != nil {
		return nil, fmt.Errorf("Chart.lock: %w", err)
	}
	out := map[string][]byte{}
	for _, name := range names {
		i := slices.IndexFunc(l.Dependencies, func(d lockedDependency) bool { return d.Name == name })
		if i < 0 {
			return nil, fmt.Errorf("dependency %s is missing in charts/ and not pinned in Chart.lock", name)
		}
		d := l.Dependencies[i]
		spec := &repoconfig.Chart{Name: d.Name, Version: d.Version}
		switch {
		case strings.HasPrefix(d.Repository, "oci://"):
			spec.OCI = strings.TrimSuffix(d.Repository, "/") + "/" + d.Name
		case strings.HasPrefix(d.Repository, "https://"), strings.HasPrefix(d.Repository, "http://"):
			spec.Repository = d.Repository
		default:
			return nil, fmt.Errorf(
				"dependency %s is missing in charts/ and Chart.lock pins it to %q, which is not a chart repository URL or an OCI "+
					"reference",
				name,
				d.Repository,
			)
		}
		parent, _ := ctx.Value(fetching{}).(*repoconfig.Chart)
		if parent != nil && parent.Source() == spec.Source() {
			return nil, fmt.Errorf("dependency %s is the chart being fetched, %s", name, parent.Source())
		}
		// Only from where the unit's chart comes from, or where the bot
		// config allows: a Chart.lock is the chart author's, and must not
		// send backflow to any server it names.
		if host := chartHost(spec); host == "" || (!strings.EqualFold(host, chartHost(parent)) && !f.allowed(host)) {
			return nil, fmt.Errorf(
				"dependency %s: %w: Chart.lock pins it to %s, a host the unit's chart does not name and the allowed hosts "+
					"(charts.allowedHosts, --allow-host) do not list",
				name,
				ErrFetchHost,
				host,
			)
		}
		// Never from TLS to plain HTTP, even on the chart's own host or an
		// allowed one, as a redirect may not.
		if schemeOf(parent) == "https" && schemeOf(spec) == "http" {
			return nil, fmt.Errorf(
				"dependency %s: %w: Chart.lock pins it to %s, plain HTTP, and the unit's chart %s is fetched over TLS",
				name,
				ErrFetchDowngrade,
				spec.Repository,
				parent.Source(),
			)
		}
		dep, err := f.fetch(ctx, spec, nil)
		if err != nil {
			return nil, fmt.Errorf("dependency %s: %w", name, err)
		}
		for _, bf := range dep.files {
			out["charts/"+name+"/"+bf.Name] = bf.Data
		}
	}
	return out, nil
}

func readCapped(p string, limit int64) ([]byte, error) {
	fh, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	data, err := io.ReadAll(io.LimitReader(fh, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("%s: %w (%d bytes)", p, ErrFetchTooLarge, limit)
	}
	return data, nil
}

// store writes the archive under its digest, then the reference.
func (f *Fetcher) store(ref, digest string, data []byte) error {
	bp, err := f.blobPath(digest)
	if err != nil {
		return err
	}
	if err := writeAtomic(bp, data); err != nil {
		return err
	}
	return writeAtomic(f.refPath(ref), []byte(digest+"\n"))
}

func writeAtomic(p string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(p), ".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), p)
}

// budget bounds what the connections of one fetch receive and how long
// they stay open.
type budget struct {
	deadline time.Time
	left     atomic.Int64
	over     atomic.Bool
}

type budgetConn struct {
	net.Conn
	b *budget
}

func (c budgetConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if c.b.left.Add(-int64(n)) < 0 {
		c.b.over.Store(true)
		return n, ErrFetchTooLarge
	}
	return n, err
}

// client is an HTTP transport whose connections share one budget: max
// bytes received and one deadline for the whole fetch.
func (f *Fetcher) client(ctx context.Context) (*http.Transport, *budget, context.Context, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(ctx, f.timeout)
	b := &budget{deadline: time.Now().Add(f.timeout)}
	b.left.Store(f.max)
	d := &net.Dialer{}
	t := &http.Transport{
		Proxy: http.ProxyFromEnvironment,
		DialContext: func(dctx context.Context, network, addr string) (net.Conn, error) {
			// The fetch's own context, so that its timeout bounds dialling
			// even where the SDK dials without one.
			conn, err := d.DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			if err := conn.SetDeadline(b.deadline); err != nil {
				conn.Close()
				return nil, err
			}
			return budgetConn{Conn: conn, b: b}, nil
		},
		// A copy per transport: a transport writes its HTTP/2 protocols
		// into the config it holds on first use, while another fetch's
		// transport may be reading the same config to dial.
		TLSClientConfig:     f.tls.Clone(),
		TLSHandshakeTimeout: f.timeout,
		ForceAttemptHTTP2:   true,
		DisableKeepAlives:   true,
	}
	return t, b, ctx, cancel
}

// explain names what bounded a failed fetch, when a bound did.
func (f *Fetcher) explain(ctx context.Context, err error, b *budget) error {
	switch {
	case b.over.Load():
		return fmt.Errorf("%w (%d bytes): %w", ErrFetchTooLarge, f.max, err)
	case ctx.Err() != nil || !time.Now().Before(b.deadline):
		return fmt.Errorf("%w (%s): %w", ErrFetchTimeout, f.timeout, err)
	}
	return err
}

// indexFile is what backflow reads of a chart repository's index.yaml:
// the shape of Helm's repo.IndexFile (helm.sh/helm/v4/pkg/repo/v1), which
// is not imported because that package brings Helm's plugin runtime and
// kubectl's libraries along.
type indexFile struct {
	APIVersion string                    `json:"apiVersion"`
	Entries    map[string][]indexVersion `json:"entries"`
}

type indexVersion struct {
	Name    string   `json:"name"`
	Version string   `json:"version"`
	URLs    []string `json:"urls"`
	Digest  string   `json:"digest"`
}

// download reads the repository's index.yaml, finds the chart's exact
// version in it and downloads its archive, returning the index's digest
// for it (empty when the index gives none).
func (f *Fetcher) download(ctx context.Context, c *repoconfig.Chart) ([]byte, string, error) {
	base, err := url.Parse(strings.TrimSuffix(c.Repository, "/") + "/")
	if err != nil {
		return nil, "", err
	}
	raw, err := f.get(ctx, base.JoinPath("index.yaml"))
	if err != nil {
		return nil, "", fmt.Errorf("index of %s: %w", c.Repository, err)
	}
	var idx indexFile
	if err := yaml.Unmarshal(raw, &idx); err != nil {
		return nil, "", fmt.Errorf("index of %s: %w", c.Repository, err)
	}
	if idx.APIVersion == "" {
		return nil, "", fmt.Errorf("index of %s: no apiVersion: not a chart repository index", c.Repository)
	}
	var cv *indexVersion
	for i, v := range idx.Entries[c.RepoChart()] {
		if v.Version == c.Version {
			cv = &idx.Entries[c.RepoChart()][i]
			break
		}
	}
	if cv == nil {
		return nil, "", fmt.Errorf("the index of %s has no chart %s version %s", c.Repository, c.RepoChart(), c.Version)
	}
	if len(cv.URLs) == 0 {
		return nil, "", fmt.Errorf(
			"the index of %s gives no URL for chart %s version %s",
			c.Repository,
			c.RepoChart(),
			c.Version,
		)
	}
	u, err := base.Parse(cv.URLs[0])
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return nil, "", fmt.Errorf(
			"the index of %s gives %q for chart %s version %s, not an http(s) URL",
			c.Repository,
			cv.URLs[0],
			c.RepoChart(),
			c.Version,
		)
	}
	// The index is as much the chart source's as a redirect is: the URL
	// it names follows the redirect rule, or an index on one host could
	// send backflow to any other, or from https to http.
	if why := f.beyond(base, u); why != "" {
		return nil, "", fmt.Errorf(
			"%w: the index of %s gives %s for chart %s version %s, %s",
			ErrFetchIndexURL,
			c.Repository,
			u.Redacted(),
			c.RepoChart(),
			c.Version,
			why,
		)
	}
	data, err := f.get(ctx, u)
	if err != nil {
		return nil, "", err
	}
	digest := ""
	if cv.Digest != "" {
		digest = "sha256:" + strings.TrimPrefix(cv.Digest, "sha256:")
	}
	return data, digest, nil
}

// get fetches one URL within the fetch's bounds.
func (f *Fetcher) get(ctx context.Context, u *url.URL) ([]byte, error) {
	t, b, fctx, cancel := f.client(ctx)
	defer cancel()
	defer t.CloseIdleConnections()
	req, err := http.NewRequestWithContext(fctx, http.MethodGet, u.String(), http.NoBody)
	if err != nil {
		return nil, err
	}
	req.Header.Set("User-Agent", "backflow")
	resp, err := (&http.Client{Transport: t, CheckRedirect: f.checkRedirect}).Do(req)
	if err != nil {
		return nil, f.explain(fctx, err, b)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", u.Redacted(), resp.Status)
	}
	if resp.ContentLength > f.max {
		return nil, fmt.Errorf(
			"GET %s: %w (%d bytes): it is %d bytes",
			u.Redacted(),
			ErrFetchTooLarge,
			f.max,
			resp.ContentLength,
		)
	}
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, f.explain(fctx, fmt.Errorf("GET %s: %w", u.Redacted(), err), b)
	}
	return data, nil
}

// pull pulls the chart's archive from its OCI registry with Helm's
// registry client, returning the chart layer's digest.
func (f *Fetcher) pull(ctx context.Context, c *repoconfig.Chart) ([]byte, string, error) {
	t, b, fctx, cancel := f.client(ctx)
	defer cancel()
	defer t.CloseIdleConnections()
	rc, err := registry.NewClient(
		registry.ClientOptHTTPClient(&http.Client{Transport: t, Timeout: f.timeout, CheckRedirect: f.checkRedirect}),
	)
	if err != nil {
		return nil, "", err
	}
	ref := strings.TrimPrefix(c.OCI, "oci://") + ":" + c.Version
	res, err := rc.Pull(ref, registry.PullOptWithChart(true))
	if err != nil {
		return nil, "", f.explain(fctx, err, b)
	}
	return res.Chart.Data, res.Chart.Digest, nil
}
