package demo

import (
	"fmt"
	"testing"

	"github.com/backflow-dev/backflow/internal/repoconfig"
)

// TestUnitValuesMergeAsThePlannerDoes holds the forward apply's values to
// the planner's: later files override earlier ones key by key, and a null
// in a later file deletes the key (Helm's -f semantics), so the demo's
// clusters converge on what the planner calls desired.
func TestUnitValuesMergeAsThePlannerDoes(t *testing.T) {
	cfg := &repoconfig.Config{Units: []repoconfig.Unit{
		{Name: "redis", Environment: "prod", ValuesFiles: []string{"base.yaml", "prod.yaml"}},
		{Name: "redis", Environment: "dev", ValuesFiles: []string{"dev.yaml"}},
	}}
	files := map[string]string{
		"base.yaml": "replica:\n  replicaCount: 3\n  persistence: {size: 8Gi}\nimage: {tag: \"7\"}\n",
		"prod.yaml": "replica:\n  replicaCount: 5\n  persistence: null\n",
		"dev.yaml":  "replica: {replicaCount: 1}\n",
	}
	got, err := unitValues(cfg, "prod", files)
	if err != nil {
		t.Fatal(err)
	}
	replica, _ := got["replica"].(map[string]any)
	if v, _ := repoconfig.Lookup(got, "replica.replicaCount"); fmt.Sprint(v) != "5" {
		t.Errorf("replicaCount = %v: want the later file's 5", v)
	}
	if _, ok := replica["persistence"]; ok {
		t.Errorf("persistence = %v: a null in a later file deletes the key", replica["persistence"])
	}
	if v, ok := repoconfig.Lookup(got, "image.tag"); !ok || v != "7" {
		t.Errorf("image.tag = %v: keys only the earlier file sets stay", v)
	}
}
