package localhub

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/bradleyfalzon/ghinstallation/v2"
	"github.com/google/go-github/v62/github"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// recorder keeps every response body the hub sends, by request.
type recorder struct {
	mu   sync.Mutex
	next http.RoundTripper
	got  []recorded
}

type recorded struct {
	method, path string
	status       int
	body         []byte
}

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := r.next.RoundTrip(req)
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
	r.got = append(r.got, recorded{req.Method, req.URL.Path, resp.StatusCode, body})
	r.mu.Unlock()
	return resp, nil
}

// operationOf finds the description's path template a request path matches.
func operationOf(method, path string, ops map[string]bool) string {
	segs := strings.Split(strings.Trim(path, "/"), "/")
	best := ""
	for key := range ops {
		m, tmpl, _ := strings.Cut(key, " ")
		if m != method {
			continue
		}
		pat := strings.Split(strings.Trim(tmpl, "/"), "/")
		if matchTemplate(pat, segs) && (best == "" || strings.Count(key, "{") < strings.Count(best, "{")) {
			best = key
		}
	}
	return best
}

// matchTemplate matches segments; a last {ref}, {path} or {basehead} takes
// the rest of the path.
func matchTemplate(pat, segs []string) bool {
	for i, p := range pat {
		if i >= len(segs) {
			return false
		}
		if strings.HasPrefix(p, "{") {
			// Refs, file paths and base...head hold slashes.
			if i == len(pat)-1 && (p == "{ref}" || p == "{path}" || p == "{basehead}") {
				return true
			}
			continue
		}
		if p != segs[i] {
			return false
		}
	}
	return len(pat) == len(segs)
}

// TestResponsesConformToGitHubsDescription drives every REST operation the
// GitHub adapter uses against the hub and validates each success response
// body against GitHub's published REST description (testdata/openapi).
func TestResponsesConformToGitHubsDescription(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "openapi", "responses.json"))
	if err != nil {
		t.Fatal(err)
	}
	var desc struct {
		Source     string `json:"source"`
		Operations []struct {
			Operation string `json:"operation"`
			Status    string `json:"status"`
		} `json:"operations"`
	}
	if err := json.Unmarshal(data, &desc); err != nil {
		t.Fatal(err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	compiler := jsonschema.NewCompiler()
	const url = "mem://github-rest.json"
	if err := compiler.AddResource(url, doc); err != nil {
		t.Fatal(err)
	}
	schemas := map[string]*jsonschema.Schema{}
	ops := map[string]bool{}
	for i, o := range desc.Operations {
		sch, err := compiler.Compile(fmt.Sprintf("%s#/operations/%d/schema", url, i))
		if err != nil {
			t.Fatalf("%s %s: %v", o.Operation, o.Status, err)
		}
		schemas[o.Operation+" "+o.Status] = sch
		ops[o.Operation] = true
	}

	e := newEnv(t, Options{})
	rec := &recorder{next: http.DefaultTransport}
	tr, err := ghinstallation.New(rec, e.hub.AppID(), e.inst, e.hub.PrivateKeyPEM())
	if err != nil {
		t.Fatal(err)
	}
	tr.BaseURL = e.srv.URL
	c := e.withBase(t, github.NewClient(&http.Client{Transport: tr}))
	atr, err := ghinstallation.NewAppsTransport(rec, e.hub.AppID(), e.hub.PrivateKeyPEM())
	if err != nil {
		t.Fatal(err)
	}
	atr.BaseURL = e.srv.URL
	app := e.withBase(t, github.NewClient(&http.Client{Transport: atr}))
	ctx := e.ctx
	must := func(what string, resp *github.Response, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}

	// The App and its installation.
	_, resp, err := app.Apps.Get(ctx, "")
	must("get app", resp, err)
	_, resp, err = app.Apps.ListInstallations(ctx, nil)
	must("list installations", resp, err)
	_, resp, err = app.Apps.CreateInstallationToken(ctx, e.inst, nil)
	must("token", resp, err)
	_, resp, err = c.Apps.ListRepos(ctx, nil)
	must("installation repositories", resp, err)
	_, resp, err = c.Repositories.Get(ctx, testOwner, testRepo)
	must("repository", resp, err)
	_, resp, err = app.Apps.FindRepositoryInstallation(ctx, testOwner, testRepo)
	must("repository installation", resp, err)
	_, _, resp, err = c.Repositories.GetContents(ctx, testOwner, testRepo, "README.md", nil)
	must("contents", resp, err)

	// The Git database: ref, blob, tree, commit, ref update.
	base := commitFile(t, e, c, "main", "backflow/prod/redis", "envs/prod/redis/values.yaml", "replicas: 4\n", "four")
	commitFile(t, e, c, "backflow/prod/redis", "backflow/prod/redis", "envs/prod/redis/values.yaml", "replicas: 5\n", "five")
	parent, resp, err := c.Git.GetCommit(ctx, testOwner, testRepo, base)
	must("commit", resp, err)
	_, resp, err = c.Git.GetTree(ctx, testOwner, testRepo, parent.GetTree().GetSHA(), true)
	must("tree", resp, err)
	_, resp, err = c.Repositories.CompareCommits(ctx, testOwner, testRepo, "main", "backflow/prod/redis", nil)
	must("compare", resp, err)

	// A pull request's life.
	pr := openPull(t, e, c, "backflow/prod/redis")
	_, resp, err = c.PullRequests.List(ctx, testOwner, testRepo, nil)
	must("list pulls", resp, err)
	_, resp, err = c.PullRequests.Get(ctx, testOwner, testRepo, pr.GetNumber())
	must("get pull", resp, err)
	_, resp, err = c.PullRequests.Edit(ctx, testOwner, testRepo, pr.GetNumber(), &github.PullRequest{Title: github.String("Scale redis")})
	must("edit pull", resp, err)
	_, resp, err = c.PullRequests.RequestReviewers(ctx, testOwner, testRepo, pr.GetNumber(), github.ReviewersRequest{Reviewers: []string{"bob"}})
	must("request reviewers", resp, err)
	cm, resp, err := c.Issues.CreateComment(ctx, testOwner, testRepo, pr.GetNumber(), &github.IssueComment{Body: github.String("hi")})
	must("comment", resp, err)
	_, resp, err = c.Issues.EditComment(ctx, testOwner, testRepo, cm.GetID(), &github.IssueComment{Body: github.String("hello")})
	must("edit comment", resp, err)
	_, resp, err = c.Issues.ListComments(ctx, testOwner, testRepo, pr.GetNumber(), nil)
	must("list comments", resp, err)
	_, resp, err = c.Issues.AddLabelsToIssue(ctx, testOwner, testRepo, pr.GetNumber(), []string{"reverse-reconcile", "pre-authorized"})
	must("labels", resp, err)
	resp, err = c.Issues.RemoveLabelForIssue(ctx, testOwner, testRepo, pr.GetNumber(), "pre-authorized")
	must("remove label", resp, err)
	head := pr.GetHead().GetSHA()
	if got, _, err := c.PullRequests.Get(ctx, testOwner, testRepo, pr.GetNumber()); err == nil {
		head = got.GetHead().GetSHA()
	}
	run, resp, err := c.Checks.CreateCheckRun(ctx, testOwner, testRepo, github.CreateCheckRunOptions{Name: "backflow/receipt", HeadSHA: head, Status: github.String("in_progress")})
	must("check run", resp, err)
	_, resp, err = c.Checks.UpdateCheckRun(ctx, testOwner, testRepo, run.GetID(), github.UpdateCheckRunOptions{Name: "backflow/receipt", Conclusion: github.String("success"),
		Output: &github.CheckRunOutput{Title: github.String("verified"), Summary: github.String("ok")}})
	must("update check run", resp, err)
	_, resp, err = c.Checks.ListCheckRunsForRef(ctx, testOwner, testRepo, head, nil)
	must("list check runs", resp, err)
	_, resp, err = c.PullRequests.Merge(ctx, testOwner, testRepo, pr.GetNumber(), "", &github.PullRequestOptions{SHA: head, MergeMethod: "squash"})
	must("merge", resp, err)

	// The drift issue.
	is, resp, err := c.Issues.Create(ctx, testOwner, testRepo, &github.IssueRequest{Title: github.String("drift"), Body: github.String("b"), Labels: &[]string{"backflow-drift"}})
	must("issue", resp, err)
	_, resp, err = c.Issues.Edit(ctx, testOwner, testRepo, is.GetNumber(), &github.IssueRequest{State: github.String("closed")})
	must("edit issue", resp, err)
	_, resp, err = c.Issues.ListByRepo(ctx, testOwner, testRepo, &github.IssueListByRepoOptions{State: "all"})
	must("list issues", resp, err)

	// The App manifest flow's exchange of a code, as backflow app create
	// makes it (no credentials).
	code := manifestCodeFor(t, e.srv.URL, `{"name":"backflow","url":"https://example.com","redirect_url":"http://127.0.0.1:1/callback","hook_attributes":{"url":"https://example.com/webhook"},"default_permissions":{"contents":"write"},"default_events":["push"]}`)
	anon := e.withBase(t, github.NewClient(&http.Client{Transport: rec}))
	_, resp, err = anon.Apps.CompleteAppManifest(ctx, code)
	must("manifest conversion", resp, err)

	seen := map[string]bool{}
	for _, r := range rec.got {
		if r.status/100 != 2 || len(r.body) == 0 {
			continue
		}
		op := operationOf(r.method, r.path, ops)
		if op == "" {
			continue
		}
		sch := schemas[op+" "+strconv.Itoa(r.status)]
		if sch == nil {
			t.Errorf("%s %s: status %d is not a success status of %s", r.method, r.path, r.status, op)
			continue
		}
		seen[op] = true
		inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(r.body))
		if err != nil {
			t.Errorf("%s %s: body is not JSON: %v", r.method, r.path, err)
			continue
		}
		if err := sch.Validate(inst); err != nil {
			t.Errorf("%s %s does not conform to %s (%s): %v", r.method, r.path, op, desc.Source, err)
		}
	}
	var missed []string
	for op := range ops {
		if !seen[op] {
			missed = append(missed, op)
		}
	}
	slices.Sort(missed)
	if len(missed) > 0 {
		t.Errorf("operations in testdata/openapi the test did not exercise: %v", missed)
	}
}
