package demo

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/backflow-dev/backflow/internal/observe"
	"github.com/backflow-dev/backflow/internal/render"
	"github.com/backflow-dev/backflow/internal/repoconfig"
)

var t0 = time.Date(2026, 6, 18, 12, 0, 0, 0, time.UTC)

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

// rendered renders the sample chart with prod-us-east's values and
// replica.replicaCount n, as the forward apply does.
func rendered(t *testing.T, n int) map[string]map[string]any {
	t.Helper()
	c, err := render.LoadFromSource(render.FSSource{FS: sampleFS()}, "charts/redis")
	if err != nil {
		t.Fatal(err)
	}
	files, err := SampleFiles()
	if err != nil {
		t.Fatal(err)
	}
	vals, err := repoconfig.Values("values.yaml", []byte(files["envs/prod-us-east/redis/values.yaml"]), nil)
	if err != nil {
		t.Fatal(err)
	}
	out, err := c.Render(context.Background(), render.Options{Release: "redis", Namespace: "redis"},
		[]map[string]any{vals, {"replica": map[string]any{"replicaCount": n}}})
	if err != nil {
		t.Fatal(err)
	}
	return out.Objects
}

var alice = Person{Actor: "alice", Groups: []string{"sre"}, Intent: incident}

func TestFieldValue(t *testing.T) {
	// why: the forward apply reads each field the cluster holds from the
	// rendered object by the observer's path spelling.
	obj := rendered(t, 5)[replicasKey]
	for _, tc := range []struct {
		path string
		want any
		ok   bool
	}{
		{"spec.replicas", int64(5), true},
		{imageField, defaultImage, true},
		{"spec.template.spec.containers[9].image", nil, false},
		{"spec.replicas.x", nil, false},
		{"spec.nope", nil, false},
	} {
		if got, ok := FieldValue(obj, tc.path); ok != tc.ok || got != tc.want {
			t.Errorf("%s: %v %v, want %v %v", tc.path, got, ok, tc.want, tc.ok)
		}
	}
}

func TestClusterRoundTrip(t *testing.T) {
	cases := []struct {
		name, why string
		change    func(c *Cluster) error
		replicas  int
		// wantLive is redis-replicas' spec.replicas after the forward apply.
		wantLive any
		// wantReverted lists "object field" the forward apply changed.
		wantReverted []string
	}{
		{name: "old values revert the scale", why: "the forward apply clobbers a live change that is not in Git",
			change:   func(c *Cluster) error { return c.Scale(replicasKey, 4, alice) },
			replicas: 3, wantLive: int64(3), wantReverted: []string{replicasKey + " spec.replicas"}},
		{name: "merged values keep it", why: "once the rendering says 4, the forced apply leaves 4",
			change:   func(c *Cluster) error { return c.Scale(replicasKey, 4, alice) },
			replicas: 4, wantLive: int64(4)},
		{name: "unmapped field reverted", why: "a field no value path moved keeps its rendered value and is reverted",
			change: func(c *Cluster) error {
				return c.Set(masterKey, imageField, debugImage, Person{Actor: "bob"})
			},
			replicas: 3, wantLive: int64(3), wantReverted: []string{masterKey + " " + imageField}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := newTestCluster(t, "prod-us-east")
			if err := tc.change(c); err != nil {
				t.Fatal(err)
			}
			applied, err := c.ForwardApply(rendered(t, tc.replicas))
			if err != nil {
				t.Fatal(err)
			}
			var reverted []string
			for _, a := range applied {
				reverted = append(reverted, a.Object.String()+" "+a.Field)
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

func TestForwardApplyNeedsTheRendering(t *testing.T) {
	// why: an object or field the rendering lacks cannot be applied:
	// the forward apply says so and changes nothing.
	objs := rendered(t, 4)
	delete(objs, masterKey)
	c := newTestCluster(t, "prod-us-east")
	if _, err := c.ForwardApply(objs); err == nil || !strings.Contains(err.Error(), "has no object "+masterKey) {
		t.Fatalf("got %v", err)
	}
	if live, _ := c.Get(replicasKey, "spec.replicas"); live != 3 {
		t.Errorf("a refused forward apply changed replicas to %v", live)
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
