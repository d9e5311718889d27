package forgetest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/backflow-dev/backflow/internal/forge"
)

// Recorder is a forge.Forge that passes every call to another forge (the
// local hub through the GitHub adapter, in tests) and records what each
// successful write asked for as a short string
// ("acme/gitops#12:label:env:prod"), so a test can assert on what a caller
// did. A test scripts failures with Fail. It knows no rule of GitHub's:
// what a call answers is the other forge's.
type Recorder struct {
	forge.Forge
	// StepsOn offers forge.Steps' operations over the recorder's own
	// calls, so each fine call is recorded and can be failed with Fail.
	forge.StepsOn

	mu      sync.Mutex
	effects []string
	fails   map[string][]error
	reads   int
	writes  int
}

var _ forge.Forge = (*Recorder)(nil)

// NewRecorder records the writes made through f.
func NewRecorder(f forge.Forge) *Recorder {
	r := &Recorder{Forge: f, fails: map[string][]error{}}
	r.Self = r
	return r
}

// Fail makes the next call of op (a method name, "Commit") fail with err,
// without reaching the forge; several calls queue several failures.
func (r *Recorder) Fail(op string, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.fails[op] = append(r.fails[op], err)
}

// Effects returns the writes recorded so far, in order.
func (r *Recorder) Effects() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.effects)
}

// Reset forgets the recorded effects and call counts.
func (r *Recorder) Reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.effects, r.reads, r.writes = nil, 0, 0
}

// Counts returns how many read and write calls were made since Reset.
func (r *Recorder) Counts() (reads, writes int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.reads, r.writes
}

// begin counts a call and returns its scripted failure, if any.
func (r *Recorder) begin(op string, write bool) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if write {
		r.writes++
	} else {
		r.reads++
	}
	if q := r.fails[op]; len(q) > 0 {
		r.fails[op] = q[1:]
		return q[0]
	}
	return nil
}

// record notes a write when it succeeded.
func (r *Recorder) record(err error, format string, args ...any) {
	if err != nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.effects = append(r.effects, fmt.Sprintf(format, args...))
}

// App implements forge.Forge.
func (r *Recorder) App(ctx context.Context) (forge.App, error) {
	if err := r.begin("App", false); err != nil {
		return forge.App{}, err
	}
	return r.Forge.App(ctx)
}

// Repositories implements forge.Forge.
func (r *Recorder) Repositories(ctx context.Context) ([]forge.Repo, error) {
	if err := r.begin("Repositories", false); err != nil {
		return nil, err
	}
	return r.Forge.Repositories(ctx)
}

// GetRepo implements forge.Forge.
func (r *Recorder) GetRepo(ctx context.Context, owner, name string) (forge.Repo, error) {
	if err := r.begin("GetRepo", false); err != nil {
		return forge.Repo{}, err
	}
	return r.Forge.GetRepo(ctx, owner, name)
}

// ReadFile implements forge.Forge.
func (r *Recorder) ReadFile(ctx context.Context, repo forge.Repo, sha, path string) ([]byte, error) {
	if err := r.begin("ReadFile", false); err != nil {
		return nil, err
	}
	return r.Forge.ReadFile(ctx, repo, sha, path)
}

// ListFiles implements forge.Forge.
func (r *Recorder) ListFiles(ctx context.Context, repo forge.Repo, sha, dir string) ([]string, error) {
	if err := r.begin("ListFiles", false); err != nil {
		return nil, err
	}
	return r.Forge.ListFiles(ctx, repo, sha, dir)
}

// BranchHead implements forge.Forge.
func (r *Recorder) BranchHead(ctx context.Context, repo forge.Repo, branch string) (string, error) {
	if err := r.begin("BranchHead", false); err != nil {
		return "", err
	}
	return r.Forge.BranchHead(ctx, repo, branch)
}

// CreateBranch implements forge.Forge.
func (r *Recorder) CreateBranch(ctx context.Context, repo forge.Repo, branch, sha string) error {
	if err := r.begin("CreateBranch", true); err != nil {
		return err
	}
	err := r.Forge.CreateBranch(ctx, repo, branch, sha)
	r.record(err, "%s:branch:create:%s", repo, branch)
	return err
}

// UpdateBranch implements forge.Forge.
func (r *Recorder) UpdateBranch(ctx context.Context, repo forge.Repo, branch, expectedOld, newSHA string,
	force bool) error {
	if err := r.begin("UpdateBranch", true); err != nil {
		return err
	}
	err := r.Forge.UpdateBranch(ctx, repo, branch, expectedOld, newSHA, force)
	tag := ""
	if force {
		tag = ":force"
	}
	r.record(err, "%s:branch:update:%s%s", repo, branch, tag)
	return err
}

// DeleteBranch implements forge.Forge.
func (r *Recorder) DeleteBranch(ctx context.Context, repo forge.Repo, branch, expectedSHA string) error {
	if err := r.begin("DeleteBranch", true); err != nil {
		return err
	}
	err := r.Forge.DeleteBranch(ctx, repo, branch, expectedSHA)
	r.record(err, "%s:branch:delete:%s", repo, branch)
	return err
}

// Commit implements forge.Forge.
func (r *Recorder) Commit(ctx context.Context, req forge.CommitRequest) (string, error) {
	if err := r.begin("Commit", true); err != nil {
		return "", err
	}
	sha, err := r.Forge.Commit(ctx, req)
	paths := slices.Sorted(func(yield func(string) bool) {
		for p := range req.Files {
			if !yield(p) {
				return
			}
		}
	})
	r.record(err, "%s:commit:%s:%s", req.Repo, req.Branch, strings.Join(paths, ","))
	return sha, err
}

// CommitsSince implements forge.Forge.
func (r *Recorder) CommitsSince(ctx context.Context, repo forge.Repo, base, head string) ([]forge.Commit, error) {
	if err := r.begin("CommitsSince", false); err != nil {
		return nil, err
	}
	return r.Forge.CommitsSince(ctx, repo, base, head)
}

// Contains implements forge.Forge.
func (r *Recorder) Contains(ctx context.Context, repo forge.Repo, commit, head string) (bool, error) {
	if err := r.begin("Contains", false); err != nil {
		return false, err
	}
	return r.Forge.Contains(ctx, repo, commit, head)
}

// GetPullRequest implements forge.Forge.
func (r *Recorder) GetPullRequest(ctx context.Context, repo forge.Repo, number int) (forge.PullRequest, error) {
	if err := r.begin("GetPullRequest", false); err != nil {
		return forge.PullRequest{}, err
	}
	return r.Forge.GetPullRequest(ctx, repo, number)
}

// ListPullRequests implements forge.Forge.
func (r *Recorder) ListPullRequests(ctx context.Context, repo forge.Repo,
	filter forge.PullRequestFilter) ([]forge.PullRequest, error) {
	if err := r.begin("ListPullRequests", false); err != nil {
		return nil, err
	}
	return r.Forge.ListPullRequests(ctx, repo, filter)
}

// FindOpenPullRequest implements forge.Forge.
func (r *Recorder) FindOpenPullRequest(ctx context.Context, repo forge.Repo, head string) (forge.PullRequest, error) {
	if err := r.begin("FindOpenPullRequest", false); err != nil {
		return forge.PullRequest{}, err
	}
	return r.Forge.FindOpenPullRequest(ctx, repo, head)
}

// CreatePullRequest implements forge.Forge.
func (r *Recorder) CreatePullRequest(ctx context.Context, repo forge.Repo,
	np forge.NewPullRequest) (forge.PullRequest, error) {
	if err := r.begin("CreatePullRequest", true); err != nil {
		return forge.PullRequest{}, err
	}
	pr, err := r.Forge.CreatePullRequest(ctx, repo, np)
	r.record(err, "%s#%d:open:%s", repo, pr.Number, np.Head)
	return pr, err
}

// UpdatePullRequest implements forge.Forge.
func (r *Recorder) UpdatePullRequest(ctx context.Context, repo forge.Repo, number int,
	upd forge.PullRequestUpdate) (forge.PullRequest, error) {
	if err := r.begin("UpdatePullRequest", true); err != nil {
		return forge.PullRequest{}, err
	}
	pr, err := r.Forge.UpdatePullRequest(ctx, repo, number, upd)
	var changed []string
	if upd.Title != nil {
		changed = append(changed, "title")
	}
	if upd.Body != nil {
		changed = append(changed, "body")
	}
	r.record(err, "%s#%d:edit:%s", repo, number, strings.Join(changed, ","))
	return pr, err
}

// ClosePullRequest implements forge.Forge.
func (r *Recorder) ClosePullRequest(ctx context.Context, repo forge.Repo, number int) error {
	if err := r.begin("ClosePullRequest", true); err != nil {
		return err
	}
	err := r.Forge.ClosePullRequest(ctx, repo, number)
	r.record(err, "%s#%d:close", repo, number)
	return err
}

// ListComments implements forge.Forge.
func (r *Recorder) ListComments(ctx context.Context, repo forge.Repo, number int) ([]forge.Comment, error) {
	if err := r.begin("ListComments", false); err != nil {
		return nil, err
	}
	return r.Forge.ListComments(ctx, repo, number)
}

// CreateComment implements forge.Forge.
func (r *Recorder) CreateComment(ctx context.Context, repo forge.Repo, number int, body string) (forge.Comment, error) {
	if err := r.begin("CreateComment", true); err != nil {
		return forge.Comment{}, err
	}
	c, err := r.Forge.CreateComment(ctx, repo, number, body)
	r.record(err, "%s#%d:comment", repo, number)
	return c, err
}

// UpdateComment implements forge.Forge.
func (r *Recorder) UpdateComment(ctx context.Context, repo forge.Repo, id int64, body string) (forge.Comment, error) {
	if err := r.begin("UpdateComment", true); err != nil {
		return forge.Comment{}, err
	}
	c, err := r.Forge.UpdateComment(ctx, repo, id, body)
	r.record(err, "%s:comment-edit:%d", repo, id)
	return c, err
}

// AddLabels implements forge.Forge.
func (r *Recorder) AddLabels(ctx context.Context, repo forge.Repo, number int, labels ...string) error {
	if err := r.begin("AddLabels", true); err != nil {
		return err
	}
	err := r.Forge.AddLabels(ctx, repo, number, labels...)
	for _, l := range slices.Compact(slices.Sorted(slices.Values(labels))) {
		r.record(err, "%s#%d:label:%s", repo, number, l)
	}
	return err
}

// RemoveLabel implements forge.Forge.
func (r *Recorder) RemoveLabel(ctx context.Context, repo forge.Repo, number int, label string) error {
	if err := r.begin("RemoveLabel", true); err != nil {
		return err
	}
	err := r.Forge.RemoveLabel(ctx, repo, number, label)
	r.record(err, "%s#%d:unlabel:%s", repo, number, label)
	return err
}

// RequestReviewers implements forge.Forge.
func (r *Recorder) RequestReviewers(ctx context.Context, repo forge.Repo, number int, users, teams []string) error {
	if err := r.begin("RequestReviewers", true); err != nil {
		return err
	}
	err := r.Forge.RequestReviewers(ctx, repo, number, users, teams)
	who := slices.Clone(users)
	for _, t := range teams {
		who = append(who, "team:"+t)
	}
	r.record(err, "%s#%d:reviewers:%s", repo, number, strings.Join(who, ","))
	return err
}

// CreateCheckRun implements forge.Forge.
func (r *Recorder) CreateCheckRun(ctx context.Context, repo forge.Repo, run forge.CheckRun) (forge.CheckRun, error) {
	if err := r.begin("CreateCheckRun", true); err != nil {
		return forge.CheckRun{}, err
	}
	out, err := r.Forge.CreateCheckRun(ctx, repo, run)
	r.record(err, "%s:check:%s:%s", repo, run.Name, run.Conclusion)
	return out, err
}

// UpdateCheckRun implements forge.Forge.
func (r *Recorder) UpdateCheckRun(ctx context.Context, repo forge.Repo, id int64,
	run forge.CheckRun) (forge.CheckRun, error) {
	if err := r.begin("UpdateCheckRun", true); err != nil {
		return forge.CheckRun{}, err
	}
	out, err := r.Forge.UpdateCheckRun(ctx, repo, id, run)
	r.record(err, "%s:check-update:%s:%s", repo, run.Name, run.Conclusion)
	return out, err
}

// ListCheckRuns implements forge.Forge.
func (r *Recorder) ListCheckRuns(ctx context.Context, repo forge.Repo, sha, name string) ([]forge.CheckRun, error) {
	if err := r.begin("ListCheckRuns", false); err != nil {
		return nil, err
	}
	return r.Forge.ListCheckRuns(ctx, repo, sha, name)
}

// EnableAutoMerge implements forge.Forge.
func (r *Recorder) EnableAutoMerge(ctx context.Context, repo forge.Repo, pr forge.PullRequest, expectedHead string,
	method forge.MergeMethod) error {
	if err := r.begin("EnableAutoMerge", true); err != nil {
		return err
	}
	err := r.Forge.EnableAutoMerge(ctx, repo, pr, expectedHead, method)
	r.record(err, "%s#%d:auto-merge:%s", repo, pr.Number, method)
	return err
}

// DisableAutoMerge implements forge.Forge.
func (r *Recorder) DisableAutoMerge(ctx context.Context, repo forge.Repo, pr forge.PullRequest) error {
	if err := r.begin("DisableAutoMerge", true); err != nil {
		return err
	}
	err := r.Forge.DisableAutoMerge(ctx, repo, pr)
	r.record(err, "%s#%d:auto-merge-off", repo, pr.Number)
	return err
}

// Merge implements forge.Forge.
func (r *Recorder) Merge(ctx context.Context, repo forge.Repo, number int, headSHA string,
	method forge.MergeMethod) (string, error) {
	if err := r.begin("Merge", true); err != nil {
		return "", err
	}
	sha, err := r.Forge.Merge(ctx, repo, number, headSHA, method)
	r.record(err, "%s#%d:merge:%s", repo, number, method)
	return sha, err
}

// ListIssues implements forge.Forge.
func (r *Recorder) ListIssues(ctx context.Context, repo forge.Repo, label string,
	state forge.PRState) ([]forge.Issue, error) {
	if err := r.begin("ListIssues", false); err != nil {
		return nil, err
	}
	return r.Forge.ListIssues(ctx, repo, label, state)
}

// CreateIssue implements forge.Forge.
func (r *Recorder) CreateIssue(ctx context.Context, repo forge.Repo, issue forge.NewIssue) (forge.Issue, error) {
	if err := r.begin("CreateIssue", true); err != nil {
		return forge.Issue{}, err
	}
	is, err := r.Forge.CreateIssue(ctx, repo, issue)
	r.record(err, "%s#%d:issue:open", repo, is.Number)
	return is, err
}

// UpdateIssue implements forge.Forge.
func (r *Recorder) UpdateIssue(ctx context.Context, repo forge.Repo, number int,
	upd forge.IssueUpdate) (forge.Issue, error) {
	if err := r.begin("UpdateIssue", true); err != nil {
		return forge.Issue{}, err
	}
	is, err := r.Forge.UpdateIssue(ctx, repo, number, upd)
	var changed []string
	if upd.Body != nil {
		changed = append(changed, "body")
	}
	if upd.State != nil {
		changed = append(changed, "state")
	}
	r.record(err, "%s#%d:issue:edit:%s", repo, number, strings.Join(changed, ","))
	return is, err
}
