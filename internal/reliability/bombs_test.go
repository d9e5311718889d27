package reliability

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/backflow-dev/backflow/internal/observe"
	"github.com/backflow-dev/backflow/internal/plan"
	"github.com/backflow-dev/backflow/internal/policy"
	"github.com/backflow-dev/backflow/internal/repoconfig"
	"github.com/backflow-dev/backflow/internal/values"
)

// aliasBomb is a "billion laughs": levels of anchors, each aliasing the
// previous one ten times, under a key every reader accepts at the top.
func aliasBomb(levels int) string {
	var b strings.Builder
	b.WriteString("l0: &l0 [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n")
	for i := 1; i <= levels; i++ {
		fmt.Fprintf(&b, "l%d: &l%d [", i, i)
		for j := range 10 {
			if j > 0 {
				b.WriteString(",")
			}
			fmt.Fprintf(&b, "*l%d", i-1)
		}
		b.WriteString("]\n")
	}
	return b.String()
}

// deepFlow nests depth flow sequences (or mappings) under key.
func deepFlow(key string, depth int, mapping bool) string {
	opening, closing := "[", "]"
	if mapping {
		opening, closing = "{a: ", "}"
	}
	return key + ": " + strings.Repeat(opening, depth) + "1" + strings.Repeat(closing, depth) + "\n"
}

// huge is a valid-looking document of at least size bytes: many keys.
func huge(prefix string, size int) string {
	var b strings.Builder
	b.WriteString(prefix)
	for i := 0; b.Len() < size; i++ {
		fmt.Fprintf(&b, "key%08d: \"%s\"\n", i, strings.Repeat("v", 100))
	}
	return b.String()
}

// bombParsers are the four readers of untrusted YAML, each as the bot
// uses it; each returns nil when it accepted the input.
var bombParsers = []struct {
	name  string
	parse func(data []byte) error
}{
	{"policy", func(data []byte) error {
		_, err := policy.Parse("policy.yaml", data)
		return err
	}},
	{"repo config", func(data []byte) error {
		_, err := repoconfig.Parse(repoconfig.Path, data)
		return err
	}},
	{"values file (editor)", func(data []byte) error {
		zero := 0
		_, _, err := values.Set(data, []values.Edit{{Path: "replica.replicaCount", Value: 4}}, values.Options{Document: &zero})
		return err
	}},
	{"values file (planner)", planValuesBomb},
	{"observation", func(data []byte) error {
		res := observe.ParseBytes(data, observe.Options{Name: "observations.yaml", Ceiling: observe.AttributionAuditLog})
		if len(res.Observations)+len(res.Triggers) > 0 {
			return nil
		}
		return errors.Join(res.Errors...)
	}},
}

// planValuesBomb plans the seed's observation with data as the unit's
// values file: the planner must refuse the file (fail closed) rather than
// read it.
func planValuesBomb(data []byte) error {
	cfg, err := repoconfig.Parse(repoconfig.Path, []byte(bombConfig))
	if err != nil {
		return fmt.Errorf("the test config: %w", err)
	}
	pol, err := policy.Parse(policyPath, []byte(bombPolicy))
	if err != nil {
		return fmt.Errorf("the test policy: %w", err)
	}
	snap := plan.Snapshot{Config: cfg, Policy: pol, PolicyPath: policyPath, Files: map[string][]byte{valuesEast: data}}
	at := time.Date(2026, 6, 18, 12, 0, 0, 0, time.UTC)
	res := plan.Plan([]observe.Observation{replicas(usEastNode, 4, at)}, nil, snap, at)
	for _, d := range res.Decisions {
		if d.Outcome == plan.Allow {
			return nil
		}
	}
	if len(res.WriteBacks) > 0 {
		return nil
	}
	return fmt.Errorf("refused: %s", strings.Join(res.Errors, "; "))
}

const bombConfig = `version: 1
policy: .github/reverse-reconcile-policy.yaml
environments:
  prod-us-east: {clusters: [prod-us-east-1]}
units:
  - name: redis
    environment: prod-us-east
    valuesFiles: [envs/prod-us-east/redis/values.yaml]
    objects: ["apps/v1|StatefulSet|redis|redis-*"]
roles:
  platform-sre: {groups: [sre], attribution: [audit-log]}
`

const bombPolicy = `apiVersion: helm-expt.confighub.com/v1alpha1
kind: ReverseReconcilePolicy
metadata: {name: p}
spec:
  chart: bitnami/redis
  default: deny
  rules:
    - role: platform-sre
      reason: scale
      mayAccept:
        - valuePath: replica.replicaCount
          field: spec.replicas
          objects: ["apps/v1|StatefulSet|redis|redis-replicas"]
          environments: [prod-us-east]
`

// maxRefusalAlloc bounds what one refusal may allocate.
const maxRefusalAlloc = 128 << 20

// Case 6: alias expansion, 10,000-deep nesting and multi-megabyte
// documents, fed as policy, repo config, values file and observation, are
// refused, each with bounded time and memory. The figures are the worst
// wall time and the worst bytes allocated by one refusal (measured, not
// asserted against a clock).
func TestCase06YAMLBombs(t *testing.T) {
	// Over every reader's cap: 1 MiB for the policy and the repo config,
	// 4 MiB for values files, 8 MiB for observations.
	size := count(9<<20, 24<<20)
	bombs := []struct{ name, data string }{
		{"alias expansion (10^9 nodes)", aliasBomb(9)},
		{"alias expansion inside a values key", "replica:\n  replicaCount: 3\n" + aliasBomb(9)},
		{"10,000-deep flow sequences", deepFlow("replica", 10_000, false)},
		{"10,000-deep flow mappings", deepFlow("replica", 10_000, true)},
		{"10,000-deep JSON", `{"replica":` + strings.Repeat(`{"a":`, 10_000) + "1" + strings.Repeat("}", 10_000) + "}"},
		{fmt.Sprintf("%d MiB document", size>>20), huge("replica:\n  replicaCount: 3\n", size)},
	}
	var maxTime time.Duration
	var maxAlloc uint64
	refused, total := 0, 0
	for _, p := range bombParsers {
		for _, b := range bombs {
			data := []byte(b.data)
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			start := time.Now()
			err := p.parse(data)
			took := time.Since(start)
			runtime.ReadMemStats(&after)
			alloc := after.TotalAlloc - before.TotalAlloc
			maxTime, maxAlloc = max(maxTime, took), max(maxAlloc, alloc)
			total++
			if err == nil {
				t.Errorf("%s: %s was accepted", p.name, b.name)
				continue
			}
			// Bounded whatever the input: well under what reading a
			// multi-megabyte document or expanding the aliases would take.
			if alloc > maxRefusalAlloc {
				t.Errorf("%s: %s allocated %d bytes before being refused", p.name, b.name, alloc)
			}
			refused++
			msg := err.Error()
			if len(msg) > 160 {
				msg = msg[:160] + "..."
			}
			t.Logf("%s: %s refused in %s, %d bytes allocated: %s", p.name, b.name, took.Round(time.Microsecond), alloc, msg)
		}
	}
	report(t, "6", "yaml-bombs", "refused", refused, "inputs", total, "max_time_ms", float64(maxTime.Microseconds())/1000,
		"max_memory_bytes", maxAlloc)
}
