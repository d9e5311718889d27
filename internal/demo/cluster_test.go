package demo

import (
	"slices"
	"testing"
	"time"

	"github.com/backflow-dev/backflow/internal/observe"
	"github.com/backflow-dev/backflow/internal/policy"
)

var t0 = time.Date(2026, 6, 18, 12, 0, 0, 0, time.UTC)

func testPolicy(t *testing.T) *policy.Policy {
	t.Helper()
	files, err := SampleFiles()
	if err != nil {
		t.Fatal(err)
	}
	p, err := policy.Parse(".github/reverse-reconcile-policy.yaml", []byte(files[".github/reverse-reconcile-policy.yaml"]))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func newTestCluster(t *testing.T, env string) *Cluster {
	t.Helper()
	now := t0
	c := NewCluster("c1", env, GitOpsManager, func() time.Time { return now })
	if err := c.Add(replicasKey, map[string]any{"spec.replicas": 3, imageField: defaultImage}); err != nil {
		t.Fatal(err)
	}
	if err := c.Add(masterKey, map[string]any{"spec.replicas": 1, imageField: defaultImage}); err != nil {
		t.Fatal(err)
	}
	return c
}

func replicaValues(n int) map[string]any {
	return map[string]any{"replica": map[string]any{"replicaCount": n}}
}

var alice = Person{Actor: "alice", Groups: []string{"sre"}, Intent: incident}

// The policy's mayAccept entries are the rendering: value path, field,
// objects and environments, once per pair.
func TestMappingsFromPolicy(t *testing.T) {
	got := MappingsFromPolicy(testPolicy(t))
	if len(got) != 1 {
		t.Fatalf("mappings %+v", got)
	}
	m := got[0]
	if m.ValuePath != "replica.replicaCount" || m.Field != "spec.replicas" || !slices.Equal(m.Objects, []string{replicasKey}) ||
		!slices.Equal(m.Environments, []string{"prod-us-east", "prod-eu-west"}) {
		t.Errorf("mapping %+v", m)
	}
}

func TestClusterRoundTrip(t *testing.T) {
	maps := MappingsFromPolicy(testPolicy(t))
	cases := []struct {
		name, why string
		env       string
		change    func(c *Cluster) error
		values    map[string]any
		// wantLive is redis-replicas' spec.replicas after the forward apply.
		wantLive any
		// wantReverted lists "object field" the forward apply changed.
		wantReverted []string
	}{
		{name: "old values revert the scale", why: "the forward apply clobbers a live change that is not in Git",
			env: "prod-us-east", change: func(c *Cluster) error { return c.Scale(replicasKey, 4, alice) },
			values: replicaValues(3), wantLive: 3, wantReverted: []string{replicasKey + " spec.replicas"}},
		{name: "merged values keep it", why: "once desired says 4, the forced apply leaves 4",
			env: "prod-us-east", change: func(c *Cluster) error { return c.Scale(replicasKey, 4, alice) },
			values: replicaValues(4), wantLive: 4},
		{name: "unmapped field reverted", why: "a field no values path renders keeps its rendered value and is reverted",
			env: "prod-us-east", change: func(c *Cluster) error {
				return c.Set(masterKey, imageField, debugImage, Person{Actor: "bob"})
			},
			values: replicaValues(3), wantLive: 3, wantReverted: []string{masterKey + " " + imageField}},
		{name: "environment not in the entry", why: "a mapping applies only in the environments its entry lists",
			env: "staging", change: func(c *Cluster) error { return nil },
			values: replicaValues(7), wantLive: 3},
		{name: "path missing from values", why: "a value path the values do not hold keeps the last desired value",
			env: "prod-us-east", change: func(c *Cluster) error { return nil },
			values: map[string]any{"replica": map[string]any{}}, wantLive: 3},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := newTestCluster(t, tc.env)
			if err := tc.change(c); err != nil {
				t.Fatal(err)
			}
			applied := c.ForwardApply(maps, tc.values)
			var reverted []string
			for _, a := range applied {
				reverted = append(reverted, a.Object+" "+a.Field)
			}
			if !slices.Equal(reverted, tc.wantReverted) {
				t.Errorf("%s: applied %v, want %v", tc.why, reverted, tc.wantReverted)
			}
			if live, _ := c.Get(replicasKey, "spec.replicas"); live != tc.wantLive {
				t.Errorf("%s: replicas %v, want %v", tc.why, live, tc.wantLive)
			}
			for _, o := range c.Observe() {
				if len(o.Fields) != 0 || o.Change.Actor != "" {
					t.Errorf("%s: after the forward apply %s still differs: %+v", tc.why, o.Object, o)
				}
			}
		})
	}
}

// A manual change is observed with its field, manager and the audit log's
// attribution; the encoded documents read back through observe at the
// source's trust ceiling.
func TestObserveAndEncode(t *testing.T) {
	c := newTestCluster(t, "prod-us-east")
	if err := c.Scale(replicasKey, 4, alice); err != nil {
		t.Fatal(err)
	}
	obs := c.Observe()
	if len(obs) != 2 {
		t.Fatalf("want both objects observed, got %d", len(obs))
	}
	master, replicas := obs[0], obs[1]
	if len(master.Fields) != 0 {
		t.Errorf("the master is unchanged but observed with %+v", master.Fields)
	}
	if len(replicas.Fields) != 1 {
		t.Fatalf("replicas fields %+v", replicas.Fields)
	}
	f := replicas.Fields[0]
	if f.Path != "spec.replicas" || f.Live != 4 || f.Desired != 3 || !f.HasDesired || f.Manager != "kubectl" {
		t.Errorf("field %+v", f)
	}
	if ch := replicas.Change; ch.Actor != "alice" || !slices.Equal(ch.Groups, []string{"sre"}) || ch.Claimed != observe.AttributionAuditLog || !ch.At.Equal(t0) || ch.Intent != incident {
		t.Errorf("change %+v", ch)
	}
	data, err := EncodeObservations(obs)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		why     string
		ceiling observe.Attribution
		want    observe.Attribution
	}{
		{"a source trusted at audit-log keeps the audit log's attribution", observe.AttributionAuditLog, observe.AttributionAuditLog},
		{"an untrusted source lowers it to asserted", "", observe.AttributionAsserted},
	} {
		res := observe.ParseBytes(data, observe.Options{Ceiling: tc.ceiling})
		if len(res.Errors) > 0 || len(res.Observations) != 2 {
			t.Fatalf("%s: read back %d observations, errors %v", tc.why, len(res.Observations), res.Errors)
		}
		got := res.Observations[1]
		if got.Change.Attribution != tc.want || got.Change.Claimed != observe.AttributionAuditLog {
			t.Errorf("%s: attribution %s (claimed %s)", tc.why, got.Change.Attribution, got.Change.Claimed)
		}
		if got.Object.String() != replicasKey || got.Cluster != "c1" || !got.ObservedAt.Equal(t0) || len(got.Fields) != 1 {
			t.Errorf("%s: read back %+v", tc.why, got)
		}
		if len(res.Observations[0].Fields) != 0 || res.Observations[0].Fields == nil {
			t.Errorf("%s: the unchanged master must read back with an empty field list", tc.why)
		}
	}
}

// Changes the cluster refuses.
func TestClusterRefusals(t *testing.T) {
	c := newTestCluster(t, "prod-us-east")
	cases := []struct {
		why string
		err error
	}{
		{"an object added twice", c.Add(replicasKey, nil)},
		{"a key that is not apiVersion|Kind|namespace|name", c.Add("redis", nil)},
		{"a change without an actor has no audit record", c.Scale(replicasKey, 5, Person{})},
		{"an unknown object", c.Scale("apps/v1|StatefulSet|redis|nope", 5, alice)},
		{"an unknown field", c.Set(replicasKey, "spec.nope", 1, alice)},
	}
	for _, tc := range cases {
		if tc.err == nil {
			t.Errorf("%s: accepted", tc.why)
		}
	}
	if live, _ := c.Get(replicasKey, "spec.replicas"); live != 3 {
		t.Errorf("a refused change changed replicas to %v", live)
	}
}
