package lifecycle

import (
	"slices"
	"strings"
	"testing"

	"github.com/backflow-dev/backflow/internal/forge"
	"github.com/backflow-dev/backflow/internal/plan"
)

// The decisions the executor asks for after reading the forge mid-way.
func TestRecover(t *testing.T) {
	in := input(t, nil, replicas(4, "kubectl", 0))
	p := in.propose(&in.Result.WriteBacks[0])
	mine := p.CommitOn(in.Head, forge.Repo{}, forge.Author{}, forge.CommitGit, "", false).Message
	other := input(t, nil, replicas(5, "kubectl", 0))
	theirs := other.propose(&other.Result.WriteBacks[0]).CommitOn(other.Head, forge.Repo{}, forge.Author{}, forge.CommitGit, "", false).Message
	older := *in
	older.Head = "0000000000000000000000000000000000000000"
	stale := p.CommitOn(older.Head, forge.Repo{}, forge.Author{}, forge.CommitGit, "", false).Message
	for _, tc := range []struct {
		why     string
		commits []forge.Commit
		want    Recovery
	}{
		{"the bot's commit of this proposal on the current head is reused (a crash after the push)",
			[]forge.Commit{{SHA: "c1", Parents: []string{head}, Message: mine}}, Reuse},
		{"the bot's commit of another proposal is rewritten",
			[]forge.Commit{{SHA: "c1", Parents: []string{head}, Message: theirs}}, Rewrite},
		{"the bot's commit on an older base is rewritten",
			[]forge.Commit{{SHA: "c0", Parents: []string{older.Head}, Message: stale}}, Rewrite},
		{"a person's commit on top of the bot's leaves it alone",
			[]forge.Commit{{SHA: "c0", Parents: []string{head}, Message: mine}, {SHA: "c1", Parents: []string{"c0"}, Message: "x"}}, LeaveAlone},
		{"a person's commit on the branch leaves it alone",
			[]forge.Commit{{SHA: "p1", Parents: []string{head}, Message: "hand edit\n"}}, LeaveAlone},
		{"a forged token under another key is a person's",
			[]forge.Commit{{SHA: "p1", Parents: []string{head}, Message: mine + "Backflow-Commit: 0123456789abcdef0123456789abcdef\n"}}, LeaveAlone},
		{"a merge commit is never the bot's",
			[]forge.Commit{{SHA: "p1", Parents: []string{head, "x"}, Message: mine}}, LeaveAlone},
	} {
		if got := p.Recover(head, tc.commits); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.why, got, tc.want)
		}
	}
	// On this cycle's own merge of another unit, the bot's commit of this
	// proposal on that merge is reused, and one on the cycle's head is not.
	const merged = "2222222222222222222222222222222222222222"
	onMerge := p.CommitOn(merged, forge.Repo{}, forge.Author{}, forge.CommitGit, "", false).Message
	if got := p.Recover(merged, []forge.Commit{{SHA: "c2", Parents: []string{merged}, Message: onMerge}}); got != Reuse {
		t.Errorf("the bot's commit on the cycle's own merge: %v, want reuse", got)
	}
	if got := p.Recover(merged, []forge.Commit{{SHA: "c1", Parents: []string{head}, Message: mine}}); got != Rewrite {
		t.Errorf("the bot's commit on the cycle's head, writing on its own merge: %v, want rewrite", got)
	}
}

func TestProposedElsewhere(t *testing.T) {
	in := input(t, nil, replicas(4, "kubectl", 0))
	p := in.propose(&in.Result.WriteBacks[0])
	pr := proposed(t, in, 7, "c1")
	for _, tc := range []struct {
		why  string
		pr   func() forge.PullRequest
		sha  string
		base string
		want bool
	}{
		{"another process opened it at this commit", func() forge.PullRequest { return pr }, "c1", head, true},
		{"another process proposed the same change from the same head, merged and cleaned it up", func() forge.PullRequest { return closed(pr, true) }, "c9", head, true},
		{"the same change from the cycle's head, while this one is written on the cycle's own merge", func() forge.PullRequest { return closed(pr, true) }, "c9", "2222", true},
		{"the same change from the commit this one is written on", func() forge.PullRequest {
			return edit(t, closed(pr, true), func(m *Marker) { m.Base = "2222" })
		}, "c9", "2222", true},
		{"the same change from another default-branch head is not this proposal", func() forge.PullRequest {
			return edit(t, closed(pr, true), func(m *Marker) { m.Base = "0000" })
		}, "c9", head, false},
		{"the same change closed without merge (by the bot, or a person the lifecycle heard) does not count", func() forge.PullRequest { return closed(pr, false) }, "c9", head, false},
		{"someone else's pull request from the branch does not count", func() forge.PullRequest { x := pr; x.Mine = false; return x }, "c1", head, false},
		{"a pull request against another base does not count", func() forge.PullRequest { x := pr; x.BaseRef = "release"; return x }, "c1", head, false},
	} {
		if _, got := p.ProposedElsewhere([]forge.PullRequest{tc.pr()}, tc.sha, tc.base); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.why, got, tc.want)
		}
	}
}

func TestMergeNow(t *testing.T) {
	for _, tc := range []struct {
		why  string
		cur  forge.PullRequest
		want bool
	}{
		{"mergeable and green at the checked head", forge.PullRequest{HeadSHA: "c1", MergeableState: "clean"}, true},
		{"the head moved since the check", forge.PullRequest{HeadSHA: "c2", MergeableState: "clean"}, false},
		{"checks still running", forge.PullRequest{HeadSHA: "c1", MergeableState: "blocked"}, false},
		{"GitHub has not computed it yet", forge.PullRequest{HeadSHA: "c1"}, false},
	} {
		if got, _ := mergeNow(tc.cur, "c1"); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.why, got, tc.want)
		}
	}
	in := input(t, nil)
	if in.BaseMoved(head, nil) || !in.BaseMoved("2222", nil) || in.BaseMoved("2222", []string{"2222"}) {
		t.Error("the default branch moved only when someone else's commit is on it")
	}
	run := forge.CheckRun{Conclusion: forge.ConclusionSuccess}
	if Checked([]forge.CheckRun{{Conclusion: forge.ConclusionSuccess}}, run) || !Checked([]forge.CheckRun{{Mine: true, Conclusion: forge.ConclusionSuccess}}, run) ||
		Checked([]forge.CheckRun{{Mine: true, Conclusion: forge.ConclusionFailure}}, run) {
		t.Error("only the bot's own check with the same conclusion counts")
	}
}

func TestDrift(t *testing.T) {
	denied := replicas(4, "kubectl", 0)
	denied.Change.Actor, denied.Change.Groups = "mallory", nil
	drifting := input(t, nil, denied)
	calm := input(t, nil)
	open := func(in *Input, state forge.PRState) []forge.Issue {
		body := in.Drift(nil)
		var b string
		if len(body) > 0 {
			b = body[0].Issue.Body
		} else {
			b = driftBody(nil, "main", "")
		}
		return []forge.Issue{{Number: 3, Body: b, State: state, Mine: true}}
	}
	closedState, openState := forge.StateClosed, forge.StateOpen
	for _, tc := range []struct {
		why    string
		in     *Input
		issues []forge.Issue
		want   string // the reason's first words, "" for no effect
		state  *forge.PRState
	}{
		{"drift and no issue: one is opened", drifting, nil, "open the tracking issue", nil},
		{"no drift and no issue: nothing", calm, nil, "", nil},
		{"the same drift listed: no write", drifting, open(drifting, forge.StateOpen), "", nil},
		{"the drift is gone: the issue is closed", calm, open(drifting, forge.StateOpen), "close the tracking issue", &closedState},
		{"drift again: the closed issue is reopened, never a second one", drifting, open(calm, forge.StateClosed), "reopen the tracking issue", &openState},
		{"someone else's issue with the label is not the one", drifting, []forge.Issue{{Number: 1, State: forge.StateOpen}}, "open the tracking issue", nil},
	} {
		got := tc.in.Drift(tc.issues)
		switch {
		case tc.want == "" && len(got) > 0:
			t.Errorf("%s: %v", tc.why, kinds(got))
		case tc.want != "" && (len(got) != 1 || !strings.HasPrefix(got[0].Reason, tc.want)):
			t.Errorf("%s: %s", tc.why, reasons(got))
		case tc.state != nil && (got[0].Issue.State == nil || *got[0].Issue.State != *tc.state):
			t.Errorf("%s: state %v", tc.why, got[0].Issue.State)
		}
	}
}

// A plan's denied decision never becomes a write-back effect.
func TestDeniedIsNotWritten(t *testing.T) {
	o := replicas(4, "kubectl", 0)
	o.Change.Actor, o.Change.Groups = "mallory", nil
	in := input(t, nil, o)
	if len(in.Result.WriteBacks) != 0 || !slices.ContainsFunc(in.Result.Decisions, func(d plan.Decision) bool { return d.Outcome == plan.Deny }) {
		t.Fatalf("plan: %+v", in.Result)
	}
	if got := decideAll(t, state{in: in}); len(got) != 0 {
		t.Errorf("denied drift decided %v", kinds(got))
	}
}

// The closes worth checking against the App's ledger, and the ledger.
func TestPersonClosedAndTheLedger(t *testing.T) {
	in := input(t, nil, replicas(4, "kubectl", 0))
	pr := closed(proposed(t, in, 1, "c1"), false)
	units, _ := in.Index([]forge.PullRequest{pr})
	if got := in.PersonClosed(units[0]); len(got) != 1 || got[0].PR.Number != 1 {
		t.Fatalf("a close the marker calls a person's, of what is proposed again: %v, want #1", got)
	}
	byBot := edit(t, pr, func(m *Marker) { m.Closed = ClosedConverged })
	units, _ = in.Index([]forge.PullRequest{byBot})
	if got := in.PersonClosed(units[0]); len(got) != 0 {
		t.Errorf("a close the marker records as the bot's needs no check: %v", got)
	}
	other := input(t, nil, replicas(5, "kubectl", 0))
	units, _ = other.Index([]forge.PullRequest{pr})
	if got := other.PersonClosed(units[0]); len(got) != 0 {
		t.Errorf("a close of another proposal decides nothing: %v", got)
	}
	run := closedRun(&Pull{PR: pr}, ClosedConverged)
	if run.Name == CheckName {
		t.Fatal("the ledger must never be the required check: a neutral conclusion passes")
	}
	mine := run
	mine.Mine = true
	for _, tc := range []struct {
		why  string
		runs []forge.CheckRun
		want bool
	}{
		{"the App's ledger", []forge.CheckRun{mine}, true},
		{"someone else's run of the same name and id", []forge.CheckRun{run}, false},
		{"no run", nil, false},
	} {
		if got := ClosedByTheBot(tc.runs); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.why, got, tc.want)
		}
	}
}
