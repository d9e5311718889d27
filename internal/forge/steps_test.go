package forge_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/backflow-dev/backflow/internal/forge"
)

// calls answers the fine calls Steps makes, failing the ones named in fail,
// and keeps the order they came in; any other call panics on the nil Forge.
type calls struct {
	forge.Forge
	got      []string
	fail     map[string]error
	comments []forge.Comment
	runs     []forge.CheckRun
}

func (c *calls) call(op string) error { c.got = append(c.got, op); return c.fail[op] }

func (c *calls) CreatePullRequest(_ context.Context, _ forge.Repo, pr forge.NewPullRequest) (forge.PullRequest, error) {
	return forge.PullRequest{Number: 7, Body: pr.Body}, c.call("create")
}

func (c *calls) FindOpenPullRequest(context.Context, forge.Repo, string) (forge.PullRequest, error) {
	return forge.PullRequest{Number: 5}, c.call("find")
}

func (c *calls) UpdatePullRequest(_ context.Context, _ forge.Repo, n int, upd forge.PullRequestUpdate) (forge.PullRequest, error) {
	return forge.PullRequest{Number: n, Body: *upd.Body}, c.call("seal:" + *upd.Body)
}

func (c *calls) RequestReviewers(context.Context, forge.Repo, int, []string, []string) error {
	return c.call("reviewers")
}

func (c *calls) AddLabels(_ context.Context, _ forge.Repo, _ int, labels ...string) error {
	return c.call("label:" + strings.Join(labels, ","))
}

func (c *calls) RemoveLabel(_ context.Context, _ forge.Repo, _ int, l string) error {
	return c.call("unlabel:" + l)
}

func (c *calls) ListComments(context.Context, forge.Repo, int) ([]forge.Comment, error) {
	return c.comments, c.call("comments")
}

func (c *calls) CreateComment(_ context.Context, _ forge.Repo, _ int, body string) (forge.Comment, error) {
	return forge.Comment{Body: body}, c.call("comment:" + body)
}

func (c *calls) ListCheckRuns(context.Context, forge.Repo, string, string) ([]forge.CheckRun, error) {
	return c.runs, c.call("checks")
}

func (c *calls) CreateCheckRun(_ context.Context, _ forge.Repo, run forge.CheckRun) (forge.CheckRun, error) {
	return run, c.call("check:" + run.Conclusion)
}

// Each operation the bot's port makes as one is its fine calls in order,
// stopping at the first that fails and saying which, so a failure scripted
// at one fine call is seen where it was.
func TestSteps(t *testing.T) {
	ctx, repo, boom := context.Background(), forge.Repo{Owner: "acme", Name: "gitops"}, errors.New("boom")
	seal := func(n int) string { return "sealed for " + string(rune('0'+n)) }
	open := func(s forge.Steps) error {
		pr, opened, err := s.OpenPullRequest(ctx, repo, forge.NewPullRequest{Head: "b", Body: seal(0)}, seal)
		if err == nil && (!opened || pr.Body != "sealed for 7") {
			return errors.New("opened without its sealed body")
		}
		return err
	}
	// post posts a run completed with conclusion, and fails if it was
	// completed without being posted.
	post := func(once forge.Once, conclusion string) func(forge.Steps) error {
		return func(s forge.Steps) error {
			completed := false
			run, posted, err := s.PostCheck(ctx, repo, forge.CheckRun{Name: "n", Conclusion: conclusion}, once, func(r forge.CheckRun) forge.CheckRun {
				completed = true
				return r
			})
			if err == nil && (posted != completed || posted && run.Conclusion != conclusion) {
				return errors.New("the run was completed without being posted, or posted as something else")
			}
			return err
		}
	}
	for _, tc := range []struct {
		name     string
		fail     map[string]error
		comments []forge.Comment
		runs     []forge.CheckRun
		run      func(forge.Steps) error
		want     []string
		err      error
	}{
		{"open seals the body for the number", nil, nil, nil, open, []string{"create", "seal:sealed for 7"}, nil},
		{"a failed seal is the open's error", map[string]error{"seal:sealed for 7": boom}, nil, nil, open,
			[]string{"create", "seal:sealed for 7"}, boom},
		{"one already open is returned, not sealed", map[string]error{"create": forge.ErrConflict}, nil, nil, func(s forge.Steps) error {
			pr, opened, err := s.OpenPullRequest(ctx, repo, forge.NewPullRequest{Head: "b"}, seal)
			if err == nil && (opened || pr.Number != 5) {
				return errors.New("the open one was not returned as another's")
			}
			return err
		}, []string{"create", "find"}, nil},
		{"set up: reviewers, then labels", nil, nil, nil, func(s forge.Steps) error {
			return s.SetUpPullRequest(ctx, repo, 7, forge.Setup{Users: []string{"bob"}, Labels: []string{"a", "b"}, Unlabel: []string{"c"}})
		}, []string{"reviewers", "label:a,b", "unlabel:c"}, nil},
		{"set up stops at the first failure", map[string]error{"reviewers": boom}, nil, nil, func(s forge.Steps) error {
			return s.SetUpPullRequest(ctx, repo, 7, forge.Setup{Users: []string{"bob"}, Labels: []string{"a"}})
		}, []string{"reviewers"}, boom},
		{"a tagged comment is made once", nil, []forge.Comment{{Mine: true, Body: "done\n\n<!-- t -->"}}, nil, func(s forge.Steps) error {
			return s.CommentOnce(ctx, repo, 7, "done", "<!-- t -->")
		}, []string{"comments"}, nil},
		{"a person's comment with the tag does not count", nil, []forge.Comment{{Body: "<!-- t -->"}}, nil, func(s forge.Steps) error {
			return s.CommentOnce(ctx, repo, 7, "done", "<!-- t -->")
		}, []string{"comments", "comment:done\n\n<!-- t -->"}, nil},
		{"an untagged comment is made as it is", nil, nil, nil, func(s forge.Steps) error {
			return s.CommentOnce(ctx, repo, 7, "closing", "")
		}, []string{"comment:closing"}, nil},
		{"a check is posted", nil, nil, nil, post(forge.Always, "success"), []string{"check:success"}, nil},
		{"unless the same is there", nil, nil, []forge.CheckRun{{Mine: true, Conclusion: "success"}}, post(forge.UnlessSame, "success"),
			[]string{"checks"}, nil},
		{"another conclusion is posted", nil, nil, []forge.CheckRun{{Mine: true, Conclusion: "failure"}}, post(forge.UnlessSame, "success"),
			[]string{"checks", "check:success"}, nil},
		{"a person's run does not count", nil, nil, []forge.CheckRun{{Conclusion: "success"}}, post(forge.UnlessAny, "success"),
			[]string{"checks", "check:success"}, nil},
		{"unless any is there: completed only when posted", nil, nil, []forge.CheckRun{{Mine: true, Conclusion: "failure"}},
			post(forge.UnlessAny, "success"), []string{"checks"}, nil},
		{"a failed listing posts nothing", map[string]error{"checks": boom}, nil, nil, post(forge.UnlessSame, "success"), []string{"checks"}, boom},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &calls{fail: tc.fail, comments: tc.comments, runs: tc.runs}
			err := tc.run(forge.Steps{Forge: c})
			if !slices.Equal(c.got, tc.want) {
				t.Errorf("calls %q, want %q", c.got, tc.want)
			}
			if tc.err == nil && err != nil || tc.err != nil && !errors.Is(err, tc.err) {
				t.Errorf("error %v, want %v", err, tc.err)
			}
		})
	}
}
