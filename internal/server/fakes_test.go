package server

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"
)

// call is one Cycle call the fake cycler saw.
type call struct {
	repo string
	why  []Trigger
}

// fakeCycler records cycles. A repository listed in block holds its cycles
// until the test sends on its channel; started reports each cycle as it
// begins.
type fakeCycler struct {
	mu       sync.Mutex
	repos    []string
	listErr  error
	lists    int
	calls    []call
	running  map[string]int
	maxPer   map[string]int // most cycles of one repository at once
	block    map[string]chan struct{}
	started  chan call
	listed   chan struct{}
	cycleErr error
}

func newFakeCycler(repos ...string) *fakeCycler {
	return &fakeCycler{
		repos: repos, running: map[string]int{}, maxPer: map[string]int{},
		block: map[string]chan struct{}{}, started: make(chan call, 1000), listed: make(chan struct{}, 1000),
	}
}

func (f *fakeCycler) Repositories(context.Context) ([]string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lists++
	f.listed <- struct{}{}
	if f.listErr != nil {
		return nil, f.listErr
	}
	return slices.Clone(f.repos), nil
}

func (f *fakeCycler) Cycle(ctx context.Context, repo string, why []Trigger) error {
	f.mu.Lock()
	c := call{repo: repo, why: slices.Clone(why)}
	f.calls = append(f.calls, c)
	f.running[repo]++
	f.maxPer[repo] = max(f.maxPer[repo], f.running[repo])
	gate := f.block[repo]
	f.mu.Unlock()
	f.started <- c
	var err error
	if gate != nil {
		select {
		case <-gate:
		case <-ctx.Done():
			err = ctx.Err()
		}
	}
	f.mu.Lock()
	f.running[repo]--
	if err == nil {
		err = f.cycleErr
	}
	f.mu.Unlock()
	return err
}

func (f *fakeCycler) setBlock(repo string) chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	ch := make(chan struct{})
	f.block[repo] = ch
	return ch
}

func (f *fakeCycler) setRepos(repos ...string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.repos = repos
}

func (f *fakeCycler) callsFor(repo string) []call {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []call
	for _, c := range f.calls {
		if c.repo == repo {
			out = append(out, c)
		}
	}
	return out
}

func (f *fakeCycler) allCalls() []call {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.calls)
}

// waitStarted returns the next cycle to start, failing the test after a
// generous bound (a hang, not a timing assertion).
func (f *fakeCycler) waitStarted(t *testing.T) call {
	t.Helper()
	select {
	case c := <-f.started:
		return c
	case <-time.After(10 * time.Second):
		t.Fatal("no cycle started")
		return call{}
	}
}

// fakeSink records pushes and answers with a fixed result.
type fakeSink struct {
	mu     sync.Mutex
	bodies [][]byte
	vias   []Via
	result PushResult
	err    error
}

func (s *fakeSink) Accept(ctx context.Context, body []byte) (PushResult, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.bodies = append(s.bodies, slices.Clone(body))
	s.vias = append(s.vias, PushVia(ctx))
	return s.result, s.err
}

func (s *fakeSink) pushes() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.bodies)
}

// fakeClock is a Clock whose time moves only when the test advances it.
// Every After call is announced on waiting, so a test knows when the
// scheduler is asleep and for how long.
type fakeClock struct {
	mu      sync.Mutex
	now     time.Time
	timers  []fakeTimer
	waiting chan time.Duration
}

type fakeTimer struct {
	at time.Time
	ch chan time.Time
}

func newFakeClock(now time.Time) *fakeClock {
	return &fakeClock{now: now, waiting: make(chan time.Duration, 100)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) After(d time.Duration) <-chan time.Time {
	c.mu.Lock()
	ch := make(chan time.Time, 1)
	c.timers = append(c.timers, fakeTimer{at: c.now.Add(d), ch: ch})
	c.fire()
	c.mu.Unlock()
	c.waiting <- d
	return ch
}

// Advance moves the time by d and fires the timers that are due.
func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	c.fire()
}

func (c *fakeClock) fire() {
	kept := c.timers[:0]
	for _, t := range c.timers {
		if !t.at.After(c.now) {
			t.ch <- c.now
			continue
		}
		kept = append(kept, t)
	}
	c.timers = kept
}

// waitSleep returns the duration of the next After call.
func (c *fakeClock) waitSleep(t *testing.T) time.Duration {
	t.Helper()
	select {
	case d := <-c.waiting:
		return d
	case <-time.After(10 * time.Second):
		t.Fatal("the scheduler never waited")
		return 0
	}
}

var errList = errors.New("listing failed")
