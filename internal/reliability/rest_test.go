package reliability

import (
	"fmt"
	"strings"
	"testing"

	gh "github.com/google/go-github/v62/github"

	"github.com/backflow-dev/backflow/internal/forge"
	"github.com/backflow-dev/backflow/internal/observe"
	"github.com/backflow-dev/backflow/internal/plan"
	"github.com/backflow-dev/backflow/internal/policy"
	"github.com/backflow-dev/backflow/internal/repoconfig"
)

// Case 22: the smaller findings. A 70 KB intent gives a pull request body
// under GitHub's 65,536 characters, and the local hub refuses a longer body
// with 422 as GitHub does; a Secret reported with kind secret, SECRET or
// Secrets is redacted; a live null for a key the values file does not hold
// is a noop.
func TestCase22TheRest(t *testing.T) {
	files := gitopsFiles(t)
	reviewOnly(files)
	e := newHubEnv(t, files)
	a := e.adapter(nil)
	src := &staticSource{}
	o := replicas(usEastNode, 4, e.clock.Now())
	o.Change.Intent = strings.Repeat("incident INC-1: ", 70_000/16)
	src.set(o)
	b := e.newBot(a, src, forge.CommitGit)
	e.cycle(b)
	longest := 0
	for _, pr := range e.pulls(a, e.repo) {
		longest = max(longest, len([]rune(pr.Body)))
	}
	if longest == 0 || longest > 65_536 {
		t.Errorf("the longest body has %d characters", longest)
	}
	carol := e.person("carol")
	_, resp, err := carol.Issues.Create(e.ctx, owner, repoName, &gh.IssueRequest{Title: gh.String("long"), Body: gh.String(strings.Repeat("x", 65_537))})
	hubStatus := 0
	if resp != nil {
		hubStatus = resp.StatusCode
	}
	if err == nil || hubStatus != 422 {
		t.Errorf("the hub took a 65,537-character issue body: %d %v", hubStatus, err)
	}

	cfg, err := repoconfig.Parse(repoconfig.Path, []byte(files[configPath]))
	if err != nil {
		t.Fatal(err)
	}
	pol, err := policy.Parse(policyPath, []byte(files[policyPath]))
	if err != nil {
		t.Fatal(err)
	}
	snap := plan.Snapshot{Config: cfg, Policy: pol, PolicyPath: policyPath, Files: map[string][]byte{valuesEast: []byte(files[valuesEast])}}
	leaked := 0
	kinds := []string{"Secret", "secret", "SECRET", "Secrets"}
	for _, kind := range kinds {
		s := replicas(usEastNode, "hunter2", e.clock.Now())
		s.Object = observe.ObjectKey{APIVersion: "v1", Kind: kind, Namespace: "redis", Name: "redis-auth"}
		s.Fields = []observe.Field{{Path: "data.password", Live: "hunter2", Desired: "old", HasDesired: true}}
		res := plan.Plan([]observe.Observation{s}, nil, snap, e.clock.Now())
		if out := fmt.Sprintf("%+v", res.Decisions); strings.Contains(out, "hunter2") {
			leaked++
			t.Errorf("kind %s: the value reached the decision: %s", kind, out)
		}
	}
	null := replicas(usEastNode, nil, e.clock.Now())
	null.Fields = []observe.Field{{Path: "spec.podManagementPolicy", Live: nil}}
	absent := snap
	absent.Files = map[string][]byte{valuesEast: []byte(strings.Replace(files[valuesEast], "  podManagementPolicy: OrderedReady\n", "", 1))}
	writes := 0
	for _, d := range plan.Plan([]observe.Observation{null}, nil, absent, e.clock.Now()).Decisions {
		if d.Outcome != plan.Noop {
			writes++
			t.Errorf("a live null for an absent key: %s %+v", d.Outcome, d.Changes)
		}
	}
	report(t, "22", "the-rest", "longest_body_chars", longest, "hub_status_for_65537_chars", hubStatus,
		"secret_values_shown", fmt.Sprintf("%d/%d", leaked, len(kinds)), "null_to_null_proposed", writes)
}
