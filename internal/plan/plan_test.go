package plan

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/backflow-dev/backflow/internal/observe"
	"github.com/backflow-dev/backflow/internal/policy"
	"github.com/backflow-dev/backflow/internal/receipt"
	"github.com/backflow-dev/backflow/internal/repoconfig"
	"github.com/backflow-dev/backflow/internal/values"
)

var testNow = time.Date(2026, 6, 18, 12, 5, 0, 0, time.UTC)

const testPolicy = `apiVersion: backflow.dev/v1alpha1
kind: ReverseReconcilePolicy
metadata:
  name: redis
spec:
  default: deny
  rules:
    - role: platform-sre
      reason: SRE may scale the redis replicas.
      mayAccept:
        - valuePath: replica.replicaCount
          field: spec.replicas
          autoMerge: true
          objects: ["apps/v1|StatefulSet|redis|redis-replicas"]
          environments: ["prod-*"]
          maximum: 10
        - valuePath: master.count
          field: spec.replicas
          objects: ["apps/v1|StatefulSet|redis|redis-master"]
          environments: ["prod-*"]
        - valuePath: image.tag
          field: spec.template.metadata.labels.version
          autoMerge: true
          objects: ["apps/v1|StatefulSet|redis|redis-master"]
          environments: ["prod-*"]
    - role: dba
      reason: DBAs may change the image label only.
      mayAccept:
        - valuePath: image.tag
          field: spec.template.metadata.labels.version
          autoMerge: true
          objects: ["apps/v1|StatefulSet|redis|*"]
          environments: ["prod-*"]
`

const testConfig = `version: 1
policy: .github/policy.yaml
environments:
  prod-us-east:
    clusters: [use-1, use-2]
  prod-eu-west:
    clusters: [euw-1]
units:
  - name: redis
    environment: prod-us-east
    valuesFiles: [us/values.yaml]
    objects: ["apps/v1|StatefulSet|redis|*"]
  - name: redis
    environment: prod-eu-west
    valuesFiles: [eu/values.yaml]
    objects: ["apps/v1|StatefulSet|redis|*"]
roles:
  platform-sre:
    users: [erin]
    groups: [sre]
    attribution: [audit-log, admission]
  dba:
    users: [dora]
    groups: [sre]
    attribution: [asserted, audit-log]
`

const testValues = `# redis values
master:
  count: 1
replica:
  replicaCount: 3 # scaled live
image:
  tag: "7.2"
`

// snapshot builds a snapshot from a config and policy text, with the test
// values in both environments; edit may change the config first.
func snapshot(t testing.TB, config string) Snapshot {
	t.Helper()
	cfg, err := repoconfig.Parse(repoconfig.Path, []byte(config))
	if err != nil {
		t.Fatal(err)
	}
	pol, err := policy.Parse(".github/policy.yaml", []byte(testPolicy))
	if err != nil {
		t.Fatal(err)
	}
	return Snapshot{Config: cfg, Policy: pol, PolicyPath: ".github/policy.yaml",
		Files: map[string][]byte{"us/values.yaml": []byte(testValues), "eu/values.yaml": []byte(testValues)}}
}

func key(name string) observe.ObjectKey {
	return observe.ObjectKey{APIVersion: "apps/v1", Kind: "StatefulSet", Namespace: "redis", Name: name}
}

// byAlice is an audit-log attributed change by alice (group sre).
func byAlice(cluster, name string, at time.Time, fields ...observe.Field) observe.Observation {
	return observe.Observation{
		Source: observe.SourceKubernetes, Cluster: cluster, ObservedAt: at, Object: key(name),
		Change: observe.Change{Actor: "alice", Groups: []string{"sre"}, Attribution: observe.AttributionAuditLog, Claimed: observe.AttributionAuditLog},
		Fields: fields,
	}
}

// admitted attributes o at level admission, as a confirmed admission
// record does.
func admitted(o observe.Observation) observe.Observation {
	o.Change.Attribution, o.Change.Claimed = observe.AttributionAdmission, observe.AttributionAdmission
	return o
}

// byErin is o made by erin, who holds platform-sre alone.
func byErin(o observe.Observation) observe.Observation {
	o.Change.Actor, o.Change.Groups = "erin", nil
	return o
}

func field(path string, live, desired any) observe.Field {
	return observe.Field{Path: path, Live: live, Desired: desired, HasDesired: true}
}

var t0 = time.Date(2026, 6, 18, 12, 0, 0, 0, time.UTC)

func only(t *testing.T, res Result) Decision {
	t.Helper()
	if len(res.Decisions) != 1 {
		t.Fatalf("want one decision, got %d: %+v", len(res.Decisions), res.Decisions)
	}
	return res.Decisions[0]
}

func hasReason(d Decision, prefix string) bool {
	for _, r := range d.Reasons {
		if strings.HasPrefix(r, prefix) {
			return true
		}
	}
	return false
}

func TestDecisions(t *testing.T) {
	later := t0.Add(time.Minute)
	dora := func(o observe.Observation) observe.Observation {
		o.Change.Actor, o.Change.Groups, o.Change.Attribution = "dora", nil, observe.AttributionAsserted
		return o
	}
	cases := []struct {
		name    string
		why     string
		obs     []observe.Observation
		outcome Outcome
		reason  string
		auto    bool
		role    string
	}{
		{"allow", "the seed's incident on an entry with autoMerge and an audit-log actor",
			[]observe.Observation{byAlice("euw-1", "redis-replicas", t0, field("spec.replicas", 4, 3))}, Allow, "allow:", true, "platform-sre"},
		{"auto-merge needs every entry", "master.count's entry is not pre-authorized",
			[]observe.Observation{byAlice("euw-1", "redis-master", t0, field("spec.replicas", 2, 1))}, Allow, "allow:", false, "platform-sre"},
		{"auto-merge needs audit-log", "dora is asserted, so even a pre-authorized field needs review",
			[]observe.Observation{dora(byAlice("euw-1", "redis-replicas", t0, field("spec.template.metadata.labels.version", "7.4", "7.2")))}, Allow, "allow:", false, "dba"},
		{"role by sorted name", "both dba and platform-sre authorize the label on redis-master; dba sorts first",
			[]observe.Observation{byAlice("euw-1", "redis-master", t0, field("spec.template.metadata.labels.version", "7.4", "7.2"))}, Allow, "allow:", true, "dba"},
		{"no single role", "alice's dba role takes the label, platform-sre the replicas: a receipt names one role",
			[]observe.Observation{byAlice("euw-1", "redis-replicas", t0, field("spec.replicas", 4, 3), field("spec.template.metadata.labels.version", "7.4", "7.2"))}, Deny, "no-single-role:", false, ""},
		{"newest wins", "a newer observation matching desired replaces an older change",
			[]observe.Observation{byAlice("euw-1", "redis-replicas", t0, field("spec.replicas", 4, 3)), byAlice("euw-1", "redis-replicas", later)}, Noop, "noop:", false, ""},
		{"attribution breaks a tie", "at the same time, the attributed observation is decided on",
			[]observe.Observation{byAlice("euw-1", "redis-replicas", t0, field("spec.replicas", 4, 3)), func() observe.Observation {
				o := byAlice("euw-1", "redis-replicas", t0, field("spec.replicas", 4, 3))
				o.Change = observe.Change{Attribution: observe.AttributionUnknown}
				return o
			}()}, Allow, "allow:", true, "platform-sre"},
		{"removed field", "a field gone live is a change, but removals are not written back",
			[]observe.Observation{byAlice("euw-1", "redis-replicas", t0, observe.Field{Path: "spec.replicas", Removed: true, Desired: 3, HasDesired: true})}, Deny, "field-removed:", false, ""},
		{"agreement not required", "prod-us-east does not require agreement, so one of its two clusters is enough",
			[]observe.Observation{byAlice("use-1", "redis-replicas", t0, field("spec.replicas", 4, 3))}, Allow, "allow:", true, "platform-sre"},
		{"string is not a number", `a native "4" is a string, which maximum refuses`,
			[]observe.Observation{byAlice("euw-1", "redis-replicas", t0, field("spec.replicas", "4", 3))}, Deny, "value-out-of-bounds:", false, ""},
		{"textual values are typed like the file", `cub-scout's "4" becomes the number the file holds`,
			[]observe.Observation{byAlice("euw-1", "redis-replicas", t0, observe.Field{Path: "spec.replicas", Live: "4", Desired: "3", HasDesired: true, Textual: true})}, Allow, "allow:", true, "platform-sre"},
		{"admission auto-merges", "a watch-confirmed admission record is an identity the API server authenticated, and erin's one role lists it",
			[]observe.Observation{byErin(admitted(byAlice("euw-1", "redis-replicas", t0, field("spec.replicas", 4, 3))))}, Allow, "allow:", true, "platform-sre"},
		{"admission only where listed", "alice also holds dba, whose attribution does not list admission: refused",
			[]observe.Observation{admitted(byAlice("euw-1", "redis-replicas", t0, field("spec.template.metadata.labels.version", "7.4", "7.2")))}, Deny, "attribution-not-accepted:", false, ""},
		{"stale", "the observer compared against 2 but the file holds 3",
			[]observe.Observation{byAlice("euw-1", "redis-replicas", t0, field("spec.replicas", 4, 2))}, Stale, "stale:", false, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res := Plan(c.obs, nil, snapshot(t, testConfig), testNow)
			d := only(t, res)
			if d.Outcome != c.outcome || !hasReason(d, c.reason) || d.AutoMerge != c.auto || d.Role != c.role {
				t.Errorf("%s: got %s auto %t role %q reasons %q; want %s (%s) auto %t role %q",
					c.why, d.Outcome, d.AutoMerge, d.Role, d.Reasons, c.outcome, c.reason, c.auto, c.role)
			}
			checkAllows(t, res, snapshot(t, testConfig))
		})
	}
}

// checkAllows asserts what every allow promises: a receipt that verifies,
// a write-back branch, and a receipt file in the unit's write-back.
func checkAllows(t *testing.T, res Result, snap Snapshot) {
	t.Helper()
	for _, d := range res.Decisions {
		if d.Outcome != Allow {
			if d.Receipt != nil || d.WriteBack != "" || d.AutoMerge {
				t.Errorf("%s %s: a %s carries a receipt, a branch or auto-merge", d.Environment, d.Object, d.Outcome)
			}
			continue
		}
		if d.Receipt == nil {
			t.Fatalf("%s %s: allow without a receipt", d.Environment, d.Object)
		}
		if vs := receipt.Verify(d.Receipt, snap.Policy, snap.PolicyPath); len(vs) > 0 {
			t.Errorf("%s %s: receipt fails verification: %v", d.Environment, d.Object, vs)
		}
		if d.Reported {
			continue
		}
		found := false
		for _, wb := range res.WriteBacks {
			for _, r := range wb.Receipts {
				found = found || (wb.Branch == d.WriteBack && r.Path == d.ReceiptPath)
			}
		}
		if !found {
			t.Errorf("%s %s: receipt %s is not in write-back %s", d.Environment, d.Object, d.ReceiptPath, d.WriteBack)
		}
	}
}

func TestClusterAgreement(t *testing.T) {
	cfg := strings.Replace(testConfig, "    clusters: [use-1, use-2]\n", "    clusters: [use-1, use-2]\n    requireClusterAgreement: true\n", 1)
	both := []observe.Observation{
		byAlice("use-1", "redis-replicas", t0, field("spec.replicas", 4, 3)),
		func() observe.Observation {
			o := byAlice("use-2", "redis-replicas", t0.Add(-time.Minute), observe.Field{Path: "spec.replicas", Live: "4", Desired: "3", HasDesired: true, Textual: true})
			o.Change = observe.Change{Attribution: observe.AttributionUnknown}
			return o
		}(),
	}
	cases := []struct {
		name, why string
		obs       []observe.Observation
		want      Outcome
	}{
		{"agree", "both clusters report 4 (one as cub-scout text, typed like the file)", both, Allow},
		{"one cluster", "use-2 was not observed", both[:1], Deny},
		{"disagree", "use-2 reports 5", []observe.Observation{both[0], byAlice("use-2", "redis-replicas", t0.Add(-time.Minute), field("spec.replicas", 5, 3))}, Deny},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := only(t, Plan(c.obs, nil, snapshot(t, cfg), testNow))
			if d.Outcome != c.want || (c.want == Deny && !hasReason(d, "clusters-disagree:")) {
				t.Errorf("%s: got %s %q", c.why, d.Outcome, d.Reasons)
			}
		})
	}
}

// TestFailsClosed: what the planner cannot do for an object is a deny with
// the error, never an allow.
func TestFailsClosed(t *testing.T) {
	cases := []struct {
		name, why string
		files     map[string][]byte
		obs       []observe.Observation
		want      string
	}{
		{"values file missing", "without desired values nothing can be compared",
			map[string][]byte{"us/values.yaml": []byte(testValues)},
			[]observe.Observation{byAlice("euw-1", "redis-replicas", t0, field("spec.replicas", 4, 3))},
			"error: values file eu/values.yaml"},
		{"editor refuses", "the value sits behind an alias, which the editor will not edit",
			map[string][]byte{"eu/values.yaml": []byte("base: &b\n  replicaCount: 3\nreplica: *b\nmaster:\n  count: 1\n")},
			[]observe.Observation{byAlice("euw-1", "redis-replicas", t0, field("spec.replicas", 4, 3))},
			"error: the values editor refused"},
		{"conflict", "two objects would write different values at one path",
			nil,
			[]observe.Observation{
				byAlice("euw-1", "redis-replicas", t0, field("spec.template.metadata.labels.version", "7.4", "7.2")),
				byAlice("euw-1", "redis-master", t0, field("spec.template.metadata.labels.version", "7.5", "7.2")),
			},
			"error: conflict:"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			snap := snapshot(t, testConfig)
			if c.files != nil {
				snap.Files = c.files
			}
			res := Plan(c.obs, nil, snap, testNow)
			for _, d := range res.Decisions {
				if d.Outcome != Deny || !hasReason(d, c.want) {
					t.Errorf("%s: %s got %s %q", c.why, d.Object, d.Outcome, d.Reasons)
				}
			}
			if len(res.Errors) == 0 || len(res.WriteBacks) != 0 {
				t.Errorf("%s: errors %q, write-backs %d", c.why, res.Errors, len(res.WriteBacks))
			}
		})
	}
}

func TestReceiptContents(t *testing.T) {
	res := Plan([]observe.Observation{byAlice("euw-1", "redis-master", t0, field("spec.template.metadata.labels.version", "7.4", "7.2"), field("spec.replicas", 2, 1))},
		nil, snapshot(t, testConfig), testNow)
	d := only(t, res)
	if d.Outcome != Allow {
		t.Fatalf("got %s %q", d.Outcome, d.Reasons)
	}
	s := d.Receipt.Spec
	if d.Role != "platform-sre" || s.Observation.Field != "spec.replicas" || s.Bounds.ChangedFields[1].Field != "spec.template.metadata.labels.version" {
		t.Errorf("fields are not sorted by path: observation %s, changed %+v", s.Observation.Field, s.Bounds.ChangedFields)
	}
	wantIntent := "unstated: live change by alice observed 2026-06-18T12:00:00Z"
	if s.Trigger.Intent != wantIntent || s.WriteBack.Provenance.Intent != wantIntent {
		t.Errorf("intent %q, want %q", s.Trigger.Intent, wantIntent)
	}
	if s.WriteBack.Provenance.When != "2026-06-18T12:05:00Z" || s.WriteBack.NewRevision != "backflow/prod-eu-west/redis" {
		t.Errorf("provenance.when %q newRevision %q", s.WriteBack.Provenance.When, s.WriteBack.NewRevision)
	}
	if s.Bounds.ChangedFields[1].To.V != "7.4" || s.Bounds.ChangedFields[0].To.V != int64(2) {
		t.Errorf("values lost their types: %#v %#v", s.Bounds.ChangedFields[0].To.V, s.Bounds.ChangedFields[1].To.V)
	}
	if d.ReceiptPath != ".backflow/receipts/prod-eu-west/redis/redis_StatefulSet.apps.v1_redis-master.yaml" {
		t.Errorf("receipt path %s", d.ReceiptPath)
	}
	if len(res.WriteBacks) != 1 || len(res.WriteBacks[0].Files) != 1 {
		t.Fatalf("write-backs %+v", res.WriteBacks)
	}
	want := strings.Replace(strings.Replace(testValues, "count: 1", "count: 2", 1), `tag: "7.2"`, `tag: "7.4"`, 1)
	if got := string(res.WriteBacks[0].Files[0].Data); got != want {
		t.Errorf("edited values:\n%s\nwant:\n%s", got, want)
	}
}

// TestReceiptNamesAttributionEvidence: a reviewer can trace an audit-log
// attribution back to the event it rests on.
func TestReceiptNamesAttributionEvidence(t *testing.T) {
	o := byAlice("euw-1", "redis-master", t0, field("spec.replicas", 2, 1))
	o.Change.Evidence = "audit event 5c1a (audit webhook)"
	d := only(t, Plan([]observe.Observation{o}, nil, snapshot(t, testConfig), testNow))
	if d.Outcome != Allow {
		t.Fatalf("got %s %q", d.Outcome, d.Reasons)
	}
	if !slices.ContainsFunc(d.Receipt.Spec.NotClaimed, func(s string) bool { return strings.Contains(s, "(evidence: audit event 5c1a (audit webhook))") }) {
		t.Errorf("notClaimed does not name the evidence: %q", d.Receipt.Spec.NotClaimed)
	}
}

// TestReceiptPathsAreDistinct: object keys that differ only where a naive
// name would lose the difference get distinct receipt files.
func TestReceiptPathsAreDistinct(t *testing.T) {
	p := newPlanner(snapshot(t, testConfig), testNow, Options{})
	u := &p.cfg.Units[0]
	keys := [][4]string{
		{"apps/v1", "StatefulSet", "redis", "a_b"},
		{"apps/v1", "StatefulSet", "redis_a", "b"},
		{"apps/v1", "StatefulSet", "redis", "a%5Fb"},
		{"v1", "Service", "redis", "redis"},
		{"apps/v1", "Service", "redis", "redis"},
		{"example.com/v1", "Service", "redis", "redis"},
		{"example/com.v1", "Service", "redis", "redis"},
		{"v1", "Namespace", "", "redis"},
		{"v1", "Namespace", "redis", ""},
	}
	seen := map[string][4]string{}
	for _, k := range keys {
		path := p.receiptPath(u, k[0], k[1], k[2], k[3])
		if prev, dup := seen[path]; dup {
			t.Errorf("%v and %v share %s", prev, k, path)
		}
		seen[path] = k
	}
}

func TestObserveOnlyReports(t *testing.T) {
	for _, mode := range []string{"mode: observe-only\n", "paused: true\n"} {
		res := Plan([]observe.Observation{byAlice("euw-1", "redis-replicas", t0, field("spec.replicas", 4, 3))}, nil, snapshot(t, testConfig+mode), testNow)
		d := only(t, res)
		if d.Outcome != Allow || !d.Reported || d.WriteBack != "" || !hasReason(d, "report-only:") || len(res.WriteBacks) != 0 || d.Receipt == nil {
			t.Errorf("%s: outcome %s reported %t branch %q write-backs %d", mode, d.Outcome, d.Reported, d.WriteBack, len(res.WriteBacks))
		}
	}
}

func TestJSONContract(t *testing.T) {
	res := Plan([]observe.Observation{
		byAlice("euw-1", "redis-replicas", t0, field("spec.replicas", 4, 3)),
		byAlice("nowhere", "redis-replicas", t0, field("spec.replicas", "4", 3)),
	}, []observe.Trigger{{Object: observe.ObjectKey{Kind: "StatefulSet", Namespace: "redis", Name: "redis-replicas"}, At: t0}}, snapshot(t, testConfig), testNow)
	data, err := res.JSON()
	if err != nil {
		t.Fatal(err)
	}
	var out struct {
		Decisions []map[string]json.RawMessage
		Triggers  []map[string]string
		Errors    []string
	}
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatal(err)
	}
	if len(out.Decisions) != 2 || len(out.Triggers) != 1 || out.Errors == nil {
		t.Fatalf("%s", data)
	}
	unmapped, allow := out.Decisions[0], out.Decisions[1]
	for k, want := range map[string]string{"unit": "null", "environment": "null", "writeBack": "null", "outcome": `"unmapped"`} {
		if string(unmapped[k]) != want {
			t.Errorf("unmapped %s = %s, want %s", k, unmapped[k], want)
		}
	}
	if _, has := unmapped["receipt"]; has {
		t.Errorf("a receipt on a non-allow")
	}
	if !strings.Contains(string(unmapped["changes"]), `"valuePath": null`) || !strings.Contains(string(unmapped["changes"]), `"to": "4"`) {
		t.Errorf("unmapped changes: %s", unmapped["changes"])
	}
	if !strings.Contains(string(allow["changes"]), `"to": 4`) || !strings.Contains(string(allow["receipt"]), `"liveValue": 4`) {
		t.Errorf("allow: %s %s", allow["changes"], allow["receipt"])
	}
	if out.Triggers[0]["object"] != "|StatefulSet|redis|redis-replicas" || out.Triggers[0]["at"] != "2026-06-18T12:00:00Z" {
		t.Errorf("trigger %v", out.Triggers[0])
	}
}

func TestNoConfig(t *testing.T) {
	res := Plan([]observe.Observation{byAlice("euw-1", "redis-replicas", t0, field("spec.replicas", 4, 3))}, nil, Snapshot{}, testNow)
	if d := only(t, res); d.Outcome != Unmapped || len(res.Errors) != 1 {
		t.Errorf("got %s, errors %q", d.Outcome, res.Errors)
	}
}

// TestUnitForAgreesWithConfig: the planner's index finds the same unit as
// the repo config's own query, for exact keys, globs and misses.
func TestUnitForAgreesWithConfig(t *testing.T) {
	cfg := strings.Replace(testConfig, "roles:", `  - name: pinned
    environment: prod-eu-west
    valuesFiles: [eu/values.yaml]
    objects: ["v1|Service|redis|redis", "apps/v1|Deployment|*|web"]
roles:`, 1)
	snap := snapshot(t, cfg)
	p := newPlanner(snap, testNow, Options{})
	for _, env := range []string{"prod-us-east", "prod-eu-west", "staging"} {
		for _, obj := range []string{"apps/v1|StatefulSet|redis|redis-replicas", "v1|Service|redis|redis", "apps/v1|Deployment|shop|web", "apps/v1|Deployment|shop|api", "v1|Secret|redis|x"} {
			want, _ := snap.Config.UnitFor(env, obj)
			if got := p.unitFor(env, obj); got != want {
				t.Errorf("%s %s: index found %v, config %v", env, obj, got, want)
			}
		}
	}
}

// TestUnitForIndexAgreesWithScan: with exact keys, globs bucketed by their
// literal segments and globs with wildcards anywhere, in any config order,
// the index finds the first unit in config order that claims the object,
// as a scan of every pattern does.
func TestUnitForIndexAgreesWithScan(t *testing.T) {
	segs := [][]string{{"apps/v1", "v1", "*", "apps/*"}, {"Deployment", "Service", "D*"}, {"a", "b", "*", "a*"}, {"web", "api", "*", "w*", "*b"}}
	names := [][]string{{"apps/v1", "v1", "apps/v2"}, {"Deployment", "Service", "DaemonSet"}, {"a", "b", "ab"}, {"web", "api", "wb", "b"}}
	rng := rand.New(rand.NewPCG(1, 2))
	pick := func(i int) string { return segs[i][rng.IntN(len(segs[i]))] }
	for round := range 1000 {
		cfg := &repoconfig.Config{}
		for u := range 1 + rng.IntN(8) {
			unit := repoconfig.Unit{Name: fmt.Sprintf("u%d", u), Environment: []string{"prod", "dev"}[rng.IntN(2)]}
			for range 1 + rng.IntN(3) {
				unit.Objects = append(unit.Objects, pick(0)+"|"+pick(1)+"|"+pick(2)+"|"+pick(3))
			}
			cfg.Units = append(cfg.Units, unit)
		}
		p := newPlanner(Snapshot{Config: cfg}, testNow, Options{})
		for range 20 {
			obj := ""
			for i, opts := range names {
				if i > 0 {
					obj += "|"
				}
				obj += opts[rng.IntN(len(opts))]
			}
			if rng.IntN(2) == 0 {
				// A key some pattern claims: its stars matching nothing.
				u := cfg.Units[rng.IntN(len(cfg.Units))]
				obj = strings.ReplaceAll(u.Objects[rng.IntN(len(u.Objects))], "*", "")
			}
			for _, env := range []string{"prod", "dev"} {
				var want *repoconfig.Unit
				for i := range cfg.Units {
					u := &cfg.Units[i]
					if u.Environment == env && slices.ContainsFunc(u.Objects, func(pat string) bool { return policy.MatchKey(pat, obj) }) {
						want = u
						break
					}
				}
				if got := p.unitFor(env, obj); got != want {
					t.Fatalf("round %d: %s %s: index found %v, scan %v (units %+v)", round, env, obj, got, want, cfg.Units)
				}
			}
		}
	}
}

// TestEditorReadingIsTheRepoConfigs: the Helm reading the values editor's
// verification returns for an edited file, which the read-back after a
// write-back uses, is what the repo config reads from the same bytes.
func TestEditorReadingIsTheRepoConfigs(t *testing.T) {
	cases := []struct {
		data  string
		edits []values.Edit
	}{
		{"a: 1\n", []values.Edit{{Path: "a", Value: int64(2)}}},
		{"---\n# lead\nimage:\n  tag: \"1.0\" # pinned\nflag: yes\nmode: 0755\nlist: [a, b]\n", []values.Edit{{Path: "image.tag", Value: "1.1"}, {Path: "list[1]", Value: "c"}}},
		{"base: &b\n  x: 1\nref: *b\nz: ~\nf: 1.5e3\n", []values.Edit{{Path: "z", Value: "set"}, {Path: "new.key", Value: true}}},
		{"empty:\nnum: 1\n", []values.Edit{{Path: "empty", Value: nil}, {Path: "num", Value: 2.5}}},
	}
	for _, c := range cases {
		p := newPlanner(Snapshot{}, testNow, Options{})
		vf, err := readValuesFile("values.yaml", []byte(c.data), nil, p.readings)
		if err != nil {
			t.Fatal(err)
		}
		out, helm, err := p.setValues(vf, c.edits)
		if err != nil {
			t.Fatalf("%q: %v", c.data, err)
		}
		want, err := repoconfig.Values("values.yaml", out, nil)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(helm, want) {
			t.Errorf("%q edited to %q: the editor read %#v, the repo config %#v", c.data, out, helm, want)
		}
	}
}
