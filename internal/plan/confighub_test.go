package plan

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/backflow-dev/backflow/internal/observe"
	"github.com/backflow-dev/backflow/internal/policy"
	"github.com/backflow-dev/backflow/internal/receipt"
	"github.com/backflow-dev/backflow/internal/repoconfig"
)

const configHubConfig = `version: 1
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

const configHubPolicy = `apiVersion: backflow.dev/v1alpha1
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

// configHubData is the Unit's data: rendered manifests, one of them the
// incident's StatefulSet.
const configHubData = `# rendered by ConfigHub
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
  replicas: 3 # scaled live
  serviceName: redis
`

func configHubSnapshot(t *testing.T) Snapshot {
	t.Helper()
	cfg, err := repoconfig.Parse(repoconfig.Path, []byte(configHubConfig))
	if err != nil {
		t.Fatal(err)
	}
	pol, err := policy.Parse(".github/policy.yaml", []byte(configHubPolicy))
	if err != nil {
		t.Fatal(err)
	}
	ref := *cfg.Units[0].StoreRef()
	return Snapshot{Config: cfg, Policy: pol, PolicyPath: ".github/policy.yaml", Commit: strings.Repeat("a", 40),
		Files: map[string][]byte{ref.Path(): []byte(configHubData)},
		Heads: map[repoconfig.StoreRef]Head{ref: hubHead(ref, "abc123", 6)}}
}

// hubHead is what a reader of ConfigHub (internal/hubstore) says of a
// Unit read at data hash hash and head revision n: the planner says of
// the store only what this says.
func hubHead(ref repoconfig.StoreRef, hash string, n int64) Head {
	return Head{Condition: hash, Number: n, Words: Words{
		Store: "ConfigHub", Document: "ConfigHub unit " + ref.Name, Condition: "data hash " + hash,
		Method: receipt.MethodConfigHubRevision, Next: fmt.Sprintf("confighub:%s@%d", ref.Name, n+1),
		NotClaimed: fmt.Sprintf("Desired state is the ConfigHub Unit %s at revision %d (data hash %s).", ref.Name, n, hash),
	}}
}

// TestConfigHubUnit: alice's 3 -> 4 on a unit whose desired state is a
// ConfigHub Unit is written into the Unit's data with the manifests
// editor (one token changed), as a revision the receipt names, and no
// repository file changes but the receipt.
func TestConfigHubUnit(t *testing.T) {
	snap := configHubSnapshot(t)
	res := Plan([]observe.Observation{byAlice("use-1", "redis-replicas", t0, field("spec.replicas", 4, 3))}, nil, snap, testNow)
	d := only(t, res)
	if d.Outcome != Allow || !d.AutoMerge || len(res.WriteBacks) != 1 {
		t.Fatalf("decision %s %q, %d write-backs, errors %q", d.Outcome, d.Reasons, len(res.WriteBacks), res.Errors)
	}
	wb := res.WriteBacks[0]
	if len(wb.Files) != 0 || len(wb.Receipts) != 1 || wb.Revision == nil {
		t.Fatalf("write-back files %v, receipts %d, revision %v", wb.Files, len(wb.Receipts), wb.Revision)
	}
	rv := wb.Revision
	want := strings.Replace(configHubData, "replicas: 3 #", "replicas: 4 #", 1)
	if string(rv.Data) != want || rv.Ref.Name != "prod-us-east/redis" || rv.Head.Condition != "abc123" || rv.Number() != 7 || rv.Name() != "prod-us-east/redis@7" {
		t.Fatalf("revision %+v\n%s", rv, rv.Data)
	}
	if len(rv.Changes) != 1 || rv.Changes[0].Field != "spec.replicas" || fmt.Sprint(rv.Changes[0].To) != "4" || rv.Changes[0].Object.String() != "apps/v1|StatefulSet|redis|redis-replicas" {
		t.Fatalf("revision changes %+v", rv.Changes)
	}
	r := d.Receipt
	if r.Spec.WriteBack.Method != receipt.MethodConfigHubRevision || r.Spec.WriteBack.NewRevision != "confighub:prod-us-east/redis@7" ||
		r.Spec.Bounds.ChangedFields[0].WrittenFile != "confighub://prod-us-east/redis" || r.Spec.Unit.DesiredRender != "confighub://prod-us-east/redis" {
		t.Fatalf("receipt write-back %+v, changed %+v", r.Spec.WriteBack, r.Spec.Bounds.ChangedFields)
	}
	if vs := receipt.Verify(r, snap.Policy, snap.PolicyPath); len(vs) != 0 {
		t.Fatalf("the receipt fails verification: %v", vs)
	}
	if !strings.Contains(strings.Join(r.Spec.NotClaimed, "\n"), "ConfigHub Unit prod-us-east/redis at revision 6 (data hash abc123).") {
		t.Errorf("notClaimed does not say what the receipt rests on: %q", r.Spec.NotClaimed)
	}
}

// TestConfigHubUnitFailsClosed: a Unit that could not be read, or was
// read without its hash, writes nothing back.
func TestConfigHubUnitFailsClosed(t *testing.T) {
	for _, tc := range []struct {
		why  string
		edit func(*Snapshot)
		want string
	}{
		{"the Unit could not be read", func(s *Snapshot) { s.Files = map[string][]byte{} }, "confighub:prod-us-east/redis of unit redis (prod-us-east) could not be read"},
		{"no head at all", func(s *Snapshot) { s.Heads = nil }, "was read without the condition its next revision is written on"},
		{"no hash to make the write conditional on", func(s *Snapshot) { editHead(s, func(h *Head) { h.Condition = "" }) }, "was read without the condition"},
		{"no method a receipt could name", func(s *Snapshot) { editHead(s, func(h *Head) { h.Words.Method = "" }) }, "without the store's names of it"},
		{"no revision a receipt could name", func(s *Snapshot) { editHead(s, func(h *Head) { h.Words.Next = "" }) }, "without the store's names of it"},
		{"nothing the receipt could say it rests on", func(s *Snapshot) { editHead(s, func(h *Head) { h.Words.NotClaimed = "" }) }, "without the store's names of it"},
		{"no document applies the object", func(s *Snapshot) {
			s.Files["confighub://prod-us-east/redis"] = []byte("apiVersion: v1\nkind: Service\nmetadata: {name: redis, namespace: redis}\n")
		}, "no document of its manifests is apps/v1|StatefulSet|redis|redis-replicas"},
	} {
		snap := configHubSnapshot(t)
		tc.edit(&snap)
		res := Plan([]observe.Observation{byAlice("use-1", "redis-replicas", t0, field("spec.replicas", 4, 3))}, nil, snap, testNow)
		d := only(t, res)
		if d.Outcome != Deny || len(res.WriteBacks) != 0 || !strings.Contains(strings.Join(d.Reasons, "\n"), tc.want) {
			t.Errorf("%s: %s %q, %d write-backs", tc.why, d.Outcome, d.Reasons, len(res.WriteBacks))
		}
	}
}

// editHead changes the head of the snapshot's one Unit.
func editHead(s *Snapshot, edit func(*Head)) {
	for ref, h := range s.Heads {
		edit(&h)
		s.Heads[ref] = h
	}
}

// TestRevisionStoreWords: what a receipt says of a revision store (its
// method, the revision it names, what it rests on) and what an expiry says
// is the store's, as its reader named them, so a store's reader with
// other words needs nothing of the planner; a method the receipt rules do
// not know is refused before anything is proposed.
func TestRevisionStoreWords(t *testing.T) {
	alice := []observe.Observation{byAlice("use-1", "redis-replicas", t0, field("spec.replicas", 4, 3))}
	snap := configHubSnapshot(t)
	editHead(&snap, func(h *Head) {
		h.Words.Store, h.Words.Document, h.Words.Condition = "the Hub", "the Hub's redis", "etag 6"
		h.Words.Next, h.Words.NotClaimed = "confighub:prod-us-east/redis@70", "Desired state is the Hub's redis, etag 6."
	})
	res := Plan(alice, nil, snap, testNow)
	d := only(t, res)
	if d.Outcome != Allow || len(res.WriteBacks) != 1 {
		t.Fatalf("decision %s %q, errors %q", d.Outcome, d.Reasons, res.Errors)
	}
	if wbk := d.Receipt.Spec.WriteBack; wbk.NewRevision != "confighub:prod-us-east/redis@70" ||
		!slices.Contains(d.Receipt.Spec.NotClaimed, "Desired state is the Hub's redis, etag 6.") {
		t.Fatalf("write-back %+v, notClaimed %q", wbk, d.Receipt.Spec.NotClaimed)
	}
	if strings.Contains(strings.Join(d.Receipt.Spec.NotClaimed, "\n"), "ConfigHub") {
		t.Errorf("the receipt says ConfigHub of a store that calls itself otherwise: %q", d.Receipt.Spec.NotClaimed)
	}
	snap.Receipts = map[string][]byte{".backflow/receipts/x.yaml": []byte(configHubExpired)}
	res = Plan(nil, nil, snap, testNow)
	if len(res.Expiries) != 1 || !strings.HasSuffix(res.Expiries[0].Why, "by hand in the Hub") {
		t.Fatalf("expiries %+v", res.Expiries)
	}

	snap = configHubSnapshot(t)
	editHead(&snap, func(h *Head) { h.Words.Method, h.Words.Next = "vault-version", "vault:kv/redis#7" })
	res = Plan(alice, nil, snap, testNow)
	if d := only(t, res); d.Outcome != Deny || len(res.WriteBacks) != 0 ||
		!strings.Contains(strings.Join(d.Reasons, "\n"), `got "vault-version"`) {
		t.Fatalf("a method the receipt rules do not know: %s %q", d.Outcome, d.Reasons)
	}
}

// TestReadSnapshotReadsConfigHubUnits: ReadSnapshot asks its ConfigHub
// reader for each Unit; without one, or when it fails, the unit's read is
// a file error naming the Unit.
func TestReadSnapshotReadsConfigHubUnits(t *testing.T) {
	files := map[string]string{repoconfig.Path: configHubConfig, ".github/policy.yaml": configHubPolicy}
	read := func(p string, _ int64) ([]byte, error) { return []byte(files[p]), nil }
	got, err := ReadSnapshot(read, ReadOptions{Revisions: func(ref repoconfig.StoreRef) ([]byte, Head, error) {
		return []byte(configHubData), hubHead(ref, "h", 2), nil
	}})
	if err != nil || len(got.FileErrors) != 0 {
		t.Fatalf("%v %v", err, got.FileErrors)
	}
	ref := repoconfig.StoreRef{Store: repoconfig.StoreConfigHub, Name: "prod-us-east/redis"}
	if string(got.Snapshot.Files["confighub://prod-us-east/redis"]) != configHubData || got.Snapshot.Heads[ref].Number != 2 {
		t.Fatalf("snapshot %v", got.Snapshot.Heads)
	}
	got, err = ReadSnapshot(read, ReadOptions{})
	if err != nil || len(got.FileErrors) != 1 || !strings.Contains(got.FileErrors[0].Error(), "reading confighub:prod-us-east/redis of unit redis (prod-us-east): no confighub store is configured") {
		t.Fatalf("without a reader: %v %v", err, got.FileErrors)
	}
}

// configHubExpired is a temporary acceptance of the ConfigHub Unit's
// redis replicas, written as revision 7, that expired at 12:04.
const configHubExpired = `apiVersion: backflow.dev/v1alpha1
kind: ReverseReconcileReceipt
metadata:
  name: redis-prod-us-east-statefulset-redis-replicas
spec:
  status: proposed
  environment: prod-us-east
  unit:
    space: redis
    desiredRender: confighub://prod-us-east/redis
  trigger:
    class: authorized-live-change
    actor: alice
    role: platform-sre
    intent: scale for the spike
    at: "2026-06-18T03:58:41Z"
  observation:
    source: kubernetes
    predicate: object-state-observed
    receiptRef: kubernetes observation
    object: apps/v1|StatefulSet|redis|redis-replicas
    field: spec.replicas
    liveValue: 3
    desiredValueBefore: 2
  authority:
    policyRef: .github/policy.yaml
    decision: allow
    matchedRule: platform-sre may accept spec.replicas by spec.rules[0].mayAccept[0]
  bounds:
    changedFields:
      - object: apps/v1|StatefulSet|redis|redis-replicas
        field: spec.replicas
        from: 2
        to: 3
        desiredValueAfter: 3
        writtenFile: confighub://prod-us-east/redis
        writtenPath: spec.replicas
    unauthorizedFieldsChanged: []
    withinAuthorizedScope: true
  writeBack:
    method: confighub-revision
    desiredValueAfter: 3
    newRevision: confighub:prod-us-east/redis@7
    provenance:
      who: alice
      when: "2026-06-18T04:04:00Z"
      operation: reverse-reconcile
      authority: .github/policy.yaml
      intent: scale for the spike
  expiry:
    expiresAt: "2026-06-18T12:04:00Z"
    setBy: spec.rules[0].mayAccept[0]
    acceptFor: 8h
  roundTrip:
    desiredAfterMatchesObserved: true
    residualDrift: []
    result: closed
`

// TestConfigHubExpiryRefused: an expired acceptance of a ConfigHub Unit
// still holding the accepted value is refused, saying why (its data
// changes only as a revision), and nothing is written: the restore of
// manifests and kustomizations does not reach it.
func TestConfigHubExpiryRefused(t *testing.T) {
	snap := configHubSnapshot(t)
	path := ".backflow/receipts/prod-us-east/redis/redis_StatefulSet.apps.v1_redis-replicas.yaml"
	snap.Receipts = map[string][]byte{path: []byte(configHubExpired)}
	res := Plan(nil, nil, snap, testNow)
	if len(res.Expiries) != 1 || len(res.WriteBacks) != 0 {
		t.Fatalf("expiries %+v, write-backs %d, errors %q", res.Expiries, len(res.WriteBacks), res.Errors)
	}
	x := res.Expiries[0]
	if x.State != Refused || !strings.Contains(x.Why, "confighub:prod-us-east/redis") || !strings.Contains(x.Why, "new revision") ||
		!strings.HasSuffix(x.Why, "by hand in ConfigHub") ||
		!strings.Contains(x.Why, "restore apps/v1|StatefulSet|redis|redis-replicas by hand") {
		t.Fatalf("expiry %s: %s", x.State, x.Why)
	}
}
