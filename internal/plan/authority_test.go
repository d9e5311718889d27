package plan

import (
	"strings"
	"testing"

	"github.com/backflow-dev/backflow/internal/observe"
)

// TestClusterBindsEnvironment: the repository, not the document, says which
// environment a cluster belongs to.
func TestClusterBindsEnvironment(t *testing.T) {
	for _, tc := range []struct {
		name, why         string
		cluster, docEnv   string
		attribution       observe.Attribution
		wantOutcome       Outcome
		wantEnv           string
		wantErrorContains []string
	}{
		{name: "listed cluster", why: "the config's environment decides",
			cluster: "euw-1", attribution: observe.AttributionAuditLog, wantOutcome: Allow, wantEnv: "prod-eu-west"},
		{name: "listed cluster, same environment named", why: "a document agreeing with the config is fine",
			cluster: "euw-1", docEnv: "prod-eu-west", attribution: observe.AttributionAuditLog, wantOutcome: Allow, wantEnv: "prod-eu-west"},
		{name: "unlisted cluster naming prod", why: "a cluster no environment lists cannot claim one, however trusted",
			cluster: "edge-7", docEnv: "prod-us-east", attribution: observe.AttributionAuditLog, wantOutcome: Unmapped,
			wantErrorContains: []string{"obs.yaml#0", `cluster "edge-7"`, "no environment"}},
		{name: "unlisted cluster, no environment named", why: "still an error, not a silent skip",
			cluster: "edge-7", attribution: observe.AttributionAuditLog, wantOutcome: Unmapped,
			wantErrorContains: []string{"obs.yaml#0", `cluster "edge-7"`}},
		{name: "listed cluster naming another environment", why: "the document contradicts the repository: refused",
			cluster: "euw-1", docEnv: "prod-us-east", attribution: observe.AttributionAuditLog, wantOutcome: Unmapped,
			wantErrorContains: []string{"obs.yaml#0", "prod-us-east", "prod-eu-west"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := byAlice(tc.cluster, "redis-replicas", t0, field("spec.replicas", 4, 3))
			o.Environment = tc.docEnv
			o.Origin = "obs.yaml#0"
			o.Change.Attribution = tc.attribution
			res := Plan([]observe.Observation{o}, nil, snapshot(t, testConfig), testNow)
			d := only(t, res)
			if d.Outcome != tc.wantOutcome || d.Environment != tc.wantEnv {
				t.Fatalf("%s: got %s in %q, want %s in %q (%v)", tc.why, d.Outcome, d.Environment, tc.wantOutcome, tc.wantEnv, d.Reasons)
			}
			if tc.wantOutcome != Allow {
				if len(res.WriteBacks) != 0 || d.WriteBack != "" || d.Receipt != nil {
					t.Errorf("%s: a refused observation was written back", tc.why)
				}
				if len(res.Errors) != 1 {
					t.Fatalf("%s: errors %q, want one", tc.why, res.Errors)
				}
				for _, s := range tc.wantErrorContains {
					if !strings.Contains(res.Errors[0], s) {
						t.Errorf("%s: error %q lacks %q", tc.why, res.Errors[0], s)
					}
				}
			} else if len(res.Errors) != 0 {
				t.Errorf("errors %q", res.Errors)
			}
		})
	}
}
