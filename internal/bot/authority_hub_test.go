package bot

import (
	"slices"
	"strings"
	"testing"

	"github.com/backflow-dev/backflow/internal/forge"
	"github.com/backflow-dev/backflow/internal/localhub"
)

// An observation from a cluster no environment lists, claiming prod and
// attributed by the audit log, through the real adapter and the local hub:
// nothing is written, nothing opened, and the cycle reports why.
func TestHubUnlistedClusterClaimsProd(t *testing.T) {
	e := newHubEnv(t, forge.CommitGit, nil)
	before := e.file("main", valuesEast)
	o := replicas(8, 0)
	o.Cluster = "edge-eu-central-7"
	o.Environment = usEast
	o.Origin = "edge/observation.yaml:1"
	e.src.Result.Observations = append(e.src.Result.Observations, o)
	rep, counts, routes := e.cycle()
	if counts.Writes != 0 {
		t.Errorf("an unlisted cluster caused %d writes: %v", counts.Writes, routes)
	}
	if prs := e.pulls(); len(prs) != 0 {
		t.Errorf("pull requests opened: %+v", prs)
	}
	if after := e.file("main", valuesEast); after != before {
		t.Errorf("main's values changed:\n%s", after)
	}
	errs := strings.Join(rep.Repos[0].PlanErrors, "\n")
	if !strings.Contains(errs, "edge/observation.yaml:1") || !strings.Contains(errs, `cluster "edge-eu-central-7" is in no environment`) {
		t.Errorf("plan errors do not name the document and cluster: %q", errs)
	}
}

// A rule for prod-us-east only, on a value path defined only in a base file
// prod-eu-west also reads, through the real adapter and the local hub: the
// override lands in prod-us-east's own file, the base file and every file
// prod-eu-west reads are unchanged on main.
func TestHubSharedBaseFileNotEditedForOneEnvironment(t *testing.T) {
	const base = "envs/base/redis/values.yaml"
	const valuesWest = "envs/prod-eu-west/redis/values.yaml"
	e := newHubEnv(t, forge.CommitGit, func(files map[string]string) {
		files[base] = "# shared by every environment\nreplica:\n  replicaCount: 3 # the fleet's default\n"
		for _, f := range []string{valuesEast, valuesWest} {
			files[f] = strings.Replace(files[f], "  replicaCount: 3 # absorbs read load; scaled live during incidents\n", "", 1)
		}
		cfg := files[".github/backflow.yaml"]
		cfg = strings.ReplaceAll(cfg, "valuesFiles: [envs/", "valuesFiles: ["+base+", envs/")
		files[".github/backflow.yaml"] = cfg
		pol := files[".github/reverse-reconcile-policy.yaml"]
		files[".github/reverse-reconcile-policy.yaml"] = strings.Replace(pol, "            - prod-us-east\n            - prod-eu-west\n", "            - prod-us-east\n", 1)
	})
	westBefore, baseBefore := e.file("main", valuesWest), e.file("main", base)
	e.src.Result.Observations = append(e.src.Result.Observations, replicas(5, 0))
	rep, _, _ := e.cycle()
	prs := e.pulls()
	if len(prs) != 1 || !prs[0].Merged {
		t.Fatalf("want one merged pull request, got %+v\n%s", prs, rep.Text())
	}
	if got := e.file("main", base); got != baseBefore {
		t.Errorf("the shared base file changed on one environment's authority:\n%s", got)
	}
	if got := e.file("main", valuesWest); got != westBefore {
		t.Errorf("prod-eu-west's values changed:\n%s", got)
	}
	if got := e.file("main", valuesEast); !strings.Contains(got, "\n  replicaCount: 5\n") {
		t.Errorf("prod-us-east's own file lacks the override:\n%s", got)
	}
	m, _ := ParseMarker(prs[0].Body)
	r := e.file("main", m.Receipts[0])
	if !strings.Contains(r, "valuesFile: "+valuesEast) || !strings.Contains(r, "which units of prod-eu-west also read") {
		t.Errorf("the receipt does not say where and why:\n%s", r)
	}
}

// A person with write access adds a commit to an armed bot pull request,
// through the real adapter and the local hub (which, as GitHub, keeps
// auto-merge armed on such a push): the check for the new head is red with
// the reason, auto-merge is disarmed, the pull request is labelled and
// commented once, and nothing merges when the other checks turn green.
func TestHubPersonsCommitOnArmedBranch(t *testing.T) {
	e := newHubEnv(t, forge.CommitGit, nil)
	if err := e.hub.SetBranchProtection(testRepo, "main", CheckName, "ci/test"); err != nil {
		t.Fatal(err)
	}
	e.src.Result.Observations = append(e.src.Result.Observations, replicas(4, 0))
	e.cycle()
	prs := e.pulls()
	if len(prs) != 1 || !prs[0].AutoMergeEnabled {
		t.Fatalf("want one armed pull request: %+v", prs)
	}
	e.pushAsPerson(branchEast, "envs/prod-us-east/redis/extra-values.yaml", "master:\n  persistence:\n    size: 800Gi\n")
	head, err := e.adapter.BranchHead(e.ctx, e.repo, branchEast)
	if err != nil {
		t.Fatal(err)
	}
	if pr := e.pulls()[0]; !pr.AutoMergeEnabled {
		t.Fatal("the hub cancelled auto-merge on a collaborator's push; GitHub keeps it")
	}
	_, _, routes := e.cycle()
	pr := e.pulls()[0]
	if pr.AutoMergeEnabled {
		t.Error("auto-merge still armed after a person's commit")
	}
	if !slices.Contains(pr.Labels, LabelPersonCommit) || slices.Contains(pr.Labels, LabelPreAuthorized) {
		t.Errorf("labels %v", pr.Labels)
	}
	runs, err := e.adapter.ListCheckRuns(e.ctx, e.repo, head, CheckName)
	if err != nil || len(runs) != 1 || runs[0].Conclusion != forge.ConclusionFailure || !strings.Contains(runs[0].Summary, "commits backflow did not make") ||
		!strings.Contains(runs[0].Text, "envs/prod-us-east/redis/extra-values.yaml") {
		t.Errorf("check on the person's head, by the whole-diff bound naming the unclaimed file: %+v %v", runs, err)
	}
	if routes["POST /repos/{owner}/{repo}/issues/{number}/comments"] != 1 {
		t.Errorf("comments: %v", routes)
	}
	if _, err := e.adapter.CreateCheckRun(e.ctx, e.repo, forge.CheckRun{Name: "ci/test", HeadSHA: head, Status: forge.CheckCompleted, Conclusion: forge.ConclusionSuccess}); err != nil {
		t.Fatal(err)
	}
	if _, _, routes := e.cycle(); hasWrite(routes) {
		t.Errorf("acted again on a person's pull request: %v", routes)
	}
	if pr := e.pulls()[0]; pr.Merged || pr.State != forge.StateOpen {
		t.Errorf("merged or closed: %+v", pr)
	}
	if v := e.file("main", valuesEast); strings.Contains(v, "replicaCount: 4") {
		t.Errorf("main changed:\n%s", v)
	}
}

// A suspended installation is skipped: the other installation's
// repository still cycles, and the cycle reports no error.
func TestHubSuspendedInstallationSkipped(t *testing.T) {
	e := newHubEnv(t, forge.CommitGit, nil)
	files := gitopsFiles(t)
	if err := e.hub.CreateRepo(localhub.RepoOptions{Owner: "other", Name: "gitops", Files: files, AllowAutoMerge: true}); err != nil {
		t.Fatal(err)
	}
	other, err := e.hub.Install("other")
	if err != nil {
		t.Fatal(err)
	}
	if err := e.hub.Suspend(other, true); err != nil {
		t.Fatal(err)
	}
	e.src.Result.Observations = append(e.src.Result.Observations, replicas(4, 0))
	rep, _, _ := e.cycle()
	var names []string
	for _, rr := range rep.Repos {
		names = append(names, rr.Repo)
	}
	if len(names) != 1 || names[0] != testRepo {
		t.Errorf("cycled %v, want only %s", names, testRepo)
	}
	if prs := e.pulls(); len(prs) != 1 || !prs[0].Merged {
		t.Errorf("the active installation's write-back: %+v", prs)
	}
}

// GitHub refuses to arm auto-merge with an error the adapter does not
// recognise: the cycle does not fail the same way every time; it says so
// once on the pull request, quoting the error, and merges over REST pinned
// to the head once the required checks pass.
func TestHubUnrecognisedAutoMergeErrorFallsBack(t *testing.T) {
	e := newHubEnv(t, forge.CommitGit, nil)
	if err := e.hub.SetBranchProtection(testRepo, "main", CheckName, "ci/test"); err != nil {
		t.Fatal(err)
	}
	e.hub.Faults().Add(localhub.Fault{Kind: localhub.FaultGraphQLError, Method: "POST", Route: "/graphql", Message: "Merge queue is required for this branch"})
	e.src.Result.Observations = append(e.src.Result.Observations, replicas(4, 0))
	_, _, routes := e.cycle()
	prs := e.pulls()
	if len(prs) != 1 || prs[0].Merged || prs[0].AutoMergeEnabled {
		t.Fatalf("want one open, unarmed pull request: %+v", prs)
	}
	if routes["POST /repos/{owner}/{repo}/issues/{number}/comments"] != 1 {
		t.Fatalf("comments: %v", routes)
	}
	comments, err := e.adapter.ListComments(e.ctx, e.repo, prs[0].Number)
	if err != nil || len(comments) != 1 || !strings.Contains(comments[0].Body, "Merge queue is required for this branch") {
		t.Fatalf("the comment does not quote the error: %+v %v", comments, err)
	}
	if _, _, routes := e.cycle(); routes["POST /repos/{owner}/{repo}/issues/{number}/comments"] != 0 {
		t.Errorf("commented again: %v", routes)
	}
	if _, err := e.adapter.CreateCheckRun(e.ctx, e.repo, forge.CheckRun{Name: "ci/test", HeadSHA: prs[0].HeadSHA, Status: forge.CheckCompleted, Conclusion: forge.ConclusionSuccess}); err != nil {
		t.Fatal(err)
	}
	e.cycle()
	if pr := e.pulls()[0]; !pr.Merged {
		t.Fatalf("not merged over REST once green: %+v", pr)
	}
	if v := e.file("main", valuesEast); !strings.Contains(v, "replicaCount: 4") {
		t.Errorf("main:\n%s", v)
	}
}

// Two units' write-backs in one cycle: the first merges at once (moving
// the default branch), and the second is still written and merged in the
// same cycle, with either commit method.
func TestHubTwoWriteBacksAfterAnAutoMerge(t *testing.T) {
	for _, method := range []forge.CommitMethod{forge.CommitGit, forge.CommitAPI} {
		t.Run(string(method), func(t *testing.T) {
			e := newHubEnv(t, method, nil)
			west := replicas(5, 0)
			west.Cluster = "prod-eu-west-1"
			e.src.Result.Observations = append(e.src.Result.Observations, replicas(4, 0), west)
			rep, _, _ := e.cycle()
			prs := e.pulls()
			if len(prs) != 2 || !prs[0].Merged || !prs[1].Merged {
				t.Fatalf("want two merged pull requests in one cycle, got %+v\n%s", prs, rep.Text())
			}
		})
	}
}

// The App's check on a head a person pushed is the whole-diff bound CI
// runs (diffbound.Check), over the files the hub reports changed, and red
// either way, since no receipt speaks for a head backflow did not make: a
// commit that changes only a comment of the receipts' values file is said
// to stay within the receipts; one that changes a value no receipt claims
// names the value path. Auto-merge is disarmed either way.
func TestHubPersonsCommitCheckedByTheWholeDiffBound(t *testing.T) {
	for _, tc := range []struct {
		name    string
		edit    func(string) string
		want    string
		mention string
	}{
		{"a comment", func(v string) string { return "# reviewed by carol\n" + v }, forge.ConclusionFailure, "its diff stays within the receipts"},
		{"an unclaimed value", func(v string) string {
			return strings.Replace(v, "podManagementPolicy: OrderedReady", "podManagementPolicy: Parallel", 1)
		}, forge.ConclusionFailure, "podManagementPolicy"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newHubEnv(t, forge.CommitGit, nil)
			if err := e.hub.SetBranchProtection(testRepo, "main", CheckName, "ci/test"); err != nil {
				t.Fatal(err)
			}
			e.src.Result.Observations = append(e.src.Result.Observations, replicas(4, 0))
			e.cycle()
			e.updateAsPerson(branchEast, valuesEast, tc.edit(e.file(branchEast, valuesEast)))
			head, err := e.adapter.BranchHead(e.ctx, e.repo, branchEast)
			if err != nil {
				t.Fatal(err)
			}
			e.cycle()
			runs, err := e.adapter.ListCheckRuns(e.ctx, e.repo, head, CheckName)
			if err != nil || len(runs) != 1 {
				t.Fatalf("checks on the person's head: %+v %v", runs, err)
			}
			if r := runs[0]; r.Conclusion != tc.want || !strings.Contains(r.Title+r.Summary+r.Text, tc.mention) {
				t.Errorf("check %s %q %q %q, want %s naming %q", r.Conclusion, r.Title, r.Summary, r.Text, tc.want, tc.mention)
			}
			if pr := e.pulls()[0]; pr.AutoMergeEnabled || !slices.Contains(pr.Labels, LabelPersonCommit) {
				t.Errorf("a person's pull request still armed or unlabelled: %+v", pr)
			}
			if _, _, routes := e.cycle(); hasWrite(routes) {
				t.Errorf("checked the same head again: %v", routes)
			}
		})
	}
}
