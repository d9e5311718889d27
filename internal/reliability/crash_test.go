package reliability

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/backflow-dev/backflow/internal/app"
	"github.com/backflow-dev/backflow/internal/bot"
	"github.com/backflow-dev/backflow/internal/forge"
)

var errKilled = errors.New("process killed")

// effects wraps a forge and sees every side effect before it is made: it
// records them, can run a hook before one (a person pushing), and can kill
// the process before the (allowed+1)-th one, after which no effect is made.
// It sees each fine-grained call, those the bot's port makes as one
// included: the bot is given forge.Steps over it.
type effects struct {
	forge.Forge
	mu      sync.Mutex
	allowed int // effects made before the kill; negative: never killed
	done    []string
	killed  bool
	before  func(n int, name string) // called before effect n (from 0)
	repos   []string                 // the repository of each effect
}

func (f *effects) effect(repo forge.Repo, name string) error {
	f.mu.Lock()
	if f.killed || (f.allowed >= 0 && len(f.done) >= f.allowed) {
		f.killed = true
		f.mu.Unlock()
		return errKilled
	}
	n := len(f.done)
	f.done = append(f.done, name)
	f.repos = append(f.repos, repo.FullName())
	hook := f.before
	f.mu.Unlock()
	if hook != nil {
		hook(n, name)
	}
	return nil
}

// count returns how many effects touched repositories whose name contains s.
func (f *effects) count(s string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, r := range f.repos {
		if strings.Contains(r, s) {
			n++
		}
	}
	return n
}

func (f *effects) log() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.done)
}

func (f *effects) DeleteBranch(ctx context.Context, repo forge.Repo, branch, expectedSHA string) error {
	if err := f.effect(repo, "DeleteBranch"); err != nil {
		return err
	}
	return f.Forge.DeleteBranch(ctx, repo, branch, expectedSHA)
}

func (f *effects) Commit(ctx context.Context, req forge.CommitRequest) (string, error) {
	if err := f.effect(req.Repo, "Commit"); err != nil {
		return "", err
	}
	return f.Forge.Commit(ctx, req)
}

func (f *effects) CreatePullRequest(ctx context.Context, repo forge.Repo, pr forge.NewPullRequest) (forge.PullRequest, error) {
	if err := f.effect(repo, "CreatePullRequest"); err != nil {
		return forge.PullRequest{}, err
	}
	return f.Forge.CreatePullRequest(ctx, repo, pr)
}

func (f *effects) UpdatePullRequest(ctx context.Context, repo forge.Repo, number int, upd forge.PullRequestUpdate) (forge.PullRequest, error) {
	if err := f.effect(repo, "UpdatePullRequest"); err != nil {
		return forge.PullRequest{}, err
	}
	return f.Forge.UpdatePullRequest(ctx, repo, number, upd)
}

func (f *effects) ClosePullRequest(ctx context.Context, repo forge.Repo, number int) error {
	if err := f.effect(repo, "ClosePullRequest"); err != nil {
		return err
	}
	return f.Forge.ClosePullRequest(ctx, repo, number)
}

func (f *effects) CreateComment(ctx context.Context, repo forge.Repo, number int, body string) (forge.Comment, error) {
	if err := f.effect(repo, "CreateComment"); err != nil {
		return forge.Comment{}, err
	}
	return f.Forge.CreateComment(ctx, repo, number, body)
}

func (f *effects) AddLabels(ctx context.Context, repo forge.Repo, number int, labels ...string) error {
	if err := f.effect(repo, "AddLabels"); err != nil {
		return err
	}
	return f.Forge.AddLabels(ctx, repo, number, labels...)
}

func (f *effects) RemoveLabel(ctx context.Context, repo forge.Repo, number int, label string) error {
	if err := f.effect(repo, "RemoveLabel"); err != nil {
		return err
	}
	return f.Forge.RemoveLabel(ctx, repo, number, label)
}

func (f *effects) RequestReviewers(ctx context.Context, repo forge.Repo, number int, users, teams []string) error {
	if err := f.effect(repo, "RequestReviewers"); err != nil {
		return err
	}
	return f.Forge.RequestReviewers(ctx, repo, number, users, teams)
}

func (f *effects) CreateCheckRun(ctx context.Context, repo forge.Repo, run forge.CheckRun) (forge.CheckRun, error) {
	if err := f.effect(repo, "CreateCheckRun"); err != nil {
		return forge.CheckRun{}, err
	}
	return f.Forge.CreateCheckRun(ctx, repo, run)
}

func (f *effects) EnableAutoMerge(ctx context.Context, repo forge.Repo, pr forge.PullRequest, expectedHead string, method forge.MergeMethod) error {
	if err := f.effect(repo, "EnableAutoMerge"); err != nil {
		return err
	}
	return f.Forge.EnableAutoMerge(ctx, repo, pr, expectedHead, method)
}

func (f *effects) Merge(ctx context.Context, repo forge.Repo, number int, headSHA string, method forge.MergeMethod) (string, error) {
	if err := f.effect(repo, "Merge"); err != nil {
		return "", err
	}
	return f.Forge.Merge(ctx, repo, number, headSHA, method)
}

// process is one backflow process on repo: its own adapter (no cache, no
// token) and bot, with every effect going through fx.
func (e *hubEnv) process(repo forge.Repo, src bot.Source, method forge.CommitMethod, fx *effects) *bot.Bot {
	e.t.Helper()
	fx.Forge = e.adapter(nil)
	b, err := bot.New(bot.Options{Forge: forge.Steps{Forge: fx}, Sources: []bot.Source{src}, Now: e.clock.Now, Logger: e.log, BotUserID: 4242,
		CommitMethod: method, CommitKey: []byte("reliability commit key"), Repositories: []string{repo.FullName()}, Renderer: app.Renderer})
	if err != nil {
		e.t.Fatal(err)
	}
	return b
}

// converge runs fresh cycles of b until one makes no effect, and returns
// how many ran (the last, idle one included).
func (e *hubEnv) converge(b *bot.Bot, fx *effects, limit int) int {
	e.t.Helper()
	for i := 1; i <= limit; i++ {
		before := len(fx.log())
		e.cycle(b)
		if len(fx.log()) == before {
			return i
		}
	}
	e.t.Errorf("not converged after %d cycles: %v", limit, fx.log())
	return limit
}

// unitState checks one repository's end state: for every unit branch, one
// pull request in the wanted state and no duplicate; no bot branch without
// an open pull request. It returns the duplicates and the orphans.
func (e *hubEnv) unitState(repo forge.Repo, units []string, merged bool) (dups, orphans int) {
	e.t.Helper()
	prs := e.pulls(e.adapter(nil), repo)
	for _, u := range units {
		var mine []forge.PullRequest
		for _, pr := range prs {
			if pr.HeadRef == u && pr.Mine {
				mine = append(mine, pr)
			}
		}
		switch {
		case len(mine) == 0:
			e.t.Errorf("%s: %s has no pull request", repo, u)
		case len(mine) > 1:
			dups += len(mine) - 1
			for _, pr := range mine {
				e.t.Logf("%s #%d %s merged=%v head=%s base=%s: %s", repo, pr.Number, pr.State, pr.Merged, pr.HeadSHA, pr.BaseSHA, pr.Title)
			}
			e.t.Errorf("%s: %s has %d pull requests", repo, u, len(mine))
		case mine[0].Merged != merged || (!merged && mine[0].State != forge.StateOpen):
			e.t.Errorf("%s: %s's #%d is %s (merged %v), want merged %v", repo, u, mine[0].Number, mine[0].State, mine[0].Merged, merged)
		}
	}
	open := map[string]bool{}
	for _, pr := range prs {
		if pr.State == forge.StateOpen {
			open[pr.HeadRef] = true
		}
	}
	for b := range e.branches(repo, "backflow/") {
		if !open[b] {
			orphans++
			e.t.Errorf("%s: branch %s has no open pull request", repo, b)
		}
	}
	return dups, orphans
}

// twoUnits is a live change in each environment: both pre-authorized.
func twoUnits(e *hubEnv) *staticSource {
	src := &staticSource{}
	src.set(replicas(usEastNode, 4, e.clock.Now()), replicas(euWestNode, 5, e.clock.Now()))
	return src
}

// Case 8: the process is killed at every side-effect boundary of a cycle
// (after the push and before the check run and the pull request, after the
// pull request and before its labels, before auto-merge and the merge,
// before the branch's cleanup), then a new process starts: its cycles
// converge to exactly one pull request per unit and no orphan branch.
func TestCase08CrashAtEveryBoundary(t *testing.T) {
	e := newHubEnv(t, nil)
	methods := []forge.CommitMethod{forge.CommitGit}
	scenarios := []struct {
		name   string
		mutate func(map[string]string)
		merged bool
	}{{"auto-merge", nil, true}, {"review", reviewOnly, false}}
	units := []string{branchEU, branchEast}
	newSource := twoUnits
	if *fullRun {
		methods = append(methods, forge.CommitAPI)
	} else {
		// The short form: one unit, auto-merge, the named boundaries.
		scenarios = scenarios[:1]
		units = []string{branchEast}
		newSource = func(e *hubEnv) *staticSource {
			src := &staticSource{}
			src.set(replicas(usEastNode, 4, e.clock.Now()))
			return src
		}
	}
	dups, orphans, worst, runs := 0, 0, 0, 0
	seq := 0
	for _, method := range methods {
		for _, sc := range scenarios {
			files := gitopsFiles(t)
			if sc.mutate != nil {
				sc.mutate(files)
			}
			// The clean run names the boundaries.
			clean := e.createRepo(fmt.Sprintf("crash-%02d", seq), files)
			seq++
			fx := &effects{allowed: -1}
			e.converge(e.process(clean, newSource(e), method, fx), fx, 4)
			d, o := e.unitState(clean, units, sc.merged)
			dups, orphans = dups+d, orphans+o
			boundaries := crashPoints(fx.log())
			t.Logf("%s/%s: clean run's effects %v; crashing before effects %v", method, sc.name, fx.log(), boundaries)
			for _, k := range boundaries {
				repo := e.createRepo(fmt.Sprintf("crash-%02d", seq), files)
				seq++
				src := newSource(e)
				first := &effects{allowed: k}
				e.cycle(e.process(repo, src, method, first))
				restarted := &effects{allowed: -1}
				n := e.converge(e.process(repo, src, method, restarted), restarted, 5)
				worst = max(worst, n)
				d, o := e.unitState(repo, units, sc.merged)
				dups, orphans = dups+d, orphans+o
				runs++
				if d+o > 0 {
					t.Errorf("%s/%s killed before effect %d: %d duplicates, %d orphans", method, sc.name, k, d, o)
				}
			}
		}
	}
	report(t, "8", "crash-recovery", "duplicates", dups, "orphans", orphans, "cycles_to_converge", worst, "crash_points", runs)
}

// crashPoints are the effects to kill the process before: every one in
// the full form; in the short form, the named boundaries (after the push,
// after the pull request, before auto-merge or the merge, before cleanup).
func crashPoints(log []string) []int {
	var out []int
	for i, name := range log {
		if *fullRun || i > 0 && (log[i-1] == "Commit" || log[i-1] == "CreatePullRequest") ||
			name == "EnableAutoMerge" || name == "Merge" || name == "DeleteBranch" {
			if !slices.Contains(out, i) {
				out = append(out, i)
			}
		}
	}
	return out
}
