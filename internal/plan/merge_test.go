package plan

import (
	"testing"

	"github.com/backflow-dev/backflow/internal/repoconfig"
)

// A null in a values file is no value wherever it sits, as Helm's
// coalescing has it. The planner's own merge deleted a null only where it
// overrode a key an earlier file held, and kept as a null value one nested
// under a key no earlier file held, or in a unit's single file: the same
// file then said "null" or "nothing" depending on the files before it.
func TestMergeValuesNullIsNoValue(t *testing.T) {
	tests := []struct {
		why   string
		trees []map[string]any
	}{
		{"a null over a key an earlier file held", []map[string]any{{"a": map[string]any{"x": 1}}, {"a": map[string]any{"x": nil}}}},
		{"a null nested under a key no earlier file held", []map[string]any{{}, {"a": map[string]any{"x": nil}}}},
		{"a null nested in a unit's single file", []map[string]any{{"a": map[string]any{"x": nil}}}},
	}
	for _, tt := range tests {
		for name, merged := range map[string]map[string]any{"MergeValues": MergeValues(tt.trees), "mergeShared": mergeShared(tt.trees)} {
			if v, ok := repoconfig.Lookup(merged, "a.x"); ok {
				t.Errorf("%s: %s holds a.x = %v, want no value", tt.why, name, v)
			}
		}
	}
}
