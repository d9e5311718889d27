package bot

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/backflow-dev/backflow/internal/forge"
	"github.com/backflow-dev/backflow/internal/lifecycle"
	"github.com/backflow-dev/backflow/internal/observe"
	"github.com/backflow-dev/backflow/internal/plan"
	"github.com/backflow-dev/backflow/internal/repoconfig"
	"github.com/backflow-dev/backflow/internal/values"
)

// Forge is what the cycle needs from a Git hosting service, in the forge
// port's types: what the executor writes through (Writer), and what the
// cycle reads before deciding. internal/forge/github implements it for
// GitHub and the local hub; tests record its calls with
// internal/forge/forgetest's Recorder.
type Forge interface {
	Writer
	App(ctx context.Context) (forge.App, error)
	BranchHead(ctx context.Context, repo forge.Repo, branch string) (string, error)
	CommitsSince(ctx context.Context, repo forge.Repo, base, head string) ([]forge.Commit, error)
	Contains(ctx context.Context, repo forge.Repo, commit, head string) (bool, error)
	ListPullRequests(ctx context.Context, repo forge.Repo, filter forge.PullRequestFilter) ([]forge.PullRequest, error)
	Repositories(ctx context.Context) ([]forge.Repo, error)
	ListFiles(ctx context.Context, repo forge.Repo, sha, dir string) ([]string, error)
	ListCheckRuns(ctx context.Context, repo forge.Repo, sha, name string) ([]forge.CheckRun, error)
	ListIssues(ctx context.Context, repo forge.Repo, label string, state forge.PRState) ([]forge.Issue, error)
}

// Options configures a Bot. Forge is required; the rest has defaults.
type Options struct {
	// Forge is where repositories live.
	Forge Forge
	// Sources yield the observations planned each cycle.
	Sources []Source
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Logger receives one line per decision and effect; nil discards.
	Logger *slog.Logger
	// AppSlug names the commit author "<slug>[bot]"; empty asks the forge.
	AppSlug string
	// BotUserID is the bot user's id for the author's noreply address.
	BotUserID int64
	// CommitMethod is forge.CommitGit (default) or forge.CommitAPI.
	CommitMethod forge.CommitMethod
	// Repositories is an allowlist of "owner/name"; empty allows all.
	Repositories []string
	// GitOpsManagers are the field managers of GitOps controllers; nil
	// means DefaultGitOpsManagers.
	GitOpsManagers []string
	// CommitKey keys the token that lets the bot recognise its own commits
	// after a crash; derive it from a secret only the bot holds. Empty
	// disables that recognition (an unrecorded head is then a person's).
	CommitKey []byte
	// DryRun reads everything and writes nothing, reporting what it would do.
	DryRun bool
	// Renderer builds the render witness's renderer for each repository
	// cycle; nil makes the planner refuse every change to a unit that
	// names a chart path (fail closed: no write-back without the witness).
	Renderer RendererFunc
	// Kustomizer builds the kustomize units' overlays, the witness of
	// their write-backs; nil makes the planner refuse every change to a
	// kustomize unit (fail closed, as without a Renderer). One Kustomizer
	// serves every cycle, so an overlay whose inputs did not change is not
	// built again.
	Kustomizer plan.Kustomizer
	// Holds, when set, lets the bot hold the forward controller off the
	// accepted changes of units that opt in (see HoldPort); nil keeps it
	// read-only on the clusters.
	Holds HoldPort
	// State keeps each repository's head, pull requests and drift issues
	// between cycles (told of changes by webhooks, see StateCache); nil
	// reads them again at every cycle.
	State *StateCache
	// Revisions reads, previews, writes and proves the documents of units
	// whose desired state is in a revision store, a ConfigHub Unit (see
	// Revisions); nil fails those units closed.
	Revisions Revisions
}

// Bot runs reconcile cycles. CycleList may be called from several
// goroutines for different repositories at once (its sources are read one
// cycle at a time); one repository must not have two cycles at once.
type Bot struct {
	opts Options
	log  *slog.Logger
	now  func() time.Time

	observing sync.Mutex // the sources are read by one cycle at a time

	mu    sync.Mutex
	files map[string]*fileCache // repo -> files at its last default-branch head
	ident *forge.Author         // the commit author, asked of the forge once

	claims *claims // the objects each repository's units claim

	// served are the repositories the newest complete listing names
	// (sorted, within the allowlist): a sealed hold naming none of them is
	// released (lifecycle.Input.Served).
	served []string

	// readings is what the planner and the values editor remember of
	// values files, kept across cycles and repositories for the life of
	// the bot and bounded by PlanReadingsBudget: a tick that plans the
	// same files and the same observations again takes Helm's readings of
	// the files and the verified edits from there.
	readings *values.Readings
}

// PlanReadingsBudget bounds the bytes the bot keeps of its plans' values
// readings and verified edits; beyond it the least recently used are
// dropped. A values file's readings take a few times its size.
const PlanReadingsBudget = 64 << 20

// fileCache holds files read at one commit; commits never change, so a
// repeated cycle at the same head reads nothing again.
type fileCache struct {
	sha   string
	files map[string]fileEntry
	// lists are the folders listed at sha (listFiles).
	lists map[string]listEntry
}

type fileEntry struct {
	data []byte
	err  error
}

// New builds a bot.
func New(opts Options) (*Bot, error) {
	if opts.Forge == nil {
		return nil, errors.New("bot: a forge is required")
	}
	if len(opts.CommitKey) == 0 {
		return nil, errors.New("bot: a commit key is required: it authenticates the bot's commits and pull request markers")
	}
	b := &Bot{opts: opts, log: opts.Logger, now: opts.Now, files: map[string]*fileCache{}, claims: newClaims(),
		readings: values.NewBoundedReadings(PlanReadingsBudget)}
	if b.log == nil {
		b.log = slog.New(slog.DiscardHandler)
	}
	if b.now == nil {
		b.now = time.Now
	}
	if b.opts.CommitMethod == "" {
		b.opts.CommitMethod = forge.CommitGit
	}
	if b.opts.GitOpsManagers == nil {
		b.opts.GitOpsManagers = DefaultGitOpsManagers
	}
	if b.opts.State != nil {
		b.opts.Forge = invalidating{Forge: b.opts.Forge, state: b.opts.State}
	}
	return b, nil
}

// Cycle runs one reconcile cycle over every repository. The error is set
// only when the cycle could not run at all (the repositories could not be
// listed); a repository's failure is in its report.
func (b *Bot) Cycle(ctx context.Context) (*Report, error) {
	return b.CycleRepos(ctx, nil)
}

// CycleRepos runs a cycle over the named repositories ("owner/name") only,
// or over all when only is empty: a push to one repository re-plans that
// repository alone.
func (b *Bot) CycleRepos(ctx context.Context, only []string) (*Report, error) {
	repos, err := b.opts.Forge.Repositories(ctx)
	if err != nil {
		now := b.now().UTC()
		return &Report{Started: now, DryRun: b.opts.DryRun}, fmt.Errorf("error listing repositories: %w", err)
	}
	b.listed(repos)
	var list []forge.Repo
	for _, repo := range repos {
		if len(only) == 0 || slices.ContainsFunc(only, func(s string) bool { return strings.EqualFold(s, repo.FullName()) }) {
			list = append(list, repo)
		}
	}
	return b.CycleList(ctx, list)
}

// CycleList runs a cycle over repos as the caller listed them (with their
// default branches; see ListRepos), without listing the repositories again:
// a server that lists them once a tick cycles each with what it listed.
// Repositories the allowlist excludes are skipped.
func (b *Bot) CycleList(ctx context.Context, repos []forge.Repo) (*Report, error) {
	now := b.now().UTC()
	rep := &Report{Started: now, DryRun: b.opts.DryRun}
	obs := b.observe(ctx, rep)
	author, err := b.author(ctx)
	if err != nil {
		return rep, fmt.Errorf("error reading the App's identity: %w", err)
	}
	repos = slices.Clone(repos)
	slices.SortFunc(repos, func(a, b forge.Repo) int { return strings.Compare(a.FullName(), b.FullName()) })
	for _, repo := range repos {
		if !b.allowed(repo) {
			continue
		}
		rr := &RepoReport{Repo: repo.FullName()}
		rep.Repos = append(rep.Repos, rr)
		if rl, limited := forge.IsRateLimited(rep.rateLimit); limited {
			rr.Skipped = fmt.Sprintf("not reached: rate limited until %s", rl.Until.UTC().Format(time.RFC3339))
			continue
		}
		if b.opts.State != nil {
			b.opts.State.revalidateState(ctx, repo, now)
		}
		rc := &repoCycle{b: b, ctx: ctx, repo: repo, obs: obs, now: now, author: author, rep: rr,
			log: b.log.With("repo", repo.FullName())}
		rc.x = rc.executor()
		rc.run()
		if rc.x.rateLimit != nil {
			rep.rateLimit = rc.x.rateLimit
		}
	}
	return rep, nil
}

// observe reads every source once for a cycle, reporting their errors.
func (b *Bot) observe(ctx context.Context, rep *Report) observe.Result {
	b.observing.Lock()
	defer b.observing.Unlock()
	var obs observe.Result
	for _, s := range b.opts.Sources {
		res := s.Read(ctx)
		for _, err := range res.Errors {
			rep.SourceErrors = append(rep.SourceErrors, err)
			b.log.Warn("observation skipped", "source", s.Name(), "error", err)
		}
		res.Errors = nil
		for _, t := range res.Triggers {
			b.log.Info("look again", "source", s.Name(), "object", t.Object.String(), "cluster", t.Cluster, "owner", t.Owner,
				"message", t.Message)
		}
		for _, n := range res.Notices {
			b.log.Warn("observer notice", "source", s.Name(), "object", n.Object.String(), "cluster", n.Cluster,
				"message", n.Message)
		}
		obs.Merge(res)
	}
	// What was seen of an object before it was deleted describes nothing.
	obs.ApplyForgets()
	rep.Observations = len(obs.Observations)
	return obs
}

// Concerned returns the repositories of known ("owner/name") whose units
// claim one of objects (by units[].objects, exact or glob), as their
// latest cycles read their configs, and those not cycled yet, whose
// configs are unknown: the repositories to cycle for observations of
// objects. An object with an empty Kind or apiVersion matches by its other
// segments (an audit event names a resource, not a kind; cub-scout's events
// name no apiVersion).
func (b *Bot) Concerned(objects []observe.ObjectKey, known []string) []string {
	return b.claims.concerned(objects, known)
}

// author is the commit author: "<slug>[bot] <<id>+<slug>[bot]@users.noreply.github.com>".
func (b *Bot) author(ctx context.Context) (forge.Author, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.ident != nil {
		return *b.ident, nil
	}
	slug := b.opts.AppSlug
	if slug == "" {
		app, err := b.opts.Forge.App(ctx)
		if err != nil {
			return forge.Author{}, err
		}
		slug = app.Slug
	}
	name := slug + "[bot]"
	email := name + "@users.noreply.github.com"
	if b.opts.BotUserID > 0 {
		email = fmt.Sprintf("%d+%s", b.opts.BotUserID, email)
	}
	b.ident = &forge.Author{Name: name, Email: email}
	return *b.ident, nil
}

// readFile reads path at sha through the cache. Only default-branch
// commits are ever read: configuration never comes from a pull request.
func (b *Bot) readFile(ctx context.Context, repo forge.Repo, sha, p string) ([]byte, error) {
	b.mu.Lock()
	fc := b.cacheAt(repo, sha)
	e, ok := fc.files[p]
	b.mu.Unlock()
	if ok {
		return e.data, e.err
	}
	data, err := b.opts.Forge.ReadFile(ctx, repo, sha, p)
	if err == nil || errors.Is(err, forge.ErrNotFound) || errors.Is(err, forge.ErrNotRegularFile) {
		b.mu.Lock()
		fc.files[p] = fileEntry{data, err}
		b.mu.Unlock()
	}
	return data, err
}

// repoCycle is one repository's part of a cycle.
type repoCycle struct {
	b      *Bot
	ctx    context.Context
	repo   forge.Repo
	obs    observe.Result
	now    time.Time
	author forge.Author
	rep    *RepoReport
	log    *slog.Logger

	head      string
	snap      plan.Snapshot
	cfg       *repoconfig.Config
	res       plan.Result
	policySum string
	in        *lifecycle.Input
	// x carries out the cycle's effects, and keeps its failures.
	x *executor
}

// fail records an error of the repository (or of one unit), as the
// executor does: a rate limit stops the cycle.
func (rc *repoCycle) fail(unit string, err error) bool { return rc.x.fail(unit, err) }

// run reads the repository, then decides and applies in phases: the plan
// and the pull requests first; each unit's effects, reading what its
// decision needs just before; the follow-up of merged write-backs; and the
// drift issue.
func (rc *repoCycle) run() {
	head, err := rc.b.branchHead(rc.ctx, rc.repo)
	if err != nil {
		rc.fail("", fmt.Errorf("error reading the head of %s: %w", rc.repo.DefaultBranch, err))
		return
	}
	rc.head, rc.rep.Head = head, head
	if !rc.snapshot() {
		return
	}
	var (
		prs    []forge.PullRequest
		prsErr error
	)
	if rc.cfg.WritesBack() {
		// Listed before the plan: an expiry said void on the pull request
		// that carried it stays void (its note), whatever desired holds.
		if prs, prsErr = rc.b.pullRequests(rc.ctx, rc.repo); prsErr == nil {
			rc.snap.Voided = lifecycle.VoidedExpiries(rc.b.opts.CommitKey, rc.repo.FullName(), rc.repo.DefaultBranch, prs)
		}
	}
	rc.res = plan.PlanWith(rc.obs.Observations, rc.obs.Triggers, rc.snap, rc.now, plan.Options{Readings: rc.b.readings})
	rc.report()
	if !rc.cfg.WritesBack() {
		rc.rep.Skipped = "observe-only: decisions reported, nothing written"
		return
	}
	if prsErr != nil {
		rc.fail("", fmt.Errorf("error listing pull requests: %w", prsErr))
		return
	}
	// The lifecycle decides from the plan alone: its result carries the
	// observations it was made from and the units' desired values.
	rc.in = &lifecycle.Input{DefaultBranch: rc.repo.DefaultBranch, Head: rc.head, Snapshot: rc.snap,
		PolicySum: rc.policySum, Result: rc.res, Now: rc.now, GitOpsManagers: rc.b.opts.GitOpsManagers,
		CommitKey: rc.b.opts.CommitKey, Repo: rc.repo.FullName(), Served: rc.b.servedRepos()}
	rc.in.Previews, rc.in.PreviewErrors = rc.previews()
	rc.in.Recovered = rc.recoverClosed(prs)
	units, problems := rc.in.Index(prs)
	rc.rep.Errors = append(rc.rep.Errors, problems...)
	rc.in.ClosedByBot = rc.closedByBot(units)
	// Everything this cycle does to the pull requests is decided before
	// any of it is done: the closed pull requests' cleanups, each unit's
	// whole chain, and the follow-up of merged write-backs.
	var chains [][]lifecycle.Effect
	var live []lifecycle.LiveHold
	if rc.b.opts.Holds != nil {
		// The holds first: an accepted change is held before its pull
		// request is opened, or merged; and decided before the units'
		// chains, whose bodies list the holds in place.
		if live, err = rc.b.liveHolds(rc.ctx); err != nil {
			rc.fail("", err)
		} else {
			countHolds(rc.rep, rc.in.Repo, live)
			rc.mergesApplied(prs, live)
			chains = rc.in.Holds(prs, live)
			rc.in.ListHeld(units)
		}
	}
	// Reverts are counted with holds off too: the at-risk window without
	// a hold is what a hold is weighed against.
	rc.rep.Holds.Reverts = reverts(&rc.res, rc.in.Repo, live)
	for _, u := range units {
		chains = append(chains, lifecycle.Cleanups(u)...)
	}
	for _, u := range units {
		var commits []forge.Commit
		if rc.in.NeedsCommits(u) {
			// An unrecorded head may be the bot's own commit that a crash
			// kept from being recorded; the commits on it tell.
			commits, _ = rc.b.opts.Forge.CommitsSince(rc.ctx, rc.repo, rc.repo.DefaultBranch, u.Open.PR.HeadSHA)
		}
		chains = append(chains, rc.in.Chain(u, commits))
	}
	chains = append(chains, rc.in.FollowUps(prs)...)
	chains = append(chains, rc.in.Expiries(prs)...)
	x := rc.x
	x.head = rc.head
	x.run(chains)
	if x.rateLimit != nil || !rc.cfg.DriftReport.TrackingIssue {
		return
	}
	issues, err := rc.b.driftIssues(rc.ctx, rc.repo)
	if err != nil {
		rc.fail("", fmt.Errorf("error listing the drift tracking issue: %w", err))
		return
	}
	x.run([][]lifecycle.Effect{rc.in.Drift(issues)})
}

// executor is the executor of this repository's cycle; it carries out
// effects once the head is read (its head).
func (rc *repoCycle) executor() *executor {
	return &executor{ctx: rc.ctx, f: rc.b.opts.Forge, repo: rc.repo, author: rc.author, method: rc.b.opts.CommitMethod,
		key: rc.b.opts.CommitKey, dryRun: rc.b.opts.DryRun, rep: rc.rep, log: rc.log, holds: rc.b.opts.Holds, now: rc.b.now,
		revisions: rc.b.opts.Revisions,
		read:      func(p string) ([]byte, error) { return rc.b.readFile(rc.ctx, rc.repo, rc.head, p) }}
}

// snapshot reads the repo config, the policy and the values files at the
// default branch's head. It reports false when nothing more is to be done.
func (rc *repoCycle) snapshot() bool {
	read := func(p string, _ int64) ([]byte, error) { return rc.b.readFile(rc.ctx, rc.repo, rc.head, p) }
	got, err := plan.ReadSnapshot(read, plan.ReadOptions{Commit: rc.head, StopIfPaused: true,
		List: rc.manifests, Kustomizer: rc.b.opts.Kustomizer, Revisions: rc.revisionReader()})
	// What the repository's units claim, for Concerned. A paused, missing
	// or invalid config claims nothing (nothing is written back; the push
	// that changes it cycles the repository again); a config that could
	// not be read leaves the claims unknown, so every object concerns it.
	switch {
	case err == nil:
		rc.b.claims.set(rc.repo.FullName(), rc.head, got.Snapshot.Config)
	case errors.Is(err, plan.ErrPaused), errors.Is(err, plan.ErrInvalid),
		errors.Is(err, forge.ErrNotFound) && got.Snapshot.Config == nil:
		rc.b.claims.set(rc.repo.FullName(), rc.head, nil)
	default:
		rc.b.claims.forget(rc.repo.FullName())
	}
	var skip string
	switch {
	case err == nil:
	case errors.Is(err, plan.ErrPaused):
		rc.rep.Skipped = "paused"
		return false
	case errors.Is(err, forge.ErrNotFound) && got.Snapshot.Config == nil:
		rc.rep.Skipped = "no " + repoconfig.Path + " on " + rc.repo.DefaultBranch
		return false
	case got.Snapshot.Config == nil && errors.Is(err, plan.ErrInvalid):
		skip = "invalid repo config"
	case got.Snapshot.Config == nil:
	case errors.Is(err, plan.ErrUnreadable):
		skip = "unreadable policy"
	default:
		skip = "invalid policy"
	}
	if err != nil {
		rc.rep.Skipped = skip
		rc.fail("", err)
		return false
	}
	rc.policySum = got.PolicySum
	rc.cfg = got.Snapshot.Config
	rc.snap = got.Snapshot
	// Without a renderer the planner fails every unit that names a chart
	// path closed: no write-back without the render witness.
	if rc.b.opts.Renderer != nil {
		rc.snap.Renderer = rc.b.opts.Renderer(rc.ctx, chartSource{rc})
	}
	// The planner fails the decisions of a unit whose values are missing closed.
	rc.rep.Errors = append(rc.rep.Errors, got.FileErrors...)
	return true
}

// report copies the decisions worth showing into the report: every
// decision about an object this repository's units claim.
func (rc *repoCycle) report() {
	for _, d := range rc.res.Decisions {
		if d.Outcome == plan.Unmapped || d.Outcome == plan.Noop {
			continue
		}
		rc.rep.Decisions = append(rc.rep.Decisions, decisionReport(d))
		if d.Outcome == plan.Deny {
			rc.log.Warn("unauthorized drift: not written back", "unit", d.Unit, "environment", d.Environment,
				"object", d.Object, "reasons", strings.Join(d.Reasons, "; "))
		}
	}
	rc.rep.PlanErrors = append(rc.rep.PlanErrors, rc.res.Errors...)
	rc.rep.Expiries = expiryReports(rc.res.Expiries)
}

// recoverClosed reads, for each closed unmerged pull request of the App
// whose marker is refused, its head commit, so that a person's close of
// the proposal holds though its marker was edited (lifecycle.FromHeadCommit).
func (rc *repoCycle) recoverClosed(prs []forge.PullRequest) map[int]*lifecycle.Marker {
	out := map[int]*lifecycle.Marker{}
	for _, pr := range prs {
		if !pr.Mine || pr.State == forge.StateOpen || pr.Merged || pr.HeadSHA == "" {
			continue
		}
		if _, err := rc.in.PullMarker(pr); err == nil {
			continue
		}
		rc.log.Warn("marker refused", "pr", pr.Number, "error", lifecycle.ErrMarkerForged)
		commits, err := rc.b.opts.Forge.CommitsSince(rc.ctx, rc.repo, pr.BaseSHA, pr.HeadSHA)
		if err != nil {
			continue
		}
		for _, c := range commits {
			if m, ok := lifecycle.FromHeadCommit(rc.b.opts.CommitKey, pr, c); ok {
				out[pr.Number] = m
			}
		}
	}
	return out
}

// closedByBot reads the App's ledger on the head of each closed pull
// request whose marker says a person closed it, where that decides
// something this cycle (lifecycle.PersonClosed): one the bot closed itself
// carries an older marker pasted back, which is ignored and reported.
func (rc *repoCycle) closedByBot(units []*lifecycle.Unit) map[int]bool {
	out := map[int]bool{}
	for _, u := range units {
		for _, c := range rc.in.PersonClosed(u) {
			runs, err := rc.b.opts.Forge.ListCheckRuns(rc.ctx, rc.repo, c.PR.HeadSHA, lifecycle.ClosedCheckName)
			if err != nil {
				err = fmt.Errorf("error reading the %s check of #%d: %w", lifecycle.ClosedCheckName, c.PR.Number, err)
				rc.rep.Errors = append(rc.rep.Errors, unitError(u.Branch, err))
				continue
			}
			if lifecycle.ClosedByTheBot(runs) {
				out[c.PR.Number] = true
				rc.log.Warn("marker refused", "pr", c.PR.Number, "error", lifecycle.ErrMarkerReplayed)
				rc.rep.Errors = append(rc.rep.Errors, fmt.Errorf("#%d: %w: backflow closed it itself (%s); ignored",
					c.PR.Number, lifecycle.ErrMarkerReplayed, lifecycle.ClosedCheckName))
			}
		}
	}
	return out
}

// manifests lists the manifest files below a unit's manifests folder at the
// head commit, as the controllers read a folder: every .yaml, .yml and
// .json file, recursively, hidden entries skipped.
func (rc *repoCycle) manifests(dir string) ([]string, error) {
	whole := dir
	if dir == "." { // the whole repository, which the forge lists as ""
		whole = ""
	}
	files, err := rc.b.listFiles(rc.ctx, rc.repo, rc.head, whole)
	if err != nil {
		return nil, err
	}
	got, _ := repoconfig.ManifestsOf([]string{dir}, files)
	return got, nil
}
