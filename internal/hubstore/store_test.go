package hubstore_test

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/backflow-dev/backflow/internal/confighub"
	"github.com/backflow-dev/backflow/internal/confighub/confighubtest"
	"github.com/backflow-dev/backflow/internal/hubstore"
	"github.com/backflow-dev/backflow/internal/observe"
	"github.com/backflow-dev/backflow/internal/plan"
	"github.com/backflow-dev/backflow/internal/receipt"
	"github.com/backflow-dev/backflow/internal/repoconfig"
)

const (
	botUser = "0b07b07b-0000-4000-8000-000000000001"
	bob     = "b0b00000-0000-4000-8000-000000000002"
)

const repoConfig = `version: 1
policy: .github/policy.yaml
environments:
  prod-us-east:
    clusters: [use-1]
units:
  - name: redis
    environment: prod-us-east
    confighub: {space: prod-us-east, unit: redis}
    objects: ["apps/v1|StatefulSet|redis|*"]
roles:
  platform-sre:
    groups: [sre]
    attribution: [audit-log]
`

const policyText = `apiVersion: backflow.dev/v1alpha1
kind: ReverseReconcilePolicy
metadata:
  name: redis
spec:
  default: deny
  rules:
    - role: platform-sre
      reason: SRE may scale the redis replicas.
      mayAccept:
        - field: spec.replicas
          autoMerge: true
          objects: ["apps/v1|StatefulSet|redis|redis-replicas"]
          environments: ["prod-*"]
`

// unitData is the Unit's data: the seed's incident, rendered.
const unitData = `# rendered by ConfigHub
apiVersion: v1
kind: Service
metadata:
  name: redis
  namespace: redis
---
apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: redis-replicas
  namespace: redis
spec:
  replicas: 3 # scaled live during the incident
  template:
    spec:
      containers:
      - name: redis
        image: redis:7
`

var t0 = time.Date(2026, 6, 18, 12, 0, 0, 0, time.UTC)

type env struct {
	t     *testing.T
	hub   *confighubtest.Server
	store *hubstore.Store
}

func newEnv(t *testing.T, opts confighubtest.Options, timeout time.Duration) *env {
	t.Helper()
	opts.Tokens = map[string]string{"bot-token": botUser}
	opts.Now = func() time.Time { return t0 }
	hub := confighubtest.New(opts)
	url, stop, err := hub.Listen()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	hub.AddSpace("prod-us-east")
	if _, err := hub.AddUnit("prod-us-east", "redis", confighubtest.ToolchainKubernetesYAML, []byte(unitData), bob); err != nil {
		t.Fatal(err)
	}
	c, err := confighub.New(confighub.Config{URL: url, Token: "bot-token", HTTP: &http.Client{Timeout: timeout}})
	if err != nil {
		t.Fatal(err)
	}
	return &env{t: t, hub: hub, store: &hubstore.Store{Client: c}}
}

// alice scaled the StatefulSet from 3 to 4, as the audit log says.
func alice(to int) observe.Observation {
	return observe.Observation{
		Source: observe.SourceKubernetes, Cluster: "use-1", ObservedAt: t0,
		Object: observe.ObjectKey{APIVersion: "apps/v1", Kind: "StatefulSet", Namespace: "redis", Name: "redis-replicas"},
		Change: observe.Change{Actor: "alice", Groups: []string{"sre"}, Attribution: observe.AttributionAuditLog, Claimed: observe.AttributionAuditLog,
			Intent: "incident: replication lag"},
		Fields: []observe.Field{{Path: "spec.replicas", Live: to, Desired: 3, HasDesired: true}},
	}
}

// plan reads the repository and the Unit and plans alice's change.
func (e *env) plan(o observe.Observation) (plan.Snapshot, plan.WriteBack, *receipt.Receipt) {
	e.t.Helper()
	files := map[string]string{repoconfig.Path: repoConfig, ".github/policy.yaml": policyText}
	read := func(p string, _ int64) ([]byte, error) { return []byte(files[p]), nil }
	got, err := plan.ReadSnapshot(read, plan.ReadOptions{Commit: strings.Repeat("c", 40), Revisions: e.store.Reader(context.Background())})
	if err != nil || len(got.FileErrors) > 0 {
		e.t.Fatalf("snapshot: %v %v", err, got.FileErrors)
	}
	res := plan.Plan([]observe.Observation{o}, nil, got.Snapshot, t0.Add(5*time.Minute))
	if len(res.WriteBacks) != 1 || res.WriteBacks[0].Revision == nil {
		e.t.Fatalf("no revision planned: %+v %q", res.Decisions, res.Errors)
	}
	return got.Snapshot, res.WriteBacks[0], res.Decisions[0].Receipt
}

func TestWriteAndProveARevision(t *testing.T) {
	e := newEnv(t, confighubtest.Options{}, 5*time.Second)
	ctx := context.Background()
	snap, wb, rcpt := e.plan(alice(4))
	if rcpt.Spec.WriteBack.NewRevision != "confighub:prod-us-east/redis@2" {
		t.Fatalf("the receipt names %s", rcpt.Spec.WriteBack.NewRevision)
	}
	pv, err := e.store.Preview(ctx, wb.Revision)
	if err != nil {
		t.Fatal(err)
	}
	md := pv.Markdown("prod-us-east/redis")
	if pv.Revision != 2 || !strings.Contains(md, "| `apps/v1/StatefulSet redis/redis-replicas` | `spec.replicas` | `3` | `4` |") {
		t.Fatalf("preview:\n%s", md)
	}
	if n := len(e.hub.Revisions("prod-us-east", "redis")); n != 1 {
		t.Fatalf("the preview wrote: %d revisions", n)
	}
	rdata := wb.Receipts[0].Data
	before := e.hub.Requests("")
	w, err := e.store.Write(ctx, wb.Revision, rcpt, rdata)
	t.Logf("a write took %d requests (%d uploads: the dry run and the write)", e.hub.Requests("")-before, e.hub.Requests(confighubtest.OpUploadUnitData)-1)
	if err != nil {
		t.Fatal(err)
	}
	revs := e.hub.Revisions("prod-us-east", "redis")
	last := revs[len(revs)-1]
	want := strings.Replace(unitData, "replicas: 3 #", "replicas: 4 #", 1)
	if w.Revision != 2 || len(revs) != 2 || string(last.Data) != want || last.UserID != botUser {
		t.Fatalf("written %+v; revisions %d; data\n%s", w, len(revs), last.Data)
	}
	for _, part := range []string{"alice", "incident: replication lag", ".github/policy.yaml", "spec.rules[0].mayAccept[0]", hubstore.Digest(rdata), "spec.replicas 3 -> 4"} {
		if !strings.Contains(last.Description, part) {
			t.Errorf("the change description %q does not name %q", last.Description, part)
		}
	}
	pf := hubstore.Proof{Receipt: rdata, Path: wb.Receipts[0].Path, MergeCommit: strings.Repeat("d", 40), Policy: snap.Policy, PolicyPath: snap.PolicyPath,
		Live: func(object, field string) (any, bool) {
			return 4, object == "apps/v1|StatefulSet|redis|redis-replicas" && field == "spec.replicas"
		}}
	if _, err := e.store.Prove(ctx, pf); !errors.Is(err, hubstore.ErrNotYet) {
		t.Fatalf("proven before the revision was applied: %v", err)
	}
	if _, _, err := e.hub.Apply("prod-us-east", "redis"); err != nil {
		t.Fatal(err)
	}
	stale := pf
	stale.Live = func(string, string) (any, bool) { return 3, true }
	if _, err := e.store.Prove(ctx, stale); !errors.Is(err, hubstore.ErrNotYet) {
		t.Fatalf("proven with live 3: %v", err)
	}
	out, err := e.store.Prove(ctx, pf)
	if err != nil {
		t.Fatal(err)
	}
	proven, _, err := receipt.Parse("proven.yaml", out)
	if err != nil {
		t.Fatal(err)
	}
	if proven.Spec.Status != receipt.StatusProven || proven.Spec.WriteBack.NewRevision != "confighub:prod-us-east/redis@2" ||
		proven.Spec.WriteBack.MergeCommit != pf.MergeCommit || !strings.Contains(proven.Spec.NotClaimed[0], "revision 2 of ConfigHub unit prod-us-east/redis") {
		t.Fatalf("proven receipt:\n%s", out)
	}
	other := pf
	other.Receipt = append(bytes.Clone(rdata), '\n')
	if _, err := e.store.Prove(ctx, other); err == nil || !strings.Contains(err.Error(), "was not written for it") {
		t.Fatalf("a receipt the revision was not written for is proven: %v", err)
	}
}

// TestConflictWritesNothingAndReplans: a write to the Unit between the
// plan and the merge makes the write a 409 that stores nothing; planning
// again on the new head writes both changes, as the next revision.
func TestConflictWritesNothingAndReplans(t *testing.T) {
	e := newEnv(t, confighubtest.Options{}, 5*time.Second)
	ctx := context.Background()
	_, wb, rcpt := e.plan(alice(4))
	theirs := strings.Replace(unitData, "image: redis:7", "image: redis:7.2", 1)
	if _, err := e.hub.Write("prod-us-east", "redis", []byte(theirs), bob, "bob bumps the image"); err != nil {
		t.Fatal(err)
	}
	_, err := e.store.Write(ctx, wb.Revision, rcpt, wb.Receipts[0].Data)
	if !errors.Is(err, confighub.ErrConflict) || confighub.Retryable(err) {
		t.Fatalf("write after a concurrent change: %v, want a conflict", err)
	}
	if revs := e.hub.Revisions("prod-us-east", "redis"); len(revs) != 2 || string(e.hub.Data("prod-us-east", "redis")) != theirs {
		t.Fatalf("the conflicting write stored something: %d revisions", len(revs))
	}
	_, wb2, rcpt2 := e.plan(alice(4))
	if rcpt2.Spec.WriteBack.NewRevision != "confighub:prod-us-east/redis@3" {
		t.Fatalf("re-planned receipt names %s", rcpt2.Spec.WriteBack.NewRevision)
	}
	w, err := e.store.Write(ctx, wb2.Revision, rcpt2, wb2.Receipts[0].Data)
	if err != nil {
		t.Fatal(err)
	}
	got := string(e.hub.Data("prod-us-east", "redis"))
	if w.Revision != 3 || !strings.Contains(got, "replicas: 4 #") || !strings.Contains(got, "image: redis:7.2") {
		t.Fatalf("revision %d:\n%s", w.Revision, got)
	}
}

// TestWitnessRefusesMoreThanTheAcceptedPaths: a dry run that changes more
// than the accepted field (a mutating trigger rewrites the image) writes
// nothing, before and after the merge.
func TestWitnessRefusesMoreThanTheAcceptedPaths(t *testing.T) {
	e := newEnv(t, confighubtest.Options{}, 5*time.Second)
	ctx := context.Background()
	_, wbE, rcptE := e.plan(alice(4))
	e2 := newEnv(t, confighubtest.Options{Mutate: func(b []byte) []byte {
		return bytes.ReplaceAll(b, []byte("image: redis:7\n"), []byte("image: redis:7-hardened\n"))
	}}, 5*time.Second)
	_, wb, rcpt := e2.plan(alice(4))
	for name, op := range map[string]func() error{
		"preview": func() error { _, err := e2.store.Preview(ctx, wb.Revision); return err },
		"write":   func() error { _, err := e2.store.Write(ctx, wb.Revision, rcpt, wb.Receipts[0].Data); return err },
	} {
		err := op()
		if !errors.Is(err, hubstore.ErrWitness) || !strings.Contains(err.Error(), "also changes apps/v1/StatefulSet redis/redis-replicas spec.template.spec.containers.0.image -> redis:7-hardened") {
			t.Errorf("%s: %v, want the witness to refuse the image", name, err)
		}
	}
	if n := len(e2.hub.Revisions("prod-us-east", "redis")); n != 1 {
		t.Fatalf("the refused revision was written: %d revisions", n)
	}
	// A trigger that adds a resource is caught too.
	e3 := newEnv(t, confighubtest.Options{Mutate: func(b []byte) []byte {
		return append(bytes.Clone(b), []byte("---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: extra, namespace: redis}\n")...)
	}}, 5*time.Second)
	_, wb3, rcpt3 := e3.plan(alice(4))
	if _, err := e3.store.Write(ctx, wb3.Revision, rcpt3, wb3.Receipts[0].Data); !errors.Is(err, hubstore.ErrWitness) ||
		!strings.Contains(err.Error(), "Add v1/ConfigMap redis/extra") {
		t.Fatalf("an added resource: %v", err)
	}
	if n := len(e3.hub.Revisions("prod-us-east", "redis")); n != 1 {
		t.Fatalf("the revision adding a resource was written: %d revisions", n)
	}
	// A revision of other data than the accepted value is refused too: the
	// planned data with the value the receipt does not claim.
	wrong := *wbE.Revision
	wrong.Data = bytes.Replace(wrong.Data, []byte("replicas: 4"), []byte("replicas: 5"), 1)
	if _, err := e.store.Write(ctx, &wrong, rcptE, wbE.Receipts[0].Data); !errors.Is(err, hubstore.ErrWitness) {
		t.Fatalf("data the receipt does not claim: %v", err)
	}
	if n := len(e.hub.Revisions("prod-us-east", "redis")); n != 1 {
		t.Fatalf("wrong data was written: %d revisions", n)
	}
}

// TestFaultsWriteNothing: a ConfigHub answering 5xx or not answering in
// time writes nothing and is retried; the retry writes once.
func TestFaultsWriteNothing(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		why   string
		fault func(*confighubtest.Server)
		kind  error
	}{
		{"a 503 on the upload", func(h *confighubtest.Server) { h.Fail(confighubtest.OpUploadUnitData, 503, 2) }, confighub.ErrServer},
		{"a 500 on the lookup", func(h *confighubtest.Server) { h.Fail(confighubtest.OpListSpaces, 500, 1) }, confighub.ErrServer},
		{"a timeout on the upload", func(h *confighubtest.Server) { h.Hang(confighubtest.OpUploadUnitData, 1) }, confighub.ErrUnreachable},
	} {
		e := newEnv(t, confighubtest.Options{}, 300*time.Millisecond)
		_, wb, rcpt := e.plan(alice(4))
		tc.fault(e.hub)
		_, err := e.store.Write(ctx, wb.Revision, rcpt, wb.Receipts[0].Data)
		if !errors.Is(err, tc.kind) || !confighub.Retryable(err) {
			t.Errorf("%s: %v, want a retryable %v", tc.why, err, tc.kind)
			continue
		}
		if n := len(e.hub.Revisions("prod-us-east", "redis")); n != 1 {
			t.Errorf("%s: a failed write stored %d revisions", tc.why, n)
		}
		var w hubstore.Written
		for range 3 {
			if w, err = e.store.Write(ctx, wb.Revision, rcpt, wb.Receipts[0].Data); err == nil || !confighub.Retryable(err) {
				break
			}
		}
		if err != nil || w.Revision != 2 || len(e.hub.Revisions("prod-us-east", "redis")) != 2 {
			t.Errorf("%s: the retry: %+v %v", tc.why, w, err)
		}
	}
}

func TestExpectAndDescription(t *testing.T) {
	rv := &plan.Revision{Changes: []plan.Change{
		{Object: observe.ObjectKey{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "web", Name: "web"}, Field: "spec.template.spec.containers[0].image", To: "web:2"},
		{Object: observe.ObjectKey{APIVersion: "v1", Kind: "ConfigMap", Namespace: "web", Name: "flags"}, Field: `data.feature\.x`, To: "on"},
	}}
	if _, err := hubstore.Expect(rv); err == nil || !strings.Contains(err.Error(), "cannot name unambiguously") {
		t.Fatalf("a key with a dot: %v", err)
	}
	rv.Changes = rv.Changes[:1]
	got, err := hubstore.Expect(rv)
	if err != nil || len(got) != 1 || got[0].String() != "apps/v1/Deployment web/web spec.template.spec.containers.0.image -> web:2" {
		t.Fatalf("expect %v %v", got, err)
	}
	r := &receipt.Receipt{Metadata: receipt.Metadata{Name: "r"}, Spec: receipt.Spec{
		Trigger: receipt.Trigger{Actor: "alice", Role: "sre", Intent: "line one\nline two " + strings.Repeat("x", 300)},
	}}
	d := hubstore.Description(r, []byte("x"))
	if strings.Contains(d, "\n") || !strings.Contains(d, "line one line two") || !strings.Contains(d, "...") || len(d) > 600 {
		t.Fatalf("description %q", d)
	}
}
