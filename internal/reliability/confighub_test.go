package reliability

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/backflow-dev/backflow/internal/app"
	"github.com/backflow-dev/backflow/internal/bot"
	"github.com/backflow-dev/backflow/internal/botconfig"
	"github.com/backflow-dev/backflow/internal/confighub/confighubtest"
	"github.com/backflow-dev/backflow/internal/forge"
	"github.com/backflow-dev/backflow/internal/forge/forgetest"
	ghforge "github.com/backflow-dev/backflow/internal/forge/github"
	"github.com/backflow-dev/backflow/internal/lifecycle"
	"github.com/backflow-dev/backflow/internal/plan"
)

const (
	hubBot = "0b07b07b-0000-4000-8000-000000000001"
	hubBob = "b0b00000-0000-4000-8000-000000000002"
)

// unitData is prod-us-east's redis as its ConfigHub Unit holds it at
// first (testdata/confighub/redis.yaml): the seed's incident, rendered.
var unitData string

// hubRound is the local hub with acme/gitops, whose prod-us-east unit's
// desired state is a ConfigHub Unit in the stand-in on loopback, and one
// bot serving both.
type hubRound struct {
	*hubEnv
	ch    *confighubtest.Server
	a     *ghforge.Adapter
	watch *staticSource
	b     *bot.Bot
	revs  bot.Revisions
	// url is the stand-in's API; token the bot's ConfigHub token, a canary
	// that differs per run.
	url, token string
}

// newHubRound starts the stand-in with opts (its clock the hub's) and a
// bot whose ConfigHub requests give up after timeout; wrap, when set,
// stands between the bot and the store.
func newHubRound(t *testing.T, opts confighubtest.Options, timeout time.Duration,
	wrap func(bot.Revisions) bot.Revisions) *hubRound {
	t.Helper()
	files := gitopsFiles(t)
	files[configPath] = strings.Replace(files[configPath],
		"    valuesFiles: [envs/prod-us-east/redis/values.yaml]\n    objects: [\"apps/v1|StatefulSet|redis|redis-*\"]\n"+
			"    chart: {name: bitnami/redis, version: 25.5.3}\n",
		"    confighub: {space: prod-us-east, unit: redis}\n    objects: [\"apps/v1|StatefulSet|redis|redis-*\"]\n", 1)
	files[policyPath] = strings.Replace(files[policyPath], "- valuePath: replica.replicaCount\n          field: spec.replicas",
		"- field: spec.replicas", 1)
	e := newHubEnv(t, files)
	unitData = forgetest.ReadFiles(t, filepath.Join("testdata", "confighub"))["redis.yaml"]
	token := "confighub-canary-" + randomHex(t, 12)
	addCanary("confighub token", token)
	opts.Tokens = map[string]string{token: hubBot}
	opts.Now = e.clock.Now
	ch := confighubtest.New(opts)
	url, stop, err := ch.Listen()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	ch.AddSpace(usEast)
	if _, err := ch.AddUnit(usEast, "redis", confighubtest.ToolchainKubernetesYAML, []byte(unitData), hubBob); err != nil {
		t.Fatal(err)
	}
	revs := hubRevisions(t, url, token, timeout)
	if wrap != nil {
		revs = wrap(revs)
	}
	r := &hubRound{hubEnv: e, ch: ch, watch: &staticSource{}, revs: revs, url: url, token: token}
	r.restart()
	return r
}

// hubRevisions is the ConfigHub store as the serving bot builds it: from
// a bot config whose confighub section names url and a token file holding
// token.
func hubRevisions(t *testing.T, url, token string, timeout time.Duration) bot.Revisions {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "confighub-token"), []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := fmt.Sprintf("version: 1\ngithub:\n  appId: 7\n  privateKeyEnv: KEY\n"+
		"confighub:\n  url: %s\n  tokenFile: confighub-token\n  timeout: %s\n", url, timeout)
	path := filepath.Join(dir, "backflow.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	bc, err := botconfig.LoadConfig(path)
	if err != nil {
		t.Fatal(err)
	}
	revs, err := app.Wire(bc).Revisions()
	if err != nil || revs == nil {
		t.Fatalf("the confighub section built no store: %v", err)
	}
	return revs
}

// restart is a new backflow process: a new adapter and bot, nothing kept
// but what GitHub and ConfigHub hold.
func (r *hubRound) restart() {
	r.t.Helper()
	r.a = r.adapter(nil)
	var err error
	r.b, err = bot.New(bot.Options{Forge: r.a, Sources: []bot.Source{r.watch}, Now: r.clock.Now, Logger: r.log,
		BotUserID: 4242, CommitMethod: forge.CommitGit, CommitKey: []byte("reliability commit key"),
		Renderer: app.Renderer, Revisions: r.revs})
	if err != nil {
		r.t.Fatal(err)
	}
}

// revisions is how many revisions the Unit has.
func (r *hubRound) revisions() int { return len(r.ch.Revisions(usEast, "redis")) }

// merged are the merged pull requests, oldest first.
func (r *hubRound) merged() []forge.PullRequest {
	var out []forge.PullRequest
	for _, pr := range r.pulls(r.a, r.repo) {
		if pr.Merged {
			out = append(out, pr)
		}
	}
	slices.SortFunc(out, func(a, b forge.PullRequest) int { return a.Number - b.Number })
	return out
}

// commented says whether pull request n carries a comment containing s.
func (r *hubRound) commented(n int, s string) bool {
	r.t.Helper()
	cs, err := r.a.ListComments(r.ctx, r.repo, n)
	if err != nil {
		r.t.Fatal(err)
	}
	return slices.ContainsFunc(cs, func(c forge.Comment) bool { return strings.Contains(c.Body, s) })
}

// errorsOf are the cycle's repository errors, as text.
func errorsOf(rep *bot.Report) string {
	var b strings.Builder
	for _, rr := range rep.Repos {
		for _, err := range rr.Errors {
			b.WriteString(err.Error() + "\n")
		}
	}
	return b.String()
}

// proposeAndMerge runs the cycle that opens alice's 3 -> 4 with its
// receipt and the Unit's preview, which auto-merges.
func (r *hubRound) proposeAndMerge() forge.PullRequest {
	r.t.Helper()
	r.watch.set(replicas(usEastNode, 4, r.clock.Now()))
	rep := r.cycle(r.b)
	m := r.merged()
	if len(m) != 1 {
		r.t.Fatalf("alice's change did not merge: %+v\n%s", r.pulls(r.a, r.repo), rep.Text())
	}
	if !strings.Contains(m[0].Body, "| `apps/v1/StatefulSet redis/redis-replicas` | `spec.replicas` | `3` | `4` |") {
		r.t.Fatalf("the pull request does not show the Unit's preview:\n%s", m[0].Body)
	}
	if r.revisions() != 1 {
		r.t.Fatalf("a revision was written before the merge: %d", r.revisions())
	}
	return m[0]
}

// prove applies the Unit's head, observes live at 4 after the grace
// period and cycles: the receipt is proven naming the revision.
func (r *hubRound) prove(pr forge.PullRequest, revision string) bool {
	r.t.Helper()
	if _, _, err := r.ch.Apply(usEast, "redis"); err != nil {
		r.t.Fatal(err)
	}
	r.clock.Advance(11 * time.Minute)
	r.watch.set(replicas(usEastNode, 4, r.clock.Now()))
	rep := r.cycle(r.b)
	for _, p := range r.pulls(r.a, r.repo) {
		if p.Number == pr.Number && slices.Contains(p.Labels, lifecycle.LabelProven) {
			return r.commented(pr.Number, "newRevision: confighub:"+revision) &&
				r.commented(pr.Number, "status: proven")
		}
	}
	r.t.Logf("not proven:\n%s", rep.Text())
	return false
}

// Case 38: the round trip through the serving bot with the desired state
// in a ConfigHub Unit, and a concurrent write to the Unit between the
// plan and the write. The pull request carrying the receipt and the
// Unit's dry-run diff auto-merges; just before the bot writes the
// revision, bob changes the Unit: the conditional write is a 409, nothing
// is written, the pull request says so; the next cycle says the merged
// one was replanned and proposes again on bob's data, which merges, and
// the cycle after writes revision 3 holding both changes, once. Applied
// and observed, the new receipt is proven naming revision 3.
func TestCase38ConfigHubConcurrentWrite(t *testing.T) {
	var racing atomic.Bool
	var ch *confighubtest.Server
	r := newHubRound(t, confighubtest.Options{}, 5*time.Second, func(s bot.Revisions) bot.Revisions {
		return raceWrite{Revisions: s, before: func() {
			if racing.CompareAndSwap(true, false) {
				theirs := strings.Replace(unitData, "image: redis:7", "image: redis:7.2", 1)
				if _, err := ch.Write(usEast, "redis", []byte(theirs), hubBob, "bob bumps the image"); err != nil {
					t.Error(err)
				}
			}
		}}
	})
	ch = r.ch
	first := r.proposeAndMerge()
	racing.Store(true)
	rep := r.cycle(r.b)
	writtenOnConflict := r.revisions() - 2 // the stand-in's first and bob's
	said409 := r.commented(first.Number, "changed since this pull request was planned")
	if writtenOnConflict != 0 || !said409 {
		t.Fatalf("after the 409: %d written by backflow, said on the pull request %v\n%s", writtenOnConflict, said409,
			rep.Text())
	}
	rep = r.cycle(r.b) // replanned and proposed again, merged
	m := r.merged()
	replanned := slices.Contains(m[0].Labels, lifecycle.LabelReplanned) && r.commented(first.Number, "Planned again")
	if len(m) != 2 || !replanned {
		t.Fatalf("not proposed again: %d merged, replanned %v\n%s", len(m), replanned, rep.Text())
	}
	rep = r.cycle(r.b) // writes revision 3
	data := string(r.ch.Data(usEast, "redis"))
	if r.revisions() != 3 || !strings.Contains(data, "replicas: 4 #") || !strings.Contains(data, "image: redis:7.2") {
		t.Fatalf("revision 3 was not written with both changes (%d revisions):\n%s\n%s", r.revisions(), data, rep.Text())
	}
	r.cycle(r.b)
	again := r.revisions() - 3
	proven := r.prove(m[1], "prod-us-east/redis@3")
	if again != 0 || !proven {
		t.Errorf("written again %d times; proven %v", again, proven)
	}
	report(t, "38", "confighub-concurrent-write", "written_on_conflict", writtenOnConflict, "replanned", 1,
		"revision_written", 3, "written_again", again, "proven", boolInt(proven))
}

// raceWrite runs before just before each Write of the store it wraps: a
// write to the Unit by someone else between the plan and the write.
type raceWrite struct {
	bot.Revisions
	before func()
}

func (w raceWrite) Write(ctx context.Context, rv *plan.Revision, path string, data []byte) (bot.Revised, error) {
	w.before()
	return w.Revisions.Write(ctx, rv, path, data)
}

// Case 39: ConfigHub answering 503, or not answering in time, when the
// bot writes a merged pull request's revision: nothing is written, the
// cycle reports the error, and the next cycle writes the revision once;
// a restarted process writes nothing more, and the receipt is proven
// naming revision 2.
func TestCase39ConfigHubFaults(t *testing.T) {
	for _, tc := range []struct {
		name  string
		fault func(*confighubtest.Server)
	}{
		// Two: the cycle's preview of the still planned write-back, and
		// the write's own dry run.
		{"503", func(s *confighubtest.Server) { s.Fail(confighubtest.OpUploadUnitData, 503, 2) }},
		{"timeout", func(s *confighubtest.Server) { s.Hang(confighubtest.OpUploadUnitData, 2) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newHubRound(t, confighubtest.Options{}, 300*time.Millisecond, nil)
			pr := r.proposeAndMerge()
			tc.fault(r.ch)
			rep := r.cycle(r.b)
			failed := r.revisions() == 1 && strings.Contains(errorsOf(rep), "prod-us-east/redis")
			before := r.ch.Requests("")
			rep = r.cycle(r.b)
			writeRequests := r.ch.Requests("") - before
			written := r.revisions() - 1
			r.restart() // a new process finds the revision written
			before = r.ch.Requests("")
			r.cycle(r.b)
			idleRequests := r.ch.Requests("") - before
			again := r.revisions() - 1 - written
			proven := r.prove(pr, "prod-us-east/redis@2")
			if !failed || written != 1 || again != 0 || !proven {
				t.Errorf("failed closed %v, written %d then %d more, proven %v\n%s", failed, written, again, proven,
					rep.Text())
			}
			report(t, "39", "confighub-faults", tc.name+"_written_on_fault", 1-boolInt(failed),
				tc.name+"_written_after", written, tc.name+"_written_again", again,
				tc.name+"_write_cycle_requests", writeRequests, tc.name+"_idle_cycle_requests", idleRequests)
		})
	}
}

// Case 40: a mutating trigger turns on in ConfigHub after the pull
// request merged (it rewrites the image of every upload): the dry run
// before the write changes more than the accepted path, so nothing is
// written, the pull request says why, once, and the error is reported
// each cycle; the trigger off again, the next cycle writes the revision.
func TestCase40ConfigHubWitness(t *testing.T) {
	var mutating atomic.Bool
	r := newHubRound(t, confighubtest.Options{Mutate: func(b []byte) []byte {
		if !mutating.Load() {
			return b
		}
		return bytes.ReplaceAll(b, []byte("image: redis:7\n"), []byte("image: redis:7-hardened\n"))
	}}, 5*time.Second, nil)
	pr := r.proposeAndMerge()
	mutating.Store(true)
	refusals := 0
	for range 2 {
		rep := r.cycle(r.b)
		if strings.Contains(errorsOf(rep), "does not change exactly the accepted fields") {
			refusals++
		}
	}
	cs, err := r.a.ListComments(r.ctx, r.repo, pr.Number)
	if err != nil {
		t.Fatal(err)
	}
	said := 0
	for _, c := range cs {
		if strings.Contains(c.Body, "also changes") && strings.Contains(c.Body, "redis:7-hardened") {
			said++
		}
	}
	written := r.revisions() - 1
	mutating.Store(false)
	r.cycle(r.b)
	after := r.revisions() - 1
	if written != 0 || refusals != 2 || said != 1 || after != 1 {
		t.Errorf("written %d under the trigger (%d refusals, said %d times), %d after", written, refusals, said, after)
	}
	report(t, "40", "confighub-witness", "written_with_more_paths", written, "refusals", refusals,
		"comments", said, "written_once_clean", after)
}
