package bot

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"log/slog"

	"github.com/backflow-dev/backflow/internal/forge"
	"github.com/backflow-dev/backflow/internal/forge/forgetest"
	"github.com/backflow-dev/backflow/internal/lifecycle"
	"github.com/backflow-dev/backflow/internal/observe"
	"github.com/backflow-dev/backflow/internal/plan"
)

// The executor never calls back into the lifecycle while it carries out a
// chain: the only lifecycle names execute.go spells are the effect types
// and their constants, the executor holds no lifecycle.Input nor the
// repository cycle that does, and every lifecycle method it calls, in
// execute.go or any other of its methods, is one lifecycleMethods allows.
// And it makes through its port only the coarse operations: the fine calls
// each is made of stay in forge.Steps.
func TestExecutorReachesTheLifecycleOnlyThroughEffects(t *testing.T) {
	for _, p := range executorProblems(t, "execute.go") {
		t.Error(p)
	}
	for _, p := range lifecycleMethodProblems(t) {
		t.Error(p)
	}
}

// lifecycleMethods are the lifecycle methods the executor may call (in
// execute.go and in any method of the executor), on what an effect carries,
// each with why it is no decision: it reads the effect's own data and the
// forge's answer, and returns data. A method not listed here is a call back
// into the lifecycle's rules, found by the type checker whatever the
// receiver's variable is called.
var lifecycleMethods = map[string]string{
	"Kind.Reported":              "whether an effect of the kind is reported as an action: a property of the kind",
	"Proposal.CommitOn":          "the commit of the proposal's files, message and trailers on the base the forge gave",
	"Proposal.Title":             "the title the proposal carries, rendered",
	"Proposal.Body":              "the body the proposal carries, with the marker given, rendered",
	"Proposal.CheckRun":          "the receipt check's run the proposal carries, for the head the write made",
	"Proposal.MergeNote":         "the note a merged write-back's marker carries, from the proposal's data",
	"Proposal.ProposedElsewhere": "finds this proposal's own pull request in the forge's listing, by its branch and change",
	"Proposal.Recover": "names which of an Open's recoveries the commits the forge found on the branch call for " +
		"(whose commits they are), the recoveries fixed when the effect was decided",
	"Marker.Written": "the marker with the head and base the forge reports the write made",
	"Marker.Sealed":  "the marker sealed with the commit key for this pull request",
	"Marker.Into":    "the body with the marker put into it",
	"Effect.BaseMoved": "whether the head the forge reports is still the effect's base, the cycle's own merges " +
		"aside",
	"Effect.Bounded":        "the Bound check's run for the verdict on the diff the forge gave",
	"Effect.Mergeable":      "whether the pull request the forge returned is mergeable and green at the effect's head",
	"Effect.RefusedComment": "the comment quoting GitHub's refusal to arm auto-merge, unless the pull request has it",
	"Effect.WitnessComment": "the comment quoting the store's refusal of a revision",
	"Evidence.Policy":       "the policy the follow-up was decided against",
	"Evidence.Proven": "the proven check run and comment of the receipts the default branch holds, each verified " +
		"against the evidence's policy",
	"Evidence.Published": "the proven check run and comment of the receipts the store proved",
}

// The allow-list is held by type, not by name: a call back into the
// lifecycle's rules from an executor method is found, and a method the
// executor may call on an effect is not allowed on another type.
func TestLifecycleMethodRuleFindsACallBack(t *testing.T) {
	got := lifecycleMethodProblems(t, filepath.Join("testdata", "executor", "redecide.go"))
	var found []string
	for _, p := range got {
		if strings.Contains(p, "redecide.go") {
			found = append(found, p)
		}
	}
	want := []string{"Input.Chain", "Input.BaseMoved"}
	if len(found) != len(want) {
		t.Fatalf("found %d calls in redecide.go, want %d:\n%s", len(found), len(want), strings.Join(got, "\n"))
	}
	for i, w := range want {
		if !strings.Contains(found[i], "lifecycle's "+w+" ") {
			t.Errorf("found %q, want the call of %s", found[i], w)
		}
	}
}

// lifecycleMethodProblems type-checks package bot (its files other than
// the tests, with extra) and lists the executor's calls of lifecycle
// methods that lifecycleMethods does not allow, in order. The packages it
// imports are read from their export data, as go list -export builds it.
func lifecycleMethodProblems(t *testing.T, extra ...string) []string {
	t.Helper()
	cmd := exec.Command("go", "list", "-export", "-deps", "-f", "{{.ImportPath}}\t{{.Export}}", ".")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	exports := map[string]string{}
	for line := range strings.Lines(string(out)) {
		if p, e, ok := strings.Cut(strings.TrimSpace(line), "\t"); ok && e != "" {
			exports[p] = e
		}
	}
	names, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	var files []*ast.File
	for _, n := range append(names, extra...) {
		if strings.HasSuffix(n, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, n, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	imp := importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) {
		e, ok := exports[path]
		if !ok {
			return nil, fmt.Errorf("go list gave no export data for %s", path)
		}
		return os.Open(e)
	})
	info := &types.Info{Selections: map[*ast.SelectorExpr]*types.Selection{}}
	if _, err := (&types.Config{Importer: imp}).Check(module+"/internal/bot", fset, files, info); err != nil {
		t.Fatal(err)
	}
	var problems []string
	called := map[string]bool{}
	for _, f := range files {
		whole := filepath.Base(fset.File(f.Pos()).Name()) == "execute.go"
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || !whole && (fd.Recv == nil || !strings.Contains(typeNames(fd.Recv), "executor")) {
				continue
			}
			ast.Inspect(fd, func(n ast.Node) bool {
				sel, ok := n.(*ast.SelectorExpr)
				if !ok {
					return true
				}
				if name, ok := lifecycleMethod(info.Selections[sel]); ok {
					called[name] = true
					if _, allowed := lifecycleMethods[name]; !allowed {
						problems = append(problems, fmt.Sprintf("%s: the executor calls the lifecycle's %s "+
							"(not in lifecycleMethods): a call back into its rules", fset.Position(sel.Sel.Pos()), name))
					}
				}
				return true
			})
		}
	}
	// The list stays exact: what the executor no longer calls goes.
	for _, name := range slices.Sorted(maps.Keys(lifecycleMethods)) {
		if !called[name] {
			problems = append(problems, "lifecycleMethods allows "+name+", which the executor does not call")
		}
	}
	return problems
}

// module is the module path of the project.
const module = "github.com/backflow-dev/backflow"

// lifecycleMethod names the method s selects as Type.Method when it is one
// of internal/lifecycle's.
func lifecycleMethod(s *types.Selection) (string, bool) {
	if s == nil || s.Kind() == types.FieldVal {
		return "", false
	}
	fn, ok := s.Obj().(*types.Func)
	if !ok || fn.Pkg() == nil || fn.Pkg().Path() != module+"/internal/lifecycle" {
		return "", false
	}
	recv := fn.Type().(*types.Signature).Recv().Type()
	if p, ok := recv.(*types.Pointer); ok {
		recv = p.Elem()
	}
	named, ok := recv.(*types.Named)
	if !ok {
		return "", false
	}
	return named.Obj().Name() + "." + fn.Name(), true
}

// effectNames are the lifecycle identifiers the executor may name: the
// effect type, what it carries, and the kinds and recoveries it switches on.
var effectNames = []string{
	"Effect", "Pull", "Kind",
	"Open", "Update", "Keep", "Close", "Comment", "AutoMerge", "Merge", "Skip", "Cleanup", "Check", "Disarm",
	"Proven", "Reverted", "FollowUp", "DriftIssue", "Hold", "Release", "Record", "Review", "Label", "Unlabel", "ListHolds",
	"Revise", "Replan",
	"LeaveAlone", "Reuse", "Rewrite",
}

// composedCalls are the forge calls the executor's port takes only as part
// of one operation (forge.Steps): the executor never makes them one by one.
var composedCalls = []string{"CreatePullRequest", "FindOpenPullRequest", "RequestReviewers", "AddLabels", "RemoveLabel",
	"ListComments", "CreateComment", "ListCheckRuns", "CreateCheckRun", "CreateIssue", "UpdateIssue",
	"BranchHead", "CommitsSince", "GetPullRequest", "ListPullRequests", "Commit", "UpdatePullRequest", "ClosePullRequest",
	"EnableAutoMerge", "DisableAutoMerge", "Merge", "OpenPullRequest", "SetUpPullRequest", "CommentOnce"}

// maxWriterMethods is the size of the executor's port: three reads and one
// write per thing an effect does.
const maxWriterMethods = 10

// The executor's port stays narrow, and none of the fine calls its
// operations are composed of is one of its methods.
func TestWriterIsNarrow(t *testing.T) {
	w := reflect.TypeFor[Writer]()
	if w.NumMethod() > maxWriterMethods {
		t.Errorf("Writer has %d methods, at most %d", w.NumMethod(), maxWriterMethods)
	}
	for i := range w.NumMethod() {
		if name := w.Method(i).Name; slices.Contains(composedCalls, name) {
			t.Errorf("Writer has %s, which forge.Steps composes into one of its operations", name)
		}
	}
}

func executorProblems(t *testing.T, file string) []string {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, file, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.SelectorExpr:
			if id, ok := n.X.(*ast.Ident); ok && id.Name == "lifecycle" && !slices.Contains(effectNames, n.Sel.Name) {
				out = append(out, fset.Position(n.Pos()).String()+": the executor reaches lifecycle."+n.Sel.Name+", not an effect type")
			}
			if f, ok := n.X.(*ast.SelectorExpr); ok && f.Sel.Name == "f" && slices.Contains(composedCalls, n.Sel.Name) {
				out = append(out, fset.Position(n.Pos()).String()+": the executor calls "+n.Sel.Name+", which its port takes as one with others (forge.Steps)")
			}
		case *ast.Ident:
			if n.Name == "repoCycle" || n.Name == "Input" {
				out = append(out, fset.Position(n.Pos()).String()+": the executor reaches "+n.Name+", which decides")
			}
		case *ast.FuncDecl:
			if n.Recv != nil && !strings.Contains(typeNames(n.Recv), "executor") {
				out = append(out, fset.Position(n.Pos()).String()+": "+n.Name.Name+" is not the executor's")
			}
		}
		return true
	})
	return out
}

func typeNames(fl *ast.FieldList) string {
	var b strings.Builder
	for _, f := range fl.List {
		ast.Inspect(f.Type, func(n ast.Node) bool {
			if id, ok := n.(*ast.Ident); ok {
				b.WriteString(id.Name)
			}
			return true
		})
	}
	return b.String()
}

// scripted answers the executor's calls from a few fields, with no git and
// no GitHub: what a test needs the forge to say. The Recorder in front of
// it records the writes as effects ("acme/gitops#12:label:x").
type scripted struct {
	forge.Forge // nil: a call the executor should not make panics

	head      string // the default branch's head
	branch    string // an existing write-back branch's head, "" for none
	commits   []forge.Commit
	prs       []forge.PullRequest // what listing the branch's pull requests says
	enable    error               // EnableAutoMerge's answer
	mergeable string              // GetPullRequest's MergeableState
	next      int
}

func (s *scripted) ReadFile(context.Context, forge.Repo, string, string) ([]byte, error) {
	return nil, forge.ErrNotFound
}

func (s *scripted) BranchHead(_ context.Context, repo forge.Repo, branch string) (string, error) {
	if branch == repo.DefaultBranch {
		return s.head, nil
	}
	if s.branch == "" {
		return "", forge.ErrNotFound
	}
	return s.branch, nil
}

func (s *scripted) Commit(_ context.Context, req forge.CommitRequest) (string, error) {
	if req.ExpectedHead == "" && s.branch != "" || req.ExpectedHead != "" && req.ExpectedHead != s.branch {
		return "", fmt.Errorf("%w: %s is at %q", forge.ErrConflict, req.Branch, s.branch)
	}
	s.branch = "c" + req.BaseSHA[:4]
	return s.branch, nil
}

func (s *scripted) CommitsSince(context.Context, forge.Repo, string, string) ([]forge.Commit, error) {
	return s.commits, nil
}

func (s *scripted) ListPullRequests(context.Context, forge.Repo, forge.PullRequestFilter) ([]forge.PullRequest, error) {
	return s.prs, nil
}

func (s *scripted) CreatePullRequest(_ context.Context, repo forge.Repo, np forge.NewPullRequest) (forge.PullRequest, error) {
	s.next++
	return forge.PullRequest{Number: 11 + s.next, Title: np.Title, Body: np.Body, HeadRef: np.Head, HeadSHA: s.branch, BaseRef: np.Base,
		State: forge.StateOpen, Mine: true}, nil
}

func (s *scripted) UpdatePullRequest(_ context.Context, _ forge.Repo, number int, upd forge.PullRequestUpdate) (forge.PullRequest, error) {
	pr := forge.PullRequest{Number: number, State: forge.StateOpen, Mine: true, HeadSHA: s.branch}
	if upd.Body != nil {
		pr.Body = *upd.Body
	}
	return pr, nil
}

func (s *scripted) GetPullRequest(_ context.Context, _ forge.Repo, number int) (forge.PullRequest, error) {
	return forge.PullRequest{Number: number, HeadSHA: s.branch, MergeableState: s.mergeable}, nil
}

func (s *scripted) ListCheckRuns(context.Context, forge.Repo, string, string) ([]forge.CheckRun, error) {
	return nil, nil
}

func (s *scripted) CreateCheckRun(_ context.Context, _ forge.Repo, run forge.CheckRun) (forge.CheckRun, error) {
	return run, nil
}

func (s *scripted) RequestReviewers(context.Context, forge.Repo, int, []string, []string) error {
	return nil
}
func (s *scripted) AddLabels(context.Context, forge.Repo, int, ...string) error           { return nil }
func (s *scripted) RemoveLabel(context.Context, forge.Repo, int, string) error            { return nil }
func (s *scripted) DisableAutoMerge(context.Context, forge.Repo, forge.PullRequest) error { return nil }
func (s *scripted) ClosePullRequest(context.Context, forge.Repo, int) error               { return nil }
func (s *scripted) ListComments(context.Context, forge.Repo, int) ([]forge.Comment, error) {
	return nil, nil
}

func (s *scripted) CreateComment(context.Context, forge.Repo, int, string) (forge.Comment, error) {
	return forge.Comment{}, nil
}

func (s *scripted) EnableAutoMerge(context.Context, forge.Repo, forge.PullRequest, string, forge.MergeMethod) error {
	return s.enable
}

func (s *scripted) Merge(context.Context, forge.Repo, int, string, forge.MergeMethod) (string, error) {
	return "m1", nil
}

func (s *scripted) DeleteBranch(context.Context, forge.Repo, string, string) error {
	s.branch = ""
	return nil
}

// executorInput is the lifecycle's input for the test repository at head
// with the seed's incident observed (alice scales redis to 4, pre-authorized).
func executorInput(t *testing.T, key []byte, mutate func(map[string]string)) *lifecycle.Input {
	t.Helper()
	files := gitopsFiles(t)
	if mutate != nil {
		mutate(files)
	}
	read := func(p string, _ int64) ([]byte, error) {
		if data, ok := files[p]; ok {
			return []byte(data), nil
		}
		return nil, forge.ErrNotFound
	}
	got, err := plan.ReadSnapshot(read, plan.ReadOptions{Commit: executorHead})
	if err != nil {
		t.Fatal(err)
	}
	now := t0.Add(5 * time.Minute)
	return &lifecycle.Input{DefaultBranch: "main", Head: executorHead, Snapshot: got.Snapshot, PolicySum: got.PolicySum,
		Result: plan.Plan([]observe.Observation{replicas(4, 0)}, nil, got.Snapshot, now), Now: now,
		GitOpsManagers: DefaultGitOpsManagers, CommitKey: key, Repo: testRepo}
}

const executorHead = "1111111111111111111111111111111111111111"

// TestExecutor carries out the lifecycle's chains against scripted forge
// answers and holds the effects the Recorder saw: the chain runs straight
// through, answers what the forge says from the effects' own data, and
// stops at the first failure.
func TestExecutor(t *testing.T) {
	key := []byte("test commit key")
	repo := forge.Repo{Owner: "acme", Name: "gitops", DefaultBranch: "main"}
	opened := []string{"acme/gitops:commit:backflow/prod-us-east/redis:.backflow/receipts/prod-us-east/redis/redis_StatefulSet.apps.v1_redis-replicas.yaml,envs/prod-us-east/redis/values.yaml",
		"acme/gitops:check:backflow/receipt:success", "acme/gitops#12:open:backflow/prod-us-east/redis", "acme/gitops#12:edit:body",
		"acme/gitops#12:reviewers:bob,team:platform-sre", "acme/gitops#12:label:env:prod-us-east", "acme/gitops#12:label:pre-authorized",
		"acme/gitops#12:label:reverse-reconcile"}
	for _, tc := range []struct {
		name, why string
		forge     *scripted
		fail      string // a Recorder failure injected into this call
		dryRun    bool
		want      []string
		actions   []string // the report's action kinds
	}{
		{"armed", "an open chain runs straight through to auto-merge, armed at the head the commit made",
			&scripted{head: executorHead}, "", false,
			append(slices.Clone(opened), "acme/gitops#12:auto-merge:squash"), []string{"open", "auto-merge"}},
		{"merged over REST", "where GitHub cannot arm auto-merge because the pull request is mergeable, it is merged over REST pinned to the head, and the branch cleaned up",
			&scripted{head: executorHead, enable: forge.ErrAlreadyMergeable}, "", false,
			append(slices.Clone(opened), "acme/gitops#12:merge:squash", "acme/gitops:branch:delete:backflow/prod-us-east/redis", "acme/gitops#12:edit:body"),
			[]string{"open", "merge", "cleanup"}},
		{"not mergeable yet", "auto-merge not allowed and the pull request not green: kept, not merged",
			&scripted{head: executorHead, enable: forge.ErrAutoMergeNotAllowed, mergeable: "blocked"}, "", false,
			opened, []string{"open", "keep"}},
		{"stops at the first failure", "a pull request that cannot be opened stops the chain: no reviewers, labels or auto-merge follow",
			&scripted{head: executorHead}, "CreatePullRequest", false,
			opened[:2], nil},
		{"a person's branch", "the branch exists with a person's commit: the open leaves it alone and writes nothing",
			&scripted{head: executorHead, branch: "p1", commits: []forge.Commit{{SHA: "p1", Parents: []string{executorHead}, Message: "wip\n"}}}, "", false,
			nil, []string{"skip"}},
		{"the default branch moved", "a default branch moved by someone else plans the unit again next cycle: nothing written",
			&scripted{head: "2222222222222222222222222222222222222222"}, "", false,
			nil, []string{"keep"}},
		{"dry run", "a dry run writes nothing and reports the open with everything after it, auto-merge included",
			&scripted{head: executorHead}, "", true,
			nil, []string{"open"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := executorInput(t, key, nil)
			units, _ := in.Index(nil)
			if len(units) != 1 {
				t.Fatalf("units %d", len(units))
			}
			rec := forgetest.NewRecorder(tc.forge)
			if tc.fail != "" {
				rec.Fail(tc.fail, forge.ErrUnavailable)
			}
			rep := &RepoReport{}
			x := &executor{ctx: context.Background(), f: rec, repo: repo, head: executorHead, author: forge.Author{Name: "backflow[bot]"},
				method: forge.CommitAPI, key: key, dryRun: tc.dryRun, rep: rep, log: slog.New(slog.DiscardHandler),
				read: func(string) ([]byte, error) { return nil, forge.ErrNotFound }}
			x.run([][]lifecycle.Effect{in.Chain(units[0], nil)})
			if got := rec.Effects(); !slices.Equal(got, tc.want) {
				t.Errorf("%s\neffects:\n  %s\nwant:\n  %s", tc.why, strings.Join(got, "\n  "), strings.Join(tc.want, "\n  "))
			}
			var kinds []string
			for _, a := range rep.Actions {
				kinds = append(kinds, a.Kind)
			}
			if !slices.Equal(kinds, tc.actions) {
				t.Errorf("%s\nactions %v, want %v (errors %v)", tc.why, kinds, tc.actions, rep.Errors)
			}
			if tc.fail != "" && !errors.Is(rep.Errors.Join(), forge.ErrUnavailable) {
				t.Errorf("%s\nthe failure was not reported: %v", tc.why, rep.Errors)
			}
			if tc.dryRun {
				var then []string
				for _, a := range rep.Actions[0].Then {
					then = append(then, a.Kind)
				}
				if want := []string{"review", "label", "auto-merge"}; !slices.Equal(then, want) {
					t.Errorf("%s\nthen %v, want %v", tc.why, then, want)
				}
				if txt := (&Report{DryRun: true, Repos: []*RepoReport{rep}}).Text(); !strings.Contains(txt, "then would auto-merge") {
					t.Errorf("%s\nthe summary does not say it would auto-merge:\n%s", tc.why, txt)
				}
			}
		})
	}
}

// TestExecutorListsHolds: a ListHolds effect writes the pull request's
// body with the holds its marker lists, and a failed write stops there,
// reported.
func TestExecutorListsHolds(t *testing.T) {
	key := []byte("test commit key")
	repo := forge.Repo{Owner: "acme", Name: "gitops", DefaultBranch: "main"}
	since := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		why  string
		fail string
		ok   bool
	}{
		{"the body is written with the hold listed", "", true},
		{"a body that cannot be written is reported, the chain stopped", "UpdatePullRequest", false},
	} {
		rec := forgetest.NewRecorder(&scripted{head: executorHead})
		if tc.fail != "" {
			rec.Fail(tc.fail, forge.ErrUnavailable)
		}
		rep := &RepoReport{}
		x := &executor{ctx: context.Background(), f: rec, repo: repo, key: key, rep: rep, log: slog.New(slog.DiscardHandler)}
		st := &lifecycle.Pull{PR: forge.PullRequest{Number: 7, Body: "intro\n", State: forge.StateOpen, Mine: true},
			Marker: &lifecycle.Marker{Version: 1, Branch: "backflow/prod/web", Fingerprint: "sha256:ab",
				Holds: []lifecycle.MarkerHold{{Object: "apps/v1|Deployment|web|web", Cluster: "prod-1",
					Mark: "kustomize.toolkit.fluxcd.io/reconcile", Since: since, Until: since.Add(time.Hour)}}}}
		ok := x.do(lifecycle.Effect{Kind: lifecycle.ListHolds, Branch: "backflow/prod/web", Pull: st})
		listed := strings.Contains(st.PR.Body, "### Held on the clusters") && strings.Contains(st.PR.Body, "prod-1")
		if ok != tc.ok || listed != tc.ok || slices.Contains(rec.Effects(), "acme/gitops#7:edit:body") != tc.ok ||
			(len(rep.Errors) > 0) == tc.ok {
			t.Errorf("why: %s: ok %v, listed %v, effects %v, errors %v", tc.why, ok, listed, rec.Effects(), rep.Errors)
		}
	}
}

// failingApplier is a hold port whose objects patch and whose applier
// refuses the reconcile request.
type failingApplier struct{ patched int }

func (*failingApplier) Annotated(context.Context) ([]AnnotatedObject, error) { return nil, nil }
func (*failingApplier) AppliedRevision(context.Context, string, string, string) (string, error) {
	return "", nil
}
func (f *failingApplier) PatchObject(context.Context, string, observe.ObjectKey, []byte) error {
	f.patched++
	return nil
}
func (*failingApplier) PatchApplier(context.Context, string, string, string, []byte) error {
	return forge.ErrUnavailable
}

// TestExecutorCountsAHoldOnceItsObjectIsPatched: the report the metrics
// read counts a hold placed (with its at-risk window) and a release by its
// cause once the object is patched, even when the reconcile request after
// the release fails (reported).
func TestExecutorCountsAHoldOnceItsObjectIsPatched(t *testing.T) {
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	port := &failingApplier{}
	rep := &RepoReport{}
	x := &executor{ctx: context.Background(), rep: rep, log: slog.New(slog.DiscardHandler), holds: port,
		now: func() time.Time { return now }}
	obj := observe.ObjectKey{APIVersion: "apps/v1", Kind: "StatefulSet", Namespace: "redis", Name: "redis-replicas"}
	placed := x.do(lifecycle.Effect{Kind: lifecycle.Hold, Hold: &lifecycle.HoldAction{Object: obj, Patch: []byte(`{}`),
		ChangedAt: now.Add(-1500 * time.Millisecond)}})
	released := x.do(lifecycle.Effect{Kind: lifecycle.Release, Hold: &lifecycle.HoldAction{Object: obj, Patch: []byte(`{}`),
		ReconcilePatch: []byte(`{}`), Cause: "closed"}})
	h := rep.Holds
	if !placed || released || port.patched != 2 || h.InPlace != 0 || !slices.Equal(h.Held, []time.Duration{1500 * time.Millisecond}) ||
		!slices.Equal(h.Released, []string{"closed"}) || len(rep.Errors) != 1 {
		t.Errorf("placed %v, released %v (want false: the reconcile failed), %d patches, holds %+v, errors %v",
			placed, released, port.patched, h, rep.Errors)
	}
}
