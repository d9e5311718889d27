package lifecycle

import (
	"fmt"
	"testing"

	"github.com/backflow-dev/backflow/internal/plan"
	"github.com/backflow-dev/backflow/internal/repoconfig"
)

// TestDesiredMergesAsThePlanner holds the lifecycle's reading of desired
// values to the planner's merge, so that the two never disagree on whether
// a pull request is superseded.
func TestDesiredMergesAsThePlanner(t *testing.T) {
	u := repoconfig.Unit{Name: "redis", Environment: "prod", ValuesFiles: []string{"base.yaml", "prod.yaml", "broken.yaml"}}
	snap := plan.Snapshot{Config: &repoconfig.Config{Units: []repoconfig.Unit{u}}, Files: map[string][]byte{
		"base.yaml":   []byte("replica:\n  replicaCount: 3\n  persistence: {size: 8Gi}\nimage: {tag: \"7\"}\n"),
		"prod.yaml":   []byte("replica:\n  replicaCount: 5\n  persistence: null\n"),
		"broken.yaml": []byte("replica: [\n"),
	}}
	// The lifecycle reads desired values from the plan's result.
	in := &Input{Snapshot: snap, Result: plan.Plan(nil, nil, snap, t0)}
	tests := []struct {
		path string
		want string
		ok   bool
		why  string
	}{
		{"replica.replicaCount", "5", true, "a later file overrides an earlier one"},
		{"image.tag", "7", true, "a key only the earlier file sets stays"},
		{"replica.persistence.size", "", false, "a null in a later file deletes the key and all below it"},
		{"replica.persistence", "", false, "the deleted key itself is absent, not null"},
	}
	for _, tt := range tests {
		v, ok := in.Result.DesiredOf(u.Environment, u.Name, tt.path)
		if ok != tt.ok || (ok && fmt.Sprint(v) != tt.want) {
			t.Errorf("%s: desired(%s) = %v, %v; want %s, %v", tt.why, tt.path, v, ok, tt.want, tt.ok)
		}
	}
}
