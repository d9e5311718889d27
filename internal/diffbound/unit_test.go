package diffbound

import (
	"strings"
	"testing"
	"time"

	"github.com/backflow-dev/backflow/internal/observe"
	"github.com/backflow-dev/backflow/internal/plan"
)

// fleetConfig is redis in two environments: each unit reads the fleet's
// shared base file, then its own environment's file; the chart's own
// values.yaml is in the repository too (charts/redis).
const fleetConfig = `version: 1
policy: .github/policy.yaml
environments:
  prod-us-east:
    clusters: [prod-us-east-1]
  prod-eu-west:
    clusters: [prod-eu-west-1]
units:
  - name: redis
    environment: prod-us-east
    valuesFiles: [base/redis/values.yaml, envs/prod-us-east/redis/values.yaml]
    objects: ["apps/v1|StatefulSet|redis|*"]
    chart: {name: bitnami/redis, version: 25.5.3}
  - name: redis
    environment: prod-eu-west
    valuesFiles: [base/redis/values.yaml, envs/prod-eu-west/redis/values.yaml]
    objects: ["apps/v1|StatefulSet|redis|*"]
    chart: {name: bitnami/redis, version: 25.5.3}
roles:
  sre:
    groups: [sre]
`

// eastPolicy authorizes the scale in prod-us-east only.
var eastPolicy = strings.Replace(testPolicy, "environments: [prod]", "environments: [prod-us-east]", 1)

// fleetPolicy authorizes it in both environments.
var fleetPolicy = strings.Replace(testPolicy, "environments: [prod]", "environments: [prod-us-east, prod-eu-west]", 1)

// anyNamespace authorizes the scale in prod-us-east in any namespace.
var anyNamespace = strings.Replace(eastPolicy, "apps/v1|StatefulSet|redis|redis-replicas", "apps/v1|StatefulSet|*|redis-replicas", 1)

// twoPaths maps spec.replicas to replica.replicaCount first, and also
// lets the role accept it at master.count: the planner writes the first.
var twoPaths = strings.Replace(eastPolicy, "          environments: [prod-us-east]\n", `          environments: [prod-us-east]
        - valuePath: master.count
          field: spec.replicas
          objects: ["apps/v1|StatefulSet|redis|redis-replicas"]
          environments: [prod-us-east]
`, 1)

const (
	eastFile   = "envs/prod-us-east/redis/values.yaml"
	westFile   = "envs/prod-eu-west/redis/values.yaml"
	sharedFile = "base/redis/values.yaml"
	chartFile  = "charts/redis/values.yaml"
)

func fleetFiles() map[string][]byte {
	return map[string][]byte{
		sharedFile: []byte("# the fleet's defaults\nreplica:\n  replicaCount: 3\n  persistence:\n    size: 8Gi\n"),
		eastFile:   []byte(baseValues),
		westFile:   []byte(baseValues),
		chartFile:  []byte(baseValues),
	}
}

// repoint turns the genuine prod-us-east write-back into one whose receipt
// names file instead of its own values file, with file's replicaCount
// edited to the receipt's value and its own file left as it was.
func repoint(t *testing.T, in *Input, file string) {
	t.Helper()
	rp := receiptPath(*in)
	r := string(in.Head[rp])
	if !strings.Contains(r, eastFile) {
		t.Fatalf("the receipt does not name %s:\n%s", eastFile, r)
	}
	in.Head[rp] = []byte(strings.ReplaceAll(r, eastFile, file))
	delete(in.Head, eastFile)
	in.Changed = []string{rp, file}
	in.Head[file] = []byte(strings.Replace(string(in.Base[file]), "replicaCount: 3", "replicaCount: 5", 1))
}

// TestCheckReceiptAuthorizesOnlyItsUnit: a receipt authorizes only the
// values files of its own unit, in its own environment, as the base
// branch's repo config lists them; a file other environments read too only
// with every reading environment's authority.
func TestCheckReceiptAuthorizesOnlyItsUnit(t *testing.T) {
	for _, tc := range []struct {
		why    string
		policy string
		change func(t *testing.T, in *Input)
		want   []string // substrings of the violations; none: pass
	}{
		{why: "the genuine prod-us-east write-back passes", policy: eastPolicy, change: func(*testing.T, *Input) {}},
		{why: "a prod-us-east receipt pointed at prod-eu-west's file, which the policy authorizes nothing in", policy: eastPolicy,
			change: func(t *testing.T, in *Input) { repoint(t, in, westFile) },
			want: []string{"redis-replicas.yaml: bounds.changedFields[0] names " + westFile + ", which is not a values file of unit redis in prod-us-east",
				westFile + ": changed, but it is neither a receipt"}},
		{why: "a prod-us-east receipt pointed at the chart's own values.yaml", policy: eastPolicy,
			change: func(t *testing.T, in *Input) { repoint(t, in, chartFile) },
			want: []string{"bounds.changedFields[0] names " + chartFile + ", which is not a values file of unit redis in prod-us-east",
				chartFile + ": changed, but it is neither a receipt"}},
		{why: "prod-eu-west's file stays refused when the policy authorizes both environments: it is not this unit's", policy: fleetPolicy,
			change: func(t *testing.T, in *Input) { repoint(t, in, westFile) },
			want:   []string{"names " + westFile + ", which is not a values file of unit redis in prod-us-east"}},
		{why: "the shared base file without prod-eu-west's authority", policy: eastPolicy,
			change: func(t *testing.T, in *Input) { repoint(t, in, sharedFile) },
			want: []string{"names " + sharedFile + ", which units of prod-eu-west read too, and the base policy does not let role \"sre\" accept spec.replicas at replica.replicaCount = 5 in prod-eu-west",
				sharedFile + ": changed, but it is neither a receipt"}},
		{why: "the shared base file with every reading environment's authority", policy: fleetPolicy,
			change: func(t *testing.T, in *Input) { repoint(t, in, sharedFile) }},
		{why: "a receipt claiming the field at another path than its unit's mapping writes", policy: twoPaths, change: func(t *testing.T, in *Input) {
			rp := receiptPath(*in)
			in.Head[rp] = []byte(strings.ReplaceAll(string(in.Head[rp]), "replica.replicaCount", "master.count"))
			in.Base[eastFile] = []byte(baseValues + "master:\n  count: 3\n")
			in.Head[eastFile] = []byte(baseValues + "master:\n  count: 5\n")
		}, want: []string{"bounds.changedFields[0] claims spec.replicas at master.count, but unit redis's mapping (the policy's entry for role \"sre\") writes it at replica.replicaCount",
			eastFile + ": changed, but it is neither a receipt"}},
		{why: "a receipt naming a unit the base config does not have", policy: eastPolicy, change: func(t *testing.T, in *Input) {
			rp := receiptPath(*in)
			in.Head[rp] = []byte(strings.Replace(string(in.Head[rp]), "space: redis", "space: redis-copy", 1))
		}, want: []string{"names unit redis-copy in prod-us-east, which the base branch's " + ".github/backflow.yaml does not define: it authorizes no file",
			eastFile + ": changed, but it is neither a receipt"}},
		{why: "a receipt for an object its unit does not render", policy: anyNamespace, change: func(t *testing.T, in *Input) {
			rp := receiptPath(*in)
			in.Head[rp] = []byte(strings.ReplaceAll(string(in.Head[rp]), "apps/v1|StatefulSet|redis|redis-replicas", "apps/v1|StatefulSet|cache|redis-replicas"))
		}, want: []string{"bounds.changedFields[0] is apps/v1|StatefulSet|cache|redis-replicas, which unit redis does not render in prod-us-east"}},
	} {
		t.Run(tc.why, func(t *testing.T) {
			in := plannedOn(t, fleetConfig, tc.policy, "prod-us-east-1", fleetFiles())
			if _, ok := in.Head[eastFile]; !ok {
				t.Fatalf("the genuine write-back does not edit %s: %v", eastFile, in.Changed)
			}
			tc.change(t, &in)
			res := Check(in)
			got := strings.Join(res.Violations, "\n")
			if len(tc.want) == 0 {
				if !res.OK() || res.Receipts != 1 || res.ValuePaths != 1 {
					t.Fatalf("%+v", res)
				}
				return
			}
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("violations lack %q:\n%s", w, got)
				}
			}
		})
	}
}

// TestCheckPlannersSharedWriteBack: when every environment reading the
// shared file allowed the same change, the planner edits the shared file in
// each environment's write-back, and each passes the bound.
func TestCheckPlannersSharedWriteBack(t *testing.T) {
	cfg, pol := parsed(t, fleetConfig, fleetPolicy)
	files := fleetFiles()
	own := []byte("# this environment's overrides\nimage:\n  tag: \"7.2\"\n")
	files[eastFile], files[westFile] = own, own
	snap := plan.Snapshot{Config: cfg, Policy: pol, PolicyPath: ".github/policy.yaml", Files: files}
	at := time.Date(2026, 6, 18, 12, 0, 0, 0, time.UTC)
	res := plan.Plan([]observe.Observation{scaledTo5("prod-us-east-1", at), scaledTo5("prod-eu-west-1", at)}, nil, snap, at.Add(time.Minute))
	if len(res.WriteBacks) != 2 {
		t.Fatalf("%d write-backs, want one per environment: %v", len(res.WriteBacks), res.Errors)
	}
	for _, wb := range res.WriteBacks {
		in := inputOf(snap, wb)
		if _, ok := in.Head[sharedFile]; !ok {
			t.Fatalf("%s does not edit the shared file: %v", wb.Branch, in.Changed)
		}
		if r := Check(in); !r.OK() || r.ValuePaths != 1 {
			t.Errorf("%s: %+v", wb.Branch, r)
		}
	}
}
