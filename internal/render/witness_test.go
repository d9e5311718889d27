package render_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/backflow-dev/backflow/internal/observe"
	"github.com/backflow-dev/backflow/internal/plan"
	"github.com/backflow-dev/backflow/internal/policy"
	"github.com/backflow-dev/backflow/internal/receipt"
	"github.com/backflow-dev/backflow/internal/render"
	"github.com/backflow-dev/backflow/internal/repoconfig"
)

var (
	now = time.Date(2026, 6, 18, 12, 5, 0, 0, time.UTC)
	t0  = time.Date(2026, 6, 18, 12, 0, 0, 0, time.UTC)
)

// The repository the tests plan against: the real charts sit under
// charts/ (the demo's sample repository, internal/demo/sample), the values
// in memory.
const (
	repoRoot   = "../demo/sample"
	valuesPath = "envs/prod/redis/values.yaml"
)

const redisConfig = `version: 1
policy: .github/policy.yaml
environments:
  prod:
    clusters: [prod-1]
units:
  - name: redis
    environment: prod
    valuesFiles: [envs/prod/redis/values.yaml]
    objects: ["*|*|redis|*"]
    chart: {name: bitnami/redis, version: 23.1.1, path: charts/redis}
roles:
  platform-sre:
    groups: [sre]
`

const redisValues = `# redis in prod
architecture: replication
auth:
  enabled: true
  existingSecret: redis-auth
image:
  pullPolicy: IfNotPresent
replica:
  replicaCount: 3 # scaled live during incidents
`

// policyFor authorizes one field of one object through one value path.
func policyFor(valuePath, field, object string) string {
	return `apiVersion: backflow.dev/v1alpha1
kind: ReverseReconcilePolicy
metadata:
  name: redis
spec:
  default: deny
  rules:
    - role: platform-sre
      mayAccept:
        - valuePath: ` + valuePath + `
          field: ` + field + `
          objects: ["` + object + `"]
          environments: [prod]
`
}

func snapshot(t testing.TB, config, pol, values string) plan.Snapshot {
	t.Helper()
	cfg, err := repoconfig.Parse(repoconfig.Path, []byte(config))
	if err != nil {
		t.Fatal(err)
	}
	p, err := policy.Parse(".github/policy.yaml", []byte(pol))
	if err != nil {
		t.Fatal(err)
	}
	return plan.Snapshot{
		Config: cfg, Policy: p, PolicyPath: ".github/policy.yaml", Commit: strings.Repeat("a", 40),
		Files:    map[string][]byte{valuesPath: []byte(values)},
		Renderer: render.NewUnits(context.Background(), render.DirSource{Root: repoRoot}, nil, render.Bounds{}),
	}
}

// change is an audit-log attributed live change by alice (group sre).
func change(kind, name string, path string, live, desired any) observe.Observation {
	return observe.Observation{
		Source: observe.SourceKubernetes, Cluster: "prod-1", ObservedAt: t0,
		Object: observe.ObjectKey{APIVersion: "apps/v1", Kind: kind, Namespace: "redis", Name: name},
		Change: observe.Change{Actor: "alice", Groups: []string{"sre"}, Attribution: observe.AttributionAuditLog, Claimed: observe.AttributionAuditLog},
		Fields: []observe.Field{{Path: path, Live: live, Desired: desired, HasDesired: true}},
	}
}

const replicas = "apps/v1|StatefulSet|redis|redis-replicas"

func TestWitnessRedis(t *testing.T) {
	scale := change("StatefulSet", "redis-replicas", "spec.replicas", 4, 3)
	pull := change("StatefulSet", "redis-replicas", "spec.template.spec.containers[0].imagePullPolicy", "Always", "IfNotPresent")
	cases := []struct {
		name, why string
		policy    string
		values    string
		obs       observe.Observation
		// want is the outcome; reason a substring of a reason of a deny;
		// failed says the chart could not be witnessed at all, an error
		// the plan lists (and the next cycle retries).
		want   plan.Outcome
		reason string
		failed bool
	}{
		{
			name: "replica scale", why: "replica.replicaCount drives the replicas StatefulSet's spec.replicas and nothing else",
			policy: policyFor("replica.replicaCount", "spec.replicas", replicas), values: redisValues, obs: scale, want: plan.Allow,
		},
		{
			name: "random password", why: "a generated password differs between two renderings of the same values, as it differs between two syncs of the GitOps controller: no decision rests on such a chart, and the reason names the fields",
			policy: policyFor("replica.replicaCount", "spec.replicas", replicas),
			values: strings.Replace(redisValues, "  existingSecret: redis-auth\n", "", 1), obs: scale, want: plan.Deny,
			reason: "chart redis: nondeterministic chart: two renderings of the same values differ (random or clock functions), so no decision can rest on them: " +
				"apps/v1|StatefulSet|redis|redis-master spec.template.metadata.annotations.checksum/secret, " +
				"apps/v1|StatefulSet|redis|redis-replicas spec.template.metadata.annotations.checksum/secret, v1|Secret|redis|redis data.redis-password",
			failed: true,
		},
		{
			name: "ignored value path", why: "the redis templates ignore a top-level replicaCount: the edit would not hold the live fix",
			policy: policyFor("replicaCount", "spec.replicas", replicas), values: redisValues, obs: scale, want: plan.Deny,
			reason: "render-mismatch: rendering the chart with the edited values does not reproduce exactly the accepted live fields: " + replicas + " spec.replicas: the edit does not change the rendered field (observed 4)",
		},
		{
			name: "value path moves another object", why: "image.pullPolicy also moves the master StatefulSet, which the policy does not authorize",
			policy: policyFor("image.pullPolicy", "spec.template.spec.containers[0].imagePullPolicy", replicas), values: redisValues, obs: pull, want: plan.Deny,
			reason: "apps/v1|StatefulSet|redis|redis-master spec.template.spec.containers[0].imagePullPolicy: the edit also changes this field: IfNotPresent -> Always, which is not accepted",
		},
	}
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			snap := snapshot(t, redisConfig, tt.policy, tt.values)
			res := plan.Plan([]observe.Observation{tt.obs}, nil, snap, now)
			if len(res.Decisions) != 1 {
				t.Fatalf("decisions %+v", res.Decisions)
			}
			d := res.Decisions[0]
			if d.Outcome != tt.want {
				t.Fatalf("%s: outcome %s, want %s; reasons %q; errors %q", tt.why, d.Outcome, tt.want, d.Reasons, res.Errors)
			}
			if (len(res.Errors) > 0) != tt.failed {
				t.Errorf("errors %q", res.Errors)
			}
			if tt.want == plan.Deny {
				if !slices.ContainsFunc(d.Reasons, func(r string) bool { return strings.Contains(r, tt.reason) }) {
					t.Errorf("%s: reasons %q, want one containing %q", tt.why, d.Reasons, tt.reason)
				}
				if len(res.WriteBacks) != 0 || d.Receipt != nil {
					t.Errorf("a denied change was written: %+v", res.WriteBacks)
				}
				return
			}
			checkWitnessed(t, d, snap)
		})
	}
}

// checkWitnessed asserts what a witnessed allow promises.
func checkWitnessed(t *testing.T, d plan.Decision, snap plan.Snapshot) {
	t.Helper()
	r := d.Receipt
	if r == nil || r.Spec.Render == nil {
		t.Fatalf("allow without a render section: %+v", r)
	}
	if vs := receipt.Verify(r, snap.Policy, snap.PolicyPath); len(vs) > 0 {
		t.Errorf("receipt fails verification: %v", vs)
	}
	s := r.Spec.Render
	if s.Chart != "redis" || s.Version != "23.1.1" || !strings.HasPrefix(s.Digest, "sha256:") || s.Renderer != render.Renderer() ||
		s.ReleaseName != "redis" || s.Namespace != "redis" || s.KubeVersion != render.DefaultKubeVersion {
		t.Errorf("render section %+v", s)
	}
	if !slices.Contains(s.ObjectsCompared, replicas) || !slices.Contains(s.ObjectsCompared, "apps/v1|StatefulSet|redis|redis-master") {
		t.Errorf("objects compared %q", s.ObjectsCompared)
	}
	want := []receipt.RenderedField{{Object: replicas, Field: "spec.replicas", Before: receipt.ValueOf(int64(3)), After: receipt.ValueOf(int64(4))}}
	if len(s.ChangedFields) != 1 || s.ChangedFields[0].Object != want[0].Object || s.ChangedFields[0].Field != want[0].Field ||
		s.ChangedFields[0].Before.V != want[0].Before.V || s.ChangedFields[0].After.V != want[0].After.V {
		t.Errorf("changed fields %+v, want %+v", s.ChangedFields, want)
	}
	if m := r.Spec.RoundTrip.RenderedAfterMatchesObserved; m == nil || !*m {
		t.Error("roundTrip.renderedAfterMatchesObserved is not true")
	}
	for _, n := range r.Spec.NotClaimed {
		if strings.Contains(n, "not rendered") {
			t.Errorf("a witnessed receipt keeps %q", n)
		}
	}
}

func TestWitnessFailsClosed(t *testing.T) {
	scale := change("StatefulSet", "redis-replicas", "spec.replicas", 4, 3)
	pol := policyFor("replica.replicaCount", "spec.replicas", replicas)
	cases := []struct {
		name, why string
		config    string
		renderer  bool
		want      string
	}{
		{"missing chart", "a chart path with nothing there cannot be rendered: nothing is written, the error is reported",
			strings.Replace(redisConfig, "path: charts/redis", "path: charts/nothing", 1), true, "render: with the values at the snapshot: render failed: invalid chart: chart charts/nothing"},
		{"no renderer", "a unit that names a chart path is never allowed without the witness",
			redisConfig, false, "no renderer is available"},
		{"broken values", "values the chart's schema refuses cannot be rendered",
			redisConfig, true, "render failed"},
	}
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			values := redisValues
			if tt.name == "broken values" {
				values += "architecture: triangle\n"
				values = strings.Replace(values, "architecture: replication\n", "", 1)
			}
			snap := snapshot(t, tt.config, pol, values)
			if !tt.renderer {
				snap.Renderer = nil
			}
			res := plan.Plan([]observe.Observation{scale}, nil, snap, now)
			d := res.Decisions[0]
			if d.Outcome != plan.Deny || len(res.WriteBacks) != 0 || len(res.Errors) != 1 || !strings.Contains(res.Errors[0], tt.want) {
				t.Fatalf("%s: outcome %s, write-backs %d, errors %q; want a deny and one error containing %q", tt.why, d.Outcome, len(res.WriteBacks), res.Errors, tt.want)
			}
		})
	}
}

// BenchmarkPlanWitness plans the redis replica scale with the render
// witness and without it (the same unit, its chart not rendered): the
// difference is the witness's share of the planner's cycle.
func BenchmarkPlanWitness(b *testing.B) {
	scale := change("StatefulSet", "redis-replicas", "spec.replicas", 4, 3)
	pol := policyFor("replica.replicaCount", "spec.replicas", replicas)
	for _, bc := range []struct{ name, config string }{
		{"witness", redisConfig},
		{"no-chart", strings.Replace(redisConfig, ", path: charts/redis", "", 1)},
	} {
		b.Run(bc.name, func(b *testing.B) {
			cpu := render.CPUTime()
			for b.Loop() {
				snap := snapshot(b, bc.config, pol, redisValues)
				if res := plan.Plan([]observe.Observation{scale}, nil, snap, now); res.Decisions[0].Outcome != plan.Allow {
					b.Fatalf("outcome %s: %q", res.Decisions[0].Outcome, res.Decisions[0].Reasons)
				}
			}
			render.ReportCPU(b, cpu)
		})
	}
}
