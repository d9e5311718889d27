package reliability

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	gh "github.com/google/go-github/v62/github"

	"github.com/backflow-dev/backflow/internal/bot"
	"github.com/backflow-dev/backflow/internal/forge"
	"github.com/backflow-dev/backflow/internal/lifecycle"
)

// Case 25: an older authentic marker of the same pull request, pasted back
// into its body by someone with write access, is ignored and reported.
// Two replays, through the adapter against the local hub: the marker from
// before the bot closed a pull request itself (so that its close would
// look like a person's, and the same change would never be proposed
// again), and the marker from before the bot rewrote a pull request that
// a person then merged (so that the follow-up would judge changes that
// were not merged, and label the fix reverted).
func TestCase25MarkerReplay(t *testing.T) {
	files := gitopsFiles(t)
	reviewOnly(files)
	carol := func(e *hubEnv) *gh.Client { return e.person("carol") }
	body := func(e *hubEnv, n int) string {
		pr, _, err := carol(e).PullRequests.Get(e.ctx, owner, repoName, n)
		if err != nil {
			t.Fatal(err)
		}
		return pr.GetBody()
	}
	paste := func(e *hubEnv, n int, b string) {
		if _, _, err := carol(e).PullRequests.Edit(e.ctx, owner, repoName, n, &gh.PullRequest{Body: gh.String(b)}); err != nil {
			t.Fatal(err)
		}
	}
	reported := 0
	count := func(rep *bot.Report) {
		for _, rr := range rep.Repos {
			for _, err := range rr.Errors {
				if errors.Is(err, lifecycle.ErrMarkerReplayed) {
					reported++
				}
			}
			for _, a := range rr.Actions {
				if strings.Contains(a.Detail, "replayed") {
					reported++
				}
			}
		}
	}

	// The bot's close made to look like a person's.
	e := newHubEnv(t, files)
	a := e.adapter(nil)
	src := &staticSource{}
	b := e.newBot(a, src, forge.CommitGit)
	src.set(replicas(usEastNode, 4, e.clock.Now()))
	e.cycle(b)
	beforeClose := body(e, 1)
	e.clock.Advance(time.Minute)
	back := replicas(usEastNode, 3, e.clock.Now())
	back.Fields = nil // live is back at desired
	src.set(back)
	e.cycle(b)
	if prs := e.pulls(a, e.repo); len(prs) != 1 || prs[0].State != forge.StateClosed {
		t.Fatalf("the bot did not close #1 on live back at desired: %+v", prs)
	}
	paste(e, 1, beforeClose)
	e.clock.Advance(time.Minute)
	src.set(replicas(usEastNode, 4, e.clock.Now()))
	count(e.cycle(b))
	suppressed := 0
	if prs := e.pulls(a, e.repo); len(prs) != 2 {
		suppressed++
		t.Errorf("the same change, proposed again after the bot's own close: %d pull requests, want 2", len(prs))
	}

	// A rewritten pull request, merged by a person, judged by the marker
	// from before the rewrite.
	e2 := newHubEnv(t, files)
	a2 := e2.adapter(nil)
	src2 := &staticSource{}
	b2 := e2.newBot(a2, src2, forge.CommitGit)
	src2.set(replicas(usEastNode, 5, e2.clock.Now()))
	e2.cycle(b2)
	beforeRewrite := body(e2, 1)
	e2.clock.Advance(time.Minute)
	src2.set(replicas(usEastNode, 6, e2.clock.Now()))
	e2.cycle(b2)
	pr, _, err := carol(e2).PullRequests.Get(e2.ctx, owner, repoName, 1)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := carol(e2).PullRequests.Merge(e2.ctx, owner, repoName, 1, "", &gh.PullRequestOptions{SHA: pr.GetHead().GetSHA(), MergeMethod: "squash"}); err != nil {
		t.Fatalf("carol's merge of the rewritten pull request: %v", err)
	}
	paste(e2, 1, beforeRewrite)
	e2.clock.Advance(15 * time.Minute) // past the grace period
	src2.set(replicas(usEastNode, 6, e2.clock.Now()))
	count(e2.cycle(b2))
	falseResults := 0
	for _, p := range e2.pulls(a2, e2.repo) {
		if slices.Contains(p.Labels, lifecycle.LabelReverted) || slices.Contains(p.Labels, lifecycle.LabelProven) {
			falseResults++
			t.Errorf("#%d was labelled %v from a marker that does not record what merged", p.Number, p.Labels)
		}
	}
	if reported != 2 {
		t.Errorf("%d replays reported, want 2", reported)
	}
	report(t, "25", "marker-replay", "proposals_suppressed_by_replay", suppressed, "follow_up_results_from_replay", falseResults,
		"replays_reported", reported)
}
