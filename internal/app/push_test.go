package app

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/backflow-dev/backflow/internal/observe"
	"github.com/backflow-dev/backflow/internal/server"
)

// nativeDoc is an ObjectStateObserved document of redis-replicas.
func nativeDoc(cluster, observedAt, attribution string, live int) string {
	c := ""
	if cluster != "" {
		c = "\n  cluster: " + cluster
	}
	return fmt.Sprintf(`apiVersion: backflow.dev/v1alpha1
kind: ObjectStateObserved
spec:
  source: kubernetes%s
  observedAt: %q
  object: "apps/v1|StatefulSet|redis|redis-replicas"
  change: {actor: alice, groups: [sre], attribution: %s}
  fields:
    - {field: spec.replicas, live: %d, desired: 3}
`, c, observedAt, attribution, live)
}

const watchEvent = `{"type":"drift.detected","timestamp":"2026-06-18T12:00:30Z","resource":{"kind":"StatefulSet","name":"redis-replicas","namespace":"redis"},"details":{"message":"replicas: live 4 differs from git 3"}}`

func TestPushStore(t *testing.T) {
	repos := func() []string { return []string{"acme/gitops"} }
	for _, tc := range []struct {
		name     string
		ceiling  observe.Attribution
		cluster  string
		bodies   []string
		wantErr  bool
		accepted int
		rejected int
		check    func(t *testing.T, res observe.Result)
	}{
		{"claimed audit-log lowered to the ceiling", observe.AttributionAsserted, "",
			[]string{nativeDoc("prod-us-east-1", "2026-06-18T12:00:00Z", "audit-log", 4)}, false, 1, 0,
			func(t *testing.T, res observe.Result) {
				// A push is believed no higher than its configured ceiling.
				if got := res.Observations[0].Change.Attribution; got != observe.AttributionAsserted {
					t.Errorf("attribution %s, want asserted", got)
				}
			}},
		{"ceiling audit-log keeps the claim", observe.AttributionAuditLog, "",
			[]string{nativeDoc("prod-us-east-1", "2026-06-18T12:00:00Z", "audit-log", 4)}, false, 1, 0,
			func(t *testing.T, res observe.Result) {
				if got := res.Observations[0].Change.Attribution; got != observe.AttributionAuditLog {
					t.Errorf("attribution %s, want audit-log", got)
				}
			}},
		{"another cluster refused", observe.AttributionAuditLog, "prod-us-east-1",
			[]string{nativeDoc("prod-eu-west-1", "2026-06-18T12:00:00Z", "audit-log", 4)}, true, 0, 0, nil}, // a source trusted for one cluster does not speak for another
		{"watch event takes the configured cluster", "", "prod-us-east-1",
			[]string{watchEvent}, false, 1, 0,
			func(t *testing.T, res observe.Result) {
				if len(res.Triggers) != 1 || res.Triggers[0].Cluster != "prod-us-east-1" {
					t.Errorf("triggers %+v, want one of prod-us-east-1", res.Triggers)
				}
			}},
		{"watch event without any cluster", "", "",
			[]string{watchEvent}, true, 0, 0, nil}, // nothing could map it to a repository
		{"newer replaces older", observe.AttributionAuditLog, "",
			[]string{nativeDoc("prod-us-east-1", "2026-06-18T12:00:00Z", "audit-log", 4), nativeDoc("prod-us-east-1", "2026-06-18T12:05:00Z", "audit-log", 5)}, false, 1, 0,
			func(t *testing.T, res observe.Result) {
				if len(res.Observations) != 1 || res.Observations[0].Fields[0].Live != 5 {
					t.Errorf("observations %+v, want only live 5", res.Observations)
				}
			}},
		{"older arriving late is ignored", observe.AttributionAuditLog, "",
			[]string{nativeDoc("prod-us-east-1", "2026-06-18T12:05:00Z", "audit-log", 5), nativeDoc("prod-us-east-1", "2026-06-18T12:00:00Z", "audit-log", 4)}, false, 1, 0,
			func(t *testing.T, res observe.Result) {
				if len(res.Observations) != 1 || res.Observations[0].Fields[0].Live != 5 {
					t.Errorf("observations %+v, want still live 5", res.Observations)
				}
			}},
		{"garbage", "", "", []string{"kind: Nonsense\n"}, true, 0, 0, nil}, // nothing usable: the sender gets 400
		{"one good one bad", observe.AttributionAuditLog, "",
			[]string{nativeDoc("prod-us-east-1", "2026-06-18T12:00:00Z", "audit-log", 4) + "---\nkind: Nonsense\n"}, false, 1, 1, nil}, // the good one is kept, the bad one named
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := NewPushStore(tc.ceiling, tc.cluster, repos)
			var res server.PushResult
			var err error
			for _, b := range tc.bodies {
				res, err = p.Accept(context.Background(), []byte(b))
			}
			if tc.wantErr {
				if !errors.Is(err, server.ErrInvalidPush) {
					t.Fatalf("err %v, want ErrInvalidPush", err)
				}
				if got := p.Read(context.Background()); len(got.Observations)+len(got.Triggers) != 0 {
					t.Errorf("a refused push was kept: %+v", got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if res.Accepted != tc.accepted || len(res.Rejected) != tc.rejected {
				t.Errorf("accepted %d, rejected %v; want %d and %d", res.Accepted, res.Rejected, tc.accepted, tc.rejected)
			}
			if strings.Join(res.Repositories, ",") != "acme/gitops" {
				t.Errorf("repositories %v, want the known ones", res.Repositories)
			}
			if tc.check != nil {
				tc.check(t, p.Read(context.Background()))
			}
		})
	}
}
