package server

import (
	"context"
	"fmt"
	"sync"
)

// TriggerKind says what asked for a cycle.
type TriggerKind string

// The reasons a cycle runs.
const (
	// TriggerStartup: the process started and loaded its repositories.
	TriggerStartup TriggerKind = "startup"
	// TriggerSchedule: the cron schedule fired.
	TriggerSchedule TriggerKind = "schedule"
	// TriggerPush: a push to the repository's default branch (re-plan).
	TriggerPush TriggerKind = "push"
	// TriggerPullRequestClosed: a pull request was closed or merged
	// (follow-up).
	TriggerPullRequestClosed TriggerKind = "pull-request-closed"
	// TriggerCheckRerequested: someone asked for a check run again (verify
	// again).
	TriggerCheckRerequested TriggerKind = "check-rerequested"
	// TriggerInstallation: the App was installed on the repository.
	TriggerInstallation TriggerKind = "installation"
	// TriggerObservation: an observation about the repository's objects was
	// pushed.
	TriggerObservation TriggerKind = "observation"
	// TriggerElected: this process became the leader of its replicas.
	TriggerElected TriggerKind = "elected"
)

// Trigger is one request for a cycle and what it was about.
type Trigger struct {
	// Kind says what asked.
	Kind TriggerKind
	// PullRequest is the pull request's number (TriggerPullRequestClosed).
	PullRequest int
	// Merged reports a closed pull request that was merged.
	Merged bool
	// HeadSHA is the commit of a rerequested check run
	// (TriggerCheckRerequested) or the pushed head (TriggerPush).
	HeadSHA string
	// Delivery is the X-GitHub-Delivery id, for webhook triggers.
	Delivery string
}

// maxPendingTriggers bounds the reasons kept for one coalesced cycle; the
// cycle itself does all its work whatever the reasons, so dropping the
// surplus loses only detail in logs.
const maxPendingTriggers = 64

// queue runs cycles so that one repository never has two at once. A request
// for a repository whose cycle is waiting to start joins that cycle; a
// request while it runs makes exactly one more cycle run after it, however
// many requests arrive meanwhile.
type queue struct {
	run func(ctx context.Context, repo string, why []Trigger)

	ctx    context.Context // passed to cycles; cancelled when draining gives up
	cancel context.CancelFunc
	sem    chan struct{} // bounds cycles running across repositories
	stop   chan struct{} // closed by close: queued cycles that have not started are dropped

	mu     sync.Mutex
	closed bool
	slots  map[string]*slot
	wg     sync.WaitGroup
}

// slot is one repository's state in the queue.
type slot struct {
	active  bool      // a worker goroutine owns this repository
	running bool      // its cycle is running now
	next    []Trigger // reasons for the next cycle
}

func newQueue(concurrency int, run func(ctx context.Context, repo string, why []Trigger)) *queue {
	ctx, cancel := context.WithCancel(context.Background())
	return &queue{
		run: run, ctx: ctx, cancel: cancel,
		sem:   make(chan struct{}, concurrency),
		stop:  make(chan struct{}),
		slots: map[string]*slot{},
	}
}

// enqueue asks for a cycle of repo. It never blocks on a cycle, and returns
// false once the queue is closed.
func (q *queue) enqueue(repo string, t Trigger) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return false
	}
	s := q.slots[repo]
	if s == nil {
		s = &slot{}
		q.slots[repo] = s
	}
	if len(s.next) < maxPendingTriggers {
		s.next = append(s.next, t)
	}
	if !s.active {
		s.active = true
		q.wg.Add(1)
		go q.work(repo, s)
	}
	return true
}

// work runs repo's cycles until no request is left.
func (q *queue) work(repo string, s *slot) {
	defer q.wg.Done()
	for {
		select {
		case q.sem <- struct{}{}:
		case <-q.stop:
			q.mu.Lock()
			s.active, s.next = false, nil
			q.mu.Unlock()
			return
		}
		q.mu.Lock()
		if q.closed {
			// close won the race with the semaphore: do not start.
			s.active, s.next = false, nil
			q.mu.Unlock()
			<-q.sem
			return
		}
		why := s.next
		s.next, s.running = nil, true
		q.mu.Unlock()

		q.run(q.ctx, repo, why)
		<-q.sem

		q.mu.Lock()
		s.running = false
		if len(s.next) == 0 || q.closed {
			s.active, s.next = false, nil
			delete(q.slots, repo)
			q.mu.Unlock()
			return
		}
		q.mu.Unlock()
	}
}

// close refuses new requests and drops cycles that have not started; running
// cycles go on until they finish or abort cancels them.
func (q *queue) close() {
	q.mu.Lock()
	defer q.mu.Unlock()
	if !q.closed {
		q.closed = true
		close(q.stop)
	}
}

// drain waits for running cycles to finish, or for ctx to end. Either way
// it then cancels the cycles' context; cycles still running at that point
// are abandoned (a cycle is safe to interrupt: the next one converges).
func (q *queue) drain(ctx context.Context) error {
	done := make(chan struct{})
	go func() { q.wg.Wait(); close(done) }()
	defer q.cancel()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("cycles still running when the shutdown timeout expired: %w", ctx.Err())
	}
}
