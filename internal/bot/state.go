package bot

import (
	"context"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/backflow-dev/backflow/internal/forge"
)

// Part names a piece of a repository's cached state.
type Part uint8

// The parts of a repository's state a cycle reads.
const (
	// PartHead is the default branch's head.
	PartHead Part = 1 << iota
	// PartPulls is the list of pull requests.
	PartPulls
	// PartIssues is the list of drift tracking issues.
	PartIssues
	// PartAll is every part.
	PartAll = PartHead | PartPulls | PartIssues
)

// StateCache keeps what a cycle reads of each repository's moving state
// (the default branch's head, the pull requests, the drift tracking
// issues) from one cycle to the next, so that the cycle of a repository
// where nothing happened asks the forge nothing. It is told of changes by
// the forge's webhooks (Invalidate) and by the bot's own writes; because a
// webhook can be lost, a repository's state is trusted for at most the
// revalidation period, after which one request (the id of the
// repository's latest event) tells whether anything happened since.
type StateCache struct {
	revalidate  time.Duration
	latestEvent func(ctx context.Context, repo forge.Repo) (string, error)

	mu    sync.Mutex
	repos map[string]*repoState
}

// NewStateCache trusts a repository's state for revalidate at most without
// a check. latestEvent returns a value that changes whenever anything happens
// in the repository (the GitHub adapter's LatestEvent); nil drops the
// state at each revalidation instead, so it is read again.
func NewStateCache(revalidate time.Duration,
	latestEvent func(ctx context.Context, repo forge.Repo) (string, error)) *StateCache {
	return &StateCache{revalidate: revalidate, latestEvent: latestEvent, repos: map[string]*repoState{}}
}

type repoState struct {
	latestEvent string
	eventRead   bool      // the latest event was read
	checked     time.Time // when the state was last revalidated
	gen         uint64    // moves at every invalidation: a read that began before one is not kept
	head        cached[string]
	pulls       cached[[]forge.PullRequest]
	issues      cached[[]forge.Issue]
}

type cached[T any] struct {
	v  T
	ok bool
}

// drop forgets parts. Once every part is gone (the bot wrote to the
// repository), the latest event is read again before they are: nothing is then
// cached that it could hide, and the next revalidation is not spent on the
// bot's own events.
func (e *repoState) drop(parts Part) {
	e.gen++
	if parts == PartAll {
		e.checked = time.Time{}
	}
	if parts&PartHead != 0 {
		e.head = cached[string]{}
	}
	if parts&PartPulls != 0 {
		e.pulls = cached[[]forge.PullRequest]{}
	}
	if parts&PartIssues != 0 {
		e.issues = cached[[]forge.Issue]{}
	}
}

func stateKey(repo string) string { return strings.ToLower(repo) }

// Invalidate drops parts of repo's ("owner/name") cached state, for a
// webhook that says they changed.
func (s *StateCache) Invalidate(repo string, parts Part) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e := s.repos[stateKey(repo)]; e != nil {
		e.drop(parts)
	}
}

// entry returns repo's state, creating it.
func (s *StateCache) entry(repo forge.Repo) *repoState {
	k := stateKey(repo.FullName())
	e := s.repos[k]
	if e == nil {
		e = &repoState{}
		s.repos[k] = e
	}
	return e
}

// revalidate checks repo's state when it was last checked revalidate ago
// or more (or never): when its latest event moved, or cannot be read, every part
// is dropped. The latest event is read before the state it vouches for, so that a
// change while the state is being read moves the next one.
func (s *StateCache) revalidateState(ctx context.Context, repo forge.Repo, now time.Time) {
	s.mu.Lock()
	e := s.entry(repo)
	due := e.checked.IsZero() || now.Sub(e.checked) >= s.revalidate
	s.mu.Unlock()
	if !due {
		return
	}
	var latestEvent string
	var err error
	if s.latestEvent != nil {
		latestEvent, err = s.latestEvent(ctx, repo)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	known := s.latestEvent != nil && err == nil
	if !known || !e.eventRead || latestEvent != e.latestEvent {
		e.drop(PartAll)
	}
	e.latestEvent, e.eventRead, e.checked = latestEvent, known, now
}

// read returns the cached part of repo's state, or reads it and keeps it
// unless it was invalidated meanwhile.
func read[T any](s *StateCache, repo forge.Repo, slot func(*repoState) *cached[T], fetch func() (T, error)) (T, error) {
	s.mu.Lock()
	e := s.entry(repo)
	if c := slot(e); c.ok {
		v := c.v
		s.mu.Unlock()
		return v, nil
	}
	gen := e.gen
	s.mu.Unlock()
	v, err := fetch()
	if err != nil {
		return v, err
	}
	s.mu.Lock()
	if e.gen == gen {
		*slot(e) = cached[T]{v: v, ok: true}
	}
	s.mu.Unlock()
	return v, nil
}

// branchHead is the default branch's head, through the state cache when
// there is one.
func (b *Bot) branchHead(ctx context.Context, repo forge.Repo) (string, error) {
	fetch := func() (string, error) { return b.opts.Forge.BranchHead(ctx, repo, repo.DefaultBranch) }
	if b.opts.State == nil {
		return fetch()
	}
	return read(b.opts.State, repo, func(e *repoState) *cached[string] { return &e.head }, fetch)
}

// pullRequests lists every pull request of repo, through the state cache
// when there is one. The list is the caller's to change.
func (b *Bot) pullRequests(ctx context.Context, repo forge.Repo) ([]forge.PullRequest, error) {
	fetch := func() ([]forge.PullRequest, error) {
		return b.opts.Forge.ListPullRequests(ctx, repo, forge.PullRequestFilter{State: forge.StateAll})
	}
	if b.opts.State == nil {
		return fetch()
	}
	prs, err := read(b.opts.State, repo, func(e *repoState) *cached[[]forge.PullRequest] { return &e.pulls }, fetch)
	return slices.Clone(prs), err
}

// driftIssues lists the drift tracking issues of repo, open and closed,
// through the state cache when there is one.
func (b *Bot) driftIssues(ctx context.Context, repo forge.Repo) ([]forge.Issue, error) {
	fetch := func() ([]forge.Issue, error) {
		return b.opts.Forge.ListIssues(ctx, repo, LabelDrift, forge.StateAll)
	}
	if b.opts.State == nil {
		return fetch()
	}
	issues, err := read(b.opts.State, repo, func(e *repoState) *cached[[]forge.Issue] { return &e.issues }, fetch)
	return slices.Clone(issues), err
}

// invalidating is the bot's forge when it keeps a state cache: every write
// drops the cached state of the repository it writes to, whatever its
// outcome (a failed write may still have had its effect).
type invalidating struct {
	Forge
	state *StateCache
}

func (f invalidating) drop(repo forge.Repo) { f.state.Invalidate(repo.FullName(), PartAll) }

func (f invalidating) DeleteBranch(ctx context.Context, repo forge.Repo, branch, expectedSHA string) error {
	defer f.drop(repo)
	return f.Forge.DeleteBranch(ctx, repo, branch, expectedSHA)
}

func (f invalidating) Propose(ctx context.Context, repo forge.Repo, p forge.Proposal) (forge.Proposed, error) {
	defer f.drop(repo)
	return f.Forge.Propose(ctx, repo, p)
}

func (f invalidating) PostCheck(ctx context.Context, repo forge.Repo, run forge.CheckRun, once forge.Once,
	complete func(forge.CheckRun) forge.CheckRun) (forge.CheckRun, bool, error) {
	defer f.drop(repo)
	return f.Forge.PostCheck(ctx, repo, run, once, complete)
}

func (f invalidating) Annotate(ctx context.Context, repo forge.Repo, number int, a forge.Annotation) error {
	defer f.drop(repo)
	return f.Forge.Annotate(ctx, repo, number, a)
}

func (f invalidating) CloseProposal(ctx context.Context, repo forge.Repo, number int, c forge.Closing) error {
	defer f.drop(repo)
	return f.Forge.CloseProposal(ctx, repo, number, c)
}

func (f invalidating) SetMerge(ctx context.Context, repo forge.Repo, pr forge.PullRequest,
	m forge.MergeMode) (forge.Merging, error) {
	defer f.drop(repo)
	return f.Forge.SetMerge(ctx, repo, pr, m)
}

func (f invalidating) TrackIssue(ctx context.Context, repo forge.Repo, number int, issue forge.NewIssue,
	state *forge.PRState) (forge.Issue, error) {
	defer f.drop(repo)
	return f.Forge.TrackIssue(ctx, repo, number, issue, state)
}
