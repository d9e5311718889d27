package reliability

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/backflow-dev/backflow/internal/app"
	"github.com/backflow-dev/backflow/internal/observe"
	"github.com/backflow-dev/backflow/internal/plan"
	"github.com/backflow-dev/backflow/internal/policy"
	"github.com/backflow-dev/backflow/internal/repoconfig"
	"github.com/backflow-dev/backflow/internal/server"
)

// Case 21: no input makes a cycle's work unbounded. An ignoreFields
// pattern with ten `**` against a 1,200-segment path is answered at once
// (one linear matcher for every glob); an observation of 100,000 fields,
// and a cycle's observations past 200,000 fields, are refused with the cap
// in the reason; the store of pushed observations stays under its byte cap
// however many large objects are pushed, at however many trust levels. Times are reported, not asserted
// (make bench holds the growth).
func TestCase21BoundedWork(t *testing.T) {
	files := gitopsFiles(t)
	files[configPath] += "ignoreFields: [\"" + strings.Repeat("**.a.", 10) + "z\"]\n"
	cfg, err := repoconfig.Parse(repoconfig.Path, []byte(files[configPath]))
	if err != nil {
		t.Fatal(err)
	}
	long := strings.TrimSuffix(strings.Repeat("a.", 1200), ".")
	start := time.Now()
	ignored := cfg.IgnoresField(long)
	globMS := float64(time.Since(start).Microseconds()) / 1000
	if ignored {
		t.Error("a path without z was ignored")
	}

	pol, err := policy.Parse(policyPath, []byte(files[policyPath]))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	huge := replicas(usEastNode, 4, now)
	huge.Fields = nil
	for i := range 100_000 {
		huge.Fields = append(huge.Fields, observe.Field{Path: fmt.Sprintf("spec.unmapped%d", i), Live: i, Desired: 0, HasDesired: true})
	}
	// The short form skips the cycle cap: planning 200,000 fields under
	// -race takes long.
	var many []observe.Observation
	for i := range count(0, 25) {
		o := replicas(usEastNode, 4, now)
		o.Object.Name = fmt.Sprintf("redis-%d", i)
		for j := range 9_000 {
			o.Fields = append(o.Fields, observe.Field{Path: fmt.Sprintf("spec.f%d", j), Live: j})
		}
		many = append(many, o)
	}
	snap := plan.Snapshot{Config: cfg, Policy: pol, PolicyPath: policyPath, Files: map[string][]byte{valuesEast: []byte(files[valuesEast])}}
	start = time.Now()
	res := plan.Plan(append([]observe.Observation{huge}, many...), nil, snap, now)
	planMS := float64(time.Since(start).Microseconds()) / 1000
	capped := 0
	for _, e := range res.Errors {
		if strings.Contains(e, "more than 10000") || strings.Contains(e, "more than 200000") {
			capped++
		}
	}
	// The 100,000-field observation, and the 25 of 9,000 past 200,000.
	want := 1 + max(0, len(many)-200_000/9_000)
	if capped != want {
		t.Errorf("%d observations refused by the field caps, want %d: %q", capped, want, res.Errors)
	}

	// Each object is pushed twice, by the bearer token (audit-log) and by
	// the secret URL (asserted): the store keeps it at both trust levels,
	// within the same byte cap.
	ps := app.NewPushStore(observe.AttributionAuditLog, usEastNode, func([]observe.ObjectKey) []string { return []string{fullName} })
	pushes := count(40, 80)
	big := strings.Repeat("x", 1<<20)
	for i := range pushes {
		ctx := context.Background()
		if i%2 == 1 {
			ctx = server.WithPushVia(ctx, server.ViaSecretURL)
		}
		doc := fmt.Sprintf(`apiVersion: backflow.dev/v1alpha1
kind: ObjectStateObserved
spec:
  cluster: prod-us-east-1
  observedAt: %q
  object: "v1|ConfigMap|redis|big-%d"
  fields:
    - field: data.blob
      live: %s
      desired: ""
`, now.Format(time.RFC3339), i/2, big)
		if _, err := ps.Accept(ctx, []byte(doc)); err != nil {
			t.Fatal(err)
		}
	}
	kept := ps.Read(context.Background())
	trusts := map[observe.Attribution]bool{}
	for _, o := range kept.Observations {
		trusts[o.TrustLevel()] = true
	}
	if len(trusts) != 2 {
		t.Errorf("the push store holds observations at %d trust levels, want both the bearer's and the secret URL's", len(trusts))
	}
	held, _ := json.Marshal(kept)
	if len(held) > 40<<20 {
		t.Errorf("the push store holds %d bytes after %d pushes of 1 MiB", len(held), pushes)
	}
	report(t, "21", "bounded-work", "glob_10_doublestars_1200_segments_ms", globMS, "plan_100k_and_225k_fields_ms", planMS,
		"observations_refused_by_field_caps", capped, "push_store_bytes_after_pushes", len(held), "pushes_of_1MiB", pushes)
}
