package reliability

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	gh "github.com/google/go-github/v62/github"

	"github.com/backflow-dev/backflow/internal/app"
	"github.com/backflow-dev/backflow/internal/bot"
	"github.com/backflow-dev/backflow/internal/forge"
)

// Case 11: a person pushes to backflow's branch at each point between the
// decision and the merge (before every effect of the cycle that would
// merge): nothing is merged at a head backflow did not evaluate, and the
// person's commit is never overwritten or deleted.
func TestCase11HumanPushes(t *testing.T) {
	e := newHubEnv(t, nil)
	methods := []forge.CommitMethod{forge.CommitGit}
	if *fullRun {
		methods = append(methods, forge.CommitAPI)
	}
	carol := e.person("carol")
	unevaluated, overwritten, points := 0, 0, 0
	seq := 0
	for _, method := range methods {
		newSource := func() *staticSource {
			src := &staticSource{}
			src.set(replicas(usEastNode, 4, e.clock.Now()))
			return src
		}
		clean := e.createRepo(fmt.Sprintf("human-%02d", seq), gitopsFiles(t))
		seq++
		fx := &effects{allowed: -1}
		e.converge(e.process(clean, newSource(), method, fx), fx, 4)
		for _, k := range pushPoints(fx.log()) {
			repo := e.createRepo(fmt.Sprintf("human-%02d", seq), gitopsFiles(t))
			seq++
			points++
			var once sync.Once
			var human string
			run := &effects{allowed: -1}
			run.before = func(n int, name string) {
				if n == k {
					once.Do(func() {
						human = e.pushAs(carol, repo, branchEast, "main", map[string]string{"human.txt": "carol was here\n"}, "A person's commit\n")
					})
				}
			}
			b := e.process(repo, newSource(), method, run)
			for range 3 {
				e.cycle(b)
			}
			if human == "" {
				t.Fatalf("%s: the push before effect %d did not happen: %v", method, k, run.log())
			}
			// Every merge was at a head backflow recorded as its own, and
			// the person's file never reached main.
			for _, pr := range e.pulls(e.adapter(nil), repo) {
				if !pr.Merged {
					continue
				}
				m, ok := bot.ParseMarker(pr.Body)
				if !ok || !slices.Contains(m.Commits, pr.HeadSHA) || pr.HeadSHA == human {
					unevaluated++
					t.Errorf("%s, push before effect %d (%s): #%d merged at %s, not a head backflow evaluated", method, k, fx.log()[k], pr.Number, pr.HeadSHA)
				}
			}
			if _, _, resp, err := carol.Repositories.GetContents(e.ctx, owner, repo.Name, "human.txt", &gh.RepositoryContentGetOptions{Ref: "main"}); err == nil || resp == nil || resp.StatusCode != 404 {
				unevaluated++
				t.Errorf("%s, push before effect %d: the person's file reached main", method, k)
			}
			// The person's commit is still on the branch, as its head.
			if head := e.branches(repo, branchEast)[branchEast]; head != human {
				overwritten++
				t.Errorf("%s, push before effect %d (%s): the branch is at %q, not the person's %s", method, k, fx.log()[k], head, human)
			}
		}
	}
	report(t, "11", "human-pushes", "merges_of_unevaluated_shas", unevaluated, "overwritten_human_commits", overwritten, "push_points", points)
}

// pushPoints are the effects before which a person pushes: every one in
// the full form; in the short form, the pull request, auto-merge, the
// merge and the cleanup.
func pushPoints(log []string) []int {
	var out []int
	for i, name := range log {
		if *fullRun || slices.Contains([]string{"Commit", "CreatePullRequest", "EnableAutoMerge", "Merge", "DeleteBranch"}, name) {
			out = append(out, i)
		}
	}
	return out
}

// dayClock is backflow's clock, moved a day at a time.
type dayClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *dayClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *dayClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// Case 12: a person closes backflow's pull request without merging, then
// the same live value is observed every day for 30 days: the change is
// never proposed again; a different live value opens a new pull request.
func TestCase12ClosedStaysClosed(t *testing.T) {
	files := gitopsFiles(t)
	reviewOnly(files)
	e := newHubEnv(t, files)
	clock := &dayClock{now: e.clock.Now()}
	a := e.adapter(nil)
	fx := &effects{Forge: a, allowed: -1}
	src := &staticSource{}
	b, err := bot.New(bot.Options{Forge: forge.Steps{Forge: fx}, Sources: []bot.Source{src}, Now: clock.Now, Logger: e.log, CommitKey: []byte("reliability commit key"), Renderer: app.Renderer})
	if err != nil {
		t.Fatal(err)
	}
	src.set(replicas(usEastNode, 4, clock.Now()))
	e.cycle(b)
	prs := e.pulls(a, e.repo)
	if len(prs) != 1 {
		t.Fatalf("%d pull requests, want 1", len(prs))
	}
	carol := e.person("carol")
	if _, _, err := carol.PullRequests.Edit(e.ctx, owner, repoName, prs[0].Number, &gh.PullRequest{State: gh.String("closed")}); err != nil {
		t.Fatal(err)
	}
	step := count(3, 1)
	opened := func() int { return slices.Index(fx.log(), "CreatePullRequest") }
	recreations, cycles := 0, 0
	for day := step; day <= 30; day += step {
		clock.advance(time.Duration(step) * 24 * time.Hour)
		src.set(replicas(usEastNode, 4, clock.Now()))
		fx.mu.Lock()
		fx.done, fx.repos = nil, nil
		fx.mu.Unlock()
		e.cycle(b)
		cycles++
		if opened() >= 0 {
			recreations++
			t.Errorf("day %d: the closed change was proposed again: %v", day, fx.log())
		}
	}
	// Another live value is another proposal.
	src.set(replicas(usEastNode, 5, clock.Now()))
	e.cycle(b)
	var fresh []forge.PullRequest
	for _, pr := range e.pulls(a, e.repo) {
		if pr.State == forge.StateOpen {
			fresh = append(fresh, pr)
		}
	}
	if len(fresh) != 1 || fresh[0].Number == prs[0].Number {
		t.Errorf("a different live value: %d open pull requests, want one new", len(fresh))
	}
	report(t, "12", "closed-stays-closed", "recreations", recreations, "days", 30, "cycles", cycles, "new_pr_for_a_different_value", len(fresh))
}
