package render_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	ggcr "github.com/google/go-containerregistry/pkg/registry"
	"helm.sh/helm/v4/pkg/registry"

	"github.com/backflow-dev/backflow/internal/observe"
	"github.com/backflow-dev/backflow/internal/plan"
	"github.com/backflow-dev/backflow/internal/render"
	"github.com/backflow-dev/backflow/internal/render/charttest"
	"github.com/backflow-dev/backflow/internal/repoconfig"
)

// The fetch tests serve the podinfo chart (testdata/charts/podinfo) from a
// chart repository and an OCI registry on loopback.
const (
	podinfoVersion = "6.14.1"
	podinfoObject  = "apps/v1|Deployment|podinfo|podinfo"
)

// packageChart packages the chart folder dir as helm package does: a
// gzipped tar with every file under the chart's name.
func packageChart(t testing.TB, dir, name string) []byte {
	return charttest.PackageDir(t, dir, name)
}

func digestOf(data []byte) string {
	sum := sha256.Sum256(data)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// chartRepo is a Helm chart repository on loopback serving one archive;
// block makes it hold every request until the client goes away, down
// answer 503.
type chartRepo struct {
	srv   *httptest.Server
	tgz   []byte
	gets  atomic.Int64
	block atomic.Bool
	down  atomic.Bool
}

func newChartRepo(t testing.TB, tgz []byte) *chartRepo {
	r := &chartRepo{tgz: tgz}
	index := fmt.Sprintf(`apiVersion: v1
entries:
  podinfo:
    - apiVersion: v1
      name: podinfo
      version: %s
      urls: [charts/podinfo-%s.tgz]
      digest: %s
generated: "2026-12-01T00:00:00Z"
`, podinfoVersion, podinfoVersion, strings.TrimPrefix(digestOf(tgz), "sha256:"))
	r.srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.gets.Add(1)
		if r.block.Load() {
			<-req.Context().Done()
			return
		}
		if r.down.Load() {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		switch req.URL.Path {
		case "/stable/index.yaml":
			w.Write([]byte(index))
		case "/stable/charts/podinfo-" + podinfoVersion + ".tgz":
			w.Write(r.tgz)
		default:
			http.NotFound(w, req)
		}
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func tlsOf(srv *httptest.Server) *tls.Config {
	return srv.Client().Transport.(*http.Transport).TLSClientConfig
}

// newRegistry is an OCI registry on loopback (go-containerregistry's
// in-process one) holding the archive pushed with Helm's registry client.
func newRegistry(t testing.TB, tgz []byte) (*httptest.Server, string) {
	srv := httptest.NewTLSServer(ggcr.New(ggcr.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	push(t, srv, tgz, "charts/podinfo:"+podinfoVersion)
	return srv, "oci://" + strings.TrimPrefix(srv.URL, "https://") + "/charts/podinfo"
}

// push pushes a chart archive to the registry as repository:tag.
func push(t testing.TB, srv *httptest.Server, tgz []byte, ref string) {
	t.Helper()
	rc, err := registry.NewClient(registry.ClientOptHTTPClient(srv.Client()), registry.ClientOptCredentialsFile(filepath.Join(t.TempDir(), "creds.json")))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rc.Push(tgz, strings.TrimPrefix(srv.URL, "https://")+"/"+ref); err != nil {
		t.Fatal(err)
	}
}

// writeChart writes a chart's files into a new folder and returns it.
func writeChart(t testing.TB, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, data := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func podinfoTgz(t testing.TB) []byte {
	return packageChart(t, "../../testdata/charts/podinfo", "podinfo")
}

// sources are the two remote kinds of chart, each served on loopback.
func sources(t *testing.T) map[string]struct {
	chart *repoconfig.Chart
	tls   *tls.Config
} {
	tgz := podinfoTgz(t)
	repo := newChartRepo(t, tgz)
	reg, ref := newRegistry(t, tgz)
	return map[string]struct {
		chart *repoconfig.Chart
		tls   *tls.Config
	}{
		"repository": {&repoconfig.Chart{Name: "stefanprodan/podinfo", Version: podinfoVersion, Repository: repo.srv.URL + "/stable"}, tlsOf(repo.srv)},
		"oci":        {&repoconfig.Chart{Name: "podinfo", Version: podinfoVersion, OCI: ref}, tlsOf(reg)},
	}
}

const podinfoConfig = `version: 1
policy: .github/policy.yaml
environments:
  prod:
    clusters: [prod-1]
units:
  - name: podinfo
    environment: prod
    valuesFiles: [envs/prod/redis/values.yaml]
    objects: ["*|*|podinfo|*"]
    chart: %s
roles:
  platform-sre:
    groups: [sre]
`

func TestWitnessRemoteChart(t *testing.T) {
	// why: a unit whose chart lives in a chart repository or an OCI
	// registry is witnessed like one in the repository: the chart is
	// fetched, rendered before and after, and its archive's digest is
	// what the receipt records.
	tgz := podinfoTgz(t)
	for name, src := range sources(t) {
		t.Run(name, func(t *testing.T) {
			spec := fmt.Sprintf("{name: %s, version: %s, repository: %q, oci: %q}", src.chart.Name, src.chart.Version, src.chart.Repository, src.chart.OCI)
			spec = strings.NewReplacer(`, repository: ""`, "", `, oci: ""`, "").Replace(spec)
			snap := snapshot(t, fmt.Sprintf(podinfoConfig, spec), policyFor("replicaCount", "spec.replicas", podinfoObject), "replicaCount: 2\n")
			fetch := render.NewFetcher(render.FetchOptions{CacheDir: t.TempDir(), TLS: src.tls})
			snap.Renderer = render.NewUnits(context.Background(), render.DirSource{Root: t.TempDir()}, fetch, render.Bounds{})
			obs := change("Deployment", "podinfo", "spec.replicas", 3, 2)
			obs.Object.Namespace = "podinfo"
			res := plan.Plan([]observe.Observation{obs}, nil, snap, now)
			if len(res.Decisions) != 1 || res.Decisions[0].Outcome != plan.Allow || len(res.Errors) > 0 {
				t.Fatalf("decisions %+v, errors %q", res.Decisions, res.Errors)
			}
			s := res.Decisions[0].Receipt.Spec.Render
			if s == nil || s.Chart != "podinfo" || s.Version != podinfoVersion || s.Digest != digestOf(tgz) {
				t.Fatalf("render section %+v, want podinfo %s with the archive's digest %s", s, podinfoVersion, digestOf(tgz))
			}
			if len(s.ChangedFields) != 1 || s.ChangedFields[0].Object != podinfoObject || s.ChangedFields[0].Field != "spec.replicas" {
				t.Errorf("changed fields %+v", s.ChangedFields)
			}
		})
	}
}

func TestWitnessRemoteChartFailsClosed(t *testing.T) {
	// why: a unit whose remote chart cannot be fetched is never allowed
	// without the witness: nothing is written, the error is reported, and
	// the next cycle (a new renderer, the same cache) tries again and
	// succeeds once the repository serves the chart.
	repo := newChartRepo(t, podinfoTgz(t))
	repo.down.Store(true)
	spec := fmt.Sprintf("{name: podinfo, version: %s, repository: %q}", podinfoVersion, repo.srv.URL+"/stable")
	obs := change("Deployment", "podinfo", "spec.replicas", 3, 2)
	obs.Object.Namespace = "podinfo"
	fetch := render.NewFetcher(render.FetchOptions{CacheDir: t.TempDir(), TLS: tlsOf(repo.srv)})
	cycle := func() plan.Result {
		snap := snapshot(t, fmt.Sprintf(podinfoConfig, spec), policyFor("replicaCount", "spec.replicas", podinfoObject), "replicaCount: 2\n")
		snap.Renderer = render.NewUnits(context.Background(), render.DirSource{Root: t.TempDir()}, fetch, render.Bounds{})
		return plan.Plan([]observe.Observation{obs}, nil, snap, now)
	}
	res := cycle()
	if res.Decisions[0].Outcome != plan.Deny || len(res.WriteBacks) != 0 || len(res.Errors) != 1 || !strings.Contains(res.Errors[0], "cannot fetch chart") || !strings.Contains(res.Errors[0], "503") {
		t.Fatalf("outcome %s, write-backs %d, errors %q: want a deny, nothing written, the fetch error reported", res.Decisions[0].Outcome, len(res.WriteBacks), res.Errors)
	}
	repo.down.Store(false)
	if res := cycle(); res.Decisions[0].Outcome != plan.Allow || len(res.Errors) > 0 {
		t.Fatalf("the next cycle: outcome %s, errors %q", res.Decisions[0].Outcome, res.Errors)
	}
}

func TestFetchCachesByDigest(t *testing.T) {
	// why: a chart fetched once is read from the cache (no request), and
	// the cached archive is checked against its digest on every read: a
	// tampered file is reported, never rendered, and fetched again after.
	tgz := podinfoTgz(t)
	repo := newChartRepo(t, tgz)
	spec := &repoconfig.Chart{Name: "podinfo", Version: podinfoVersion, Repository: repo.srv.URL + "/stable/"}
	dir := t.TempDir()
	fetch := func() (*render.Chart, error) {
		return render.NewFetcher(render.FetchOptions{CacheDir: dir, TLS: tlsOf(repo.srv)}).Fetch(context.Background(), spec)
	}
	c, err := fetch()
	if err != nil {
		t.Fatal(err)
	}
	if c.Digest != digestOf(tgz) || c.Name != "podinfo" || repo.gets.Load() != 2 {
		t.Fatalf("digest %s name %s after %d requests", c.Digest, c.Name, repo.gets.Load())
	}
	if _, err := fetch(); err != nil || repo.gets.Load() != 2 {
		t.Fatalf("cached fetch: %v after %d requests, want none more", err, repo.gets.Load())
	}
	blob := filepath.Join(dir, "blobs", "sha256", strings.TrimPrefix(c.Digest, "sha256:")+".tgz")
	tampered := append(bytes.Clone(tgz[:len(tgz)-1]), tgz[len(tgz)-1]^1)
	if err := os.WriteFile(blob, tampered, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := fetch(); !errors.Is(err, render.ErrCacheTampered) || !strings.Contains(err.Error(), blob) {
		t.Fatalf("tampered cache: %v, want ErrCacheTampered naming %s", err, blob)
	}
	c, err = fetch()
	if err != nil || c.Digest != digestOf(tgz) || repo.gets.Load() != 4 {
		t.Fatalf("after the tampered file: %v, digest %v, %d requests", err, c, repo.gets.Load())
	}
}

func TestFetchBounds(t *testing.T) {
	// why: a chart source that sends too much or takes too long is cut
	// off and reported, and nothing is cached, for either kind of source.
	// Half the archive: the index or manifest fits, the chart does not.
	half := int64(len(podinfoTgz(t)) / 2)
	for name, src := range sources(t) {
		t.Run(name+"/size", func(t *testing.T) {
			dir := t.TempDir()
			f := render.NewFetcher(render.FetchOptions{CacheDir: dir, TLS: src.tls, MaxBytes: half})
			_, err := f.Fetch(context.Background(), src.chart)
			if !errors.Is(err, render.ErrFetch) || !errors.Is(err, render.ErrFetchTooLarge) {
				t.Fatalf("got %v, want ErrFetchTooLarge", err)
			}
			if _, err := os.Stat(filepath.Join(dir, "refs")); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("a refused fetch left a reference in the cache: %v", err)
			}
		})
	}
	t.Run("timeout", func(t *testing.T) {
		repo := newChartRepo(t, podinfoTgz(t))
		repo.block.Store(true)
		f := render.NewFetcher(render.FetchOptions{CacheDir: t.TempDir(), TLS: tlsOf(repo.srv), Timeout: 200 * time.Millisecond})
		_, err := f.Fetch(context.Background(), &repoconfig.Chart{Name: "podinfo", Version: podinfoVersion, Repository: repo.srv.URL + "/stable"})
		if !errors.Is(err, render.ErrFetchTimeout) {
			t.Fatalf("got %v, want ErrFetchTimeout", err)
		}
	})
	t.Run("registry timeout", func(t *testing.T) {
		blocked := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }))
		defer blocked.Close()
		f := render.NewFetcher(render.FetchOptions{CacheDir: t.TempDir(), TLS: tlsOf(blocked), Timeout: 200 * time.Millisecond})
		_, err := f.Fetch(context.Background(), &repoconfig.Chart{Name: "podinfo", Version: podinfoVersion, OCI: "oci://" + strings.TrimPrefix(blocked.URL, "https://") + "/charts/podinfo"})
		if !errors.Is(err, render.ErrFetchTimeout) {
			t.Fatalf("got %v, want ErrFetchTimeout", err)
		}
	})
}

func TestFetchRefusesWrongArchive(t *testing.T) {
	// why: the archive must be the one the index names, of the version the
	// config pins: a repository serving other bytes than its index's digest
	// is refused.
	tgz := podinfoTgz(t)
	repo := newChartRepo(t, tgz)
	// The same files, compressed otherwise: a valid chart, other bytes.
	zr, err := gzip.NewReader(bytes.NewReader(tgz))
	if err != nil {
		t.Fatal(err)
	}
	var tarball, other bytes.Buffer
	if _, err := tarball.ReadFrom(zr); err != nil {
		t.Fatal(err)
	}
	zw, _ := gzip.NewWriterLevel(&other, gzip.BestCompression)
	zw.Write(tarball.Bytes())
	zw.Close()
	repo.tgz = other.Bytes()
	f := render.NewFetcher(render.FetchOptions{CacheDir: t.TempDir(), TLS: tlsOf(repo.srv)})
	_, err = f.Fetch(context.Background(), &repoconfig.Chart{Name: "podinfo", Version: podinfoVersion, Repository: repo.srv.URL + "/stable"})
	if err == nil || !strings.Contains(err.Error(), "the archive's digest is "+digestOf(repo.tgz)) {
		t.Fatalf("an archive that is not the index's: %v", err)
	}
	_, err = f.Fetch(context.Background(), &repoconfig.Chart{Name: "podinfo", Version: "6.0.0", Repository: repo.srv.URL + "/stable"})
	if err == nil || !strings.Contains(err.Error(), "has no chart podinfo version 6.0.0") {
		t.Fatalf("a version the index lacks: %v", err)
	}
}

// BenchmarkFetch fetches the podinfo chart from the loopback chart
// repository and registry: cold (an empty cache: the index and archive,
// or the manifest, config and layer, over TLS) and warm (read from the
// cache and hashed).
func BenchmarkFetch(b *testing.B) {
	tgz := podinfoTgz(b)
	repo := newChartRepo(b, tgz)
	reg, ref := newRegistry(b, tgz)
	for _, src := range []struct {
		name  string
		chart *repoconfig.Chart
		tls   *tls.Config
	}{
		{"repository", &repoconfig.Chart{Name: "podinfo", Version: podinfoVersion, Repository: repo.srv.URL + "/stable"}, tlsOf(repo.srv)},
		{"oci", &repoconfig.Chart{Name: "podinfo", Version: podinfoVersion, OCI: ref}, tlsOf(reg)},
	} {
		b.Run(src.name+"/cold", func(b *testing.B) {
			for b.Loop() {
				f := render.NewFetcher(render.FetchOptions{CacheDir: b.TempDir(), TLS: src.tls})
				if _, err := f.Fetch(context.Background(), src.chart); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(src.name+"/warm", func(b *testing.B) {
			dir := b.TempDir()
			if _, err := render.NewFetcher(render.FetchOptions{CacheDir: dir, TLS: src.tls}).Fetch(context.Background(), src.chart); err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				f := render.NewFetcher(render.FetchOptions{CacheDir: dir, TLS: src.tls})
				if _, err := f.Fetch(context.Background(), src.chart); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func TestDependenciesFromChartLock(t *testing.T) {
	// why: a chart whose charts/ folder lacks a dependency (a GitOps
	// repository keeping Chart.yaml and Chart.lock only, as Argo CD and Flux
	// build them) renders with the dependency its Chart.lock pins, fetched
	// like a remote chart; without a lock it is refused, never rendered
	// without it.
	srv := httptest.NewTLSServer(ggcr.New(ggcr.Logger(log.New(io.Discard, "", 0))))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "https://")
	lib := writeChart(t, map[string]string{
		"Chart.yaml":        "apiVersion: v2\nname: lib\nversion: 0.1.0\n",
		"values.yaml":       "size: 1\n",
		"templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-lib\ndata:\n  size: {{ .Values.size | quote }}\n",
	})
	push(t, srv, packageChart(t, lib, "lib"), "charts/lib:0.1.0")
	deps := "dependencies:\n  - name: lib\n    version: 0.1.0\n    repository: oci://" + host + "/charts\n"
	appFiles := map[string]string{
		"Chart.yaml":        "apiVersion: v2\nname: app\nversion: 1.0.0\n" + deps,
		"Chart.lock":        deps + "digest: sha256:0000000000000000000000000000000000000000000000000000000000000000\ngenerated: \"2026-12-01T00:00:00Z\"\n",
		"values.yaml":       "lib:\n  size: 3\n",
		"templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-app\n",
	}
	repo := t.TempDir()
	app := writeChart(t, appFiles)
	push(t, srv, packageChart(t, app, "app"), "charts/app:1.0.0")
	if err := os.Rename(app, filepath.Join(repo, "app")); err != nil {
		t.Fatal(err)
	}
	// A chart in the repository names no host: its Chart.lock's must be
	// allowed in the bot config. A remote chart's may be its own host.
	fetch := render.NewFetcher(render.FetchOptions{CacheDir: t.TempDir(), TLS: tlsOf(srv), AllowedHosts: []string{host}})
	for name, spec := range map[string]*repoconfig.Chart{
		"path": {Name: "app", Path: "app"},
		"oci":  {Name: "app", Version: "1.0.0", OCI: "oci://" + host + "/charts/app"},
	} {
		t.Run(name, func(t *testing.T) {
			c, err := render.Load(context.Background(), render.DirSource{Root: repo}, fetch, spec)
			if err != nil {
				t.Fatal(err)
			}
			out, err := c.Render(context.Background(), render.Options{Release: "r", Namespace: "ns"}, nil)
			if err != nil {
				t.Fatal(err)
			}
			cm := out.Objects["v1|ConfigMap|ns|r-lib"]
			if data, _ := cm["data"].(map[string]any); data["size"] != "3" {
				t.Fatalf("the dependency's ConfigMap %v among %v: want it rendered with the parent's values", cm, out.Keys())
			}
		})
	}
	t.Run("hosts", func(t *testing.T) {
		// why: a Chart.lock is the chart author's: it must not send
		// backflow to any server it names. The same app chart served by
		// another registry pins lib to the first one's host.
		other := httptest.NewTLSServer(ggcr.New(ggcr.Logger(log.New(io.Discard, "", 0))))
		defer other.Close()
		push(t, other, packageChart(t, filepath.Join(repo, "app"), "app"), "charts/app:1.0.0")
		bare := render.NewFetcher(render.FetchOptions{CacheDir: t.TempDir(), TLS: tlsOf(srv)})
		for name, spec := range map[string]*repoconfig.Chart{
			"path, host not allowed":           {Name: "app", Path: "app"},
			"another registry's chart pins it": {Name: "app", Version: "1.0.0", OCI: "oci://" + strings.TrimPrefix(other.URL, "https://") + "/charts/app"},
		} {
			_, err := render.Load(context.Background(), render.DirSource{Root: repo}, bare, spec)
			if !errors.Is(err, render.ErrFetchHost) || !strings.Contains(err.Error(), "dependency lib") || !strings.Contains(err.Error(), host) {
				t.Errorf("%s: got %v, want the dependency refused naming its host", name, err)
			}
		}
	})
	if err := os.Remove(filepath.Join(repo, "app", "Chart.lock")); err != nil {
		t.Fatal(err)
	}
	_, err := render.Load(context.Background(), render.DirSource{Root: repo}, fetch, &repoconfig.Chart{Name: "app", Path: "app"})
	if !errors.Is(err, render.ErrChart) || !strings.Contains(err.Error(), "no Chart.lock") {
		t.Fatalf("without a Chart.lock: %v", err)
	}
}

// redirecting is a chart repository on loopback that answers each request
// with hops redirects on its own host, each with a body of pad bytes, then
// one to the same path on to when to is set, else with repo's answer.
func redirecting(t *testing.T, hops, pad int, to string, repo http.Handler) *httptest.Server {
	var srv *httptest.Server
	srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hop := 0
		fmt.Sscanf(r.URL.Query().Get("hop"), "%d", &hop)
		switch {
		case hop < hops:
			w.Header().Set("Location", fmt.Sprintf("%s%s?hop=%d", srv.URL, r.URL.Path, hop+1))
			w.WriteHeader(http.StatusFound)
			w.Write(bytes.Repeat([]byte("x"), pad))
		case to != "":
			http.Redirect(w, r, to+r.URL.Path, http.StatusFound)
		default:
			repo.ServeHTTP(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestFetchRedirects(t *testing.T) {
	tgz := podinfoTgz(t)
	repo := newChartRepo(t, tgz)
	h := repo.srv.Config.Handler
	plain := httptest.NewServer(h)
	t.Cleanup(plain.Close)
	hostOf := func(s *httptest.Server) string {
		return strings.TrimPrefix(strings.TrimPrefix(s.URL, "https://"), "http://")
	}
	for _, tc := range []struct {
		name    string
		srv     *httptest.Server
		allowed []string
		max     int64
		want    error
	}{
		// why: a repository that moved its files on its own host still works.
		{"same host", redirecting(t, 3, 0, "", h), nil, 0, nil},
		// why: a chart source must not send backflow to another server
		// (inside the cluster or out) by answering 302.
		{"another host", redirecting(t, 0, 0, repo.srv.URL, h), nil, 0, render.ErrFetchRedirect},
		{"another host, allowed", redirecting(t, 0, 0, repo.srv.URL, h), []string{hostOf(repo.srv)}, 0, nil},
		{"another host, allowed by name", redirecting(t, 0, 0, repo.srv.URL, h), []string{"127.0.0.1"}, 0, nil},
		// why: never from TLS to plain HTTP, even to an allowed host.
		{"https to http", redirecting(t, 0, 0, plain.URL, h), []string{hostOf(plain)}, 0, render.ErrFetchRedirect},
		// why: the byte cap is one for the whole fetch, redirects
		// included; the same cap fits a direct fetch (below).
		{"bytes across redirects", redirecting(t, 9, 2<<10, "", h), nil, int64(len(tgz)) + 16<<10, render.ErrFetchTooLarge},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := render.NewFetcher(render.FetchOptions{CacheDir: t.TempDir(), TLS: tlsOf(repo.srv), AllowedHosts: tc.allowed, MaxBytes: tc.max})
			_, err := f.Fetch(context.Background(), &repoconfig.Chart{Name: "podinfo", Version: podinfoVersion, Repository: tc.srv.URL + "/stable"})
			if (tc.want == nil && err != nil) || (tc.want != nil && !errors.Is(err, tc.want)) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
		})
	}
	t.Run("bytes without redirects", func(t *testing.T) {
		// The control of the case above: the same cap fits a direct fetch.
		f := render.NewFetcher(render.FetchOptions{CacheDir: t.TempDir(), TLS: tlsOf(repo.srv), MaxBytes: int64(len(tgz)) + 16<<10})
		if _, err := f.Fetch(context.Background(), &repoconfig.Chart{Name: "podinfo", Version: podinfoVersion, Repository: repo.srv.URL + "/stable"}); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("time across redirects", func(t *testing.T) {
		// why: the timeout is one deadline for the fetch; a redirect does
		// not start a new one.
		blocked := newChartRepo(t, tgz)
		blocked.block.Store(true)
		f := render.NewFetcher(render.FetchOptions{CacheDir: t.TempDir(), TLS: tlsOf(repo.srv), AllowedHosts: []string{"127.0.0.1"}, Timeout: 300 * time.Millisecond})
		_, err := f.Fetch(context.Background(), &repoconfig.Chart{Name: "podinfo", Version: podinfoVersion, Repository: redirecting(t, 5, 0, blocked.srv.URL, h).URL + "/stable"})
		if !errors.Is(err, render.ErrFetchTimeout) {
			t.Fatalf("got %v, want ErrFetchTimeout", err)
		}
	})
}

// indexNaming is a chart repository on loopback whose index names
// url(its own URL) for podinfo's archive (relative URLs resolve against
// /stable/), serving the rest with repo's answers.
func indexNaming(t *testing.T, tgz []byte, url func(self string) string, repo http.Handler) *httptest.Server {
	var srv *httptest.Server
	srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/stable/index.yaml" {
			repo.ServeHTTP(w, r)
			return
		}
		fmt.Fprintf(w, `apiVersion: v1
entries:
  podinfo:
    - apiVersion: v1
      name: podinfo
      version: %s
      urls: [%q]
      digest: %s
`, podinfoVersion, url(srv.URL), strings.TrimPrefix(digestOf(tgz), "sha256:"))
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestFetchIndexURLs(t *testing.T) {
	// The index names the archive's URL: it follows the redirect rule, or
	// an index on one host sends backflow to any other, or to plain HTTP.
	tgz := podinfoTgz(t)
	repo := newChartRepo(t, tgz)
	h := repo.srv.Config.Handler
	plain := httptest.NewServer(h)
	t.Cleanup(plain.Close)
	path := "/stable/charts/podinfo-" + podinfoVersion + ".tgz"
	hostOf := func(s string) string {
		return strings.TrimPrefix(strings.TrimPrefix(s, "https://"), "http://")
	}
	for _, tc := range []struct {
		name    string
		url     func(self string) string
		allowed []string
		want    error
	}{
		// why: the usual index names its archives relative to itself.
		{"relative", func(string) string { return "charts/podinfo-" + podinfoVersion + ".tgz" }, nil, nil},
		// why: a path from the root stays on the index's host.
		{"relative from the root", func(string) string { return path }, nil, nil},
		// why: an absolute URL on the index's own host and scheme.
		{"absolute, same host", func(self string) string { return self + path }, nil, nil},
		// why: an index must not send backflow to another server.
		{"another host", func(string) string { return repo.srv.URL + path }, nil, render.ErrFetchIndexURL},
		// why: charts hosted elsewhere (GitHub releases) work once allowed.
		{"another host, allowed", func(string) string { return repo.srv.URL + path }, []string{hostOf(repo.srv.URL)}, nil},
		// why: a scheme-relative URL is another host like any other.
		{"scheme-relative", func(string) string { return "//" + hostOf(repo.srv.URL) + path }, nil, render.ErrFetchIndexURL},
		// why: never from TLS to plain HTTP, even to an allowed host.
		{"https to http", func(string) string { return plain.URL + path }, []string{"127.0.0.1"}, render.ErrFetchIndexURL},
	} {
		t.Run(tc.name, func(t *testing.T) {
			idx := indexNaming(t, tgz, tc.url, h)
			f := render.NewFetcher(render.FetchOptions{CacheDir: t.TempDir(), TLS: tlsOf(repo.srv), AllowedHosts: tc.allowed})
			_, err := f.Fetch(context.Background(), &repoconfig.Chart{Name: "podinfo", Version: podinfoVersion, Repository: idx.URL + "/stable"})
			if (tc.want == nil && err != nil) || (tc.want != nil && !errors.Is(err, tc.want)) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
			if tc.want != nil && !strings.Contains(err.Error(), "the index of "+idx.URL+"/stable gives") {
				t.Errorf("%v: want the index and the URL it gives named", err)
			}
		})
	}
}

func TestDependencyOverHTTPOfAnHTTPSChart(t *testing.T) {
	// A Chart.lock pinning a dependency over plain HTTP: refused for a
	// chart fetched over TLS, even on an allowed host, as a redirect from
	// https to http is; a chart in the repository (fetched over nothing)
	// may pin it on an allowed host.
	lib := packageChart(t, writeChart(t, map[string]string{
		"Chart.yaml":        "apiVersion: v2\nname: lib\nversion: 0.1.0\n",
		"templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-lib\n",
	}), "lib")
	index := "apiVersion: v1\nentries:\n  lib:\n    - {apiVersion: v2, name: lib, version: 0.1.0, urls: [lib-0.1.0.tgz], digest: " +
		strings.TrimPrefix(digestOf(lib), "sha256:") + "}\n"
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/stable/index.yaml":
			w.Write([]byte(index))
		case "/stable/lib-0.1.0.tgz":
			w.Write(lib)
		default:
			http.NotFound(w, r)
		}
	}))
	defer plain.Close()
	reg := httptest.NewTLSServer(ggcr.New(ggcr.Logger(log.New(io.Discard, "", 0))))
	defer reg.Close()
	deps := "dependencies:\n  - name: lib\n    version: 0.1.0\n    repository: " + plain.URL + "/stable\n"
	repo := t.TempDir()
	app := writeChart(t, map[string]string{
		"Chart.yaml":        "apiVersion: v2\nname: app\nversion: 1.0.0\n" + deps,
		"Chart.lock":        deps + "digest: sha256:0000000000000000000000000000000000000000000000000000000000000000\n",
		"templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-app\n",
	})
	push(t, reg, packageChart(t, app, "app"), "charts/app:1.0.0")
	if err := os.Rename(app, filepath.Join(repo, "app")); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		spec *repoconfig.Chart
		want error
	}{
		// why: the registry is reached over TLS; its chart's dependency
		// must not be read in the clear, whatever host it is on.
		{"oci chart", &repoconfig.Chart{Name: "app", Version: "1.0.0", OCI: "oci://" + strings.TrimPrefix(reg.URL, "https://") + "/charts/app"}, render.ErrFetchDowngrade},
		// why: the control: a chart in the repository has no scheme to
		// lower, and the allowed host serves the dependency.
		{"chart in the repository", &repoconfig.Chart{Name: "app", Path: "app"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := render.NewFetcher(render.FetchOptions{CacheDir: t.TempDir(), TLS: tlsOf(reg), AllowedHosts: []string{"127.0.0.1"}})
			_, err := render.Load(context.Background(), render.DirSource{Root: repo}, f, tc.spec)
			if (tc.want == nil && err != nil) || (tc.want != nil && !errors.Is(err, tc.want)) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
			if tc.want != nil && (!strings.Contains(err.Error(), "dependency lib") || !strings.Contains(err.Error(), plain.URL)) {
				t.Errorf("%v: want the dependency and its URL named", err)
			}
		})
	}
}
