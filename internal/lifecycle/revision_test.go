package lifecycle

import (
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/backflow-dev/backflow/internal/forge"
	"github.com/backflow-dev/backflow/internal/hubstore"
	"github.com/backflow-dev/backflow/internal/plan"
	"github.com/backflow-dev/backflow/internal/repoconfig"
)

// hubPath is where the snapshot holds prod-us-east's ConfigHub Unit.
const hubPath = "confighub://prod-us-east/redis"

// scenarioHub is prod-us-east's desired state as a ConfigHub Unit.
type scenarioHub struct {
	// Hash and Head are the data hash and head revision the cycle reads.
	Hash string `json:"hash"`
	Head int64  `json:"head"`
}

// mutate makes prod-us-east's unit a ConfigHub Unit holding replicas
// (default 3), read at the hub's hash and head; the policy's entry names
// the field alone, as for manifests.
func (h scenarioHub) mutate(f map[string]string, replicas string) {
	if replicas == "" {
		replicas = "3"
	}
	f[".github/backflow.yaml"] = strings.Replace(f[".github/backflow.yaml"],
		"    valuesFiles: [envs/prod-us-east/redis/values.yaml]\n", "    confighub: {space: prod-us-east, unit: redis}\n", 1)
	f[".github/backflow.yaml"] = strings.Replace(f[".github/backflow.yaml"],
		"    chart: {name: bitnami/redis, version: 25.5.3}\n  - name: redis\n    environment: prod-eu-west",
		"  - name: redis\n    environment: prod-eu-west", 1)
	f[policyPath] = strings.Replace(f[policyPath], "- valuePath: replica.replicaCount\n          field: spec.replicas",
		"- field: spec.replicas", 1)
	f[hubPath] = "apiVersion: apps/v1\nkind: StatefulSet\nmetadata:\n  name: redis-replicas\n  namespace: redis\n" +
		"spec:\n  replicas: " + replicas + "\n"
	f[hubPath+" head"] = h.Hash + " " + strconv.FormatInt(h.Head, 10)
}

// readHub puts the Unit at p into snap as the store's reader does: its
// data, and the hash and head that files[p+" head"] says.
func readHub(t *testing.T, snap *plan.Snapshot, files map[string]string, p string) {
	t.Helper()
	hash, num, ok := strings.Cut(files[p+" head"], " ")
	n, err := strconv.ParseInt(num, 10, 64)
	if !ok || err != nil {
		t.Fatalf("%s: no head recorded", p)
	}
	ref := repoconfig.StoreRef{Store: repoconfig.StoreConfigHub, Name: strings.TrimPrefix(p, "confighub://")}
	ch, ok := repoconfig.ConfigHubOf(ref)
	if !ok {
		t.Fatalf("%s: not a ConfigHub unit's path", p)
	}
	snap.Files[p] = []byte(files[p])
	if snap.Heads == nil {
		snap.Heads = map[repoconfig.StoreRef]plan.Head{}
	}
	snap.Heads[ref] = hubstore.Head(ch, hash, n)
}

// A ConfigHub unit's pull request carries the receipt and the Unit's
// preview; the marker records the revision the merge authorizes.
func TestRevisionProposal(t *testing.T) {
	hub := scenarioHub{Hash: "h1", Head: 1}
	in := input(t, func(f map[string]string) { hub.mutate(f, "") }, replicas(4, "kubectl", 0))
	if len(in.Result.WriteBacks) != 1 || in.Result.WriteBacks[0].Revision == nil {
		t.Fatalf("no revision planned: %v", in.Result.Errors)
	}
	wb := &in.Result.WriteBacks[0]
	in.Previews = map[string]string{wb.Branch: "| resource | path |\n"}
	p := in.propose(wb)
	m := in.Marker(p, nil, nil)
	if m.Revision == nil || *m.Revision != (MarkerRevision{Store: "confighub", Name: "prod-us-east/redis", Condition: "h1", Number: 2}) {
		t.Fatalf("marker revision %+v", m.Revision)
	}
	if p.FilesErr != nil || len(p.Files) != 1 {
		t.Fatalf("files %v %v: want the receipt alone", p.Files, p.FilesErr)
	}
	body := p.Body(m)
	if !strings.Contains(body, "### ConfigHub\n\n| resource | path |") {
		t.Fatalf("the body has no preview:\n%s", body)
	}
	two := *wb
	two.Receipts = append(slices.Clone(wb.Receipts), plan.File{Path: ".backflow/receipts/other.yaml", Data: []byte("x")})
	if p := in.propose(&two); p.FilesErr == nil || !strings.Contains(p.FilesErr.Error(), "a revision is written for one") {
		t.Fatalf("a revision of two receipts is proposed: %v", p.FilesErr)
	}
	in.PreviewErrors = map[string]error{wb.Branch: errTest}
	if p := in.propose(wb); !errors.Is(p.FilesErr, errTest) {
		t.Fatalf("a failed preview leaves the proposal writable: %v", p.FilesErr)
	}
}

// TestMarkerRevisionForms: a marker's revision reads in its form naming
// the store, and in the form a ConfigHub Unit's marker had before (space,
// unit, dataHash), so a pull request merged under it still has its
// revision written; a number that is not one is refused.
func TestMarkerRevisionForms(t *testing.T) {
	want := MarkerRevision{Store: "confighub", Name: "prod-us-east/redis", Condition: "h1", Number: 2}
	for _, tc := range []struct {
		why, json string
		ok        bool
	}{
		{"the store's form", `{"store":"confighub","name":"prod-us-east/redis","condition":"h1","number":2}`, true},
		{"a ConfigHub Unit's earlier form", `{"space":"prod-us-east","unit":"redis","dataHash":"h1","number":2}`, true},
		{"a number that is not an integer", `{"store":"confighub","name":"prod-us-east/redis","condition":"h1","number":2.5}`, false},
	} {
		var got MarkerRevision
		err := json.Unmarshal([]byte(tc.json), &got)
		if tc.ok && (err != nil || got != want) {
			t.Errorf("%s: %+v %v", tc.why, got, err)
		}
		if !tc.ok && err == nil {
			t.Errorf("%s: read as %+v", tc.why, got)
		}
	}
	// Written and read back, the marker keeps the store's form.
	data, err := json.Marshal(want)
	if err != nil || string(data) != `{"store":"confighub","name":"prod-us-east/redis","condition":"h1","number":2}` {
		t.Fatalf("%s %v", data, err)
	}
}

// TestRevisionSaysTheStoresWords: what the lifecycle says of a revision
// store (the commit message, the body's preview heading, a refused dry
// run) is the store's, as its reader named it (the receipt in the body
// says what the planner was given, TestRevisionStoreWords in plan).
func TestRevisionSaysTheStoresWords(t *testing.T) {
	hub := scenarioHub{Hash: "h1", Head: 1}
	in := input(t, func(f map[string]string) { hub.mutate(f, "") }, replicas(4, "kubectl", 0))
	wb := &in.Result.WriteBacks[0]
	w := &wb.Revision.Head.Words
	w.Store, w.Document, w.Condition = "the Hub", "the Hub's redis", "etag e1"
	in.Previews = map[string]string{wb.Branch: "| resource | path |\n"}
	p := in.propose(wb)
	m := in.Marker(p, nil, nil)
	if msg := p.doc.commitMessage("fp", "token"); strings.Contains(msg, "ConfigHub") {
		t.Errorf("the commit says ConfigHub of a store that calls itself otherwise:\n%s", msg)
	}
	if !strings.Contains(p.Body(m), "### the Hub\n\n| resource | path |") ||
		!strings.Contains(p.doc.commitMessage("fp", "token"), "into the Hub's redis") {
		t.Errorf("the store's names are not said:\n%s\n%s", p.Body(m), p.doc.commitMessage("fp", "token"))
	}
	e := Effect{Kind: Revise, Revision: wb.Revision, Pull: &Pull{Marker: m}}
	if text, _ := e.WitnessComment("also changes x"); !strings.HasPrefix(text, "**Not written.** the Hub's dry run") {
		t.Errorf("witness comment %q", text)
	}
}

var errTest = testError("the dry run failed")

type testError string

func (e testError) Error() string { return string(e) }

// A revision's receipt, proven, keeps the revision it names as its
// newRevision (the verify rule checks it), whatever the snapshot's store
// says a merge commit is; Published carries a store's proven receipts and
// refuses one that does not verify.
func TestProvenRevisionKeepsItsRevision(t *testing.T) {
	s := scenario{Values: "4", ConfigHub: &scenarioHub{Hash: "h2", Head: 2},
		Observations: []scenarioObservation{{Live: 4, Manager: "kubectl", At: "21m"}},
		Pulls:        []scenarioPull{{Number: 1, Proposes: 4, Head: "c1", State: "merged", MergedAt: "10m", PlannedHash: "h1"}}}
	planned := input(t, func(f map[string]string) { scenarioHub{Hash: "h1", Head: 1}.mutate(f, "") },
		replicas(4, "kubectl", 0)).Result.WriteBacks[0]
	in := s.input(t)
	pr := s.Pulls[0].pull(t, s)
	pr.MergeCommitSHA = strings.Repeat("d", 40)
	chains := in.FollowUps([]forge.PullRequest{pr})
	if len(chains) != 1 || chains[0][0].Kind != Proven {
		t.Fatalf("follow-up %v, want one proven", chains)
	}
	e := chains[0][0]
	_, comment, err := e.Evidence.Proven(e.Pull, planned.Receipts)
	if err != nil {
		t.Fatal(err)
	}
	docs := ProvenReceipts(comment)
	if len(docs) != 1 || !strings.Contains(docs[0], "newRevision: confighub:prod-us-east/redis@2") {
		t.Fatalf("proven receipts %q", docs)
	}
	run, _, err := e.Evidence.Published(e.Pull, []plan.File{{Path: planned.Receipts[0].Path, Data: []byte(docs[0])}})
	if err != nil || run.HeadSHA != pr.MergeCommitSHA || run.Conclusion != forge.ConclusionSuccess {
		t.Fatalf("published %+v %v", run, err)
	}
	bad := strings.Replace(docs[0], "spec.replicas", "spec.minReadySeconds", 1)
	if _, _, err := e.Evidence.Published(e.Pull, []plan.File{{Path: "r.yaml", Data: []byte(bad)}}); err == nil {
		t.Fatal("a proven receipt the policy does not authorize was published")
	}
}
