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

// watchEvent is a cub-scout watch event from a watcher without CLUSTER_NAME:
// its scope's cluster is cub-scout's "default".
const watchEvent = `{"type":"drift.detected","timestamp":"2026-06-18T12:00:30.771029411Z","observation":{"source":"kubernetes-api","mode":"watch-poll","observedAt":"2026-06-18T12:00:30.771029411Z","freshness":"point-in-time","scope":{"cluster":"default","namespace":"redis","kind":"StatefulSet"}},"resource":{"kind":"StatefulSet","name":"redis-replicas","namespace":"redis"},"owner":{"type":"Flux","name":"redis"},"severity":"warning","details":{"category":"DRIFT","message":"replicas: live 4 differs from git 3"}}`

// deletedEvent is cub-scout's resource.deleted for the same object, later.
const deletedEvent = `{"type":"resource.deleted","timestamp":"2026-06-18T12:10:00.104772118Z","observation":{"source":"kubernetes-api","mode":"watch-poll","observedAt":"2026-06-18T12:10:00.104772118Z","freshness":"point-in-time","scope":{"cluster":"prod-us-east-1","namespace":"redis","kind":"StatefulSet"}},"resource":{"kind":"StatefulSet","name":"redis-replicas","namespace":"redis"},"owner":{"type":"Flux","name":"redis"},"details":{"lastOwner":"Flux","lastStatus":"Running"}}`

// nativeOwnerEvent is cub-scout's ownership.changed away from Flux.
const nativeOwnerEvent = `{"type":"ownership.changed","timestamp":"2026-06-18T12:01:00.104772118Z","observation":{"source":"kubernetes-api","mode":"watch-poll","observedAt":"2026-06-18T12:01:00.104772118Z","freshness":"point-in-time","scope":{"cluster":"prod-us-east-1","namespace":"redis","kind":"StatefulSet"}},"resource":{"kind":"StatefulSet","name":"redis-master","namespace":"redis"},"owner":{"type":"Native"},"details":{"after":"Native","before":"Flux"}}`

func TestPushStore(t *testing.T) {
	repos := func(...observe.ObjectKey) []string { return []string{"acme/gitops"} }
	concerned := func(objects []observe.ObjectKey) []string { return repos(objects...) }
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
			[]string{watchEvent}, true, 0, 0, nil}, // cub-scout's "default" names no cluster, and none is configured: never guessed
		{"resource.deleted forgets the object's pushed state", observe.AttributionAuditLog, "",
			[]string{nativeDoc("prod-us-east-1", "2026-06-18T12:00:00Z", "audit-log", 4), deletedEvent}, false, 1, 0,
			func(t *testing.T, res observe.Result) {
				if len(res.Observations) != 0 {
					t.Errorf("observations %+v, want none of a deleted object", res.Observations)
				}
			}},
		{"ownership.changed to Native is a notice", "", "prod-us-east-1",
			[]string{watchEvent + "\n" + nativeOwnerEvent}, false, 2, 0, nil},
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
			p := NewPushStore(tc.ceiling, tc.cluster, concerned)
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
			if tc.name == "resource.deleted forgets the object's pushed state" {
				res.Repositories = repos() // the last push kept nothing new to plan
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

func TestPushStoreSecretURLCeiling(t *testing.T) {
	p := NewPushStore(observe.AttributionAuditLog, "", func([]observe.ObjectKey) []string { return []string{"acme/gitops"} })
	ctx := server.WithPushVia(context.Background(), server.ViaSecretURL)
	if _, err := p.Accept(ctx, []byte(nativeDoc("prod-us-east-1", "2026-06-18T12:00:00Z", "audit-log", 4))); err != nil {
		t.Fatal(err)
	}
	// why: a token in a URL is a weaker credential than a header; its pushes
	// stay asserted whatever the header pushes' ceiling.
	if got := p.Read(context.Background()).Observations[0].Change.Attribution; got != observe.AttributionAsserted {
		t.Errorf("attribution %s, want asserted", got)
	}
}

func TestPushStoreForgets(t *testing.T) {
	p := NewPushStore(observe.AttributionAuditLog, "", func([]observe.ObjectKey) []string { return []string{"acme/gitops"} })
	if _, err := p.Accept(context.Background(), []byte(nativeDoc("prod-us-east-1", "2026-06-18T12:00:00Z", "audit-log", 4))); err != nil {
		t.Fatal(err)
	}
	if res := p.Read(context.Background()); len(res.Observations) != 1 {
		t.Fatalf("%d observations kept, want 1", len(res.Observations))
	}
	p.Forget()
	if res := p.Read(context.Background()); len(res.Observations) != 0 || len(res.Triggers) != 0 {
		t.Errorf("after Forget: %d observations, %d triggers", len(res.Observations), len(res.Triggers))
	}
	// It keeps taking pushes afterwards.
	if _, err := p.Accept(context.Background(), []byte(nativeDoc("prod-us-east-1", "2026-06-18T12:01:00Z", "audit-log", 5))); err != nil {
		t.Fatal(err)
	}
	if res := p.Read(context.Background()); len(res.Observations) != 1 {
		t.Errorf("%d observations after a new push, want 1", len(res.Observations))
	}
}

// TestPushStoreKeepsEachTrust: a push by the secret URL (asserted) never
// replaces what a bearer push (audit-log here) established for the same
// object, however new; a newer push at the same trust does.
func TestPushStoreKeepsEachTrust(t *testing.T) {
	p := NewPushStore(observe.AttributionAuditLog, "", func([]observe.ObjectKey) []string { return []string{"acme/gitops"} })
	url := server.WithPushVia(context.Background(), server.ViaSecretURL)
	push := func(ctx context.Context, doc string) {
		t.Helper()
		if _, err := p.Accept(ctx, []byte(doc)); err != nil {
			t.Fatal(err)
		}
	}
	held := func() map[observe.Attribution]any {
		out := map[observe.Attribution]any{}
		for _, o := range p.Read(context.Background()).Observations {
			var live any
			if len(o.Fields) > 0 {
				live = o.Fields[0].Live
			}
			out[o.TrustLevel()] = live
		}
		return out
	}
	push(context.Background(), nativeDoc("prod-us-east-1", "2026-06-18T12:00:00Z", "audit-log", 4))
	atDesired := strings.Replace(strings.Replace(nativeDoc("prod-us-east-1", "2026-06-18T12:05:00Z", "audit-log", 3), "  fields:\n    - {field: spec.replicas, live: 3, desired: 3}\n", "  fields: []\n", 1),
		"  change: {actor: alice, groups: [sre], attribution: audit-log}\n", "", 1)
	push(url, atDesired)
	got := held()
	if len(got) != 2 || got[observe.AttributionAuditLog] != 4 || got[observe.AttributionAsserted] != nil {
		t.Fatalf("after the asserted push of no fields: %v, want the audit-log push's live 4 kept beside it", got)
	}
	// The bearer's own later push replaces its earlier one.
	push(context.Background(), nativeDoc("prod-us-east-1", "2026-06-18T12:10:00Z", "audit-log", 5))
	if got := held(); len(got) != 2 || got[observe.AttributionAuditLog] != 5 {
		t.Errorf("after a newer audit-log push: %v, want its live 5", got)
	}
}

// TestPushStoreForgetsOnlyAtItsTrust: a resource.deleted drops the
// object's observations at or below the trust of the push that says so.
func TestPushStoreForgetsOnlyAtItsTrust(t *testing.T) {
	url := server.WithPushVia(context.Background(), server.ViaSecretURL)
	for _, tc := range []struct {
		name string
		via  context.Context
		want map[observe.Attribution]bool // the trust levels kept
	}{
		// why: the secret URL (asserted) must not wipe what the bearer
		// token (audit-log) established; its own asserted state goes.
		{"secret URL", url, map[observe.Attribution]bool{observe.AttributionAuditLog: true}},
		// why: the bearer token is trusted above both: both go.
		{"bearer token", context.Background(), map[observe.Attribution]bool{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := NewPushStore(observe.AttributionAuditLog, "", func([]observe.ObjectKey) []string { return []string{"acme/gitops"} })
			for _, ctx := range []context.Context{context.Background(), url} {
				if _, err := p.Accept(ctx, []byte(nativeDoc("prod-us-east-1", "2026-06-18T12:00:00Z", "audit-log", 4))); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := p.Accept(tc.via, []byte(deletedEvent)); err != nil {
				t.Fatal(err)
			}
			got := map[observe.Attribution]bool{}
			for _, o := range p.Read(context.Background()).Observations {
				got[o.TrustLevel()] = true
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("kept %v after the deletion, want %v", got, tc.want)
			}
		})
	}
}
