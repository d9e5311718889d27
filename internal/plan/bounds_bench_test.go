package plan

import (
	"fmt"
	"testing"
	"time"

	"github.com/backflow-dev/backflow/internal/observe"
	"github.com/backflow-dev/backflow/internal/repoconfig"
)

// BenchmarkUnmappedFields plans one observation with n fields no policy
// entry maps: every one is a deny reason, de-duplicated by a set, so the
// time grows linearly in n.
func BenchmarkUnmappedFields(b *testing.B) {
	cfg, err := repoconfig.Parse(repoconfig.Path, []byte(`version: 1
policy: policy.yaml
environments:
  prod: {clusters: [c1]}
units:
  - {name: redis, environment: prod, valuesFiles: [values.yaml], objects: ["apps/v1|StatefulSet|redis|*"]}
roles:
  sre: {groups: [sre], attribution: [asserted]}
`))
	if err != nil {
		b.Fatal(err)
	}
	now := time.Date(2026, 6, 18, 12, 0, 0, 0, time.UTC)
	for _, n := range []int{1_000, 10_000} {
		o := observe.Observation{Cluster: "c1", ObservedAt: now, Object: observe.ObjectKey{APIVersion: "apps/v1", Kind: "StatefulSet", Namespace: "redis", Name: "redis-x"},
			Change: observe.Change{Actor: "alice", Groups: []string{"sre"}, Attribution: observe.AttributionAsserted}}
		for i := range n {
			o.Fields = append(o.Fields, observe.Field{Path: fmt.Sprintf("spec.f%d", i), Live: i, Desired: -1, HasDesired: true})
		}
		snap := Snapshot{Config: cfg, Files: map[string][]byte{"values.yaml": []byte("a: 1\n")}}
		b.Run(fmt.Sprintf("fields=%d", n), func(b *testing.B) {
			for range b.N {
				Plan([]observe.Observation{o}, nil, snap, now)
			}
		})
	}
}
