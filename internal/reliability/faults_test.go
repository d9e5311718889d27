package reliability

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/backflow-dev/backflow/internal/app"
	"github.com/backflow-dev/backflow/internal/bot"
	"github.com/backflow-dev/backflow/internal/forge"
	ghforge "github.com/backflow-dev/backflow/internal/forge/github"
	"github.com/backflow-dev/backflow/internal/localhub"
	"github.com/backflow-dev/backflow/internal/observe"
)

// faultKinds are the forge failures injected on a share of all requests.
var faultKinds = []struct {
	name  string
	fault localhub.Fault
}{
	{"500", localhub.Fault{Kind: localhub.FaultStatus, Status: 500}},
	{"502", localhub.Fault{Kind: localhub.FaultStatus, Status: 502}},
	{"503", localhub.Fault{Kind: localhub.FaultStatus, Status: 503}},
	{"reset", localhub.Fault{Kind: localhub.FaultReset}},
	{"timeout", localhub.Fault{Kind: localhub.FaultDelay, Delay: 2 * time.Second}},
}

// writeDuplicates counts what a retried write could have doubled on repo:
// pull requests per unit branch, commits recorded per pull request, check
// runs per head and comments repeated on one pull request.
func (e *hubEnv) writeDuplicates(a *ghforge.Adapter, repo forge.Repo) int {
	e.t.Helper()
	dups := 0
	perBranch := map[string]int{}
	for _, pr := range e.pulls(a, repo) {
		if !pr.Mine {
			continue
		}
		perBranch[pr.HeadRef]++
		if m, ok := bot.ParseMarker(pr.Body); ok {
			if len(m.Commits) > 1 {
				dups += len(m.Commits) - 1
				e.t.Errorf("#%d records %d commits: %v", pr.Number, len(m.Commits), m.Commits)
			}
			for _, sha := range m.Commits {
				runs, err := a.ListCheckRuns(e.ctx, repo, sha, bot.CheckName)
				if err != nil {
					e.t.Fatal(err)
				}
				if len(runs) > 1 {
					dups += len(runs) - 1
					e.t.Errorf("#%d: %d %s check runs on %s", pr.Number, len(runs), bot.CheckName, sha)
				}
			}
		}
		comments, err := a.ListComments(e.ctx, repo, pr.Number)
		if err != nil {
			e.t.Fatal(err)
		}
		seen := map[string]bool{}
		for _, c := range comments {
			if seen[c.Body] {
				dups++
				e.t.Errorf("#%d: a comment twice: %q", pr.Number, c.Body)
			}
			seen[c.Body] = true
		}
	}
	for b, n := range perBranch {
		if n > 1 {
			dups += n - 1
			e.t.Errorf("%s: %d pull requests", b, n)
		}
	}
	return dups
}

// settle waits until the hub has answered or dropped every request it
// received (a delayed one is held for its delay), failing after a bound.
func (e *hubEnv) settle() {
	e.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		inFlight := 0
		for _, r := range e.hub.Requests().All() {
			if r.Status == 0 {
				inFlight++
			}
		}
		if inFlight == 0 {
			return
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("%d requests still in flight at the hub", inFlight)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Case 9: 500, 502 and 503 answers, timeouts and connection resets on 10%
// and 50% of all requests: retries are bounded (no request is tried more
// than the adapter's attempts) and jittered, cycles succeed once the forge
// recovers, and no write is doubled.
func TestCase09ForgeFaults(t *testing.T) {
	e := newHubEnv(t, nil)
	type run struct {
		name   string
		share  float64
		faults []localhub.Fault
	}
	var runs []run
	for _, share := range []float64{0.1, 0.5} {
		// Every kind at once, each on an equal part of the share.
		var mixed []localhub.Fault
		each := 1 - math.Pow(1-share, 1/float64(len(faultKinds)))
		for _, k := range faultKinds {
			f := k.fault
			f.Share = each
			mixed = append(mixed, f)
		}
		runs = append(runs, run{fmt.Sprintf("all kinds at %.0f%%", share*100), share, mixed})
		if *fullRun {
			for _, k := range faultKinds {
				f := k.fault
				f.Share = share
				runs = append(runs, run{fmt.Sprintf("%s at %.0f%%", k.name, share*100), share, []localhub.Fault{f}})
			}
		}
	}
	const attempts = 4
	var maxAttempt atomic.Int64
	dups, recovered, retries, faulted := 0, 0, int64(0), 0
	for i, r := range runs {
		repo := e.createRepo(fmt.Sprintf("faults-%02d", i), gitopsFiles(t))
		src := &staticSource{}
		src.set(replicas(usEastNode, 4, e.clock.Now()), replicas(euWestNode, 5, e.clock.Now()))
		a := e.adapter(func(c *ghforge.Config) {
			c.Attempts = attempts
			c.RequestTimeout = 250 * time.Millisecond
			c.Observer = func(ev forge.RequestEvent) {
				for {
					cur := maxAttempt.Load()
					if int64(ev.Attempt) <= cur || maxAttempt.CompareAndSwap(cur, int64(ev.Attempt)) {
						return
					}
				}
			}
		})
		fx := &effects{Forge: a, allowed: -1}
		b, err := bot.New(bot.Options{Forge: forge.Steps{Forge: fx}, Sources: []bot.Source{src}, Now: e.clock.Now, Logger: e.log, CommitMethod: forge.CommitAPI,
			CommitKey: []byte("reliability commit key"), Repositories: []string{repo.FullName()}, Renderer: app.Renderer})
		if err != nil {
			t.Fatal(err)
		}
		var ids []int
		for _, f := range r.faults {
			f.Route = "" // every route
			ids = append(ids, e.hub.Faults().Add(f))
		}
		e.hub.Requests().Reset()
		for range count(2, 6) {
			e.cycle(b)
			// Cycles are minutes apart, longer than the forge holds a
			// request: a timed-out create lands (or not) before the next.
			e.settle()
		}
		for _, req := range e.hub.Requests().All() {
			if req.Status == -1 {
				faulted++
			}
		}
		e.hub.Faults().Clear()
		// Recovered: the next cycles converge, and the end state is the
		// fault-free one.
		e.converge(b, fx, 4)
		d, o := e.unitState(repo, []string{branchEU, branchEast}, true)
		if d+o == 0 {
			recovered++
		}
		if w := e.writeDuplicates(a, repo); w > 0 {
			dups += w
			t.Logf("%s: effects %v", r.name, fx.log())
		}
		dups += d
		retries += a.Counts().Retries
		_ = ids
		t.Logf("%s: %d retries", r.name, a.Counts().Retries)
	}
	if got := maxAttempt.Load(); got > attempts {
		t.Errorf("a request was tried %d times, more than %d", got, attempts)
	}
	report(t, "9", "forge-faults", "success_after_recovery", fmt.Sprintf("%d/%d", recovered, len(runs)), "duplicate_writes", dups,
		"max_attempts", maxAttempt.Load(), "faulted_requests", faulted, "retries", retries)
}

// Case 10: a primary rate limit (403, X-RateLimit-Remaining: 0 and a
// reset), a secondary limit (403 with Retry-After) and a 429: no request
// reaches the forge during the embargo, and content-creating requests never
// exceed 80 in any minute, over a cycle that writes far more than 80.
func TestCase10RateLimits(t *testing.T) {
	units := count(20, 60)
	files := manyUnits(gitopsFiles(t), units)
	reviewOnly(files)
	e := newHubEnv(t, files)
	src := &staticSource{}
	src.set(manyObservations(e.clock.Now(), units)...)
	a := e.adapter(nil)
	b := e.newBot(a, src, forge.CommitAPI)
	for _, f := range []localhub.Fault{
		{Kind: localhub.FaultRateLimit, Method: "POST", Route: "/repos/{owner}/{repo}/pulls", Times: 1, RetryAfter: 40 * time.Second},
		{Kind: localhub.FaultSecondaryRateLimit, Method: "POST", Route: "/repos/{owner}/{repo}/check-runs", Times: 1, RetryAfter: 30 * time.Second},
		{Kind: localhub.FaultTooManyRequests, Method: "GET", Route: "/repos/{owner}/{repo}/git/ref/{ref...}", Times: 1, RetryAfter: 20 * time.Second},
	} {
		e.hub.Faults().Add(f)
	}
	embargo := map[string]time.Duration{"/repos/{owner}/{repo}/pulls": 40 * time.Second, "/repos/{owner}/{repo}/check-runs": 30 * time.Second,
		"/repos/{owner}/{repo}/git/ref/{ref...}": 20 * time.Second}
	e.hub.Requests().Reset()
	start := e.clock.Now()
	e.cycle(b)
	log := e.hub.Requests().All()
	during, hit := 0, 0
	for i, r := range log {
		if r.Status != -1 {
			continue
		}
		hit++
		until := r.Time.Add(embargo[r.Route])
		for _, later := range log[i+1:] {
			if later.Time.Before(until) {
				during++
				t.Errorf("%s %s at %s, during the embargo of %s until %s", later.Method, later.Route, later.Time, r.Route, until)
			}
		}
	}
	if hit != 3 {
		t.Errorf("%d rate limits hit, want 3", hit)
	}
	var writes []time.Time
	for _, r := range log {
		if isWrite(r) && r.Status != -1 {
			writes = append(writes, r.Time)
		}
	}
	peak := peakPerMinute(writes)
	if peak > 80 {
		t.Errorf("%d writes in one minute, more than 80", peak)
	}
	if len(writes) <= 80 {
		t.Errorf("only %d writes: the cycle did not test the pace", len(writes))
	}
	if prs := e.pulls(a, e.repo); len(prs) != units {
		t.Errorf("%d pull requests, want %d", len(prs), units)
	}
	report(t, "10", "rate-limits", "requests_during_embargo", during, "peak_writes_per_minute", peak,
		"adapter_peak_writes_per_minute", a.Counts().PeakWritesPerMinute, "writes", len(writes), "rate_limits_hit", hit,
		"forge_minutes", fmt.Sprintf("%.1f", e.clock.Now().Sub(start).Minutes()))
}

// peakPerMinute is the most times in any window of one minute.
func peakPerMinute(times []time.Time) int {
	sort.Slice(times, func(i, j int) bool { return times[i].Before(times[j]) })
	peak, lo := 0, 0
	for hi := range times {
		for !times[lo].After(times[hi].Add(-time.Minute)) {
			lo++
		}
		peak = max(peak, hi-lo+1)
	}
	return peak
}

// manyUnits adds n environments, each with one cluster and one redis unit
// whose replicas the policy pre-authorizes.
func manyUnits(files map[string]string, n int) map[string]string {
	var envs, units, envNames strings.Builder
	for i := range n {
		env := fmt.Sprintf("cell-%03d", i)
		fmt.Fprintf(&envs, "  %s:\n    clusters: [%s-1]\n", env, env)
		fmt.Fprintf(&units, "  - name: redis\n    environment: %s\n    valuesFiles: [envs/%s/redis/values.yaml]\n    objects: [\"apps/v1|StatefulSet|redis|redis-*\"]\n", env, env)
		fmt.Fprintf(&envNames, "            - %s\n", env)
		files["envs/"+env+"/redis/values.yaml"] = files[valuesEast]
	}
	cfg := files[configPath]
	cfg = strings.Replace(cfg, "environments:\n", "environments:\n"+envs.String(), 1)
	cfg = strings.Replace(cfg, "units:\n", "units:\n"+units.String(), 1)
	files[configPath] = cfg
	files[policyPath] = strings.Replace(files[policyPath], "            - prod-eu-west\n          autoMerge: true",
		"            - prod-eu-west\n"+envNames.String()+"          autoMerge: true", 1)
	return files
}

// manyObservations scales every cell's redis-replicas to 4.
func manyObservations(at time.Time, n int) []observe.Observation {
	out := make([]observe.Observation, n)
	for i := range n {
		out[i] = replicas(fmt.Sprintf("cell-%03d-1", i), 4, at)
	}
	return out
}
