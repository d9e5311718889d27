package reliability

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/backflow-dev/backflow/internal/forge"
	"github.com/backflow-dev/backflow/internal/lifecycle"
	"github.com/backflow-dev/backflow/internal/observe"
	"github.com/backflow-dev/backflow/internal/observe/source"
	"github.com/backflow-dev/backflow/internal/plan"
)

// writeUnread updates an object and waits until the watch has it, without
// a Read: no cycle runs between the writes.
func (c *watchedCluster) writeUnread(obj *unstructured.Unstructured) {
	c.t.Helper()
	if _, err := c.client.Resource(stsGVR).Namespace("redis").Update(context.Background(), obj, metav1.UpdateOptions{}); err != nil {
		c.t.Fatal(err)
	}
	select {
	case <-c.changed:
	case <-time.After(20 * time.Second):
		c.t.Fatalf("the watch did not deliver %s at resourceVersion %s", obj.GetName(), obj.GetResourceVersion())
	}
}

// Case 36: a person's change reverted before the cycle is never lost, and
// never proven before it is live. Through the real kube watch (client-go's
// fake dynamic client) and the bot on the local hub: bob (no role) scales
// redis-replicas 3 -> 5 and helm-controller writes it back before any
// cycle, then his audit event arrives: denied, nothing opened. alice
// scales 3 -> 4, helm-controller writes it back before any cycle, then her
// audit event arrives: proposed (the body says the live object was
// reverted) and merged; cycles while live is still 3 prove nothing; the
// forward apply of 4 proves it. The transitions kept for many objects stay
// within the log's count and byte bounds.
func TestCase36RevertedChangeNeverLost(t *testing.T) {
	e := newHubEnv(t, gitopsFiles(t))
	a := e.adapter(nil)
	const uid = "7b1f6c1e-0d1a-4a43-9a1e-4d7f1c2b9a01"
	cluster := newWatchedCluster(t, liveSts(t, "redis-replicas", uid, "204", 3, ""))
	watch := cluster.watch(nil, e.clock.Now)
	audit := &source.AuditLog{}
	watch.Audit = audit
	b := e.newBot(a, watch, forge.CommitGit)
	if res := watch.Read(e.ctx); len(res.Errors) > 0 {
		t.Fatal(res.Errors)
	}
	<-cluster.changed // the first list
	rv := 204
	next := func() string { rv++; return strconv.Itoa(rv) }
	scaleThenRevert := func(user string, to int64) {
		t.Helper()
		at := e.clock.Now()
		sts := liveSts(t, "redis-replicas", uid, next(), to, at.UTC().Format(time.RFC3339))
		cluster.writeUnread(sts)
		cluster.writeUnread(liveSts(t, "redis-replicas", uid, next(), 3, ""))
		// The audit webhook's batch arrives after the revert.
		ev := scaleEvent(t, user+"-"+strconv.Itoa(rv), user, int(to), at)
		if user != "alice" {
			ev.Groups = []string{"system:authenticated"} // no backflow role
		}
		audit.Add(ev)
		e.clock.Advance(5 * time.Second) // past the wait for a change's audit event
	}

	// bob: denied, nothing opened.
	scaleThenRevert("bob", 5)
	rep := e.cycle(b)
	bobAllowed := 0
	for _, rr := range rep.Repos {
		for _, d := range rr.Decisions {
			if d.Outcome == string(plan.Allow) {
				bobAllowed++
			}
		}
	}
	bobPulls := len(e.pulls(a, e.repo))
	if rv := rep.Repos[0].Holds.Reverts; len(rv) != 1 || rv[0].Window <= 0 {
		t.Errorf("why: the revert of bob's change is the at-risk window the metrics see, once; %+v", rv)
	} else {
		t.Logf("bob's change reverted after %s", rv[0].Window)
	}
	if bobAllowed+bobPulls > 0 {
		t.Errorf("bob's reverted change: %d allowed, %d pull requests; want none\n%s", bobAllowed, bobPulls, rep.Text())
	}

	// alice: proposed and merged, saying the live object was reverted.
	e.clock.Advance(time.Minute)
	scaleThenRevert("alice", 4)
	e.cycle(b)
	prs := e.pulls(a, e.repo)
	if len(prs) != 1 || !prs[0].Merged {
		t.Fatalf("alice's reverted change: pull requests %+v, want one merged", prs)
	}
	saysReverted := 0
	if strings.Contains(prs[0].Body, "reverted live: spec.replicas was set to 4") {
		saysReverted = 1
	} else {
		t.Errorf("the pull request does not say the live object was reverted:\n%s", prs[0].Body)
	}
	proven := func() int {
		n := 0
		for _, pr := range e.pulls(a, e.repo) {
			if slices.Contains(pr.Labels, lifecycle.LabelProven) {
				n++
			}
		}
		return n
	}
	provenWhileReverted := 0
	for range 3 {
		e.clock.Advance(10 * time.Second)
		e.cycle(b)
		provenWhileReverted += proven()
	}
	if provenWhileReverted > 0 {
		t.Errorf("proven %d times while live was the reverted 3", provenWhileReverted)
	}
	// The forward apply of the merged 4.
	cluster.write(watch, liveSts(t, "redis-replicas", uid, next(), 4, ""))
	e.cycle(b)
	provenAfter := proven()
	if provenAfter != 1 {
		t.Errorf("after the forward apply of 4: %d proven, want 1", provenAfter)
	}

	// Many objects' transitions stay within the bounds.
	n := count(20_000, 200_000)
	l := &observe.TransitionLog{Now: e.clock.Now}
	for i := range n {
		id := strconv.Itoa(i)
		old := liveSts(t, "redis-"+id, id, "1", 3, "").Object
		obj := liveSts(t, "redis-"+id, id, "2", 4, "2026-11-29T10:00:20Z").Object
		if _, err := l.Record(usEastNode, old, obj, []string{"helm-controller"}, nil, nil); err != nil {
			t.Fatal(err)
		}
	}
	st := l.Stats()
	if st.Held > observe.DefaultMaxTransitions || st.Bytes > observe.DefaultMaxTransitionBytes || st.Held+st.Dropped != n {
		t.Errorf("transitions of %d objects: %+v, want at most %d held in %d bytes", n, st, observe.DefaultMaxTransitions,
			observe.DefaultMaxTransitionBytes)
	}
	report(t, "36", "reverted-change-never-lost", "denied_person_allowed", bobAllowed, "denied_person_pull_requests", bobPulls,
		"reverted_change_merged", len(prs), "body_says_reverted", saysReverted, "proven_while_reverted", provenWhileReverted,
		"proven_after_apply", provenAfter, "transitions_recorded", n, "transitions_held", st.Held, "transitions_bytes", st.Bytes,
		"transitions_dropped", st.Dropped)
}
