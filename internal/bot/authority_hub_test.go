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
