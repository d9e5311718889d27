package lifecycle

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/backflow-dev/backflow/internal/forge"
	"github.com/backflow-dev/backflow/internal/observe"
)

// state is one repository's decision input: the plan's input and the pull
// requests, with the commits on the open pull request's head.
type state struct {
	in      *Input
	prs     []forge.PullRequest
	commits []forge.Commit
}

// decideAll runs every decision of a cycle, in the cycle's order: the
// cleanups of closed pull requests, each unit's effects, the follow-ups.
func decideAll(t *testing.T, s state) []Effect {
	t.Helper()
	units, problems := s.in.Index(s.prs)
	if len(problems) > 0 {
		t.Fatalf("index: %v", problems)
	}
	var out []Effect
	for _, u := range units {
		for _, c := range Cleanups(u) {
			out = append(out, c...)
		}
	}
	for _, u := range units {
		var commits []forge.Commit
		if s.in.NeedsCommits(u) {
			commits = s.commits
		}
		out = append(out, s.in.Decide(u, commits)...)
	}
	for _, c := range s.in.FollowUps(s.prs) {
		out = append(out, c...)
	}
	return out
}

func setValues(replicas string) func(map[string]string) {
	return func(f map[string]string) {
		f[valuesEast] = strings.Replace(f[valuesEast], "replicaCount: 3", "replicaCount: "+replicas, 1)
	}
}

// eastDenied is the policy without prod-us-east for replica.replicaCount.
func eastDenied(f map[string]string) {
	f[policyPath] = strings.Replace(f[policyPath], "          environments:\n            - prod-us-east\n            - prod-eu-west\n          autoMerge: true",
		"          environments:\n            - prod-eu-west\n          autoMerge: true", 1)
}

func withManager(o observe.Observation, live any, manager string) observe.Observation {
	o.Fields = []observe.Field{{Path: "spec.replicas", Live: live, Desired: 3, HasDesired: true, Manager: manager}}
	return o
}

// TestDecide holds the lifecycle's rules over pull-request states, with no
// forge: every case is the state a cycle reads and the effects it decides.
func TestDecide(t *testing.T) {
	scaled := replicas(4, "kubectl", 0)
	merged := func(t *testing.T, at time.Duration) forge.PullRequest {
		pr := closed(proposed(t, input(t, nil, scaled), 1, "c1"), true)
		pr.MergedAt, pr.MergeCommitSHA = t0.Add(at), "m1"
		return edit(t, pr, func(m *Marker) { m.BranchDeleted = true })
	}
	grace := 10 * time.Minute
	for _, tc := range []struct {
		name  string
		why   string
		state func(t *testing.T) state
		want  []string
		// reason is a substring of one effect's reason.
		reason string
	}{
		{"open", "an allowed change with no pull request is opened, pre-authorized", func(t *testing.T) state {
			return state{in: input(t, nil, scaled)}
		}, []string{"open"}, "[pre-authorized: auto-merge]"},
		{"open, set up", "the same proposal's open pull request, set up, needs nothing", func(t *testing.T) state {
			in := input(t, nil, scaled)
			return state{in: in, prs: []forge.PullRequest{proposed(t, in, 1, "c1")}}
		}, nil, ""},
		{"open, set-up cut short", "a crash before the labels: reviewers, labels and auto-merge are done again", func(t *testing.T) state {
			in := input(t, nil, scaled)
			pr := proposed(t, in, 1, "c1")
			pr.Labels, pr.AutoMergeEnabled = nil, false
			return state{in: in, prs: []forge.PullRequest{pr}}
		}, []string{"review", "label", "auto-merge"}, "arm auto-merge at c1"},
		{"open, draft", "a draft is labelled but never armed", func(t *testing.T) state {
			in := input(t, nil, scaled)
			pr := proposed(t, in, 1, "c1")
			pr.Labels, pr.AutoMergeEnabled, pr.Draft = nil, false, true
			return state{in: in, prs: []forge.PullRequest{pr}}
		}, []string{"review", "label"}, ""},
		{"person's commit", "a commit the bot did not make on an armed branch: disarmed, check red for that head, labelled, said once, the branch not touched", func(t *testing.T) state {
			in := input(t, nil, scaled)
			pr := proposed(t, in, 1, "c1")
			pr.HeadSHA = "p1"
			return state{in: in, prs: []forge.PullRequest{pr}, commits: []forge.Commit{{SHA: "p1", Parents: []string{"c1"}, Message: "hand edit\n"}}}
		}, []string{"disarm", "check", "label", "unlabel", "comment:human-commit"}, "commits that backflow did not make"},
		{"person's commit, said", "once said, a person's branch is kept as it is, even with a new live value", func(t *testing.T) state {
			in := input(t, nil, replicas(5, "kubectl", time.Minute))
			pr := edit(t, proposed(t, input(t, nil, scaled), 1, "c1"), func(m *Marker) { m.Notes = []string{noteHumanCommit} })
			pr.HeadSHA = "p1"
			pr.AutoMergeEnabled = false
			pr.Labels = append(slices.DeleteFunc(pr.Labels, func(l string) bool { return l == LabelPreAuthorized }), LabelPersonCommit)
			return state{in: in, prs: []forge.PullRequest{pr}, commits: []forge.Commit{{SHA: "p1", Parents: []string{"c1"}, Message: "hand edit\n"}}}
		}, []string{"check", "keep"}, "a person's commit"},
		{"bot's unrecorded commit", "a crash between the push and the body update: the bot's own keyed commit is recorded, not taken for a person's", func(t *testing.T) state {
			in := input(t, nil, scaled)
			p := in.propose(&in.Result.WriteBacks[0])
			msg := p.CommitOn(in.Head, forge.Repo{}, forge.Author{}, forge.CommitGit, "", false).Message
			pr := proposed(t, in, 1, "c1")
			pr.HeadSHA = "c2"
			return state{in: in, prs: []forge.PullRequest{pr}, commits: []forge.Commit{{SHA: "c2", Parents: []string{head}, Message: msg}}}
		}, []string{"record"}, ""},
		{"closed by a person", "the same change closed without merge is never proposed again", func(t *testing.T) state {
			in := input(t, nil, scaled)
			pr := edit(t, closed(proposed(t, in, 1, "c1"), false), func(m *Marker) { m.BranchDeleted = true })
			return state{in: in, prs: []forge.PullRequest{pr}}
		}, []string{"skip"}, "closed without merge"},
		{"closed by the bot, older marker pasted back", "the App's ledger says the bot closed it: the replayed marker does not make it a person's close", func(t *testing.T) state {
			in := input(t, nil, scaled)
			pr := edit(t, closed(proposed(t, in, 1, "c1"), false), func(m *Marker) { m.BranchDeleted = true })
			in.ClosedByBot = map[int]bool{1: true}
			return state{in: in, prs: []forge.PullRequest{pr}}
		}, []string{"open"}, ""},
		{"merged, older marker pasted back", "a marker that does not record the merged head proves and reverts nothing", func(t *testing.T) state {
			pr := merged(t, 10*time.Minute)
			pr.HeadSHA = "c2"
			return state{in: input(t, setValues("4"), replicas(3, "kubectl", 10*time.Minute+grace)), prs: []forge.PullRequest{pr}}
		}, []string{"skip"}, "replayed"},
		{"closed by a person, branch left", "its branch is deleted once, pinned to the closed head", func(t *testing.T) state {
			in := input(t, nil, scaled)
			return state{in: in, prs: []forge.PullRequest{closed(proposed(t, in, 1, "c1"), false)}}
		}, []string{"cleanup", "skip"}, ""},
		{"closed by the bot", "a proposal the bot closed itself (superseded) may be made again", func(t *testing.T) state {
			in := input(t, nil, scaled)
			pr := edit(t, closed(proposed(t, in, 1, "c1"), false), func(m *Marker) { m.Closed, m.BranchDeleted = ClosedSuperseded, true })
			return state{in: in, prs: []forge.PullRequest{pr}}
		}, []string{"open"}, ""},
		{"a person refused the new value", "live moved to a value a person closed: this proposal no longer matches live and that one is not made again", func(t *testing.T) state {
			in := input(t, nil, replicas(5, "kubectl", time.Minute))
			refused := edit(t, closed(proposed(t, in, 1, "c1"), false), func(m *Marker) { m.BranchDeleted = true })
			open := proposed(t, input(t, nil, scaled), 2, "c2")
			return state{in: in, prs: []forge.PullRequest{refused, open}}
		}, []string{"close:superseded", "cleanup"}, "which was closed without merge"},
		{"new live value", "live moved on: auto-merge (which GitHub keeps across the bot's push) is disarmed first, then the branch is rewritten with the new value", func(t *testing.T) state {
			in := input(t, nil, replicas(5, "kubectl", time.Minute))
			return state{in: in, prs: []forge.PullRequest{proposed(t, input(t, nil, scaled), 1, "c1")}}
		}, []string{"disarm", "update"}, "new live value: reverse-reconcile(prod-us-east): replica.replicaCount 3 -> 5"},
		{"no longer qualifies for auto-merge", "an armed pull request whose proposal no longer qualifies is disarmed", func(t *testing.T) state {
			in := input(t, func(f map[string]string) {
				f[".github/backflow.yaml"] = strings.Replace(f[".github/backflow.yaml"], "enabled: true", "enabled: false", 1)
			}, scaled)
			return state{in: in, prs: []forge.PullRequest{proposed(t, input(t, nil, scaled), 1, "c1")}}
		}, []string{"unlabel", "disarm"}, "no longer qualifies"},
		{"new live value, not armed", "nothing to disarm on a pull request that is not armed", func(t *testing.T) state {
			in := input(t, nil, replicas(5, "kubectl", time.Minute))
			pr := proposed(t, input(t, nil, scaled), 1, "c1")
			pr.AutoMergeEnabled = false
			return state{in: in, prs: []forge.PullRequest{pr}}
		}, []string{"update"}, ""},
		{"default branch moved under the values file", "the same proposal is regenerated on the new values file", func(t *testing.T) state {
			in := input(t, func(f map[string]string) { f[valuesEast] += "# a person's comment\n" }, scaled)
			return state{in: in, prs: []forge.PullRequest{proposed(t, input(t, nil, scaled), 1, "c1")}}
		}, []string{"disarm", "update"}, "regenerated from 111111111111"},
		{"superseded", "the default branch already holds the live value", func(t *testing.T) state {
			in := input(t, setValues("4"), scaled)
			return state{in: in, prs: []forge.PullRequest{proposed(t, input(t, nil, scaled), 1, "c1")}}
		}, []string{"close:superseded", "cleanup"}, "main already holds <code>replica.replicaCount: 4</code>"},
		{"superseded by another desired value", "desired changed to yet another value on the default branch", func(t *testing.T) state {
			in := input(t, setValues("6"))
			return state{in: in, prs: []forge.PullRequest{proposed(t, input(t, nil, scaled), 1, "c1")}}
		}, []string{"close:superseded", "cleanup"}, "Desired <code>replica.replicaCount</code> changed to <code>6</code>"},
		{"unit removed", "the unit left the repo config", func(t *testing.T) state {
			in := input(t, func(f map[string]string) {
				f[".github/backflow.yaml"] = strings.Replace(f[".github/backflow.yaml"], "  - name: redis\n    environment: prod-us-east\n    valuesFiles: [envs/prod-us-east/redis/values.yaml]\n    objects: [\"apps/v1|StatefulSet|redis|redis-*\"]\n    chart: {name: bitnami/redis, version: 25.5.3}\n", "", 1)
			})
			return state{in: in, prs: []forge.PullRequest{proposed(t, input(t, nil, scaled), 1, "c1")}}
		}, []string{"close:superseded", "cleanup"}, "no longer in .github/backflow.yaml"},
		{"converged", "live is back at desired by hand: nothing to accept back", func(t *testing.T) state {
			in := input(t, nil, withManager(replicas(3, "kubectl", time.Minute), 3, "kubectl"))
			return state{in: in, prs: []forge.PullRequest{proposed(t, input(t, nil, scaled), 1, "c1")}}
		}, []string{"close:converged", "cleanup"}, "Live is back at desired"},
		{"converged, field gone", "the newest observation no longer lists the field: it matches desired", func(t *testing.T) state {
			o := replicas(4, "kubectl", time.Minute)
			o.Fields = nil
			return state{in: input(t, nil, o), prs: []forge.PullRequest{proposed(t, input(t, nil, scaled), 1, "c1")}}
		}, []string{"close:converged", "cleanup"}, ""},
		{"no observation", "no observation of the object is no evidence: the pull request stays", func(t *testing.T) state {
			return state{in: input(t, nil), prs: []forge.PullRequest{proposed(t, input(t, nil, scaled), 1, "c1")}}
		}, []string{"keep"}, "unchanged"},
		{"reverted by forward apply", "the GitOps controller put desired back: said once, the pull request stays open to restore the fix", func(t *testing.T) state {
			in := input(t, nil, withManager(replicas(3, "", time.Minute), 3, "argocd-controller"))
			return state{in: in, prs: []forge.PullRequest{proposed(t, input(t, nil, scaled), 1, "c1")}}
		}, []string{"comment:reverted-by-gitops"}, "merging it restores the fix"},
		{"reverted by forward apply, said", "after the comment it is only kept", func(t *testing.T) state {
			in := input(t, nil, withManager(replicas(3, "", time.Minute), 3, "argocd-controller"))
			pr := edit(t, proposed(t, input(t, nil, scaled), 1, "c1"), func(m *Marker) { m.Notes = []string{noteReverted} })
			return state{in: in, prs: []forge.PullRequest{pr}}
		}, []string{"keep"}, "reverted by the forward apply"},
		{"reverted by an ignored manager", "a manager the repository ignores counts as the forward apply", func(t *testing.T) state {
			in := input(t, nil, withManager(replicas(3, "", time.Minute), 3, "horizontal-pod-autoscaler"))
			return state{in: in, prs: []forge.PullRequest{proposed(t, input(t, nil, scaled), 1, "c1")}}
		}, []string{"comment:reverted-by-gitops"}, ""},
		{"receipt refused", "the default branch's policy changed and no longer authorizes the change: a failed check and a comment", func(t *testing.T) state {
			in := input(t, eastDenied, scaled)
			return state{in: in, prs: []forge.PullRequest{proposed(t, input(t, nil, scaled), 1, "c1")}}
		}, []string{"check", "comment:receipt-failed"}, "no longer authorizes this change"},
		{"receipt refused, said", "once per policy version", func(t *testing.T) state {
			in := input(t, eastDenied, scaled)
			pr := edit(t, proposed(t, input(t, nil, scaled), 1, "c1"), func(m *Marker) { m.Notes = []string{noteReceipt + ":" + in.PolicySum[:12]} })
			return state{in: in, prs: []forge.PullRequest{pr}}
		}, []string{"keep"}, "no longer authorized"},
		{"receipt refused, policy allows again", "a refused receipt is replaced by regenerating the branch, whose new head gets a fresh check", func(t *testing.T) state {
			in := input(t, nil, scaled)
			pr := edit(t, proposed(t, in, 1, "c1"), func(m *Marker) { m.Notes = []string{noteReceipt + ":abcdefabcdef"} })
			return state{in: in, prs: []forge.PullRequest{pr}}
		}, []string{"disarm", "update"}, ""},
		{"denied under the same policy", "a newer observation with weaker attribution is denied; the checked proposal stands", func(t *testing.T) state {
			o := replicas(4, "kubectl", time.Minute)
			o.Change.Attribution = observe.AttributionAsserted
			return state{in: input(t, nil, o), prs: []forge.PullRequest{proposed(t, input(t, nil, scaled), 1, "c1")}}
		}, []string{"keep"}, "is denied; the proposal is unchanged"},
		{"foreign pull request", "a pull request the App did not open is not the unit's, even with a copied marker", func(t *testing.T) state {
			in := input(t, nil, scaled)
			pr := proposed(t, in, 1, "c1")
			pr.Mine = false
			return state{in: in, prs: []forge.PullRequest{pr}}
		}, []string{"open"}, ""},
		{"copied marker", "a marker counts only on the branch it names", func(t *testing.T) state {
			in := input(t, nil, scaled)
			pr := proposed(t, in, 1, "c1")
			pr.HeadRef = "copycat"
			return state{in: in, prs: []forge.PullRequest{pr}}
		}, []string{"open"}, ""},
		{"merged, not observed since", "no observation after the merge is no evidence: the follow-up waits", func(t *testing.T) state {
			return state{in: input(t, setValues("4"), scaled), prs: []forge.PullRequest{merged(t, 10*time.Minute)}}
		}, []string{"follow-up"}, "not observed since the merge"},
		{"merged, within the grace period", "live at the accepted value by hand, but before the grace period ends: wait", func(t *testing.T) state {
			return state{in: input(t, setValues("4"), replicas(4, "kubectl", 12*time.Minute)), prs: []forge.PullRequest{merged(t, 10*time.Minute)}}
		}, []string{"follow-up"}, "waiting for an observation after the grace period"},
		{"merged, applied", "the forward apply wrote the accepted value: proven at once", func(t *testing.T) state {
			return state{in: input(t, setValues("4"), withManager(replicas(4, "", 11*time.Minute), 4, "argocd-controller")), prs: []forge.PullRequest{merged(t, 10*time.Minute)}}
		}, []string{"proven"}, "written by the forward apply"},
		{"merged, settled", "still at the accepted value after the grace period: proven", func(t *testing.T) state {
			return state{in: input(t, setValues("4"), replicas(4, "kubectl", 10*time.Minute+grace)), prs: []forge.PullRequest{merged(t, 10*time.Minute)}}
		}, []string{"proven"}, ""},
		{"merged, settled by an asserted source", "a receipt accepted on audit-log attribution is not proven by a source trusted at asserted, whatever it says", func(t *testing.T) state {
			o := replicas(4, "kubectl", 10*time.Minute+grace)
			o.Source, o.Trust = observe.SourceFile, observe.AttributionAsserted
			return state{in: input(t, setValues("4"), o), prs: []forge.PullRequest{merged(t, 10*time.Minute)}}
		}, []string{"follow-up"}, "only by sources trusted below audit-log"},
		{"merged, reverted by an asserted source", "nor reverted by one", func(t *testing.T) state {
			o := withManager(replicas(3, "", 10*time.Minute+grace+time.Minute), 3, "kubectl")
			o.Trust = observe.AttributionAsserted
			return state{in: input(t, setValues("4"), o), prs: []forge.PullRequest{merged(t, 10*time.Minute)}}
		}, []string{"follow-up"}, "only by sources trusted below audit-log"},
		{"merged, reverted", "at another value after the grace period: the fix did not stick", func(t *testing.T) state {
			o := withManager(replicas(3, "", 10*time.Minute+grace+time.Minute), 3, "kubectl")
			o.Change.Actor, o.Change.Groups = "mallory", nil
			return state{in: input(t, setValues("4"), o), prs: []forge.PullRequest{merged(t, 10*time.Minute)}}
		}, []string{"reverted"}, "redis-replicas spec.replicas is live 3, not 4"},
		{"merged, already proven", "the result label is the follow-up's memory: never looked at again", func(t *testing.T) state {
			pr := merged(t, 10*time.Minute)
			pr.Labels = append(pr.Labels, LabelProven)
			return state{in: input(t, setValues("4"), replicas(4, "kubectl", time.Hour)), prs: []forge.PullRequest{pr}}
		}, nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := decideAll(t, tc.state(t))
			if k := kinds(got); !slices.Equal(k, tc.want) {
				t.Fatalf("%s\neffects %v, want %v\n%s", tc.why, k, tc.want, reasons(got))
			}
			if tc.reason != "" && !slices.ContainsFunc(got, func(e Effect) bool { return strings.Contains(e.Reason, tc.reason) }) {
				t.Errorf("%s\nno reason says %q:\n%s", tc.why, tc.reason, reasons(got))
			}
		})
	}
}

func reasons(es []Effect) string {
	var b strings.Builder
	for _, e := range es {
		b.WriteString("  " + string(e.Kind) + ": " + e.Reason + "\n")
	}
	return b.String()
}
