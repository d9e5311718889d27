package lifecycle

import (
	"bytes"
	"cmp"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/backflow-dev/backflow/internal/forge"
	"github.com/backflow-dev/backflow/internal/hold"
	"github.com/backflow-dev/backflow/internal/observe"
	"github.com/backflow-dev/backflow/internal/plan"
)

var update = flag.Bool("update", false, "rewrite testdata/scenarios/*/chain.txt from the lifecycle's decisions")

// scenario is one folder of testdata/scenarios: the default branch's
// state (the test repository, edited), what the plan is made from, the
// pull requests the cycle lists and the commits it reads; chain.txt is
// every chain of effects the lifecycle decides from them, each effect with
// its why.
type scenario struct {
	// Why says what the scenario holds.
	Why string `json:"why"`
	// Values is replicaCount on the default branch (default 3); Comment
	// adds a person's comment to the values file; AutoMergeOff turns the
	// repository's auto-merge off; EastDenied takes prod-us-east out of
	// the policy's entry for replicaCount.
	Values       string `json:"values,omitempty"`
	Comment      bool   `json:"comment,omitempty"`
	AutoMergeOff bool   `json:"autoMergeOff,omitempty"`
	EastDenied   bool   `json:"eastDenied,omitempty"`
	// Observations are what the plan is made from.
	Observations []scenarioObservation `json:"observations,omitempty"`
	// Pulls are the pull requests the cycle lists.
	Pulls []scenarioPull `json:"pulls,omitempty"`
	// Commits are those on the open pull request's head since the
	// default branch; Branch those on an existing branch with no pull
	// request, for what the Open does if it finds it.
	Commits []scenarioCommit `json:"commits,omitempty"`
	Branch  []scenarioCommit `json:"branch,omitempty"`
	// ClosedByBot are the closed pull requests the App's ledger says it
	// closed itself.
	ClosedByBot []int `json:"closedByBot,omitempty"`
	// Break glass (expiry_test.go): AcceptFor sets the replicaCount
	// entry's acceptFor; Intent replaces the observations' intent;
	// Accepted is when (after t0) alice's 3 -> 4 was accepted and merged,
	// its values file and receipt then on the default branch; Restored
	// says the restoring write-back of that acceptance merged since.
	AcceptFor string `json:"acceptFor,omitempty"`
	// PermanentNow takes acceptFor off the entry after the acceptance: a
	// later acceptance of the field is for good.
	PermanentNow bool   `json:"permanentNow,omitempty"`
	Intent       string `json:"intent,omitempty"`
	Accepted     string `json:"accepted,omitempty"`
	Restored     bool   `json:"restored,omitempty"`
	// ConfigHub makes prod-us-east's desired state a ConfigHub Unit, read
	// at this hash and head revision (Values is then its replicas).
	ConfigHub *scenarioHub `json:"confighub,omitempty"`
	// Holds are backflow's sealed holds the hold port reads on the live
	// objects at the start of the cycle.
	Holds []scenarioHold `json:"holds,omitempty"`
	// Hold opts prod-us-east's redis into holding (holdOptIn): the
	// observations are the watch's (uid and resourceVersion known), and
	// the cycle decides its holds first, as the bot does.
	Hold *scenarioHolding `json:"hold,omitempty"`
	// OptedOut leaves prod-us-east's redis without hold: although Holds
	// were placed while it opted in.
	OptedOut bool `json:"optedOut,omitempty"`
}

// scenarioHold is a sealed hold of kustomize-controller's on
// redis-replicas, placed for the proposal of pull request Pull.
type scenarioHold struct {
	Pull int `json:"pull"`
	// Since and Until are the times after t0 it was placed at and is
	// released at the latest (default 30 minutes after Since).
	Since string `json:"since,omitempty"`
	Until string `json:"until,omitempty"`
	// Applied is the applier's lastAppliedRevision; it never includes the
	// merge.
	Applied string `json:"applied,omitempty"`
}

// live is the hold as the hold port reads it back.
func (h scenarioHold) live(t *testing.T, in *Input, prs []forge.PullRequest) LiveHold {
	t.Helper()
	i := slices.IndexFunc(prs, func(pr forge.PullRequest) bool { return pr.Number == h.Pull })
	if i < 0 {
		t.Fatalf("hold: no pull request #%d", h.Pull)
	}
	m, ok := in.pullMarker(prs[i])
	if !ok {
		t.Fatalf("hold: pull request #%d has no marker", h.Pull)
	}
	since := t0.Add(duration(t, h.Since))
	until := since.Add(30 * time.Minute)
	if h.Until != "" {
		until = t0.Add(duration(t, h.Until))
	}
	rec := hold.Record{Repo: in.Repo, PR: h.Pull, Branch: m.Branch, Fingerprint: m.Fingerprint, Cluster: usEastNode,
		Object: replicasKey, UID: "u-1", Fields: []string{"spec.replicas"}, Controller: hold.FluxKustomize,
		Applier: "flux-system/apps", Since: since, Until: until}
	value, err := hold.Seal(in.CommitKey, rec)
	if err != nil {
		t.Fatal(err)
	}
	rec, st := hold.Read(in.CommitKey, usEastNode, "u-1",
		map[string]string{hold.Annotation: value, hold.KustomizeReconcile: hold.Disabled})
	return LiveHold{Cluster: usEastNode, Object: replicasObject, UID: "u-1", Record: rec, State: st, Applied: h.Applied}
}

// scenarioHolding is a cycle that decides its holds first, as the bot does.
type scenarioHolding struct {
	// Now is the cycle's time after t0 (default the plan's).
	Now string `json:"now,omitempty"`
	// Held are the sealed holds on redis-replicas the hold port reads.
	Held []scenarioHold `json:"held,omitempty"`
}

// live are the holds the hold port reads from the live objects.
func (h *scenarioHolding) live(t *testing.T, in *Input, prs []forge.PullRequest) []LiveHold {
	t.Helper()
	var out []LiveHold
	for _, held := range h.Held {
		out = append(out, held.live(t, in, prs))
	}
	return out
}

type scenarioObservation struct {
	// Live is spec.replicas live; NoField leaves the field out (back at
	// desired).
	Live    any  `json:"live"`
	NoField bool `json:"noField,omitempty"`
	// Desired replaces the 3 the observer compared against.
	Desired any    `json:"desired,omitempty"`
	Manager string `json:"manager,omitempty"`
	// At is the time after t0 it was observed at ("90s", "25m").
	At string `json:"at,omitempty"`
	// Asserted lowers it to a file's asserted trust.
	Asserted bool `json:"asserted,omitempty"`
	// Actor replaces alice.
	Actor string `json:"actor,omitempty"`
	// RevertedTo says helm-controller wrote the field back to this value
	// before the object was read: Live is the person's value the watch
	// kept (observe.Revert).
	RevertedTo any `json:"revertedTo,omitempty"`
}

type scenarioPull struct {
	Number int `json:"number"`
	// Proposes is the live value it proposes, as the bot opened it then
	// (on the default branch as it was, replicaCount 3).
	Proposes any    `json:"proposes"`
	Head     string `json:"head"`
	// State is open (default), closed or merged; MergedAt the time after
	// t0 it merged at.
	State    string `json:"state,omitempty"`
	MergedAt string `json:"mergedAt,omitempty"`
	// Unarmed and NoLabels undo the set-up the bot made; HeadMoved is the
	// head a commit moved it to; Closed is the close the marker records;
	// Kept says its branch was not deleted.
	Unarmed   bool   `json:"unarmed,omitempty"`
	NoLabels  bool   `json:"noLabels,omitempty"`
	HeadMoved string `json:"headMoved,omitempty"`
	// PlannedHash is the Unit's data hash it was planned on, in a
	// ConfigHub scenario (default the scenario's; the Unit then held 3 at
	// head revision 1).
	PlannedHash string `json:"plannedHash,omitempty"`
	Closed      string `json:"closed,omitempty"`
	Kept        bool   `json:"kept,omitempty"`
	// Restores makes it the restoring write-back of the scenario's expired
	// acceptance, as the bot opened it; Proven says its follow-up is done.
	Restores bool `json:"restores,omitempty"`
	Proven   bool `json:"proven,omitempty"`
	// Notes are the one-time comments its marker records already.
	Notes []string `json:"notes,omitempty"`
}

type scenarioCommit struct {
	SHA     string   `json:"sha"`
	Parents []string `json:"parents"`
	// By is "bot" (the bot's keyed commit of the scenario's proposal) or
	// a person's message.
	By string `json:"by"`
}

func (s scenario) input(t *testing.T) *Input {
	t.Helper()
	var obs []observe.Observation
	for _, o := range s.Observations {
		r := s.observation(t, o)
		if s.Hold != nil {
			r.UID, r.ResourceVersion = "u-1", "48213"
		}
		obs = append(obs, r)
	}
	in := input(t, s.files(t), obs...)
	if s.Hold != nil {
		in.Now = t0.Add(5 * time.Minute) // when the plan is made (input)
		for _, o := range obs {
			if o.ObservedAt.After(in.Now) {
				in.Now = o.ObservedAt
			}
		}
		if s.Hold.Now != "" {
			in.Now = t0.Add(duration(t, s.Hold.Now))
		}
	}
	return in
}

// inputVoided is input planned with the expiries already said void.
func (s scenario) inputVoided(t *testing.T, voided map[string]string) *Input {
	t.Helper()
	var obs []observe.Observation
	for _, o := range s.Observations {
		obs = append(obs, s.observation(t, o))
	}
	in := input(t, s.files(t), obs...)
	in.Snapshot.Voided = voided
	now := t0.Add(5 * time.Minute)
	for _, o := range obs {
		if o.ObservedAt.After(now) {
			now = o.ObservedAt
		}
	}
	in.Result = plan.Plan(obs, nil, in.Snapshot, now)
	return in
}

func (s scenario) mutate(f map[string]string) {
	if s.Values != "" && s.Accepted == "" {
		setValues(s.Values)(f)
	}
	if s.Comment {
		f[valuesEast] += "# a person's comment\n"
	}
	if s.AutoMergeOff {
		f[".github/backflow.yaml"] = strings.Replace(f[".github/backflow.yaml"], "enabled: true", "enabled: false", 1)
	}
	if s.EastDenied {
		eastDenied(f)
	}
	if s.ConfigHub != nil {
		s.ConfigHub.mutate(f, s.Values)
	}
	if s.Hold != nil || len(s.Holds) > 0 && !s.OptedOut {
		holdOptIn(f)
	}
}

func (o scenarioObservation) observation(t *testing.T) observe.Observation {
	t.Helper()
	r := replicas(o.Live, o.Manager, duration(t, o.At))
	if o.NoField {
		r.Fields = nil
	}
	if o.Desired != nil && len(r.Fields) > 0 {
		r.Fields[0].Desired = o.Desired
	}
	if o.Asserted {
		r.Source, r.Trust = observe.SourceFile, observe.AttributionAsserted
	}
	if o.Actor != "" {
		r.Change.Actor, r.Change.Groups = o.Actor, nil
	}
	if o.RevertedTo != nil {
		r.Fields[0].Reverted = &observe.Revert{Live: o.RevertedTo, Manager: "helm-controller", From: 3, ChangedVersion: "48213",
			Version: "48214", ChangedAt: r.ObservedAt.Add(-time.Minute)}
	}
	return r
}

func (s scenario) observation(t *testing.T, o scenarioObservation) observe.Observation {
	t.Helper()
	r := o.observation(t)
	if s.Intent != "" {
		r.Change.Intent = s.Intent
	}
	return r
}

func duration(t *testing.T, s string) time.Duration {
	t.Helper()
	if s == "" {
		return 0
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func (p scenarioPull) pull(t *testing.T, s scenario) forge.PullRequest {
	t.Helper()
	var pr forge.PullRequest
	if p.Restores {
		pr = proposed(t, s.restoring(t), p.Number, p.Head)
	} else {
		var mutate func(map[string]string)
		if s.ConfigHub != nil {
			hub := scenarioHub{Hash: cmp.Or(p.PlannedHash, s.ConfigHub.Hash), Head: 1}
			mutate = func(f map[string]string) { hub.mutate(f, "") }
		}
		pr = proposed(t, input(t, mutate, replicas(p.Proposes, "kubectl", 0)), p.Number, p.Head)
	}
	if p.Proven {
		pr.Labels = append(pr.Labels, LabelProven)
	}
	switch p.State {
	case "", "open":
	case "closed":
		pr = closed(pr, false)
	case "merged":
		pr = closed(pr, true)
		pr.MergedAt, pr.MergeCommitSHA = t0.Add(duration(t, p.MergedAt)), "m"+p.Head
	default:
		t.Fatalf("pull request #%d: unknown state %q", p.Number, p.State)
	}
	if p.Unarmed {
		pr.AutoMergeEnabled = false
	}
	if p.NoLabels {
		pr.Labels = nil
	}
	if p.HeadMoved != "" {
		pr.HeadSHA = p.HeadMoved
	}
	if pr.State == forge.StateClosed {
		pr = edit(t, pr, func(m *Marker) { m.Closed, m.BranchDeleted = p.Closed, !p.Kept })
	}
	if len(p.Notes) > 0 {
		pr = edit(t, pr, func(m *Marker) { m.Notes = append(m.Notes, p.Notes...) })
	}
	return pr
}

func (s scenario) commits(t *testing.T, in *Input, cs []scenarioCommit) []forge.Commit {
	t.Helper()
	var out []forge.Commit
	for _, c := range cs {
		msg := c.By + "\n"
		if c.By == "bot" {
			msg = in.propose(&in.Result.WriteBacks[0]).CommitOn(c.Parents[0], forge.Repo{}, forge.Author{}, forge.CommitGit, "", false).Message
		}
		out = append(out, forge.Commit{SHA: c.SHA, Parents: c.Parents, Message: msg})
	}
	return out
}

// TestScenarios holds the lifecycle's whole chains to the goldens in
// testdata/scenarios: `go test -run TestScenarios -update` rewrites them.
func TestScenarios(t *testing.T) {
	dirs, err := filepath.Glob(filepath.Join("testdata", "scenarios", "*"))
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no scenarios: %v", err)
	}
	for _, dir := range dirs {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join(dir, "scenario.json"))
			if err != nil {
				t.Fatal(err)
			}
			var s scenario
			dec := json.NewDecoder(bytes.NewReader(data))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&s); err != nil {
				t.Fatalf("scenario.json: %v", err)
			}
			got := s.chains(t)
			golden := filepath.Join(dir, "chain.txt")
			if *update {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test -run TestScenarios -update to create it)", err)
			}
			if got != string(want) {
				t.Errorf("%s\nchains differ from %s:\n--- got\n%s--- want\n%s", s.Why, golden, got, want)
			}
		})
	}
}

// chains decides the scenario as the cycle does and prints every chain.
func (s scenario) chains(t *testing.T) string {
	t.Helper()
	in := s.input(t)
	var prs []forge.PullRequest
	for _, p := range s.Pulls {
		prs = append(prs, p.pull(t, s))
	}
	if voided := VoidedExpiries(commitKey, testRepo, "main", prs); len(voided) > 0 {
		// Planned as the bot plans: with the expiries the pull requests'
		// notes said void.
		in = s.inputVoided(t, voided)
	}
	in.ClosedByBot = map[int]bool{}
	for _, n := range s.ClosedByBot {
		in.ClosedByBot[n] = true
	}
	units, problems := in.Index(prs)
	if len(problems) > 0 {
		t.Fatalf("index: %v", problems)
	}
	var live []LiveHold
	if s.Hold != nil {
		live = s.Hold.live(t, in, prs)
	}
	if len(s.Holds) > 0 {
		in.Now = t0.Add(5 * time.Minute) // the cycle's time, as the plan's
	}
	for _, h := range s.Holds {
		live = append(live, h.live(t, in, prs))
	}
	// The holds are decided first, as the bot decides them.
	chains := in.Holds(prs, live)
	if len(live) > 0 {
		in.ListHeld(units)
	}
	for _, u := range units {
		chains = append(chains, Cleanups(u)...)
	}
	for _, u := range units {
		var commits []forge.Commit
		if in.NeedsCommits(u) {
			commits = s.commits(t, in, s.Commits)
		}
		chains = append(chains, in.Chain(u, commits))
	}
	chains = append(chains, in.FollowUps(prs)...)
	chains = append(chains, in.Expiries(prs)...)
	var b strings.Builder
	fmt.Fprintf(&b, "# %s\n", s.Why)
	n := 0
	for _, c := range chains {
		if len(c) == 0 {
			continue
		}
		n++
		fmt.Fprintf(&b, "\nchain %d:\n", n)
		for _, e := range c {
			b.WriteString(s.describe(t, in, e))
		}
	}
	return b.String()
}

// describe is one effect: what, on which pull request, the data it acts
// on, and why.
func (s scenario) describe(t *testing.T, in *Input, e Effect) string {
	var b strings.Builder
	on := e.Branch
	if e.Pull != nil && e.Pull.PR.Number > 0 {
		on += fmt.Sprintf(" #%d", e.Pull.PR.Number)
	}
	fmt.Fprintf(&b, "  %s %s", e.Kind, on)
	var data []string
	switch e.Kind {
	case Open:
		data = append(data, "base="+Short(e.Base), "files="+strings.Join(sortedKeys(e.Proposal.Files), ","))
	case Update:
		data = append(data, "base="+Short(e.Base), "expected-head="+e.Expected, "files="+strings.Join(sortedKeys(e.Proposal.Files), ","))
	case AutoMerge:
		h := e.Head
		if h == "" {
			h = "(the chain's new head)"
		}
		data = append(data, "head="+h, "method="+string(e.Method), fmt.Sprintf("after-merge=%s", kinds(e.AfterMerge)))
	case Check:
		data = append(data, "run="+e.Run.Name, "head="+e.Run.HeadSHA, "conclusion="+e.Run.Conclusion)
		if e.Bound != nil {
			data = append(data, "whole-diff-bound")
		}
	case Label, Unlabel:
		data = append(data, "labels="+strings.Join(e.Labels, ","))
	case Review:
		data = append(data, "users="+strings.Join(e.Users, ","), "teams="+strings.Join(e.Teams, ","))
	case Close:
		data = append(data, "closed="+e.Closed, "ledger="+e.Run.Name)
	case Comment:
		data = append(data, "note="+e.Note)
	case Hold:
		data = append(data, "object="+e.Hold.Record.Object, "cluster="+e.Hold.Cluster,
			"since="+e.Hold.Record.Since.UTC().Format(time.RFC3339), "until="+e.Hold.Record.Until.UTC().Format(time.RFC3339))
	case Release:
		data = append(data, "object="+e.Hold.Record.Object, "cause="+e.Hold.Cause,
			fmt.Sprintf("reconcile=%t", e.Hold.ReconcilePatch != nil))
	case Record:
		data = append(data, "commits="+strings.Join(e.Commits, ","))
	case Proven, Reverted, Replan:
		data = append(data, "label="+e.Evidence.Label)
		if e.Evidence.Store != nil {
			data = append(data, "through="+e.Evidence.Store.String())
		}
	case Revise:
		data = append(data, "revision="+e.Revision.Name(),
			"if-match="+e.Revision.Head.Condition)
	}
	if s.Hold != nil {
		// What the body this effect writes lists of the holds in place.
		switch {
		case e.Kind == Open || e.Kind == Update:
			data = append(data, fmt.Sprintf("holds-listed=%d", len(e.Marker.Holds)))
		case e.Kind == ListHolds || e.Kind == Comment:
			data = append(data, fmt.Sprintf("holds-listed=%d", len(e.Pull.Marker.Holds)))
		}
	}
	if len(data) > 0 {
		fmt.Fprintf(&b, " [%s]", strings.Join(data, " "))
	}
	fmt.Fprintf(&b, "\n    why: %s\n", e.Reason)
	if e.Kind == Open && len(s.Branch) > 0 {
		fmt.Fprintf(&b, "    if the branch exists: %s\n", recoveryName(e.Proposal.Recover(e.Base, s.commits(t, in, s.Branch))))
	}
	return b.String()
}

func recoveryName(r Recovery) string {
	return [...]string{LeaveAlone: "leave it alone", Reuse: "reuse its head", Rewrite: "rewrite it"}[r]
}

func sortedKeys(m map[string][]byte) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
