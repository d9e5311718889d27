package repoconfig_test

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/backflow-dev/backflow/internal/observe"
	"github.com/backflow-dev/backflow/internal/repoconfig"
	"github.com/backflow-dev/backflow/internal/values"
)

// TestDocumentsReadTheSameEverywhere holds the editor, the planner's values
// reader and the observation parser to the same document split: a file one
// of them reads as one document is one document for all of them.
func TestDocumentsReadTheSameEverywhere(t *testing.T) {
	tests := []struct {
		why  string
		head string // what comes before `replicaCount: 3`
		tail string // what comes after it
	}{
		{"a directive belongs to the document the marker opens", "%YAML 1.1\n---\n", ""},
		{"comments before the marker belong to the document", "# values for redis\n---\n", ""},
		{"an explicit end of document ends nothing more", "---\n", "...\n"},
		{"a byte-order mark is not content", "\ufeff%YAML 1.1\n---\n", ""},
		{"a comment after the marker is not content", "--- # the values\n", "# end\n"},
	}
	observation, err := os.ReadFile("../plan/testdata/scenarios/seed-incident/observations/redis-replicas.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		t.Run(tt.why, func(t *testing.T) {
			data := []byte(tt.head + "replicaCount: 3\n" + tt.tail)

			got, err := values.Get(data, "replicaCount", values.Options{})
			if err != nil || fmt.Sprint(got) != "3" {
				t.Errorf("values.Get = %v, %v; want 3", got, err)
			}
			f, err := values.Parse(data, values.Options{})
			if err != nil {
				t.Fatalf("values.Parse: %v", err)
			}
			out, _, err := f.Set([]values.Edit{{Path: "replicaCount", Value: 4}})
			if err != nil || !strings.Contains(string(out), "replicaCount: 4\n") {
				t.Errorf("values Set = %q, %v", out, err)
			}

			tree, err := repoconfig.Values("values.yaml", data, nil)
			if err != nil {
				t.Fatalf("repoconfig.Values: %v", err)
			}
			if v, ok := tree["replicaCount"]; !ok || fmt.Sprint(v) != "3" {
				t.Errorf("repoconfig.Values = %v; want replicaCount 3", tree)
			}

			obs := []byte(tt.head + string(observation) + tt.tail)
			res := observe.ParseBytes(obs, observe.Options{Name: "obs.yaml"})
			if len(res.Errors) != 0 || len(res.Observations) != 1 {
				t.Errorf("observe.ParseBytes: %d observations, errors %v; want 1 and none", len(res.Observations), res.Errors)
			}
		})
	}
}
