package lifecycle

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/backflow-dev/backflow/internal/forge"
	"github.com/backflow-dev/backflow/internal/hold"
	"github.com/backflow-dev/backflow/internal/observe"
)

// holdOptIn opts prod-us-east's redis unit into holding.
func holdOptIn(f map[string]string) {
	f[".github/backflow.yaml"] = strings.Replace(f[".github/backflow.yaml"],
		"    chart: {name: bitnami/redis, version: 25.5.3}\n",
		"    chart: {name: bitnami/redis, version: 25.5.3}\n    hold: {controller: flux-kustomize, applier: flux-system/apps, maxDuration: 30m}\n", 1)
}

// watched is replicas as the kube watch reads it: uid and version known.
func watched(live any, offset time.Duration) observe.Observation {
	o := replicas(live, "kubectl", offset)
	o.UID, o.ResourceVersion = "u-1", "48213"
	return o
}

func kinds2(chains [][]Effect) []string {
	var out []string
	for _, c := range chains {
		for _, e := range c {
			out = append(out, string(e.Kind))
		}
	}
	return out
}

func TestHoldsPlaced(t *testing.T) {
	in := input(t, holdOptIn, watched(4, time.Minute))
	in.Now = t0.Add(2 * time.Minute)
	chains := in.Holds(nil, nil)
	if got := kinds2(chains); len(got) != 1 || got[0] != string(Hold) {
		t.Fatalf("why: an allowed proposal of a unit that opts in is held before its pull request opens; got %v", got)
	}
	if act := chains[0][0].Hold; act.Record.PR != 0 || act.Record.Fingerprint == "" || act.Record.Branch != branchEast {
		t.Errorf("why: a hold placed before the open names the proposal; got %+v", act.Record)
	}
	pr := proposed(t, in, 1, "c1")
	chains = in.Holds([]forge.PullRequest{pr}, nil)
	if got := kinds2(chains); len(got) != 1 || got[0] != string(Hold) {
		t.Fatalf("why: an open, allowed proposal of a unit that opts in is held; got %v", got)
	}
	e := chains[0][0]
	act := e.Hold
	if act.Cluster != usEastNode || act.Object.String() != replicasKey || act.Record.PR != 1 || act.Record.UID != "u-1" ||
		!act.Record.Until.Equal(in.Now.Add(30*time.Minute)) || act.Applier != "flux-system/apps" {
		t.Errorf("hold %+v", act)
	}
	if !strings.Contains(string(act.Patch), `"resourceVersion":"48213"`) || !strings.Contains(string(act.Patch), hold.KustomizeReconcile) {
		t.Errorf("patch %s", act.Patch)
	}
	// The record it seals reads back sealed from the object.
	var patch struct {
		Metadata struct {
			Annotations map[string]string `json:"annotations"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(act.Patch, &patch); err != nil {
		t.Fatal(err)
	}
	if _, st := hold.Read(commitKey, usEastNode, "u-1", patch.Metadata.Annotations); st != hold.Sealed {
		t.Errorf("why: the placed hold reads back as backflow's; got %s", st)
	}
	// Held already: not placed again (a restart reads it back).
	live := []LiveHold{{Cluster: usEastNode, Object: act.Object, UID: "u-1", Record: act.Record, State: hold.Sealed}}
	if got := kinds2(in.Holds([]forge.PullRequest{pr}, live)); len(got) != 0 {
		t.Errorf("why: a sealed hold found live is carried on, not placed again; got %v", got)
	}
}

func TestHoldsNeverPlaced(t *testing.T) {
	for _, tc := range []struct {
		why    string
		mutate func(map[string]string)
		obs    observe.Observation
	}{
		{"the unit does not opt in", nil, watched(4, time.Minute)},
		{"denied: bob has no role", holdOptIn, func() observe.Observation {
			o := watched(4, time.Minute)
			o.Change.Actor, o.Change.Groups = "bob", nil
			return o
		}()},
		{"out of bounds", func(f map[string]string) {
			holdOptIn(f)
			f[policyPath] = strings.Replace(f[policyPath], "          autoMerge: true\n", "          autoMerge: true\n          maximum: 3\n", 1)
		}, watched(4, time.Minute)},
		{"a source that does not read the object itself", holdOptIn, func() observe.Observation {
			o := watched(4, time.Minute)
			o.UID = ""
			return o
		}()},
	} {
		// The pull request was opened for an allowed 4 earlier.
		pr := proposed(t, input(t, holdOptIn, watched(4, time.Minute)), 1, "c1")
		in := input(t, tc.mutate, tc.obs)
		in.Now = t0.Add(2 * time.Minute)
		if got := kinds2(in.Holds([]forge.PullRequest{pr}, nil)); len(got) != 0 {
			t.Errorf("why: no hold when %s; got %v", tc.why, got)
		}
	}
}

func TestHoldsNotPlacedForARefusedProposal(t *testing.T) {
	in := input(t, holdOptIn, watched(4, time.Minute))
	in.Now = t0.Add(2 * time.Minute)
	refused := closed(proposed(t, in, 1, "c1"), false)
	if got := kinds2(in.Holds([]forge.PullRequest{refused}, nil)); len(got) != 0 {
		t.Errorf("why: a proposal a person closed is not opened again, and not held; got %v", got)
	}
}

func TestHoldsReleased(t *testing.T) {
	in := input(t, holdOptIn, watched(4, time.Minute))
	in.Now = t0.Add(5 * time.Minute)
	open := proposed(t, in, 1, "c1")
	m, _ := ParseMarker(open.Body)
	rec := hold.Record{Repo: testRepo, PR: 1, Branch: branchEast, Fingerprint: m.Fingerprint, Cluster: usEastNode, Object: replicasKey, UID: "u-1",
		Fields: []string{"spec.replicas"}, Controller: hold.FluxKustomize, Applier: "flux-system/apps", Since: t0, Until: t0.Add(30 * time.Minute)}
	key := observe.ObjectKey{APIVersion: "apps/v1", Kind: "StatefulSet", Namespace: "redis", Name: "redis-replicas"}
	sealed := LiveHold{Cluster: usEastNode, Object: key, UID: "u-1", Record: rec, State: hold.Sealed}
	merged := closed(open, true)
	merged.MergeCommitSHA = "m1"
	applied := sealed
	applied.Applied = "main@sha1:m1"
	other := sealed
	other.Record.Repo = "acme/other"
	for _, tc := range []struct {
		why       string
		prs       []forge.PullRequest
		live      LiveHold
		now       time.Time
		want      []string
		reconcile bool
		reason    string
	}{
		{"open: kept, and its body lists it", []forge.PullRequest{open}, sealed, in.Now, []string{"list-holds"}, false, "lists the holds in place (1)"},
		{"merged, not applied: kept, and listed", []forge.PullRequest{merged}, sealed, in.Now, []string{"list-holds"}, false, "(1)"},
		{"merged and applied: released, reconcile asked", []forge.PullRequest{merged}, applied, in.Now, []string{"release"}, true, "is applied"},
		{"closed unmerged: released", []forge.PullRequest{closed(open, false)}, sealed, in.Now, []string{"release"}, true, "closed without merge"},
		{"past its maximum: said on the pull request, then released", []forge.PullRequest{open}, sealed, t0.Add(31 * time.Minute), []string{"comment", "release"}, true, "maximum hold time"},
		{"another repository's hold is its own", nil, other, in.Now, nil, false, ""},
		{"no pull request, but the plan proposes it again: kept for this cycle's open", nil, sealed, in.Now, nil, false, ""},
		{"a forged hold is reported, never released", nil, LiveHold{Cluster: usEastNode, Object: key, State: hold.Forged}, in.Now, []string{"skip"}, false, "not authentic"},
		{"a person's mark is reported, left alone", nil, LiveHold{Cluster: usEastNode, Object: key, State: hold.Unsealed}, in.Now, []string{"skip"}, false, "a person's"},
	} {
		in.Now = tc.now
		chains := in.Holds(tc.prs, []LiveHold{tc.live})
		got := kinds2(chains)
		if strings.Join(got, ",") != strings.Join(tc.want, ",") {
			t.Errorf("why: %s: %v, want %v", tc.why, got, tc.want)
			continue
		}
		if len(got) == 0 {
			continue
		}
		last := chains[len(chains)-1]
		e := last[len(last)-1]
		if !strings.Contains(e.Reason, tc.reason) {
			t.Errorf("why: %s: reason %q", tc.why, e.Reason)
		}
		if e.Kind == Release && (e.Hold.ReconcilePatch != nil) != tc.reconcile {
			t.Errorf("why: %s: reconcile %s", tc.why, e.Hold.ReconcilePatch)
		}
		if e.Kind == Release && !strings.Contains(string(e.Hold.Patch), `"backflow.dev/hold":null`) {
			t.Errorf("release patch %s", e.Hold.Patch)
		}
	}
}

// TestHoldsListedInTheBody: the pull request's body lists the holds in
// place for its change, as Holds decided them: a hold placed this cycle in
// the body an Open writes, a live hold the body does not list yet in a
// body of its own, and none once released; every marker read after Holds
// (a unit's, through ListHeld) lists the same.
func TestHoldsListedInTheBody(t *testing.T) {
	in := input(t, holdOptIn, watched(4, time.Minute))
	in.Now = t0.Add(2 * time.Minute)
	chains := in.Holds(nil, nil)
	if got := kinds2(chains); len(got) != 1 || got[0] != string(Hold) {
		t.Fatalf("placed %v", got)
	}
	rec := chains[0][0].Hold.Record
	p := in.propose(&in.Result.WriteBacks[0])
	m := in.Marker(p, nil, nil)
	if len(m.Holds) != 1 || m.Holds[0].Object != replicasKey || m.Holds[0].Mark != hold.KustomizeReconcile ||
		!m.Holds[0].Until.Equal(rec.Until) {
		t.Fatalf("why: the body an Open writes lists the hold this cycle places; %+v", m.Holds)
	}
	body := m.Into("intro\n")
	for _, want := range []string{"### Held on the clusters", "<code>" + usEastNode + "</code>",
		"<code>kustomize.toolkit.fluxcd.io/reconcile: disabled</code>", rec.Until.UTC().Format(time.RFC3339)} {
		if !strings.Contains(body, want) {
			t.Errorf("why: the list names the object, cluster, mark and time; %q missing in\n%s", want, body)
		}
	}

	// The pull request opened before the hold: the next cycle lists it.
	in = input(t, holdOptIn, watched(4, time.Minute))
	in.Now = t0.Add(3 * time.Minute)
	open := proposed(t, in, 1, "c1")
	live := []LiveHold{{Cluster: usEastNode, Object: chains[0][0].Hold.Object, UID: "u-1", Record: rec, State: hold.Sealed}}
	chains = in.Holds([]forge.PullRequest{open}, live)
	if got := kinds2(chains); len(got) != 1 || got[0] != string(ListHolds) {
		t.Fatalf("why: a body that does not list a hold in place is written; %v", got)
	}
	st := chains[0][0].Pull
	open.Body = st.Marker.Sealed(commitKey, testRepo, 1).Into(open.Body)
	if !strings.Contains(open.Body, "### Held on the clusters") || strings.Count(open.Body, holdsOpen) != 1 {
		t.Fatalf("why: the body lists the hold once:\n%s", open.Body)
	}
	units, _ := in.Index([]forge.PullRequest{open})
	in.ListHeld(units)
	if len(units) != 1 || units[0].Open == nil || len(units[0].Open.Marker.Holds) != 1 {
		t.Fatalf("why: a unit's chain writes the same list; %+v", units)
	}
	if got := kinds2(in.Holds([]forge.PullRequest{open}, live)); len(got) != 0 {
		t.Errorf("why: a body that lists the holds in place is not written again; %v", got)
	}

	// Closed by a person: released, and the body lists none.
	refused := closed(open, false)
	chains = in.Holds([]forge.PullRequest{refused}, live)
	var wrote *Pull
	for _, c := range chains {
		for _, e := range c {
			if e.Kind == ListHolds {
				wrote = e.Pull
			}
		}
	}
	if wrote == nil || len(wrote.Marker.Holds) != 0 {
		t.Fatalf("why: once released, the body of a closed pull request lists no hold; %v", kinds2(chains))
	}
	if b := wrote.Marker.Sealed(commitKey, testRepo, 1).Into(refused.Body); strings.Contains(b, holdsOpen) {
		t.Errorf("why: the list is removed from the body:\n%s", b)
	}
}

// TestHoldReleasedAtMaximumIsNotPlacedAgain: a hold released at its
// maximum hold time is said once on the pull request, the note recorded in
// its marker, and the same proposal is not held on the object again.
func TestHoldReleasedAtMaximumIsNotPlacedAgain(t *testing.T) {
	in := input(t, holdOptIn, watched(4, time.Minute))
	open := proposed(t, in, 1, "c1")
	m, _ := ParseMarker(open.Body)
	rec := hold.Record{Repo: testRepo, PR: 1, Branch: branchEast, Fingerprint: m.Fingerprint, Cluster: usEastNode,
		Object: replicasKey, UID: "u-1", Fields: []string{"spec.replicas"}, Controller: hold.FluxKustomize,
		Applier: "flux-system/apps", Since: t0, Until: t0.Add(30 * time.Minute)}
	key := observe.ObjectKey{APIVersion: "apps/v1", Kind: "StatefulSet", Namespace: "redis", Name: "redis-replicas"}
	live := []LiveHold{{Cluster: usEastNode, Object: key, UID: "u-1", Record: rec, State: hold.Sealed}}
	in.Now = t0.Add(31 * time.Minute)
	chains := in.Holds([]forge.PullRequest{open}, live)
	if got := kinds2(chains); strings.Join(got, ",") != "comment,release" {
		t.Fatalf("why: the release at the maximum is said on the pull request first; %v", got)
	}
	c := chains[0][0]
	if !strings.HasPrefix(c.Note, noteHoldMaximum+":") || c.Tag != commentTag(c.Note) ||
		!strings.Contains(c.Text, "maximum hold time") || c.Pull.PR.Number != 1 {
		t.Fatalf("comment %+v", c)
	}
	// Before the note is recorded, the next cycle (the hold gone) would
	// place it again.
	in.Now = t0.Add(32 * time.Minute)
	if got := kinds2(in.Holds([]forge.PullRequest{open}, nil)); strings.Join(got, ",") != "hold,list-holds" {
		t.Fatalf("without the note the proposal is held again (and listed once held): %v", got)
	}
	// The executor records the note in the marker with the comment.
	c.Pull.Marker.Notes = append(c.Pull.Marker.Notes, c.Note)
	open.Body = c.Pull.Marker.Sealed(commitKey, testRepo, 1).Into(open.Body)
	for _, tc := range []struct {
		why  string
		live []LiveHold
		want string
	}{
		{"the hold gone: not placed again for the same proposal", nil, ""},
		{"a release decided again after a failed one is not said twice", live, "release"},
	} {
		if got := kinds2(in.Holds([]forge.PullRequest{open}, tc.live)); strings.Join(got, ",") != tc.want {
			t.Errorf("why: %s: %v", tc.why, got)
		}
	}
}

// TestHoldsSectionReplaced: writing a marker replaces only the list of
// holds just before it, whatever text from outside spells its tags
// earlier in the body.
func TestHoldsSectionReplaced(t *testing.T) {
	h := MarkerHold{Object: replicasKey, Cluster: usEastNode, Mark: hold.KustomizeReconcile, Since: t0, Until: t0.Add(time.Hour)}
	held := &Marker{Version: markerVersion, Branch: branchEast, Fingerprint: "sha256:ab", Holds: []MarkerHold{h}}
	none := &Marker{Version: markerVersion, Branch: branchEast, Fingerprint: "sha256:ab"}
	intent := "intent: " + holdsOpen + " keep this " + holdsClose + " and this\n\n"
	for _, tc := range []struct {
		why      string
		body     string
		m        *Marker
		sections int
		keeps    string
	}{
		{"a body without a list gets one before its marker", "intro\n\n" + none.Encode() + "\n", held, 1, "intro"},
		{"a listed body is listed once", held.Into("intro\n\n" + none.Encode() + "\n"), held, 1, "intro"},
		{"a released hold leaves no list", held.Into("intro\n\n" + none.Encode() + "\n"), none, 0, "intro"},
		{"an intent spelling the tags is text, kept", intent + none.Encode() + "\n", held, 2, "keep this"},
		{"and kept when the list goes", held.Into(intent + none.Encode() + "\n"), none, 1, "and this"},
	} {
		got := tc.m.Into(tc.body)
		if n := strings.Count(got, holdsOpen); n != tc.sections || !strings.Contains(got, tc.keeps) ||
			!strings.HasSuffix(got, tc.m.Encode()+"\n") {
			t.Errorf("why: %s: %d tags:\n%s", tc.why, n, got)
		}
	}
}

// TestHoldsReleasedWhenUnheld: a sealed hold of this repository is
// released (cause unheld, reconcile asked) once the repository's config no
// longer opts its unit in, or no longer has its unit; kept while it does.
func TestHoldsReleasedWhenUnheld(t *testing.T) {
	optedIn := input(t, holdOptIn, watched(4, time.Minute))
	optedIn.Now = t0.Add(5 * time.Minute)
	open := proposed(t, optedIn, 1, "c1")
	m, _ := ParseMarker(open.Body)
	rec := hold.Record{Repo: testRepo, PR: 1, Branch: branchEast, Fingerprint: m.Fingerprint, Cluster: usEastNode,
		Object: replicasKey, UID: "u-1", Fields: []string{"spec.replicas"}, Controller: hold.FluxKustomize,
		Applier: "flux-system/apps", Since: t0, Until: t0.Add(30 * time.Minute)}
	key := observe.ObjectKey{APIVersion: "apps/v1", Kind: "StatefulSet", Namespace: "redis", Name: "redis-replicas"}
	sealed := LiveHold{Cluster: usEastNode, Object: key, UID: "u-1", Record: rec, State: hold.Sealed}
	removed := sealed
	removed.Record.Branch = "backflow/prod-us-east/gone"
	optedOut := input(t, func(map[string]string) {}, watched(4, time.Minute))
	optedOut.Now = optedIn.Now
	for _, tc := range []struct {
		why    string
		in     *Input
		live   LiveHold
		prs    []forge.PullRequest
		want   string
		reason string
	}{
		{"the unit still opts in: kept, its body lists it", optedIn, sealed, []forge.PullRequest{open}, "list-holds", ""},
		{"the unit no longer opts in, its pull request open: released", optedOut, sealed, []forge.PullRequest{open},
			"release", "no longer opts into hold:"},
		{"no longer opted in and no pull request, though the plan proposes it again: released, not kept for the open",
			optedOut, sealed, nil, "release", "no longer opts into hold:"},
		{"no unit writes to the hold's branch any more: released", optedIn, removed, nil, "release",
			"no unit of the repository's config writes to backflow/prod-us-east/gone"},
		{"a forged hold is still only reported", optedOut, LiveHold{Cluster: usEastNode, Object: key, State: hold.Forged},
			nil, "skip", "not authentic"},
	} {
		chains := tc.in.Holds(tc.prs, []LiveHold{tc.live})
		got := kinds2(chains)
		if len(got) == 0 || got[0] != tc.want {
			t.Errorf("why: %s: %v, want %s first", tc.why, got, tc.want)
			continue
		}
		e := chains[0][len(chains[0])-1]
		if !strings.Contains(e.Reason, tc.reason) {
			t.Errorf("why: %s: reason %q", tc.why, e.Reason)
		}
		if e.Kind == Release && (e.Hold.Cause != hold.CauseUnheld || e.Hold.ReconcilePatch == nil) {
			t.Errorf("why: %s: cause %q, reconcile %s", tc.why, e.Hold.Cause, e.Hold.ReconcilePatch)
		}
	}
}

// TestHoldsReleasedWhenUnserved: a sealed hold naming a repository the
// installation's newest listing does not serve is released by the cycle of
// the first served repository alone; before any listing, or while the
// listing names its repository, it is left to that repository's cycle.
func TestHoldsReleasedWhenUnserved(t *testing.T) {
	in := input(t, holdOptIn, watched(4, time.Minute))
	in.Now = t0.Add(5 * time.Minute)
	key := observe.ObjectKey{APIVersion: "apps/v1", Kind: "StatefulSet", Namespace: "redis", Name: "redis-replicas"}
	rec := hold.Record{Repo: "acme/gone", PR: 3, Branch: branchEast, Fingerprint: "f", Cluster: usEastNode,
		Object: replicasKey, UID: "u-1", Fields: []string{"spec.replicas"}, Controller: hold.FluxKustomize,
		Applier: "flux-system/apps", Since: t0, Until: t0.Add(30 * time.Minute)}
	sealed := LiveHold{Cluster: usEastNode, Object: key, UID: "u-1", Record: rec, State: hold.Sealed}
	for _, tc := range []struct {
		why    string
		served []string
		live   LiveHold
		want   string
	}{
		{"no listing yet: nothing proves it unserved", nil, sealed, ""},
		{"the listing still names it (another case): its own cycle decides", []string{"ACME/gone", testRepo}, sealed, ""},
		{"unserved, and this is the first served repository: released", []string{testRepo, "zeta/z"}, sealed, "release"},
		{"unserved, but another served repository's cycle releases it", []string{"aaa/first", testRepo}, sealed, ""},
		{"a forged record naming an unserved repository is only reported", []string{testRepo},
			LiveHold{Cluster: usEastNode, Object: key, State: hold.Forged}, "skip"},
	} {
		in.Served = tc.served
		chains := in.Holds(nil, []LiveHold{tc.live})
		got := strings.Join(kinds2(chains), ",")
		if got != tc.want {
			t.Errorf("why: %s: %q, want %q", tc.why, got, tc.want)
			continue
		}
		if got != "release" {
			continue
		}
		e := chains[0][0]
		if e.Hold.Cause != hold.CauseUnserved || e.Hold.ReconcilePatch == nil ||
			!strings.Contains(e.Reason, "acme/gone is no longer served: the installation's 2 repositories") {
			t.Errorf("why: %s: %+v %s", tc.why, e.Hold, e.Reason)
		}
	}
}
