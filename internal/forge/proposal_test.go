package forge_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/backflow-dev/backflow/internal/forge"
)

func (c *calls) Commit(_ context.Context, req forge.CommitRequest) (string, error) {
	return "c1", c.call("commit:" + req.ExpectedHead)
}

func (c *calls) ListPullRequests(context.Context, forge.Repo, forge.PullRequestFilter) ([]forge.PullRequest, error) {
	return []forge.PullRequest{{Number: 3, HeadSHA: "other"}}, c.call("list")
}

func (c *calls) DeleteBranch(_ context.Context, _ forge.Repo, branch, sha string) error {
	return c.call("delete:" + branch + "@" + sha)
}

func (c *calls) ClosePullRequest(context.Context, forge.Repo, int) error { return c.call("close") }

func (c *calls) BranchHead(context.Context, forge.Repo, string) (string, error) {
	return "h1", c.call("head")
}

func (c *calls) CommitsSince(context.Context, forge.Repo, string, string) ([]forge.Commit, error) {
	return []forge.Commit{{SHA: "h1"}}, c.call("since")
}

func (c *calls) EnableAutoMerge(context.Context, forge.Repo, forge.PullRequest, string, forge.MergeMethod) error {
	return c.call("arm")
}

func (c *calls) DisableAutoMerge(context.Context, forge.Repo, forge.PullRequest) error {
	return c.call("disarm")
}

func (c *calls) GetPullRequest(context.Context, forge.Repo, int) (forge.PullRequest, error) {
	return forge.PullRequest{Number: 7, MergeableState: "clean"}, c.call("get")
}

func (c *calls) Merge(context.Context, forge.Repo, int, string, forge.MergeMethod) (string, error) {
	return "m1", c.call("merge")
}

// The operations the executor's port makes of an effect are their fine
// calls in order, stopping at the first that fails, and say what the
// forge's answers on the way mean without deciding anything of their own:
// the proposal's Elsewhere and the merge's Ready are the caller's.
func TestProposalSteps(t *testing.T) {
	ctx, repo, boom := context.Background(), forge.Repo{Owner: "acme", Name: "gitops", DefaultBranch: "main"}, errors.New("boom")
	check := func(string) forge.CheckRun { return forge.CheckRun{Name: "n", Conclusion: "success"} }
	body := func(sha string, n int) string { return sha + " for " + string(rune('0'+n)) }
	proposal := func(number int, elsewhere bool) forge.Proposal {
		p := forge.Proposal{Commit: forge.CommitRequest{Branch: "b"}, Check: check, Number: number, Title: "t", Body: body}
		if number == 0 {
			p.Elsewhere = func([]forge.PullRequest, string) (forge.PullRequest, bool) {
				return forge.PullRequest{Number: 3}, elsewhere
			}
		}
		return p
	}
	propose := func(p forge.Proposal, want func(forge.Proposed) bool) func(forge.Steps) error {
		return func(s forge.Steps) error {
			got, err := s.Propose(ctx, repo, p)
			if err == nil && !want(got) {
				return errors.New("proposed as something else")
			}
			return err
		}
	}
	ready := func(ok bool) func(forge.PullRequest) (bool, string) {
		return func(forge.PullRequest) (bool, string) { return ok, "not green" }
	}
	merge := func(m forge.MergeMode, want forge.Merging) func(forge.Steps) error {
		return func(s forge.Steps) error {
			got, err := s.SetMerge(ctx, repo, forge.PullRequest{Number: 7}, m)
			if err == nil && (got.Armed != want.Armed || got.Merged != want.Merged || got.Waiting != want.Waiting ||
				(got.Refused == nil) != (want.Refused == nil)) {
				return errors.New("merge set as something else")
			}
			return err
		}
	}
	for _, tc := range []struct {
		name string
		fail map[string]error
		run  func(forge.Steps) error
		want []string
		err  error
	}{
		{"an open commits, looks for another's, checks, opens and seals", nil,
			propose(proposal(0, false), func(p forge.Proposed) bool { return p.SHA == "c1" && p.PR.Number == 7 && p.PR.HeadSHA == "c1" }),
			[]string{"commit:", "list", "check:success", "create", "seal:c1 for 7"}, nil},
		{"a moved branch is no error and writes nothing more", map[string]error{"commit:": forge.ErrConflict},
			propose(proposal(0, false), func(p forge.Proposed) bool { return errors.Is(p.Moved, forge.ErrConflict) }),
			[]string{"commit:"}, nil},
		{"proposed elsewhere: the duplicate branch goes and nothing opens", nil,
			propose(proposal(0, true), func(p forge.Proposed) bool { return p.Elsewhere && p.Listed && p.PR.Number == 3 }),
			[]string{"commit:", "list", "delete:b@c1"}, nil},
		{"a recovered branch is never deleted", nil, func(s forge.Steps) error {
			p := proposal(0, true)
			p.Reuse, p.Recovered = "c0", true
			_, err := s.Propose(ctx, repo, p)
			return err
		}, []string{"list"}, nil},
		{"a reused commit is not committed, nor its check posted twice", nil, func(s forge.Steps) error {
			p := proposal(0, false)
			p.Reuse, p.Recovered = "c0", true
			_, err := s.Propose(ctx, repo, p)
			return err
		}, []string{"list", "checks", "create", "seal:c0 for 7"}, nil},
		{"opened first by another process", map[string]error{"create": forge.ErrConflict},
			propose(proposal(0, false), func(p forge.Proposed) bool { return p.Elsewhere && !p.Listed && p.PR.Number == 5 }),
			[]string{"commit:", "list", "check:success", "create", "find"}, nil},
		{"a failed check opens nothing", map[string]error{"check:success": boom},
			propose(proposal(0, false), func(forge.Proposed) bool { return true }),
			[]string{"commit:", "list", "check:success"}, boom},
		{"an update commits on the expected head, checks and updates", nil, func(s forge.Steps) error {
			p := proposal(7, false)
			p.Commit.ExpectedHead = "old"
			got, err := s.Propose(ctx, repo, p)
			if err == nil && got.PR.HeadSHA != "c1" {
				return errors.New("the update's head is not its commit")
			}
			return err
		}, []string{"commit:old", "check:success", "seal:c1 for 7"}, nil},
		{"annotate: comment, set-up, body", nil, func(s forge.Steps) error {
			b := "body"
			return s.Annotate(ctx, repo, 7, forge.Annotation{Comment: "done", Setup: forge.Setup{Labels: []string{"a"}}, Body: &b})
		}, []string{"comment:done", "label:a", "seal:body"}, nil},
		{"annotate stops at the first failure", map[string]error{"comment:done": boom}, func(s forge.Steps) error {
			b := "body"
			return s.Annotate(ctx, repo, 7, forge.Annotation{Comment: "done", Body: &b})
		}, []string{"comment:done"}, boom},
		{"close: the reason on record first, then comment, ledger, close", nil, func(s forge.Steps) error {
			return s.CloseProposal(ctx, repo, 7, forge.Closing{Body: "why", Comment: "closing",
				Ledger: forge.CheckRun{Conclusion: "neutral"}})
		}, []string{"seal:why", "comment:closing", "check:neutral", "close"}, nil},
		{"a close whose reason is not recorded does not close", map[string]error{"seal:why": boom}, func(s forge.Steps) error {
			return s.CloseProposal(ctx, repo, 7, forge.Closing{Body: "why", Comment: "closing"})
		}, []string{"seal:why"}, boom},
		{"armed", nil, merge(forge.MergeMode{Head: "h", Ready: ready(true)}, forge.Merging{Armed: true}), []string{"arm"}, nil},
		{"already mergeable: merged now", map[string]error{"arm": forge.ErrAlreadyMergeable},
			merge(forge.MergeMode{Head: "h", Ready: ready(false)}, forge.Merging{Merged: "m1"}), []string{"arm", "merge"}, nil},
		{"not allowed and not ready: waits", map[string]error{"arm": forge.ErrAutoMergeNotAllowed},
			merge(forge.MergeMode{Head: "h", Ready: ready(false)}, forge.Merging{Waiting: "not green"}), []string{"arm", "get"}, nil},
		{"not allowed and ready: merged", map[string]error{"arm": forge.ErrAutoMergeNotAllowed},
			merge(forge.MergeMode{Head: "h", Ready: ready(true)}, forge.Merging{Merged: "m1"}), []string{"arm", "get", "merge"}, nil},
		{"refused: the answer is kept", map[string]error{"arm": forge.ErrInvalid},
			merge(forge.MergeMode{Head: "h", Ready: ready(false)}, forge.Merging{Waiting: "not green", Refused: forge.ErrInvalid}),
			[]string{"arm", "get"}, nil},
		{"the head moved", map[string]error{"arm": forge.ErrConflict},
			merge(forge.MergeMode{Head: "h"}, forge.Merging{Waiting: "the head moved; not merged"}), []string{"arm"}, nil},
		{"another failure to arm is an error", map[string]error{"arm": boom}, merge(forge.MergeMode{Head: "h"}, forge.Merging{}),
			[]string{"arm"}, boom},
		{"disarm", nil, merge(forge.MergeMode{Disarm: true}, forge.Merging{}), []string{"disarm"}, nil},
		{"a branch and its commits", nil, func(s forge.Steps) error {
			b, err := s.ReadBranch(ctx, repo, "b", "base")
			if err == nil && (b.Head != "h1" || len(b.Commits) != 1) {
				return errors.New("the branch read as something else")
			}
			return err
		}, []string{"head", "since"}, nil},
		{"a branch's head alone", nil, func(s forge.Steps) error {
			_, err := s.ReadBranch(ctx, repo, "main", "")
			return err
		}, []string{"head"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &calls{fail: tc.fail, runs: []forge.CheckRun{{Mine: true, Conclusion: "success"}}}
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
