package app

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/backflow-dev/backflow/internal/bot"
	"github.com/backflow-dev/backflow/internal/forge"
	"github.com/backflow-dev/backflow/internal/forge/github"
	"github.com/backflow-dev/backflow/internal/hold"
	"github.com/backflow-dev/backflow/internal/observe"
	"github.com/backflow-dev/backflow/internal/plan"
	"github.com/backflow-dev/backflow/internal/server"
)

// Cycler drives the bot: backflow serve through the server (server.Cycler:
// a cycle of one repository is a bot cycle limited to it) and backflow run
// --once through CycleAll. What each cycle decided and did is counted in the
// metrics, when there are any. Repositories of one installation (one
// account) cycle at most perInstallation at a time, and the installation's
// pacing gates in the adapter hold them all; the bot reads its observation
// sources one cycle at a time.
type Cycler struct {
	bot             *bot.Bot
	metrics         *server.Metrics
	perInstallation int

	run   sync.Mutex // CycleAll: one whole cycle at a time
	mu    sync.Mutex
	last  []string                 // the last repository list
	known map[string]forge.Repo    // the same, by lower-case name, with default branches
	slots map[string]chan struct{} // per account: the cycles running
	// temporary are each repository's temporary acceptances by state, as
	// its latest cycle found them (expiry.go).
	temporary map[string]map[string]int
	// reverts are the reverts the at-risk metric counted, by key, with
	// when (holdmetrics.go).
	reverts map[string]time.Time
}

// NewCycler drives b, counting in m (nil counts nothing), cycling at most
// server.DefaultPerInstallation repositories of one installation at a time.
func NewCycler(b *bot.Bot, m *server.Metrics) *Cycler {
	return &Cycler{bot: b, metrics: m, perInstallation: server.DefaultPerInstallation, slots: map[string]chan struct{}{}}
}

// SetPerInstallation bounds the cycles of one installation's repositories
// that run at once (n > 0).
func (c *Cycler) SetPerInstallation(n int) { c.perInstallation = n }

// slot waits for room among the cycles of account's repositories, and
// returns the function that gives it back.
func (c *Cycler) slot(ctx context.Context, account string) (func(), error) {
	c.mu.Lock()
	ch := c.slots[strings.ToLower(account)]
	if ch == nil {
		ch = make(chan struct{}, c.perInstallation)
		c.slots[strings.ToLower(account)] = ch
	}
	c.mu.Unlock()
	select {
	case ch <- struct{}{}:
		return func() { <-ch }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Concerned lists the repositories of the last list that objects concern:
// those whose units claim one of them, and those whose config no cycle has
// read yet.
func (c *Cycler) Concerned(objects []observe.ObjectKey) []string {
	return c.bot.Concerned(objects, c.Known())
}

// Repositories implements server.Cycler: the repositories the bot would
// reconcile (the App's, limited by the allowlist).
// The server asks once a tick and on installation events; each cycle then
// uses this list rather than listing the installations' repositories
// again.
func (c *Cycler) Repositories(ctx context.Context) ([]string, error) {
	repos, err := c.bot.ListRepos(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]string, len(repos))
	known := make(map[string]forge.Repo, len(repos))
	for i, r := range repos {
		out[i] = r.FullName()
		known[strings.ToLower(r.FullName())] = r
	}
	c.mu.Lock()
	c.last, c.known = out, known
	c.mu.Unlock()
	return out, nil
}

// Known is the last repository list: the repositories a pushed observation
// may concern.
func (c *Cycler) Known() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.last)
}

// Cycle implements server.Cycler. Paused and observe-only repositories are
// the bot's to honour; a repository's failures come back as the error.
func (c *Cycler) Cycle(ctx context.Context, repo string, _ []server.Trigger) error {
	c.mu.Lock()
	r, ok := c.known[strings.ToLower(repo)]
	c.mu.Unlock()
	account, _, _ := strings.Cut(repo, "/")
	release, err := c.slot(ctx, account)
	if err != nil {
		return err
	}
	defer release()
	server.CycleStarted(ctx)
	var rep *bot.Report
	if ok {
		rep, err = c.bot.CycleList(ctx, []forge.Repo{r})
	} else {
		rep, err = c.bot.CycleRepos(ctx, []string{repo})
	}
	if rep != nil {
		c.record(rep)
	}
	if err != nil {
		return err
	}
	var errs []error
	for _, rr := range rep.Repos {
		errs = append(errs, rr.Errors...)
	}
	if rl, limited := rep.RateLimited(); limited {
		errs = append(errs, rl)
	}
	return errors.Join(errs...)
}

// CycleAll runs one cycle over every repository the bot may act on. The
// error is set only when the cycle could not run at all; a repository's
// failure is in the report.
func (c *Cycler) CycleAll(ctx context.Context) (*bot.Report, error) {
	c.run.Lock()
	defer c.run.Unlock()
	rep, err := c.bot.Cycle(ctx)
	if rep != nil {
		c.record(rep)
	}
	return rep, err
}

// prActions are the bot's actions the pull request metric counts, under
// the effect's own name: one name from the lifecycle to the log to the
// metric label.
var prActions = []string{bot.ActOpen, bot.ActUpdate, bot.ActClose, bot.ActMerge, bot.ActAutoMerge}

// record counts what a cycle decided and did.
func (c *Cycler) record(rep *bot.Report) {
	if c.metrics == nil {
		return
	}
	for range rep.SourceErrors {
		c.metrics.Error("observation")
	}
	if _, limited := rep.RateLimited(); limited {
		c.metrics.Error("rate-limited")
	}
	for _, rr := range rep.Repos {
		for _, d := range rr.Decisions {
			c.metrics.Decision(d.Outcome)
			if d.Attribution != "" {
				c.metrics.DecisionAttribution(d.Attribution)
			}
		}
		for _, a := range rr.Actions {
			if a.DryRun {
				continue
			}
			if slices.Contains(prActions, a.Kind) {
				c.metrics.PullRequest(a.Kind)
			}
			switch a.Kind {
			case bot.ActCheck:
				c.metrics.ReceiptRefused()
			case bot.ActProven:
				c.metrics.Fix("proven")
			case bot.ActReverted:
				c.metrics.Fix("reverted")
			}
		}
		for range rr.PlanErrors {
			c.metrics.Error("plan")
		}
		c.recordTemporary(rr)
		c.recordHolds(rr, rep.Started)
		for _, err := range rr.Errors {
			c.metrics.Error(bot.ErrorClass(err))
		}
	}
}

// NewMetrics makes the process's metrics with every label value the
// cycles are known to record set to zero, and the binary's version.
func NewMetrics(version string) *server.Metrics {
	m := server.NewMetrics()
	m.SetVersion(version)
	m.KnownPullRequests(prActions...)
	m.KnownDecisions(string(plan.Allow), string(plan.Deny), string(plan.Stale))
	m.KnownErrors(append([]string{"observation", "plan"}, bot.ErrorClasses()...)...)
	m.KnownWaits(github.WaitReasons...)
	for _, s := range temporaryStates {
		m.TemporaryAcceptances(s, 0)
	}
	m.KnownHoldReleases(hold.Causes...)
	return m
}
