package render

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"helm.sh/helm/v4/pkg/chart/common/util"
	"helm.sh/helm/v4/pkg/chart/v2/loader"

	"github.com/backflow-dev/backflow/internal/repoconfig"
)

// The values the templates see are Helm's: the values files read as the
// bot reads them, layered and coalesced with the chart's defaults, equal
// what helm template -f ... -f ... gives the chart (the SDK's own reading and
// layering of -f files, and its coalescing). The last file nulls keys the chart has defaults
// for, at the top and nested, and one it has none for: Helm deletes the
// defaults there, so the files' nulls must reach the coalescing (dropped
// before it, the chart's defaults would come back).
func TestMergedValuesAreHelms(t *testing.T) {
	for _, name := range []string{"podinfo", "redis"} {
		t.Run(name, func(t *testing.T) {
			c := loadTestChart(t, name)
			ch, err := c.load()
			if err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			paths := []string{filepath.Join(chartRoots[name], name, "values.yaml"), filepath.Join(dir, "nulls.yaml")}
			nulls := "replicaCount: null\nimage:\n  pullPolicy: null\n  backflowNew: null\nserviceAccount: null\nbackflowAbsent: null\n"
			if err := os.WriteFile(paths[1], []byte(nulls), 0o600); err != nil {
				t.Fatal(err)
			}
			var files []map[string]any
			user := map[string]any{}
			for _, p := range paths {
				data, err := os.ReadFile(p)
				if err != nil {
					t.Fatal(err)
				}
				v, err := repoconfig.Values(p, data, nil)
				if err != nil {
					t.Fatal(err)
				}
				files = append(files, v)
				// helm template's -f: values.Options.MergeValues reads
				// and layers each file so.
				h, err := loader.LoadValues(bytes.NewReader(data))
				if err != nil {
					t.Fatal(err)
				}
				user = loader.MergeMaps(user, h)
			}
			got, err := c.mergedValues(files)
			if err != nil {
				t.Fatal(err)
			}
			want, err := util.CoalesceValues(ch, user)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(map[string]any(want), map[string]any(got)); d != "" {
				t.Errorf("the templates see other values than helm template (-helm +render):\n%s", d)
			}
			if _, ok := got["image"].(map[string]any)["pullPolicy"]; ok {
				t.Error("a file's null did not delete the chart's default image.pullPolicy")
			}
		})
	}
}
