package confighubtest

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
)

const (
	user  = "a11ce000-0000-4000-8000-000000000001"
	other = "b0b00000-0000-4000-8000-000000000002"
)

const manifests = `apiVersion: v1
kind: Service
metadata:
  name: redis
  namespace: redis
---
apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: redis-replicas
  namespace: redis
spec:
  replicas: 3
  template:
    spec:
      containers:
      - name: redis
        image: redis:7
`

type fixture struct {
	t      *testing.T
	s      *Server
	base   string
	space  string
	unitID string
	now    time.Time
}

func newFixture(t *testing.T, opts Options) *fixture {
	t.Helper()
	f := &fixture{t: t, now: time.Date(2026, 6, 18, 12, 0, 0, 0, time.UTC)}
	opts.Tokens = map[string]string{"tok": user}
	opts.Now = func() time.Time { return f.now }
	f.s = New(opts)
	base, stop, err := f.s.Listen()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	f.base = base
	f.space = f.s.AddSpace("prod")
	f.unitID, err = f.s.AddUnit("prod", "redis", ToolchainKubernetesYAML, []byte(manifests), other)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

type answer struct {
	status int
	header http.Header
	body   []byte
}

func (f *fixture) do(method, path string, q url.Values, header http.Header, body []byte) answer {
	f.t.Helper()
	req, err := http.NewRequest(method, f.base+path+"?"+q.Encode(), bytes.NewReader(body))
	if err != nil {
		f.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer tok")
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return answer{resp.StatusCode, resp.Header, data}
}

func (f *fixture) dataPath() string { return "/space/" + f.space + "/unit/" + f.unitID + "/data" }

func TestConditionalUploadAndDryRun(t *testing.T) {
	f := newFixture(t, Options{})
	hash := Hash([]byte(manifests))
	got := f.do("GET", f.dataPath(), nil, nil, nil)
	if got.status != 200 || string(got.body) != manifests || got.header.Get("ETag") != `"`+hash+`"` {
		t.Fatalf("download: %d %q %q", got.status, got.header.Get("ETag"), got.body)
	}
	if got := f.do("GET", f.dataPath(), nil, http.Header{"If-None-Match": {`"` + hash + `"`}}, nil); got.status != 304 {
		t.Fatalf("If-None-Match on the current hash: %d, want 304", got.status)
	}
	// Two fields and a new resource: the diff lists each, nothing else.
	edited := strings.Replace(strings.Replace(manifests, "replicas: 3", "replicas: 4", 1), "redis:7", "redis:7.2", 1) +
		"---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: extra\n  namespace: redis\n"
	q := url.Values{"dry_run": {"true"}, "include": {"Diff"}, "last_change_description": {"try"}}
	dry := f.do("PUT", f.dataPath(), q, http.Header{"If-Match": {`"` + hash + `"`}}, []byte(edited))
	var out struct {
		Unit struct {
			HeadRevisionNum int64
			DataHash        string
		}
		Diff struct {
			Resources []resourceDiff
		}
	}
	if err := json.Unmarshal(dry.body, &out); err != nil || dry.status != 200 {
		t.Fatalf("dry run: %d %s", dry.status, dry.body)
	}
	if out.Unit.HeadRevisionNum != 2 || out.Unit.DataHash != Hash([]byte(edited)) {
		t.Fatalf("the dry run's unit: %+v", out.Unit)
	}
	var paths []string
	for _, rd := range out.Diff.Resources {
		if rd.ToValue != "" {
			paths = append(paths, "add "+rd.Resource.ResourceType+" "+rd.Resource.ResourceName)
		}
		for _, c := range rd.Changes {
			paths = append(paths, c.ChangeType+" "+rd.Resource.ResourceName+" "+c.Path+" "+c.FromValue+"->"+c.ToValue)
		}
	}
	want := "Update redis/redis-replicas spec.replicas 3->4|Update redis/redis-replicas spec.template.spec.containers.0.image redis:7->redis:7.2|add v1/ConfigMap redis/extra"
	if strings.Join(paths, "|") != want {
		t.Fatalf("diff:\n%s\nwant\n%s", strings.Join(paths, "|"), want)
	}
	if len(f.s.Revisions("prod", "redis")) != 1 {
		t.Fatal("the dry run stored a revision")
	}
	// The real write, then the same If-Match again: 409, nothing stored.
	if got := f.do("PUT", f.dataPath(), url.Values{"last_change_description": {"scale"}}, http.Header{"If-Match": {hash}}, []byte(edited)); got.status != 200 {
		t.Fatalf("write: %d %s", got.status, got.body)
	}
	revs := f.s.Revisions("prod", "redis")
	if len(revs) != 2 || revs[1].UserID != user || revs[1].Description != "scale" || string(revs[1].Data) != edited {
		t.Fatalf("revisions after the write: %+v", revs)
	}
	if got := f.do("PUT", f.dataPath(), nil, http.Header{"If-Match": {hash}}, []byte(manifests)); got.status != 409 {
		t.Fatalf("a stale If-Match: %d, want 409", got.status)
	}
	if len(f.s.Revisions("prod", "redis")) != 2 {
		t.Fatal("a 409 stored a revision")
	}
	// Data that does not parse is refused, whatever If-Match says.
	if got := f.do("PUT", f.dataPath(), nil, nil, []byte("kind: [")); got.status != 400 {
		t.Fatalf("unparseable data: %d, want 400", got.status)
	}
	n, data, err := f.s.Apply("prod", "redis")
	if err != nil || n != 2 || string(data) != edited {
		t.Fatalf("apply: %d %v", n, err)
	}
}

func TestPagingAndWhere(t *testing.T) {
	f := newFixture(t, Options{PageSize: 2})
	for _, slug := range []string{"a", "b", "c", "d"} {
		if _, err := f.s.AddUnit("prod", slug, ToolchainKubernetesYAML, []byte(manifests), other); err != nil {
			t.Fatal(err)
		}
	}
	var slugs []string
	q := url.Values{"limit": {"100"}}
	for pages := 0; ; pages++ {
		if pages > 5 {
			t.Fatal("the list does not end")
		}
		got := f.do("GET", "/space/"+f.space+"/unit", q, nil, nil)
		var items []struct{ Unit struct{ Slug string } }
		if err := json.Unmarshal(got.body, &items); err != nil || got.status != 200 || len(items) > 2 {
			t.Fatalf("page: %d %s", got.status, got.body)
		}
		for _, it := range items {
			slugs = append(slugs, it.Unit.Slug)
		}
		next := got.header.Get("ConfigHub-Continue")
		if next == "" {
			break
		}
		q.Set("continue", next)
	}
	if strings.Join(slugs, ",") != "redis,a,b,c,d" {
		t.Fatalf("paged through %v", slugs)
	}
	got := f.do("GET", "/space/"+f.space+"/unit", url.Values{"where": {"Slug = 'c'"}}, nil, nil)
	if !strings.Contains(string(got.body), `"Slug":"c"`) || strings.Contains(string(got.body), `"Slug":"d"`) {
		t.Fatalf("where Slug = 'c': %s", got.body)
	}
	for _, bad := range []url.Values{{"limit": {"1001"}}, {"where": {"Slug LIKE 'c%'"}}, {"continue": {"!!"}}} {
		if got := f.do("GET", "/space/"+f.space+"/unit", bad, nil, nil); got.status != 400 {
			t.Errorf("%v: %d, want 400", bad, got.status)
		}
	}
}

func TestAuthAndFaults(t *testing.T) {
	f := newFixture(t, Options{})
	req, _ := http.NewRequest("GET", f.base+"/space", nil)
	for _, auth := range []string{"", "Bearer nope", "tok"} {
		req.Header.Set("Authorization", auth)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 401 {
			t.Errorf("Authorization %q: %d, want 401", auth, resp.StatusCode)
		}
	}
	// The three refused requests reached the server and count.
	f.s.Fail(OpListSpaces, 503, 2)
	for i, want := range []int{503, 503, 200} {
		if got := f.do("GET", "/space", nil, nil, nil); got.status != want {
			t.Errorf("request %d: %d, want %d", i, got.status, want)
		}
	}
	f.s.Hang(OpGetUnit, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	hr, _ := http.NewRequestWithContext(ctx, "GET", f.base+"/space/"+f.space+"/unit/"+f.unitID, nil)
	hr.Header.Set("Authorization", "Bearer tok")
	if resp, err := http.DefaultClient.Do(hr); err == nil {
		resp.Body.Close()
		t.Fatal("a hanging request was answered")
	}
	if got := f.do("GET", "/space/"+f.space+"/unit/"+f.unitID, url.Values{"include": {"HeadRevisionNum"}}, nil, nil); got.status != 200 ||
		!strings.Contains(string(got.body), `"HeadRevision"`) {
		t.Fatalf("after the hang: %d %s", got.status, got.body)
	}
	if f.s.Requests(OpGetUnit) != 2 || f.s.Requests(OpListSpaces) != 6 {
		t.Fatalf("counts: GetUnit %d, ListSpaces %d", f.s.Requests(OpGetUnit), f.s.Requests(OpListSpaces))
	}
}

// TestMutate: a mutating trigger's change shows in the dry run's diff and
// is stored with the write, as ConfigHub's would be.
func TestMutate(t *testing.T) {
	f := newFixture(t, Options{Mutate: func(b []byte) []byte { return bytes.ReplaceAll(b, []byte("redis:7"), []byte("redis:7-hardened")) }})
	edited := strings.Replace(manifests, "replicas: 3", "replicas: 4", 1)
	got := f.do("PUT", f.dataPath(), url.Values{"dry_run": {"true"}, "include": {"Diff"}}, nil, []byte(edited))
	if got.status != 200 || !strings.Contains(string(got.body), `"Path":"spec.template.spec.containers.0.image"`) ||
		!strings.Contains(string(got.body), `"Path":"spec.replicas"`) {
		t.Fatalf("the dry run does not show the trigger's change: %d %s", got.status, got.body)
	}
}
