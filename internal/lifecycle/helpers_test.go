package lifecycle

import (
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/backflow-dev/backflow/internal/forge"
	"github.com/backflow-dev/backflow/internal/observe"
	"github.com/backflow-dev/backflow/internal/plan"
	"github.com/backflow-dev/backflow/internal/policy"
	"github.com/backflow-dev/backflow/internal/repoconfig"
)

const (
	usEast      = "prod-us-east"
	usEastNode  = "prod-us-east-1"
	branchEast  = "backflow/prod-us-east/redis"
	valuesEast  = "envs/prod-us-east/redis/values.yaml"
	replicasKey = "apps/v1|StatefulSet|redis|redis-replicas"
	policyPath  = ".github/reverse-reconcile-policy.yaml"
	head        = "1111111111111111111111111111111111111111"
)

// replicasObject is replicasKey as a key.
var replicasObject = observe.ObjectKey{APIVersion: "apps/v1", Kind: "StatefulSet", Namespace: "redis", Name: "redis-replicas"}

var (
	t0        = time.Date(2026, 6, 18, 12, 0, 0, 0, time.UTC)
	commitKey = []byte("test commit key")
	testRepo  = "acme/gitops"
	managers  = []string{"kustomize-controller", "helm-controller", "argocd-controller", "argocd-application-controller"}
)

// gitops is the test repository's files, by path.
func gitops(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	root := filepath.Join("testdata", "gitops")
	for _, p := range []string{repoconfig.Path, policyPath, valuesEast, "envs/prod-eu-west/redis/values.yaml"} {
		data, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(p)))
		if err != nil {
			t.Fatal(err)
		}
		out[p] = string(data)
	}
	return out
}

// input plans obs on the repository's files (edited by mutate) at head,
// as the cycle does, and returns the lifecycle's input.
func input(t *testing.T, mutate func(map[string]string), obs ...observe.Observation) *Input {
	t.Helper()
	// The plan is made when the cycle runs, after every observation it
	// reads (the follow-up's are made after the merge).
	now := t0.Add(5 * time.Minute)
	for _, o := range obs {
		if o.ObservedAt.After(now) {
			now = o.ObservedAt
		}
	}
	return inputAt(t, mutate, now, obs...)
}

// inputAt is input planned at now.
func inputAt(t *testing.T, mutate func(map[string]string), now time.Time, obs ...observe.Observation) *Input {
	t.Helper()
	files := gitops(t)
	if mutate != nil {
		mutate(files)
	}
	cfg, err := repoconfig.Parse(repoconfig.Path, []byte(files[repoconfig.Path]))
	if err != nil {
		t.Fatal(err)
	}
	pol, err := policy.Parse(cfg.Policy, []byte(files[cfg.Policy]))
	if err != nil {
		t.Fatal(err)
	}
	snap := plan.Snapshot{Config: cfg, Policy: pol, PolicyPath: path.Clean(cfg.Policy), Commit: head, Files: map[string][]byte{}}
	for _, u := range cfg.Units {
		for _, f := range u.ValuesFiles {
			snap.Files[f] = []byte(files[f])
		}
		if u.ConfigHub != nil {
			readHub(t, &snap, files, u.StoreRef().Path())
		}
	}
	for p, data := range files {
		// The default branch's receipts, as the snapshot reader lists them.
		if strings.HasPrefix(p, repoconfig.DefaultReceiptsDir) {
			if snap.Receipts == nil {
				snap.Receipts = map[string][]byte{}
			}
			snap.Receipts[p] = []byte(data)
		}
	}
	return &Input{DefaultBranch: "main", Head: head, Snapshot: snap, PolicySum: hashBytes([]byte(files[cfg.Policy])),
		Result: plan.Plan(obs, nil, snap, now), GitOpsManagers: managers, CommitKey: commitKey,
		Repo: testRepo}
}

// replicas is alice's audit-logged observation of redis-replicas in
// prod-us-east: spec.replicas live (desired 3), written by manager, at t0
// plus offset.
func replicas(live any, manager string, offset time.Duration) observe.Observation {
	at := t0.Add(offset)
	return observe.Observation{
		Source: observe.SourceKubernetes, Cluster: usEastNode, ObservedAt: at, Trust: observe.AttributionAuditLog,
		Object: replicasObject,
		Change: observe.Change{Actor: "alice", Groups: []string{"sre"}, Attribution: observe.AttributionAuditLog, Claimed: observe.AttributionAuditLog,
			At: at.Add(-time.Minute), Intent: "incident-fix: scale replicas to absorb a load spike"},
		Fields: []observe.Field{{Path: "spec.replicas", Live: live, Desired: 3, HasDesired: true, Manager: manager}},
	}
}

// proposed is the open pull request #n the bot would have opened for the
// write-back planned from in, recorded at commit sha, as the forge lists it
// (its labels and auto-merge set up).
func proposed(t *testing.T, in *Input, n int, sha string) forge.PullRequest {
	t.Helper()
	if len(in.Result.WriteBacks) != 1 {
		t.Fatalf("the plan has %d write-backs, want 1: %v", len(in.Result.WriteBacks), in.Result.Errors)
	}
	p := in.propose(&in.Result.WriteBacks[0])
	m := in.Marker(p, []string{sha}, nil)
	return forge.PullRequest{Number: n, Title: p.Title(), Body: p.Body(seal(m, commitKey, testRepo, n)), HeadRef: branchEast, HeadSHA: sha, BaseRef: "main",
		State: forge.StateOpen, Mine: true, Labels: wantedLabels(in.Snapshot.Config, usEast, p.AutoMerge), AutoMergeEnabled: p.AutoMerge}
}

// edit changes the pull request's marker.
func edit(t *testing.T, pr forge.PullRequest, f func(*Marker)) forge.PullRequest {
	t.Helper()
	m, ok := ParseMarker(pr.Body)
	if !ok {
		t.Fatal("no marker")
	}
	f(m)
	pr.Body = replaceMarker(pr.Body, seal(m, commitKey, testRepo, pr.Number))
	return pr
}

func closed(pr forge.PullRequest, merged bool) forge.PullRequest {
	pr.State, pr.Merged, pr.AutoMergeEnabled = forge.StateClosed, merged, false
	return pr
}

// kinds lists the effects' kinds, with Close's recorded reason and
// Comment's note: "close:superseded", "comment:human-commit".
func kinds(es []Effect) []string {
	var out []string
	for _, e := range es {
		k := string(e.Kind)
		switch {
		case e.Kind == Close:
			k += ":" + e.Closed
		case e.Kind == Comment:
			k += ":" + strings.SplitN(e.Note, ":", 2)[0]
		}
		out = append(out, k)
	}
	return out
}
