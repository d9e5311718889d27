package bot

import (
	"strings"
	"testing"

	"github.com/backflow-dev/backflow/internal/forge"
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
