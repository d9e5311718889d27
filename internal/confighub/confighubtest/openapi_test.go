package confighubtest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/backflow-dev/backflow/internal/confighub"
	"github.com/backflow-dev/backflow/internal/confighub/confighubtest"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// recorder keeps every answer the stand-in sends, by request.
type recorder struct {
	mu  sync.Mutex
	got []recorded
}

type recorded struct {
	method, path string
	query        url.Values
	reqHeader    http.Header
	status       int
	header       http.Header
	body         []byte
}

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		return resp, err
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	r.mu.Lock()
	r.got = append(r.got, recorded{req.Method, strings.TrimPrefix(req.URL.Path, confighubtest.BasePath), req.URL.Query(),
		req.Header.Clone(), resp.StatusCode, resp.Header.Clone(), body})
	r.mu.Unlock()
	return resp, nil
}

// schemas compiles testdata/openapi/responses.json: by "METHOD /template
// status", the schema each answer must satisfy.
type schemas struct {
	byKey map[string]*jsonschema.Schema
	ops   map[string]bool
}

func loadSchemas(t *testing.T) schemas {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "openapi", "responses.json"))
	if err != nil {
		t.Fatal(err)
	}
	var desc struct {
		Operations []struct {
			Operation, Status string
		} `json:"operations"`
	}
	if err := json.Unmarshal(data, &desc); err != nil {
		t.Fatal(err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	const url = "mem://confighub-openapi.json"
	if err := c.AddResource(url, doc); err != nil {
		t.Fatal(err)
	}
	s := schemas{byKey: map[string]*jsonschema.Schema{}, ops: map[string]bool{}}
	for i, o := range desc.Operations {
		sch, err := c.Compile(fmt.Sprintf("%s#/operations/%d/schema", url, i))
		if err != nil {
			t.Fatalf("%s %s: %v", o.Operation, o.Status, err)
		}
		s.byKey[o.Operation+" "+o.Status] = sch
		s.ops[o.Operation] = true
	}
	return s
}

// templateOf finds the description's path template a request path matches.
func (s schemas) templateOf(method, path string) string {
	segs := strings.Split(strings.Trim(path, "/"), "/")
	for key := range s.ops {
		m, tmpl, _ := strings.Cut(key, " ")
		pat := strings.Split(strings.Trim(tmpl, "/"), "/")
		if m != method || len(pat) != len(segs) {
			continue
		}
		ok := true
		for i, p := range pat {
			if !strings.HasPrefix(p, "{") && p != segs[i] {
				ok = false
				break
			}
		}
		if ok {
			return key
		}
	}
	return ""
}

// check validates one recorded answer; it returns what is wrong, or "".
func (s schemas) check(r recorded) string {
	op := s.templateOf(r.method, r.path)
	if op == "" {
		return fmt.Sprintf("%s %s is not an operation of the extracted description", r.method, r.path)
	}
	sch := s.byKey[fmt.Sprintf("%s %d", op, r.status)]
	if sch == nil {
		sch = s.byKey[op+" default"]
	}
	if sch == nil {
		return fmt.Sprintf("%s: status %d is not described", op, r.status)
	}
	if op == "GET /space/{space_id}/unit/{unit_id}/data" && r.status == 200 {
		// The data is octet-stream; what the description says of it is
		// that its ETag is the DataHash.
		if ct := r.header.Get("Content-Type"); ct != "application/octet-stream" {
			return op + ": Content-Type " + ct
		}
		if etag := strings.Trim(r.header.Get("ETag"), `"`); etag != confighubtest.Hash(r.body) {
			return fmt.Sprintf("%s: ETag %q is not the SHA-256 of the data", op, etag)
		}
		return ""
	}
	if r.status == 304 {
		return ""
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(r.body))
	if err != nil {
		return fmt.Sprintf("%s %d: not JSON: %v", op, r.status, err)
	}
	if err := sch.Validate(v); err != nil {
		return fmt.Sprintf("%s %d: %v\nbody: %s", op, r.status, err, r.body)
	}
	return ""
}

const (
	alice = "a11ce000-0000-4000-8000-000000000001"
	bob   = "b0b00000-0000-4000-8000-000000000002"
)

const redis = `apiVersion: v1
kind: Service
metadata:
  name: redis
  namespace: redis
spec:
  ports:
  - port: 6379
---
apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: redis-replicas
  namespace: redis
spec:
  replicas: 3 # the incident's field
`

// TestAnswersConformToTheDescription drives every operation the client
// uses against the stand-in, successes and failures, and validates each
// answer against the published schemas.
func TestAnswersConformToTheDescription(t *testing.T) {
	sch := loadSchemas(t)
	hub := confighubtest.New(confighubtest.Options{Tokens: map[string]string{"tok-alice": alice}, PageSize: 1})
	base, stop, err := hub.Listen()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	hub.AddSpace("other")
	hub.AddSpace("prod")
	if _, err := hub.AddUnit("prod", "redis", confighubtest.ToolchainKubernetesYAML, []byte(redis), bob); err != nil {
		t.Fatal(err)
	}
	if _, err := hub.AddUnit("prod", "cache", confighubtest.ToolchainKubernetesYAML, []byte(redis), bob); err != nil {
		t.Fatal(err)
	}
	rec := &recorder{}
	client := func(token string) *confighub.Client {
		c, err := confighub.New(confighub.Config{URL: base, Token: token, HTTP: &http.Client{Transport: rec}})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	c := client("tok-alice")
	ctx := context.Background()
	ref, err := c.Resolve(ctx, "prod", "redis")
	if err != nil {
		t.Fatal(err)
	}
	d, err := c.Read(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	edited := bytes.Replace(d.Data.Bytes, []byte("replicas: 3"), []byte("replicas: 4"), 1)
	if _, err := c.Upload(ctx, ref, edited, confighub.Write{IfMatch: d.Data.Hash, Description: "dry", DryRun: true}); err != nil {
		t.Fatal(err)
	}
	// A dry run that adds a resource and removes another: whole resources
	// in the diff.
	added := strings.Replace(string(edited), "kind: Service\n", "kind: ConfigMap\n", 1)
	if _, err := c.Upload(ctx, ref, []byte(added), confighub.Write{IfMatch: d.Data.Hash, DryRun: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Upload(ctx, ref, edited, confighub.Write{IfMatch: d.Data.Hash, Description: "scale"}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Revisions(ctx, ref); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Revision(ctx, ref, 2); err != nil {
		t.Fatal(err)
	}
	// Failures: a stale hash (409), a bad token (401), a missing unit
	// (404), data that does not parse (400), an injected 500.
	if _, err := c.Upload(ctx, ref, edited, confighub.Write{IfMatch: d.Data.Hash}); err == nil {
		t.Fatal("a write with a stale hash succeeded")
	}
	if _, err := client("wrong").GetUnit(ctx, ref); err == nil {
		t.Fatal("a bad token was accepted")
	}
	if _, err := c.GetUnit(ctx, confighub.Ref{SpaceSlug: "prod", UnitSlug: "gone", SpaceID: ref.SpaceID, UnitID: "00000000-0000-4000-8000-00000000ffff"}); err == nil {
		t.Fatal("a missing unit was found")
	}
	now, err := c.GetUnit(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Upload(ctx, ref, []byte("- not\n- a manifest\n"), confighub.Write{IfMatch: now.DataHash}); err == nil {
		t.Fatal("data that does not parse was stored")
	}
	hub.Fail(confighubtest.OpGetUnit, 500, 1)
	if _, err := c.GetUnit(ctx, ref); err == nil {
		t.Fatal("an injected 500 succeeded")
	}
	hub.Fail(confighubtest.OpListUnits, 403, 1)
	if _, err := c.Resolve(ctx, "prod", "redis"); err == nil {
		t.Fatal("an injected 403 succeeded")
	}

	seen := map[string]bool{}
	for _, r := range rec.got {
		if msg := sch.check(r); msg != "" {
			t.Error(msg)
		}
		seen[sch.templateOf(r.method, r.path)] = true
	}
	for op := range sch.ops {
		if !seen[op] {
			t.Errorf("%s was never driven", op)
		}
	}
	if msg := pagedAsDescribed(sch, rec.got); msg != "" {
		t.Error(msg)
	}
	params := loadParameters(t)
	for _, r := range rec.got {
		if msg := params.check(sch.templateOf(r.method, r.path), r); msg != "" {
			t.Error(msg)
		}
	}
	statuses := map[int]bool{}
	for _, r := range rec.got {
		statuses[r.status] = true
	}
	t.Logf("validated %d answers and requests of %d operations (statuses %v)", len(rec.got), len(sch.ops), statuses)
	for _, want := range []int{200, 400, 401, 403, 404, 409, 500} {
		if !statuses[want] {
			t.Errorf("no answer with status %d was checked", want)
		}
	}
}

// parameters is testdata/openapi/parameters.json: by "METHOD /template",
// the query parameters the description lists for the operation, each
// with its schema, the values its include parameter names, and the media
// type of its request body.
type parameters map[string]struct {
	query   map[string]*jsonschema.Schema
	include []string
	body    string
}

func loadParameters(t *testing.T) parameters {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "openapi", "parameters.json"))
	if err != nil {
		t.Fatal(err)
	}
	var desc struct {
		Operations []struct {
			Operation string
			Query     map[string]json.RawMessage
			Include   []string
			Body      string
		}
	}
	if err := json.Unmarshal(data, &desc); err != nil {
		t.Fatal(err)
	}
	out := parameters{}
	for i, o := range desc.Operations {
		c := jsonschema.NewCompiler()
		c.AssertFormat()
		q := map[string]*jsonschema.Schema{}
		for name, raw := range o.Query {
			doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
			if err != nil {
				t.Fatal(err)
			}
			u := fmt.Sprintf("mem://parameters/%d/%s", i, name)
			if err := c.AddResource(u, doc); err != nil {
				t.Fatal(err)
			}
			if q[name], err = c.Compile(u); err != nil {
				t.Fatalf("%s %s: %v", o.Operation, name, err)
			}
		}
		out[o.Operation] = struct {
			query   map[string]*jsonschema.Schema
			include []string
			body    string
		}{q, o.Include, o.Body}
	}
	return out
}

// check says what of request r to operation op the description does not
// list: a query parameter it does not name, a value its schema refuses (a
// query string read as the schema's type), an include value it does not
// name, a body of another media type. It returns "" when there is none.
func (p parameters) check(op string, r recorded) string {
	o, ok := p[op]
	if !ok {
		return op + ": no parameters extracted"
	}
	var bad []string
	for name, vs := range r.query {
		sch := o.query[name]
		if sch == nil {
			bad = append(bad, fmt.Sprintf("query parameter %q is not the description's", name))
			continue
		}
		for _, v := range vs {
			var val any = v
			if n, err := strconv.ParseInt(v, 10, 64); err == nil {
				val = json.Number(strconv.FormatInt(n, 10))
			} else if b, err := strconv.ParseBool(v); err == nil {
				val = b
			}
			if err := sch.Validate(val); err != nil {
				// A string schema takes the text as it came.
				if err2 := sch.Validate(v); err2 != nil {
					bad = append(bad, fmt.Sprintf("%s=%q: %v", name, v, err))
				}
			}
		}
		if name == "include" {
			for _, v := range vs {
				for part := range strings.SplitSeq(v, ",") {
					if !slices.Contains(o.include, part) {
						bad = append(bad, fmt.Sprintf("include %q names none of %v", part, o.include))
					}
				}
			}
		}
	}
	if ct := r.reqHeader.Get("Content-Type"); o.body != "" && ct != o.body {
		bad = append(bad, fmt.Sprintf("a %s body, want %s", ct, o.body))
	}
	if len(bad) == 0 {
		return ""
	}
	return op + ": " + strings.Join(bad, "; ")
}

// listOps are the operations whose 200 answer the description gives a
// ConfigHub-Continue header: the only ones that may carry it.
var listOps = map[string]bool{
	"GET /space": true, "GET /space/{space_id}/unit": true, "GET /space/{space_id}/unit/{unit_id}/revision": true,
}

// pagedAsDescribed checks the recorded answers' paging: ConfigHub-Continue
// only on a list operation's 200, and each token served taken as the
// continue parameter of the same operation's next request; revisions, of
// which the test makes more than a page, were paged. It returns what is
// wrong, or "".
func pagedAsDescribed(sch schemas, got []recorded) string {
	var bad []string
	served := map[string]string{} // op + token -> the path that served it
	followed := map[string]bool{}
	for _, r := range got {
		op := sch.templateOf(r.method, r.path)
		if c := r.query.Get("continue"); c != "" {
			if served[op+" "+c] != r.path {
				bad = append(bad, fmt.Sprintf("%s: continue %q is no token this operation served", op, c))
			}
			followed[op] = true
		}
		tok := r.header.Get("ConfigHub-Continue")
		if tok == "" {
			continue
		}
		if !listOps[op] || r.status != http.StatusOK {
			bad = append(bad, fmt.Sprintf("%s %d: a ConfigHub-Continue header the description does not give it", op,
				r.status))
		}
		served[op+" "+tok] = r.path
	}
	for key := range served {
		op := key[:strings.LastIndex(key, " ")]
		if !followed[op] {
			bad = append(bad, op+": a ConfigHub-Continue token was not followed")
		}
	}
	if !followed["GET /space/{space_id}/unit/{unit_id}/revision"] {
		bad = append(bad, "ListExtendedRevisions was never paged")
	}
	return strings.Join(bad, "\n")
}

// TestDriftIsCaught: the schemas bite. Each body is what the stand-in
// sends with one field drifted from the description; each must fail.
func TestDriftIsCaught(t *testing.T) {
	sch := loadSchemas(t)
	unit := `{"UnitID":"00000000-0000-4000-8000-000000000002","SpaceID":"00000000-0000-4000-8000-000000000001","Slug":"redis","ToolchainType":"Kubernetes/YAML","HeadRevisionNum":%s,"CreatedAt":%s}`
	cases := []struct {
		why, method, path string
		status            int
		body              string
	}{
		{"a revision number as a string", "GET", "/space/s/unit/u", 200, `{"Unit":` + fmt.Sprintf(unit, `"2"`, `"2026-01-01T00:00:00Z"`) + `}`},
		{"a time that is not RFC 3339", "GET", "/space/s/unit/u", 200, `{"Unit":` + fmt.Sprintf(unit, `2`, `"yesterday"`) + `}`},
		{"a unit without its ToolchainType", "PUT", "/space/s/unit/u/data", 200, `{"Unit":{"Slug":"redis"}}`},
		{"a list answered as an object", "GET", "/space", 200, `{"Space":{"Slug":"prod"}}`},
		{"a slug the pattern refuses", "GET", "/space", 200, `[{"Space":{"Slug":"-prod"}}]`},
		{"an error Code as a number", "GET", "/space/s/unit/u", 404, `{"Code":404,"Message":"Unit not found."}`},
		{"a revision's UserID that is not a UUID", "GET", "/space/s/unit/u/revision", 200, `[{"Revision":{"UserID":"alice"}}]`},
		{"a diff's changes as an object", "PUT", "/space/s/unit/u/data", 200, `{"Unit":{"Slug":"r","ToolchainType":"Kubernetes/YAML"},"Diff":{"Resources":[{"Changes":{}}]}}`},
	}
	for _, tc := range cases {
		if sch.check(recorded{method: tc.method, path: tc.path, status: tc.status, body: []byte(tc.body)}) == "" {
			t.Errorf("%s: accepted", tc.why)
		}
	}
	page := func(method, path string, status int, token, cont string) recorded {
		r := recorded{method: method, path: path, status: status, header: http.Header{}, query: url.Values{}}
		if token != "" {
			r.header.Set("ConfigHub-Continue", token)
		}
		if cont != "" {
			r.query.Set("continue", cont)
		}
		return r
	}
	revs := "/space/s/unit/u/revision"
	paged := []recorded{page("GET", revs, 200, "t1", ""), page("GET", revs, 200, "", "t1")}
	if msg := pagedAsDescribed(sch, paged); msg != "" {
		t.Fatalf("paging as described refused: %s", msg)
	}
	for _, tc := range []struct {
		why string
		got []recorded
	}{
		{"a ConfigHub-Continue on an operation that is no list", append(slices.Clone(paged),
			page("GET", "/space/s/unit/u", 200, "t2", ""), page("GET", "/space/s/unit/u", 200, "", "t2"))},
		{"a ConfigHub-Continue on an error", append(slices.Clone(paged),
			page("GET", "/space", 500, "t2", ""), page("GET", "/space", 200, "", "t2"))},
		{"a token the client did not follow", append(slices.Clone(paged), page("GET", "/space", 200, "t2", ""))},
		{"a continue no answer served", append(slices.Clone(paged), page("GET", "/space", 200, "", "t9"))},
		{"revisions never paged", nil},
	} {
		if pagedAsDescribed(sch, tc.got) == "" {
			t.Errorf("%s: accepted", tc.why)
		}
	}
	params := loadParameters(t)
	const upload, getUnit = "PUT /space/{space_id}/unit/{unit_id}/data", "GET /space/{space_id}/unit/{unit_id}"
	req := func(q, contentType string) recorded {
		v, err := url.ParseQuery(q)
		if err != nil {
			t.Fatal(err)
		}
		return recorded{query: v, reqHeader: http.Header{"Content-Type": {contentType}}}
	}
	const octets = "application/octet-stream"
	if msg := params.check(upload, req("dry_run=true&include=Diff&last_change_description=x", octets)); msg != "" {
		t.Fatalf("the client's dry run refused: %s", msg)
	}
	for _, tc := range []struct {
		why, op string
		r       recorded
	}{
		{"a parameter the description does not name", upload, req("dryRun=true&include=Diff", octets)},
		{"a boolean that is not one", upload, req("dry_run=yes", octets)},
		{"a limit over the description's 1000", "GET /space", req("limit=5000", "")},
		{"an include value the operation does not name", upload, req("include=Diffs", octets)},
		{"GetUnit's include naming a field, not an expansion", getUnit, req("include=DataHash", "")},
		{"the data uploaded as JSON", upload, req("include=Diff", "application/json")},
		{"a query parameter on DownloadUnitData, which has none", "GET /space/{space_id}/unit/{unit_id}/data",
			req("include=Diff", "")},
	} {
		if params.check(tc.op, tc.r) == "" {
			t.Errorf("%s: accepted", tc.why)
		}
	}
}
