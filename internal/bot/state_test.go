package bot

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/backflow-dev/backflow/internal/forge"
	"github.com/backflow-dev/backflow/internal/localhub"
)

// cycleListed runs one cycle of the env's repository as a server does
// (listed once, not again by the cycle) and returns the requests the hub
// received during it.
func (e *hubEnv) cycleListed() []localhub.Request {
	e.t.Helper()
	e.hub.Requests().Reset()
	rep, err := e.bot.CycleList(e.ctx, []forge.Repo{e.repo})
	if err != nil {
		e.t.Fatalf("cycle: %v", err)
	}
	for _, rr := range rep.Repos {
		for _, msg := range rr.Errors {
			e.t.Errorf("repository error: %s", msg)
		}
	}
	return e.hub.Requests().All()
}

func routesOf(reqs []localhub.Request) map[string]int {
	out := map[string]int{}
	for _, r := range reqs {
		out[r.Method+" "+r.Route]++
	}
	return out
}

// rateCounted are the requests the hub counted against the rate limit
// (every answer but a 304).
func rateCounted(reqs []localhub.Request) int {
	n := 0
	for _, r := range reqs {
		if r.Status != 304 {
			n++
		}
	}
	return n
}

// Why: with a thousand repositories, a cycle of each that reads the head,
// the pull requests and the drift issues again is thousands of requests a
// tick where nothing happened. With the state cache an idle cycle sends
// none; a webhook's invalidation costs the reads it invalidated; and a
// change whose webhook was lost is found at the next revalidation by one
// request, free when nothing happened.
func TestStateCacheIdleCycleSendsNothing(t *testing.T) {
	e := newHubEnv(t, forge.CommitGit, reviewOnly)
	state := NewStateCache(10*time.Minute, e.adapter.LatestEvent)
	var err error
	e.bot, err = New(Options{Forge: e.adapter, Sources: []Source{e.src}, Now: e.clock.Now, BotUserID: 4242,
		CommitKey: hubCommitKey, Renderer: renderCharts, State: state})
	if err != nil {
		t.Fatal(err)
	}
	e.src.Result.Observations = append(e.src.Result.Observations, replicas(4, 0))
	e.cycleListed() // opens the pull request; its writes drop the cached state
	e.cycleListed() // reads it again
	if got := e.cycleListed(); len(got) != 0 {
		t.Fatalf("idle cycle sent %d requests: %v", len(got), routesOf(got))
	}

	// A webhook says the pull requests changed: only they are read again.
	state.Invalidate("ACME/gitops", PartPulls)
	got := routesOf(e.cycleListed())
	if len(got) != 1 || got["GET /repos/{owner}/{repo}/pulls"] != 1 {
		t.Fatalf("after a pull_request webhook the cycle sent %v, want one read of the pull requests", got)
	}

	// Past the revalidation period with nothing changed: one request, a 304.
	e.clock.Advance(11 * time.Minute)
	reqs := e.cycleListed()
	if len(reqs) != 1 || reqs[0].Route != "/repos/{owner}/{repo}/events" || rateCounted(reqs) != 0 {
		t.Fatalf("revalidation sent %v (%d rate-counted), want one conditional read of the events answered 304", routesOf(reqs), rateCounted(reqs))
	}

	// A person closes the pull request and the webhook is lost: the cycle
	// trusts its state until the next revalidation, which finds the change.
	prs := e.pulls()
	if err := e.adapter.ClosePullRequest(e.ctx, e.repo, prs[0].Number); err != nil {
		t.Fatal(err)
	}
	if got := e.cycleListed(); len(got) != 0 {
		t.Fatalf("within the period the cycle sent %v", routesOf(got))
	}
	e.clock.Advance(11 * time.Minute)
	got = routesOf(e.cycleListed())
	if got["GET /repos/{owner}/{repo}/events"] != 1 || got["GET /repos/{owner}/{repo}/pulls"] != 1 || got["GET /repos/{owner}/{repo}/git/ref/{ref...}"] == 0 {
		t.Fatalf("revalidation after a lost webhook sent %v, want the events, then the head and the pull requests again", got)
	}
	// The closed proposal was seen: its branch is deleted.
	if got["DELETE /repos/{owner}/{repo}/git/refs/{ref...}"] != 1 {
		t.Errorf("the person's close was not acted on: %v", got)
	}
}

// Every write of the bot's forge drops the written repository's cached
// state: a write method the interface gains and invalidating does not wrap
// would pass through the embedded forge and leave stale state behind. Each
// method is called through invalidating over a nil forge (the call itself
// panics there, after the deferred drop); only the reads may leave the state.
func TestInvalidatingWrapsEveryWrite(t *testing.T) {
	reads := map[string]bool{
		"App": true, "Repositories": true, "ReadFile": true, "ListFiles": true, "BranchHead": true, "ReadBranch": true,
		"CommitsSince": true, "ChangedFiles": true, "Contains": true, "GetPullRequest": true, "ListPullRequests": true,
		"FindOpenPullRequest": true, "ListComments": true, "ListCheckRuns": true, "ListIssues": true,
	}
	repo := forge.Repo{Owner: "acme", Name: "gitops"}
	ft := reflect.TypeFor[Forge]()
	for i := range ft.NumMethod() {
		m := ft.Method(i)
		t.Run(m.Name, func(t *testing.T) {
			state := NewStateCache(time.Hour, nil)
			before := state.entry(repo).gen
			f := reflect.ValueOf(invalidating{state: state}).MethodByName(m.Name)
			args := make([]reflect.Value, m.Type.NumIn())
			for j := range args {
				in := m.Type.In(j)
				switch in {
				case reflect.TypeFor[context.Context]():
					args[j] = reflect.ValueOf(context.Background())
				case reflect.TypeFor[forge.Repo]():
					args[j] = reflect.ValueOf(repo)
				case reflect.TypeFor[forge.CommitRequest]():
					args[j] = reflect.ValueOf(forge.CommitRequest{Repo: repo})
				default:
					args[j] = reflect.Zero(in)
				}
			}
			func() {
				defer func() { _ = recover() }()
				if m.Type.IsVariadic() {
					f.CallSlice(args)
				} else {
					f.Call(args)
				}
			}()
			dropped := state.entry(repo).gen != before
			switch {
			case reads[m.Name] && dropped:
				t.Errorf("%s is a read but drops the cached state", m.Name)
			case !reads[m.Name] && !dropped:
				t.Errorf("%s does not drop the cached state: wrap it in invalidating, or list it among the reads", m.Name)
			}
		})
	}
}
