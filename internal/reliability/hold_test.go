package reliability

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	gh "github.com/google/go-github/v62/github"

	"github.com/backflow-dev/backflow/internal/app"
	"github.com/backflow-dev/backflow/internal/bot"
	"github.com/backflow-dev/backflow/internal/forge"
	"github.com/backflow-dev/backflow/internal/hold"
	"github.com/backflow-dev/backflow/internal/localhub"
	"github.com/backflow-dev/backflow/internal/observe"
)

// heldCluster is a cluster as the hold port sees it: objects with their
// annotations and resourceVersion, patched as the API server patches them
// (a JSON merge patch of the annotations, refused when it names another
// resourceVersion), and the applier's applied revision.
type heldCluster struct {
	mu         sync.Mutex
	objs       map[string]*heldObj // by name
	applied    string
	patched    map[string]int
	reconciles int
	failPatch  bool
}

type heldObj struct {
	uid string
	rv  int
	ann map[string]string
}

func newHeldCluster() *heldCluster {
	return &heldCluster{objs: map[string]*heldObj{
		"redis-replicas": {uid: "u-replicas", rv: 100, ann: map[string]string{}},
		"redis-master":   {uid: "u-master", rv: 100, ann: map[string]string{}},
	}, patched: map[string]int{}}
}

func stsKey(name string) observe.ObjectKey {
	return observe.ObjectKey{APIVersion: "apps/v1", Kind: "StatefulSet", Namespace: "redis", Name: name}
}

func (c *heldCluster) Annotated(context.Context) ([]bot.AnnotatedObject, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []bot.AnnotatedObject
	for name, o := range c.objs {
		if len(o.ann) > 0 {
			ann := map[string]string{}
			for k, v := range o.ann {
				ann[k] = v
			}
			out = append(out, bot.AnnotatedObject{Cluster: usEastNode, Object: stsKey(name), UID: o.uid, Annotations: ann})
		}
	}
	return out, nil
}

func (c *heldCluster) AppliedRevision(context.Context, string, string, string) (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.applied, nil
}

func (c *heldCluster) PatchObject(_ context.Context, cluster string, k observe.ObjectKey, patch []byte) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.failPatch {
		return fmt.Errorf("the API server is unavailable")
	}
	o := c.objs[k.Name]
	if cluster != usEastNode || o == nil {
		return fmt.Errorf("%s not found", k)
	}
	var p struct {
		Metadata struct {
			ResourceVersion string             `json:"resourceVersion"`
			Annotations     map[string]*string `json:"annotations"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(patch, &p); err != nil {
		return err
	}
	if rv := p.Metadata.ResourceVersion; rv != "" && rv != strconv.Itoa(o.rv) {
		return fmt.Errorf("conflict: %s is at resourceVersion %d, not %s", k, o.rv, rv)
	}
	for a, v := range p.Metadata.Annotations {
		if v == nil {
			delete(o.ann, a)
		} else {
			o.ann[a] = *v
		}
	}
	o.rv++
	c.patched[k.Name]++
	return nil
}

func (c *heldCluster) PatchApplier(context.Context, string, string, string, []byte) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.reconciles++
	return nil
}

// observed is alice's change to live on redis-replicas as the watch reads
// it now (its uid and resourceVersion).
func (c *heldCluster) observed(live any, at time.Time) observe.Observation {
	c.mu.Lock()
	defer c.mu.Unlock()
	o := replicas(usEastNode, live, at)
	o.UID, o.ResourceVersion = c.objs["redis-replicas"].uid, strconv.Itoa(c.objs["redis-replicas"].rv)
	return o
}

func (c *heldCluster) state(t *testing.T, commitKey []byte, name string) hold.State {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	_, st := hold.Read(commitKey, usEastNode, c.objs[name].uid, c.objs[name].ann)
	return st
}

// holdFiles is the test repository with prod-us-east's redis holding.
func holdFiles(t testing.TB) map[string]string {
	files := gitopsFiles(t)
	files[configPath] = strings.Replace(files[configPath], "    chart: {name: bitnami/redis, version: 25.5.3}\n",
		"    chart: {name: bitnami/redis, version: 25.5.3}\n    hold: {controller: flux-kustomize, applier: flux-system/apps, maxDuration: 1h}\n", 1)
	return files
}

// Case 37: a hold is never left behind, never placed where it must not be,
// and only backflow's are ever released. Through the bot on the local hub
// and a hold port that patches as the API server does: alice's
// pre-authorized 3 -> 4 is held before its pull request opens and merges
// in the same cycle; the hold stays while the applier has not applied the
// merge, and a restarted process releases it (with a reconcile request)
// once it has. A
// person's own mark and a forged record on redis-master are never released
// nor trusted over every cycle. With review required, a pull request a
// person closes releases its hold; a cycle whose pull request could not be
// opened after the hold was placed carries the hold into the next, which
// opens it; bob's denied change is never held; a hold past its maximum is
// released; a hold whose unit the config stops opting into hold: is
// released in the next cycle, and so is a sealed hold naming a repository
// the installation no longer serves.
func TestCase37HoldNeverLeftBehind(t *testing.T) {
	commitKey := []byte("reliability commit key")
	newBot := func(e *hubEnv, src bot.Source, c *heldCluster) *bot.Bot {
		t.Helper()
		b, err := bot.New(bot.Options{Forge: e.adapter(nil), Sources: []bot.Source{src}, Now: e.clock.Now, Logger: e.log, BotUserID: 4242,
			CommitMethod: forge.CommitGit, CommitKey: commitKey, Renderer: app.Renderer, Holds: c})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	figures := []any{}

	// Auto-merged: held from the start, released once the merge is applied.
	{
		e := newHubEnv(t, holdFiles(t))
		a := e.adapter(nil)
		c := newHeldCluster()
		// redis-master carries a person's mark; a forged record is tried on
		// it later.
		c.objs["redis-master"].ann[hold.KustomizeReconcile] = hold.Disabled
		watch := &staticSource{}
		b := newBot(e, watch, c)
		watch.set(c.observed(4, e.clock.Now()))
		first := e.cycle(b).Repos[0].Holds
		if !first.Read || first.InPlace != 1 || len(first.Held) != 1 || first.Held[0] < 0 {
			t.Errorf("why: the metrics see the hold placed, in place, and its at-risk window; %+v", first)
		}
		prs := e.pulls(a, e.repo)
		if len(prs) != 1 || !prs[0].Merged {
			t.Fatalf("alice's change: %+v, want one merged pull request", prs)
		}
		if st := c.state(t, commitKey, "redis-replicas"); st != hold.Sealed {
			t.Fatalf("why: the auto-merged change is held from the cycle that opened it; hold %s", st)
		}
		keptUnapplied := 0
		for range 3 {
			e.clock.Advance(time.Minute)
			watch.set(c.observed(4, e.clock.Now()))
			e.cycle(b)
			if c.state(t, commitKey, "redis-replicas") == hold.Sealed {
				keptUnapplied++
			}
		}
		// backflow restarts: a new process carries on from the sealed hold
		// it reads back from the object.
		b = newBot(e, watch, c)
		// A forged record beside the person's mark.
		c.mu.Lock()
		c.objs["redis-master"].ann[hold.Annotation] = `{"v":1,"repo":"acme/gitops","pr":1,"mac":"00"}`
		c.applied = "main@sha1:" + prs[0].MergeCommitSHA
		c.mu.Unlock()
		e.clock.Advance(time.Minute)
		watch.set(c.observed(4, e.clock.Now()))
		applied := e.cycle(b).Repos[0].Holds
		if applied.InPlace != 0 || !slices.Equal(applied.Released, []string{hold.CauseApplied}) {
			t.Errorf("why: the metrics count the release by its reason, and nothing left in place; %+v", applied)
		}
		releasedAfterApply := c.state(t, commitKey, "redis-replicas") == hold.None
		if !releasedAfterApply || c.reconciles != 1 {
			t.Errorf("why: once the merge is applied the hold is released and the applier asked to reconcile; hold %s, %d reconciles",
				c.state(t, commitKey, "redis-replicas"), c.reconciles)
		}
		for range 2 {
			e.clock.Advance(time.Minute)
			e.cycle(b)
		}
		if keptUnapplied != 3 {
			t.Errorf("why: the hold stays until the merge is applied; kept %d of 3 cycles", keptUnapplied)
		}
		if n := c.patched["redis-master"]; n != 0 {
			t.Errorf("why: a person's mark and a forged record are never touched; redis-master patched %d times", n)
		}
		figures = append(figures, "held_before_merge", 1, "kept_while_unapplied", keptUnapplied, "released_after_apply",
			boolInt(releasedAfterApply), "reconcile_requests", c.reconciles, "foreign_marks_touched", c.patched["redis-master"])
	}

	// The applier applied a later commit of main first: the merge is in
	// it (the forge compares them), so the hold is released then, not at
	// its maximum; a revision from before the merge keeps it.
	{
		e := newHubEnv(t, holdFiles(t))
		a := e.adapter(nil)
		c := newHeldCluster()
		watch := &staticSource{}
		b := newBot(e, watch, c)
		before, err := a.BranchHead(e.ctx, e.repo, "main")
		if err != nil {
			t.Fatal(err)
		}
		watch.set(c.observed(4, e.clock.Now()))
		e.cycle(b)
		prs := e.pulls(a, e.repo)
		if len(prs) != 1 || !prs[0].Merged || c.state(t, commitKey, "redis-replicas") != hold.Sealed {
			t.Fatalf("alice's change: %+v, want one merged pull request, held", prs)
		}
		c.mu.Lock()
		c.applied = "main@sha1:" + before
		c.mu.Unlock()
		e.clock.Advance(time.Minute)
		watch.set(c.observed(4, e.clock.Now()))
		e.cycle(b)
		keptBeforeMerge := c.state(t, commitKey, "redis-replicas") == hold.Sealed
		// A commit on top of the merge (main itself is protected here: it
		// is made on a branch from main's head, as the next merge would be).
		later := e.pushAs(e.person("carol"), e.repo, "later", "main", map[string]string{"docs/later.md": "later\n"},
			"a later commit on main")
		c.mu.Lock()
		c.applied = "main@sha1:" + later
		c.mu.Unlock()
		e.clock.Advance(time.Minute)
		watch.set(c.observed(4, e.clock.Now()))
		released := e.cycle(b).Repos[0].Holds.Released
		releasedAtLater := c.state(t, commitKey, "redis-replicas") == hold.None
		if !keptBeforeMerge || !releasedAtLater || !slices.Equal(released, []string{hold.CauseApplied}) || c.reconciles != 1 {
			t.Errorf("why: a revision before the merge keeps the hold (%v); a later one releases it as applied (%v, %v), "+
				"asking a reconcile (%d)", keptBeforeMerge, releasedAtLater, released, c.reconciles)
		}
		figures = append(figures, "kept_at_a_revision_before_the_merge", boolInt(keptBeforeMerge),
			"released_at_a_later_revision", boolInt(releasedAtLater))
	}

	// Review required: a close by a person releases; a failed open carries
	// the hold to the next cycle; a hold past its maximum is released; bob
	// is never held.
	{
		files := holdFiles(t)
		reviewOnly(files)
		e := newHubEnv(t, files)
		a := e.adapter(nil)
		c := newHeldCluster()
		watch := &staticSource{}
		b := newBot(e, watch, c)

		bob := c.observed(4, e.clock.Now())
		bob.Change.Actor, bob.Change.Groups = "bob", nil
		watch.set(bob)
		e.cycle(b)
		bobHeld := c.patched["redis-replicas"]
		if bobHeld != 0 {
			t.Errorf("why: a denied change is never held; patched %d times", bobHeld)
		}

		e.clock.Advance(time.Minute)
		watch.set(c.observed(4, e.clock.Now()))
		e.hub.Faults().Add(localhub.Fault{Kind: localhub.FaultStatus, Method: "POST", Route: "/repos/{owner}/{repo}/pulls", Status: 422})
		e.cycle(b)
		heldWithoutPull := c.state(t, commitKey, "redis-replicas") == hold.Sealed && len(e.pulls(a, e.repo)) == 0
		e.hub.Faults().Clear()
		e.clock.Advance(time.Minute)
		watch.set(c.observed(4, e.clock.Now()))
		e.cycle(b)
		prs := e.pulls(a, e.repo)
		if len(prs) != 1 || prs[0].State != forge.StateOpen || c.state(t, commitKey, "redis-replicas") != hold.Sealed {
			t.Fatalf("why: the next cycle opens the pull request and keeps the hold; %+v, hold %s", prs, c.state(t, commitKey, "redis-replicas"))
		}
		carol := e.person("carol")
		if _, _, err := carol.PullRequests.Edit(e.ctx, owner, repoName, prs[0].Number, &gh.PullRequest{State: gh.String("closed")}); err != nil {
			t.Fatal(err)
		}
		e.clock.Advance(time.Minute)
		if got := e.cycle(b).Repos[0].Holds.Released; !slices.Equal(got, []string{hold.CauseClosed}) {
			t.Errorf("why: a close by a person is released as closed; %v", got)
		}
		releasedOnClose := c.state(t, commitKey, "redis-replicas") == hold.None
		if !releasedOnClose {
			t.Errorf("why: a pull request a person closes releases its hold; hold %s", c.state(t, commitKey, "redis-replicas"))
		}

		// A new proposal (5), held, then past its maximum.
		e.clock.Advance(time.Minute)
		watch.set(c.observed(5, e.clock.Now()))
		e.cycle(b)
		heldAgain := c.state(t, commitKey, "redis-replicas") == hold.Sealed
		e.clock.Advance(time.Minute)
		watch.set(c.observed(5, e.clock.Now()))
		e.cycle(b)
		var held forge.PullRequest
		for _, pr := range e.pulls(a, e.repo) {
			if pr.State == forge.StateOpen {
				held = pr
			}
		}
		if !strings.Contains(held.Body, "### Held on the clusters") || !strings.Contains(held.Body, "redis-replicas") {
			t.Errorf("why: the pull request's body lists the hold in place:\n%s", held.Body)
		}
		e.clock.Advance(61 * time.Minute)
		watch.set(c.observed(5, e.clock.Now()))
		if got := e.cycle(b).Repos[0].Holds.Released; !slices.Equal(got, []string{hold.CauseMaximum}) {
			t.Errorf("why: a hold past its maximum is released as such; %v", got)
		}
		releasedAtMax := c.state(t, commitKey, "redis-replicas") == hold.None
		// The release is said once on the pull request, its body lists no
		// hold, and the same proposal is not held again.
		for range 2 {
			e.clock.Advance(time.Minute)
			watch.set(c.observed(5, e.clock.Now()))
			e.cycle(b)
		}
		heldAfterMax := c.state(t, commitKey, "redis-replicas") != hold.None
		comments, err := a.ListComments(e.ctx, e.repo, held.Number)
		if err != nil {
			t.Fatal(err)
		}
		saidAtMax := 0
		for _, cm := range comments {
			if strings.Contains(cm.Body, "the maximum hold time") {
				saidAtMax++
			}
		}
		var body string
		for _, pr := range e.pulls(a, e.repo) {
			if pr.Number == held.Number {
				body = pr.Body
			}
		}
		if heldAfterMax || saidAtMax != 1 || strings.Contains(body, "### Held on the clusters") {
			t.Errorf("why: released at the maximum: held again %v, said %d times (want 1), body still lists it %v",
				heldAfterMax, saidAtMax, strings.Contains(body, "### Held on the clusters"))
		}
		if !heldWithoutPull || !heldAgain || !releasedAtMax {
			t.Errorf("why: held though the open failed %v, held again %v, released at the maximum %v; want all", heldWithoutPull, heldAgain, releasedAtMax)
		}
		figures = append(figures, "denied_held", bobHeld, "held_across_a_failed_open", boolInt(heldWithoutPull),
			"released_on_close", boolInt(releasedOnClose), "released_at_maximum", boolInt(releasedAtMax),
			"held_again_after_maximum", boolInt(heldAfterMax), "said_at_maximum", saidAtMax)
	}
	// Review required, and the repository's config stops opting redis
	// into hold: while its pull request is open: the next cycle releases
	// the hold as unheld and asks the applier to reconcile.
	{
		files := holdFiles(t)
		reviewOnly(files)
		e := newHubEnv(t, files)
		a := e.adapter(nil)
		c := newHeldCluster()
		watch := &staticSource{}
		b := newBot(e, watch, c)
		watch.set(c.observed(4, e.clock.Now()))
		e.cycle(b)
		prs := e.pulls(a, e.repo)
		if len(prs) != 1 || prs[0].State != forge.StateOpen || c.state(t, commitKey, "redis-replicas") != hold.Sealed {
			t.Fatalf("alice's change: %+v, hold %s; want one open pull request, held", prs,
				c.state(t, commitKey, "redis-replicas"))
		}
		optedOut := strings.Replace(files[configPath], "    hold: {controller: flux-kustomize, applier: flux-system/apps, maxDuration: 1h}\n", "", 1)
		if optedOut == files[configPath] {
			t.Fatal("the config does not opt redis into hold:")
		}
		// An admin's commit on main, past its required check, as a config
		// change merged by its maintainers would be.
		full := e.repo.FullName()
		if err := e.hub.SetBranchProtection(full, "main"); err != nil {
			t.Fatal(err)
		}
		e.pushAs(e.person("carol"), e.repo, "main", "main", map[string]string{configPath: optedOut}, "stop holding redis")
		if err := e.hub.SetBranchProtection(full, "main", bot.CheckName); err != nil {
			t.Fatal(err)
		}
		e.clock.Advance(time.Minute)
		watch.set(c.observed(4, e.clock.Now()))
		released := e.cycle(b).Repos[0].Holds.Released
		releasedOnOptOut := c.state(t, commitKey, "redis-replicas") == hold.None
		if !releasedOnOptOut || !slices.Equal(released, []string{hold.CauseUnheld}) || c.reconciles != 1 {
			t.Errorf("why: a unit that no longer opts in has its hold released as unheld (%v, %v), asking a reconcile (%d)",
				releasedOnOptOut, released, c.reconciles)
		}
		for range 2 {
			e.clock.Advance(time.Minute)
			watch.set(c.observed(4, e.clock.Now()))
			e.cycle(b)
		}
		heldAfterOptOut := c.state(t, commitKey, "redis-replicas") != hold.None
		stillOpen := false
		for _, pr := range e.pulls(a, e.repo) {
			stillOpen = stillOpen || pr.Number == prs[0].Number && pr.State == forge.StateOpen
		}
		if heldAfterOptOut || !stillOpen {
			t.Errorf("why: never held again once opted out (%v); the pull request stays open for review (%v)",
				heldAfterOptOut, stillOpen)
		}
		figures = append(figures, "released_on_opt_out", boolInt(releasedOnOptOut), "held_after_opt_out",
			boolInt(heldAfterOptOut))

		// A sealed hold of a repository the installation no longer serves
		// (acme/retired is not among the forge's repositories) is released
		// as unserved by the next cycle, with a reconcile request.
		rec := hold.Record{Repo: "acme/retired", PR: 9, Branch: "backflow/prod/app", Fingerprint: "f", Cluster: usEastNode,
			Object: stsKey("redis-master").String(), UID: "u-master", Fields: []string{"spec.replicas"},
			Controller: hold.FluxKustomize, Applier: "flux-system/apps", Since: e.clock.Now(),
			Until: e.clock.Now().Add(time.Hour)}
		value, err := hold.Seal(commitKey, rec)
		if err != nil {
			t.Fatal(err)
		}
		c.mu.Lock()
		c.objs["redis-master"].ann[hold.Annotation] = value
		c.objs["redis-master"].ann[hold.KustomizeReconcile] = hold.Disabled
		c.mu.Unlock()
		e.clock.Advance(time.Minute)
		watch.set(c.observed(4, e.clock.Now()))
		rep := e.cycle(b).Repos[0].Holds
		releasedUnserved := c.state(t, commitKey, "redis-master") == hold.None
		if !releasedUnserved || !slices.Equal(rep.Released, []string{hold.CauseUnserved}) || rep.InPlace != 0 ||
			c.reconciles != 2 {
			t.Errorf("why: a hold of a repository no longer served is released as unserved (%v, %+v), asking a "+
				"reconcile (%d)", releasedUnserved, rep, c.reconciles)
		}
		figures = append(figures, "released_unserved", boolInt(releasedUnserved))
	}
	report(t, "37", "hold-never-left-behind", figures...)
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
