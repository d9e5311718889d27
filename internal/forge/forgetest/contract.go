package forgetest

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/backflow-dev/backflow/internal/forge"
)

// Harness is one forge under the contract, with a fresh repository whose
// default branch "main" holds ContractFiles in one commit.
type Harness struct {
	// Forge is the implementation under test.
	Forge forge.Forge
	// Repo is the fresh repository.
	Repo forge.Repo
	// Person commits files on top of branch (created from main when
	// missing) as someone other than the App, and returns the new head.
	Person func(t *testing.T, branch string, files map[string]string) string
	// RequireChecks makes checks required for merging into main.
	RequireChecks func(t *testing.T, checks ...string)
}

// ContractFiles is the default branch's content in a contract harness.
var ContractFiles = map[string]string{
	"README.md":                   "# gitops\n",
	"envs/prod/redis/values.yaml": "replicas: 3\n",
	"envs/dev/redis/values.yaml":  "replicas: 1\n",
}

const valuesPath = "envs/prod/redis/values.yaml"

// RunContract checks that a forge behaves as the port documents; it runs
// against the GitHub adapter on the local hub, the one GitHub simulator.
// newHarness is called once per case.
func RunContract(t *testing.T, newHarness func(t *testing.T) Harness) {
	cases := []struct {
		name string
		why  string
		run  func(t *testing.T, h Harness)
	}{
		{"identity and repositories", "the cycle lists repositories and recognises its own work by login", contractIdentity},
		{
			"reads at a commit",
			"configuration is read at one SHA; missing files and directories are distinct errors",
			contractReads,
		},
		{"branch refs compare and swap", "creating an existing branch or moving a branch that moved must fail", contractRefs},
		{
			"commit via git",
			"the default commit method creates, appends, rewrites and refuses stale heads",
			func(t *testing.T, h Harness) { contractCommit(t, h, forge.CommitGit) },
		},
		{
			"commit via api",
			"the signed-commit method obeys the same compare-and-swap",
			func(t *testing.T, h Harness) { contractCommit(t, h, forge.CommitAPI) },
		},
		{
			"commit requests refused",
			"malformed or stale requests fail before anything is written, by either method",
			contractCommitRefusals,
		},
		{
			"pull request lifecycle",
			"one open pull request per head; edits, labels, reviewers, comments, close",
			contractPulls,
		},
		{"check runs", "the receipt check is created, updated and listed by name", contractChecks},
		{
			"merges pinned to the head",
			"a merge or auto-merge on a moved head fails; blocked merges wait for checks",
			contractMerge,
		},
		{
			"auto-merge refused when mergeable",
			"GitHub refuses auto-merge on a clean pull request: merge over REST instead",
			contractAlreadyMergeable,
		},
		{"issues", "the drift tracking issue is found by label and never confused with a pull request", contractIssues},
		{"deleted head closes", "deleting a bot branch closes its pull request, as on GitHub", contractDeleteHead},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel() // each case has its own forge and repository
			t.Log(c.why)
			c.run(t, newHarness(t))
		})
	}
}

func must(t *testing.T, what string, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

func wantErr(t *testing.T, what string, err, want error) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Fatalf("%s: got %v, want %v", what, err, want)
	}
}

func contractIdentity(t *testing.T, h Harness) {
	ctx := context.Background()
	app, err := h.Forge.App(ctx)
	must(t, "App", err)
	if app.Slug == "" || app.Login != app.Slug+"[bot]" {
		t.Fatalf("App = %+v, want a slug and login slug[bot]", app)
	}
	repos, err := h.Forge.Repositories(ctx)
	must(t, "Repositories", err)
	if !slices.Contains(repos, h.Repo) {
		t.Fatalf("Repositories = %v, want it to contain %+v", repos, h.Repo)
	}
	got, err := h.Forge.GetRepo(ctx, h.Repo.Owner, h.Repo.Name)
	must(t, "GetRepo", err)
	if got != h.Repo {
		t.Fatalf("GetRepo = %+v, want %+v", got, h.Repo)
	}
	_, err = h.Forge.GetRepo(ctx, h.Repo.Owner, "no-such-repo")
	wantErr(t, "GetRepo of a missing repository", err, forge.ErrNotFound)
}

func contractReads(t *testing.T, h Harness) {
	ctx := context.Background()
	head, err := h.Forge.BranchHead(ctx, h.Repo, "main")
	must(t, "BranchHead", err)
	b, err := h.Forge.ReadFile(ctx, h.Repo, head, valuesPath)
	must(t, "ReadFile", err)
	if string(b) != ContractFiles[valuesPath] {
		t.Fatalf("ReadFile = %q, want %q", b, ContractFiles[valuesPath])
	}
	_, err = h.Forge.ReadFile(ctx, h.Repo, head, "envs/prod/redis/missing.yaml")
	wantErr(t, "ReadFile of a missing file", err, forge.ErrNotFound)
	_, err = h.Forge.ReadFile(ctx, h.Repo, head, "envs/prod")
	wantErr(t, "ReadFile of a directory", err, forge.ErrNotRegularFile)
	all, err := h.Forge.ListFiles(ctx, h.Repo, head, "")
	must(t, "ListFiles", err)
	if want := []string{"README.md", "envs/dev/redis/values.yaml", valuesPath}; !slices.Equal(all, want) {
		t.Fatalf("ListFiles = %v, want %v", all, want)
	}
	sub, err := h.Forge.ListFiles(ctx, h.Repo, head, "envs/prod")
	must(t, "ListFiles envs/prod", err)
	if want := []string{valuesPath}; !slices.Equal(sub, want) {
		t.Fatalf("ListFiles envs/prod = %v, want %v", sub, want)
	}
	_, err = h.Forge.ListFiles(ctx, h.Repo, head, "envs/staging")
	wantErr(t, "ListFiles of a missing folder", err, forge.ErrNotFound)
	_, err = h.Forge.BranchHead(ctx, h.Repo, "no-such-branch")
	wantErr(t, "BranchHead of a missing branch", err, forge.ErrNotFound)
}

func contractRefs(t *testing.T, h Harness) {
	ctx := context.Background()
	main, err := h.Forge.BranchHead(ctx, h.Repo, "main")
	must(t, "BranchHead", err)
	must(t, "CreateBranch", h.Forge.CreateBranch(ctx, h.Repo, "feature", main))
	wantErr(t, "CreateBranch of an existing branch", h.Forge.CreateBranch(ctx, h.Repo, "feature", main), forge.ErrConflict)
	moved := h.Person(t, "feature", map[string]string{"README.md": "# moved\n"})
	wantErr(
		t,
		"UpdateBranch with a stale expected head",
		h.Forge.UpdateBranch(ctx, h.Repo, "feature", main, main, true),
		forge.ErrConflict,
	)
	wantErr(
		t,
		"UpdateBranch backwards without force",
		h.Forge.UpdateBranch(ctx, h.Repo, "feature", moved, main, false),
		forge.ErrConflict,
	)
	must(t, "UpdateBranch backwards with force", h.Forge.UpdateBranch(ctx, h.Repo, "feature", moved, main, true))
	if got, _ := h.Forge.BranchHead(ctx, h.Repo, "feature"); got != main {
		t.Fatalf("head after forced update = %s, want %s", got, main)
	}
	wantErr(
		t,
		"DeleteBranch with a stale expected head",
		h.Forge.DeleteBranch(ctx, h.Repo, "feature", moved),
		forge.ErrConflict,
	)
	must(t, "DeleteBranch", h.Forge.DeleteBranch(ctx, h.Repo, "feature", main))
	wantErr(t, "DeleteBranch of a deleted branch", h.Forge.DeleteBranch(ctx, h.Repo, "feature", ""), forge.ErrNotFound)
}

func bot(t *testing.T, f forge.Forge) forge.Author {
	app, err := f.App(context.Background())
	must(t, "App", err)
	return forge.Author{Name: app.Login, Email: "1+" + app.Login + "@users.noreply.github.com"}
}

func contractCommit(t *testing.T, h Harness, method forge.CommitMethod) {
	ctx := context.Background()
	const branch = "backflow/prod/redis"
	main, err := h.Forge.BranchHead(ctx, h.Repo, "main")
	must(t, "BranchHead", err)
	req := forge.CommitRequest{Repo: h.Repo, Branch: branch, BaseSHA: main, Method: method, Author: bot(t, h.Forge),
		Message: "reverse-reconcile(prod): replicas 3 -> 4\n\nReverse-Reconcile-Actor: alice\n",
		Files: map[string][]byte{
			valuesPath:                   []byte("replicas: 4\n"),
			".backflow/receipts/r1.yaml": []byte("kind: Receipt\n"),
		}}
	first, err := h.Forge.Commit(ctx, req)
	must(t, "Commit creating the branch", err)
	if got, _ := h.Forge.BranchHead(ctx, h.Repo, branch); got != first {
		t.Fatalf("branch head = %s, want the new commit %s", got, first)
	}
	files := map[string]string{valuesPath: "replicas: 4\n", ".backflow/receipts/r1.yaml": "kind: Receipt\n",
		"README.md": ContractFiles["README.md"]}
	for p, want := range files {
		b, err := h.Forge.ReadFile(ctx, h.Repo, first, p)
		must(t, "ReadFile "+p, err)
		if string(b) != want {
			t.Fatalf("%s at the new commit = %q, want %q", p, b, want)
		}
	}
	commits, err := h.Forge.CommitsSince(ctx, h.Repo, "main", branch)
	must(t, "CommitsSince", err)
	if len(commits) != 1 || commits[0].SHA != first || commits[0].Author != req.Author ||
		commits[0].Message != req.Message ||
		!slices.Equal(commits[0].Parents, []string{main}) {
		t.Fatalf("CommitsSince = %+v, want the one commit by %v", commits, req.Author)
	}
	if method == forge.CommitAPI && !commits[0].Verified {
		t.Fatalf("an API commit is not verified: %+v", commits[0])
	}
	diff, err := h.Forge.ChangedFiles(ctx, h.Repo, "main", first)
	must(t, "ChangedFiles", err)
	var changed []string
	for _, f := range diff.Files {
		changed = append(changed, f.Path)
	}
	slices.Sort(changed)
	if diff.MergeBase != main || !slices.Equal(changed, []string{".backflow/receipts/r1.yaml", valuesPath}) {
		t.Fatalf("ChangedFiles = %+v, want the values file and the receipt from %s", diff, main)
	}

	_, err = h.Forge.Commit(ctx, req)
	wantErr(t, "Commit creating an existing branch", err, forge.ErrConflict)

	add := req
	add.BaseSHA, add.ExpectedHead = first, first
	add.Files = map[string][]byte{valuesPath: []byte("replicas: 5\n")}
	second, err := h.Forge.Commit(ctx, add)
	must(t, "Commit appending", err)

	stale := add
	stale.Files = map[string][]byte{valuesPath: []byte("replicas: 6\n")}
	_, err = h.Forge.Commit(ctx, stale)
	wantErr(t, "Commit with a stale expected head", err, forge.ErrConflict)

	rewrite := req
	rewrite.ExpectedHead = second
	_, err = h.Forge.Commit(ctx, rewrite)
	wantErr(t, "Commit rewriting without force", err, forge.ErrConflict)
	rewrite.Force = true
	third, err := h.Forge.Commit(ctx, rewrite)
	must(t, "Commit rewriting with force", err)
	commits, err = h.Forge.CommitsSince(ctx, h.Repo, "main", branch)
	must(t, "CommitsSince", err)
	if len(commits) != 1 || commits[0].SHA != third {
		t.Fatalf("after the rewrite CommitsSince = %+v, want only %s", commits, third)
	}

	// A person's commit on the branch makes the bot's expected head stale.
	h.Person(t, branch, map[string]string{valuesPath: "replicas: 7\n"})
	again := rewrite
	again.ExpectedHead = third
	_, err = h.Forge.Commit(ctx, again)
	wantErr(t, "Commit over a person's commit", err, forge.ErrConflict)
	commits, err = h.Forge.CommitsSince(ctx, h.Repo, "main", branch)
	must(t, "CommitsSince", err)
	if len(commits) != 2 || commits[1].Author == req.Author {
		t.Fatalf("CommitsSince = %+v, want the bot's commit then a person's", commits)
	}
}

func contractCommitRefusals(t *testing.T, h Harness) {
	ctx := context.Background()
	main, err := h.Forge.BranchHead(ctx, h.Repo, "main")
	must(t, "BranchHead", err)
	cases := []struct {
		why  string
		edit func(r *forge.CommitRequest)
		want error
	}{
		{"an empty commit is a caller bug", func(r *forge.CommitRequest) { r.Files = nil }, forge.ErrInvalid},
		{"commits are attributed", func(r *forge.CommitRequest) { r.Author = forge.Author{} }, forge.ErrInvalid},
		{
			"paths stay inside the repository",
			func(r *forge.CommitRequest) { r.Files = map[string][]byte{"../x": []byte("x")} },
			forge.ErrInvalid,
		},
		{
			"the .git folder is not content",
			func(r *forge.CommitRequest) { r.Files = map[string][]byte{".git/config": []byte("x")} },
			forge.ErrInvalid,
		},
		{"a typo in the method does not fall back", func(r *forge.CommitRequest) { r.Method = "svn" }, forge.ErrInvalid},
		{"writing what is there is not a commit", func(r *forge.CommitRequest) {
			r.Files = map[string][]byte{valuesPath: []byte(ContractFiles[valuesPath])}
		}, forge.ErrInvalid},
		{"replacing a head with a non-descendant needs Force", func(r *forge.CommitRequest) {
			r.ExpectedHead = "0123456789012345678901234567890123456789"
		}, forge.ErrConflict},
	}
	for _, m := range []forge.CommitMethod{forge.CommitGit, forge.CommitAPI} {
		for _, c := range cases {
			req := forge.CommitRequest{
				Repo:    h.Repo,
				Branch:  "refused",
				BaseSHA: main,
				Method:  m,
				Message: "m\n",
				Author:  bot(t, h.Forge),
				Files:   map[string][]byte{valuesPath: []byte("replicas: 4\n")},
			}
			c.edit(&req)
			if _, err := h.Forge.Commit(ctx, req); !errors.Is(err, c.want) {
				t.Errorf("%s (%s): Commit = %v, want %v", c.why, m, err, c.want)
			}
		}
	}
	_, err = h.Forge.BranchHead(ctx, h.Repo, "refused")
	wantErr(t, "the branch after refused commits", err, forge.ErrNotFound)
}

func openPR(t *testing.T, h Harness, branch string, files map[string]string) forge.PullRequest {
	t.Helper()
	ctx := context.Background()
	main, err := h.Forge.BranchHead(ctx, h.Repo, "main")
	must(t, "BranchHead", err)
	fs := map[string][]byte{}
	for p, c := range files {
		fs[p] = []byte(c)
	}
	_, err = h.Forge.Commit(
		ctx,
		forge.CommitRequest{
			Repo:    h.Repo,
			Branch:  branch,
			BaseSHA: main,
			Files:   fs,
			Message: "change\n",
			Author:  bot(t, h.Forge),
			Method:  forge.CommitAPI,
		},
	)
	must(t, "Commit", err)
	pr, err := h.Forge.CreatePullRequest(
		ctx,
		h.Repo,
		forge.NewPullRequest{Title: "reverse-reconcile(prod): replicas 3 -> 4", Body: "body", Head: branch, Base: "main"},
	)
	must(t, "CreatePullRequest", err)
	return pr
}

func contractPulls(t *testing.T, h Harness) {
	ctx := context.Background()
	const branch = "backflow/prod/redis"
	pr := openPR(t, h, branch, map[string]string{valuesPath: "replicas: 4\n"})
	head, _ := h.Forge.BranchHead(ctx, h.Repo, branch)
	if pr.Number == 0 || pr.NodeID == "" || pr.URL == "" || pr.State != forge.StateOpen || pr.HeadRef != branch ||
		pr.HeadSHA != head || pr.BaseRef != "main" || !pr.Mine || pr.Merged {
		t.Fatalf("CreatePullRequest = %+v", pr)
	}
	_, err := h.Forge.CreatePullRequest(ctx, h.Repo, forge.NewPullRequest{Title: "again", Head: branch, Base: "main"})
	wantErr(t, "a second open pull request from the same head", err, forge.ErrConflict)
	found, err := h.Forge.FindOpenPullRequest(ctx, h.Repo, branch)
	must(t, "FindOpenPullRequest", err)
	if found.Number != pr.Number {
		t.Fatalf("FindOpenPullRequest = #%d, want #%d", found.Number, pr.Number)
	}
	_, err = h.Forge.FindOpenPullRequest(ctx, h.Repo, "backflow/other")
	wantErr(t, "FindOpenPullRequest of another head", err, forge.ErrNotFound)

	title, body := "reverse-reconcile(prod): replicas 3 -> 5", "new body"
	upd, err := h.Forge.UpdatePullRequest(ctx, h.Repo, pr.Number, forge.PullRequestUpdate{Title: &title, Body: &body})
	must(t, "UpdatePullRequest", err)
	if upd.Title != title || upd.Body != body {
		t.Fatalf("UpdatePullRequest = %q %q", upd.Title, upd.Body)
	}
	must(t, "AddLabels", h.Forge.AddLabels(ctx, h.Repo, pr.Number, "reverse-reconcile", "env:prod"))
	must(t, "AddLabels again", h.Forge.AddLabels(ctx, h.Repo, pr.Number, "env:prod", "pre-authorized"))
	must(t, "RemoveLabel", h.Forge.RemoveLabel(ctx, h.Repo, pr.Number, "pre-authorized"))
	must(t, "RemoveLabel of an absent label", h.Forge.RemoveLabel(ctx, h.Repo, pr.Number, "pre-authorized"))
	wantErr(t, "AddLabels on a missing number", h.Forge.AddLabels(ctx, h.Repo, 999, "x"), forge.ErrNotFound)
	must(t, "RequestReviewers", h.Forge.RequestReviewers(ctx, h.Repo, pr.Number, []string{"alice"}, []string{"sre"}))
	got, err := h.Forge.GetPullRequest(ctx, h.Repo, pr.Number)
	must(t, "GetPullRequest", err)
	if got.Mergeable == nil {
		// GitHub computes mergeability in the background: null on the
		// first read after the head moved, known on a later one.
		got, err = h.Forge.GetPullRequest(ctx, h.Repo, pr.Number)
		must(t, "GetPullRequest again", err)
	}
	if !slices.Equal(got.Labels, []string{"env:prod", "reverse-reconcile"}) ||
		!slices.Equal(got.RequestedReviewers, []string{"alice"}) || !slices.Equal(got.RequestedTeams, []string{"sre"}) ||
		got.Mergeable == nil || !*got.Mergeable {
		t.Fatalf(
			"GetPullRequest = labels %v reviewers %v teams %v mergeable %v",
			got.Labels,
			got.RequestedReviewers,
			got.RequestedTeams,
			got.Mergeable,
		)
	}

	c, err := h.Forge.CreateComment(ctx, h.Repo, pr.Number, "a person committed to this branch")
	must(t, "CreateComment", err)
	if !c.Mine || c.ID == 0 {
		t.Fatalf("CreateComment = %+v, want the App's own comment", c)
	}
	_, err = h.Forge.UpdateComment(ctx, h.Repo, c.ID, "edited")
	must(t, "UpdateComment", err)
	list, err := h.Forge.ListComments(ctx, h.Repo, pr.Number)
	must(t, "ListComments", err)
	if len(list) != 1 || list[0].Body != "edited" || !list[0].Mine {
		t.Fatalf("ListComments = %+v", list)
	}
	_, err = h.Forge.UpdateComment(ctx, h.Repo, 987654, "x")
	wantErr(t, "UpdateComment of a missing comment", err, forge.ErrNotFound)

	must(t, "ClosePullRequest", h.Forge.ClosePullRequest(ctx, h.Repo, pr.Number))
	_, err = h.Forge.FindOpenPullRequest(ctx, h.Repo, branch)
	wantErr(t, "FindOpenPullRequest after closing", err, forge.ErrNotFound)
	closed, err := h.Forge.ListPullRequests(ctx, h.Repo, forge.PullRequestFilter{Head: branch, State: forge.StateClosed})
	must(t, "ListPullRequests closed", err)
	if len(closed) != 1 || closed[0].Number != pr.Number || closed[0].Merged || closed[0].State != forge.StateClosed {
		t.Fatalf("closed pull requests = %+v", closed)
	}
	_, err = h.Forge.GetPullRequest(ctx, h.Repo, 999)
	wantErr(t, "GetPullRequest of a missing number", err, forge.ErrNotFound)
}

func contractChecks(t *testing.T, h Harness) {
	ctx := context.Background()
	head, err := h.Forge.BranchHead(ctx, h.Repo, "main")
	must(t, "BranchHead", err)
	run, err := h.Forge.CreateCheckRun(
		ctx,
		h.Repo,
		forge.CheckRun{Name: "backflow/receipt", HeadSHA: head, Status: forge.CheckInProgress, Title: "verifying"},
	)
	must(t, "CreateCheckRun", err)
	if run.ID == 0 || run.Status != forge.CheckInProgress || !run.Mine {
		t.Fatalf("CreateCheckRun = %+v", run)
	}
	_, err = h.Forge.UpdateCheckRun(
		ctx,
		h.Repo,
		run.ID,
		forge.CheckRun{
			Name:       "backflow/receipt",
			Conclusion: forge.ConclusionFailure,
			Title:      "receipt invalid",
			Summary:    "rule 3",
		},
	)
	must(t, "UpdateCheckRun", err)
	_, err = h.Forge.CreateCheckRun(
		ctx,
		h.Repo,
		forge.CheckRun{Name: "other", HeadSHA: head, Conclusion: forge.ConclusionSuccess, Title: "ok", Summary: "ok"},
	)
	must(t, "CreateCheckRun other", err)
	list, err := h.Forge.ListCheckRuns(ctx, h.Repo, head, "backflow/receipt")
	must(t, "ListCheckRuns", err)
	if len(list) != 1 || list[0].ID != run.ID || list[0].Status != forge.CheckCompleted ||
		list[0].Conclusion != forge.ConclusionFailure ||
		list[0].Title != "receipt invalid" ||
		list[0].Summary != "rule 3" {
		t.Fatalf("ListCheckRuns = %+v", list)
	}
	all, err := h.Forge.ListCheckRuns(ctx, h.Repo, head, "")
	must(t, "ListCheckRuns all", err)
	if len(all) != 2 {
		t.Fatalf("ListCheckRuns all = %d runs, want 2", len(all))
	}
	_, err = h.Forge.UpdateCheckRun(ctx, h.Repo, 987654, forge.CheckRun{Conclusion: forge.ConclusionSuccess})
	wantErr(t, "UpdateCheckRun of a missing run", err, forge.ErrNotFound)
}

func contractMerge(t *testing.T, h Harness) {
	ctx := context.Background()
	h.RequireChecks(t, "backflow/receipt")
	pr := openPR(t, h, "backflow/prod/redis", map[string]string{valuesPath: "replicas: 4\n"})
	_, err := h.Forge.Merge(ctx, h.Repo, pr.Number, pr.HeadSHA, forge.MergeSquash)
	wantErr(t, "Merge before the required check", err, forge.ErrNotMergeable)
	main, _ := h.Forge.BranchHead(ctx, h.Repo, "main")
	_, err = h.Forge.Merge(ctx, h.Repo, pr.Number, main, forge.MergeSquash)
	wantErr(t, "Merge pinned to another head", err, forge.ErrConflict)
	wantErr(
		t,
		"EnableAutoMerge with another head",
		h.Forge.EnableAutoMerge(ctx, h.Repo, pr, main, forge.MergeSquash),
		forge.ErrConflict,
	)
	must(t, "EnableAutoMerge", h.Forge.EnableAutoMerge(ctx, h.Repo, pr, pr.HeadSHA, forge.MergeSquash))
	got, err := h.Forge.GetPullRequest(ctx, h.Repo, pr.Number)
	must(t, "GetPullRequest", err)
	if !got.AutoMergeEnabled || got.Merged {
		t.Fatalf("after EnableAutoMerge: auto-merge %v merged %v", got.AutoMergeEnabled, got.Merged)
	}
	must(t, "DisableAutoMerge", h.Forge.DisableAutoMerge(ctx, h.Repo, pr))
	if got, err = h.Forge.GetPullRequest(ctx, h.Repo, pr.Number); err != nil || got.AutoMergeEnabled {
		t.Fatalf("after DisableAutoMerge: auto-merge %v (%v)", got.AutoMergeEnabled, err)
	}
	must(t, "DisableAutoMerge when not armed", h.Forge.DisableAutoMerge(ctx, h.Repo, pr))
	must(t, "EnableAutoMerge again", h.Forge.EnableAutoMerge(ctx, h.Repo, pr, pr.HeadSHA, forge.MergeSquash))
	_, err = h.Forge.CreateCheckRun(
		ctx,
		h.Repo,
		forge.CheckRun{
			Name:       "backflow/receipt",
			HeadSHA:    pr.HeadSHA,
			Conclusion: forge.ConclusionSuccess,
			Title:      "verified",
			Summary:    "ok",
		},
	)
	must(t, "CreateCheckRun", err)
	got, err = h.Forge.GetPullRequest(ctx, h.Repo, pr.Number)
	must(t, "GetPullRequest", err)
	if !got.Merged || got.MergeCommitSHA == "" || got.State != forge.StateClosed {
		t.Fatalf("after the check turned green: %+v, want merged", got)
	}
	b, err := h.Forge.ReadFile(ctx, h.Repo, got.MergeCommitSHA, valuesPath)
	must(t, "ReadFile at the merge", err)
	if string(b) != "replicas: 4\n" {
		t.Fatalf("values at the merge = %q", b)
	}
	if head, _ := h.Forge.BranchHead(ctx, h.Repo, "main"); head != got.MergeCommitSHA {
		t.Fatalf("main = %s, want the merge %s", head, got.MergeCommitSHA)
	}
}

func contractAlreadyMergeable(t *testing.T, h Harness) {
	ctx := context.Background()
	pr := openPR(t, h, "backflow/dev/redis", map[string]string{"envs/dev/redis/values.yaml": "replicas: 2\n"})
	wantErr(
		t,
		"EnableAutoMerge on a clean pull request",
		h.Forge.EnableAutoMerge(ctx, h.Repo, pr, pr.HeadSHA, forge.MergeCommit),
		forge.ErrAlreadyMergeable,
	)
	sha, err := h.Forge.Merge(ctx, h.Repo, pr.Number, pr.HeadSHA, forge.MergeCommit)
	must(t, "Merge", err)
	got, err := h.Forge.GetPullRequest(ctx, h.Repo, pr.Number)
	must(t, "GetPullRequest", err)
	if !got.Merged || got.MergeCommitSHA != sha {
		t.Fatalf("after Merge: merged %v sha %s, want %s", got.Merged, got.MergeCommitSHA, sha)
	}
	_, err = h.Forge.Merge(ctx, h.Repo, pr.Number, pr.HeadSHA, forge.MergeCommit)
	wantErr(t, "Merge of a merged pull request", err, forge.ErrNotMergeable)
}

func contractIssues(t *testing.T, h Harness) {
	ctx := context.Background()
	openPR(t, h, "backflow/prod/redis", map[string]string{valuesPath: "replicas: 4\n"})
	is, err := h.Forge.CreateIssue(
		ctx,
		h.Repo,
		forge.NewIssue{Title: "Unauthorized drift in prod", Body: "table", Labels: []string{"backflow-drift"}},
	)
	must(t, "CreateIssue", err)
	if is.Number == 0 || !is.Mine || !slices.Equal(is.Labels, []string{"backflow-drift"}) {
		t.Fatalf("CreateIssue = %+v", is)
	}
	list, err := h.Forge.ListIssues(ctx, h.Repo, "backflow-drift", forge.StateOpen)
	must(t, "ListIssues", err)
	if len(list) != 1 || list[0].Number != is.Number {
		t.Fatalf("ListIssues = %+v", list)
	}
	all, err := h.Forge.ListIssues(ctx, h.Repo, "", forge.StateAll)
	must(t, "ListIssues all", err)
	if len(all) != 1 {
		t.Fatalf("ListIssues all = %+v, want only the issue (no pull requests)", all)
	}
	body, closed := "resolved", forge.StateClosed
	upd, err := h.Forge.UpdateIssue(ctx, h.Repo, is.Number, forge.IssueUpdate{Body: &body, State: &closed})
	must(t, "UpdateIssue", err)
	if upd.State != forge.StateClosed || upd.Body != body {
		t.Fatalf("UpdateIssue = %+v", upd)
	}
	list, err = h.Forge.ListIssues(ctx, h.Repo, "backflow-drift", forge.StateOpen)
	must(t, "ListIssues", err)
	if len(list) != 0 {
		t.Fatalf("open issues after closing = %+v", list)
	}
	c, err := h.Forge.CreateComment(ctx, h.Repo, is.Number, "seen again")
	must(t, "CreateComment on an issue", err)
	if !strings.Contains(c.Body, "seen again") {
		t.Fatalf("CreateComment = %+v", c)
	}
}

func contractDeleteHead(t *testing.T, h Harness) {
	ctx := context.Background()
	pr := openPR(t, h, "backflow/prod/redis", map[string]string{valuesPath: "replicas: 4\n"})
	must(t, "DeleteBranch", h.Forge.DeleteBranch(ctx, h.Repo, pr.HeadRef, pr.HeadSHA))
	got, err := h.Forge.GetPullRequest(ctx, h.Repo, pr.Number)
	must(t, "GetPullRequest", err)
	if got.State != forge.StateClosed || got.Merged {
		t.Fatalf("after deleting the head: state %s merged %v, want closed unmerged", got.State, got.Merged)
	}
}
