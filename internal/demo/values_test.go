package demo

import (
	"context"
	"testing"

	"github.com/backflow-dev/backflow/internal/repoconfig"
)

// TestForwardApplyRendersTheUnitsFiles holds the forward apply to Helm's
// reading of a unit's values files: the chart is rendered with every file
// of the environment's unit, later files overriding earlier ones.
func TestForwardApplyRendersTheUnitsFiles(t *testing.T) {
	sample, err := SampleFiles()
	if err != nil {
		t.Fatal(err)
	}
	cfg := &repoconfig.Config{Units: []repoconfig.Unit{
		{Name: "redis", Environment: "prod", ValuesFiles: []string{"base.yaml", "prod.yaml"}, Objects: []string{"*|*|redis|*"},
			Chart: &repoconfig.Chart{Name: "bitnami/redis", Path: "charts/redis"}},
		{Name: "redis", Environment: "dev", ValuesFiles: []string{"dev.yaml"}, Objects: []string{"*|*|redis|*"},
			Chart: &repoconfig.Chart{Name: "bitnami/redis", Path: "charts/redis"}},
	}}
	files := map[string]string{
		"base.yaml": sample["envs/prod-us-east/redis/values.yaml"],
		"prod.yaml": "replica:\n  replicaCount: 5\n",
		"dev.yaml":  sample["envs/prod-us-east/redis/values.yaml"],
	}
	r := &run{ctx: context.Background()}
	got, err := r.render(cfg, "prod", files)
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := FieldValue(got.Objects[replicasKey], "spec.replicas"); v != int64(5) {
		t.Errorf("replicas %v: want the later file's 5", v)
	}
	if v, _ := FieldValue(got.Objects[masterKey], imageField); v != defaultImage {
		t.Errorf("master image %v: keys only the earlier file sets stay", v)
	}
	if _, err := r.render(cfg, "staging", files); err == nil {
		t.Error("an environment without a unit rendered")
	}
}
