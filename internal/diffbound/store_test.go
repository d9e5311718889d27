package diffbound

import (
	"strings"
	"testing"
	"time"

	"github.com/backflow-dev/backflow/internal/hubstore"
	"github.com/backflow-dev/backflow/internal/plan"
	"github.com/backflow-dev/backflow/internal/repoconfig"
)

const configHubConfig = `version: 1
policy: .github/policy.yaml
environments:
  prod:
    clusters: [prod-1]
units:
  - name: redis
    environment: prod
    confighub: {space: prod, unit: redis}
    objects: ["apps/v1|StatefulSet|redis|*"]
  - name: web
    environment: prod
    confighub: {space: prod, unit: web}
    objects: ["apps/v1|Deployment|web|*"]
roles:
  sre:
    groups: [sre]
    attribution: [audit-log]
`

const configHubPolicy = `apiVersion: backflow.dev/v1alpha1
kind: ReverseReconcilePolicy
metadata: {name: redis}
spec:
  default: deny
  rules:
    - role: sre
      reason: scale
      mayAccept:
        - field: spec.replicas
          autoMerge: true
          objects: ["apps/v1|StatefulSet|redis|redis-replicas"]
          environments: [prod]
`

// configHubWriteBack is the planner's pull request for alice's 3 -> 5 on a
// unit whose desired state is a ConfigHub Unit: the receipt alone.
func configHubWriteBack(t *testing.T) Input {
	t.Helper()
	cfg, pol := parsed(t, configHubConfig, configHubPolicy)
	data := "apiVersion: apps/v1\nkind: StatefulSet\nmetadata:\n  name: redis-replicas\n  namespace: redis\nspec:\n  replicas: 3\n"
	snap := plan.Snapshot{Config: cfg, Policy: pol, PolicyPath: ".github/policy.yaml",
		Files: map[string][]byte{"confighub://prod/redis": []byte(data)},
		Heads: map[repoconfig.StoreRef]plan.Head{*cfg.Units[0].StoreRef(): hubstore.Head(*cfg.Units[0].ConfigHub, "h", 1)}}
	return onlyWriteBack(t, snap, scaledTo5("prod-1", time.Date(2026, 6, 18, 12, 0, 0, 0, time.UTC)))
}

func TestCheckConfigHub(t *testing.T) {
	for _, tc := range []struct {
		why    string
		change func(in *Input)
		want   []string
	}{
		{why: "the planner's own pull request is its receipt alone"},
		{why: "the receipt may not claim another unit's Unit", change: func(in *Input) {
			rp := receiptPath(*in)
			in.Head[rp] = []byte(strings.ReplaceAll(string(in.Head[rp]), "writtenFile: confighub://prod/redis", "writtenFile: confighub://prod/web"))
		}, want: []string{`names "confighub://prod/web", but unit redis in prod is confighub:prod/redis`}},
		{why: "a field is written at its own path", change: func(in *Input) {
			rp := receiptPath(*in)
			in.Head[rp] = []byte(strings.Replace(string(in.Head[rp]), "writtenPath: spec.replicas", "writtenPath: spec.serviceName", 1))
		}, want: []string{"writes spec.replicas at spec.serviceName, but the field of a document in a revision store is written at its own path"}},
		{why: "a repository file beside the receipt is unclaimed", change: func(in *Input) {
			in.Changed = append(in.Changed, "deploy/redis.yaml")
			in.Head["deploy/redis.yaml"] = []byte("x: 1\n")
		}, want: []string{"deploy/redis.yaml: changed, but it is neither a receipt"}},
	} {
		in := configHubWriteBack(t)
		if len(in.Changed) != 1 {
			t.Fatalf("the pull request changes %v, want its receipt alone", in.Changed)
		}
		if tc.change != nil {
			tc.change(&in)
		}
		r := Check(in)
		all := strings.Join(r.Violations, "\n")
		if len(tc.want) == 0 && !r.OK() {
			t.Errorf("%s: %s", tc.why, all)
		}
		for _, w := range tc.want {
			if !strings.Contains(all, w) {
				t.Errorf("%s: violations\n%s\nwant %s", tc.why, all, w)
			}
		}
	}
}
