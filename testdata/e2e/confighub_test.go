package e2e

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

const (
	hubSpace = "prod-us-east"
	hubUnit  = "redis"
	// hubManager is the field manager ConfigHub's worker applies with:
	// its Kubernetes bridge server-side applies through Flux's ssa
	// package, with force, as the owner field "confighub" (confighub/sdk,
	// bridge-worker/impl/k8s_flux_ssa_applier_impl.go).
	hubManager = "confighub"
	// hubReceiptRel is where the write-back's receipt is committed (the
	// default receipts folder, the unit's environment and name, the
	// object's file).
	hubReceiptRel = ".backflow/receipts/prod-us-east/redis/redis_StatefulSet.apps.v1_redis-replicas.yaml"
)

// configHub reads the ConfigHub stand-in that backflow localhub serves
// through ConfigHub's API, as any client of ConfigHub would, and plays
// ConfigHub's worker through the stand-in's own route.
type configHub struct {
	api, apply, token string
	http              *http.Client
	spaceID, unitID   string
}

// hubRevision is a revision as ListExtendedRevisions answers it.
type hubRevision struct {
	RevisionNum int64
	UserID      string
	Description string
	CreatedAt   time.Time
}

func newConfigHub(t *testing.T, ep endpoints) *configHub {
	t.Helper()
	if ep.ConfigHubURL == "" || ep.ConfigHubApplyURL == "" {
		t.Fatalf("localhub's endpoints line names no ConfigHub stand-in: %+v", ep)
	}
	tok, err := os.ReadFile(ep.ConfigHubTokenPath)
	if err != nil {
		t.Fatal(err)
	}
	ch := &configHub{api: ep.ConfigHubURL, apply: ep.ConfigHubApplyURL, token: strings.TrimSpace(string(tok)),
		http: &http.Client{Timeout: 20 * time.Second}}
	var spaces []struct{ Space struct{ SpaceID string } }
	if err := ch.get("/space?where="+url.QueryEscape("Slug = '"+hubSpace+"'"), &spaces); err != nil || len(spaces) != 1 {
		t.Fatalf("ConfigHub space %s: %v (%d found)", hubSpace, err, len(spaces))
	}
	ch.spaceID = spaces[0].Space.SpaceID
	var units []struct{ Unit struct{ UnitID string } }
	if err := ch.get("/space/"+ch.spaceID+"/unit?where="+url.QueryEscape("Slug = '"+hubUnit+"'"), &units); err != nil ||
		len(units) != 1 {
		t.Fatalf("ConfigHub unit %s/%s: %v (%d found)", hubSpace, hubUnit, err, len(units))
	}
	ch.unitID = units[0].Unit.UnitID
	return ch
}

// send makes a request with the bearer token and returns the answer's
// body, or an error naming a status other than 200.
func (ch *configHub) send(method, u string) ([]byte, error) {
	req, err := http.NewRequest(method, u, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+ch.token)
	resp, err := ch.http.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s %s: %s: %s", method, u, resp.Status, body)
	}
	return body, nil
}

func (ch *configHub) get(path string, out any) error {
	body, err := ch.send(http.MethodGet, ch.api+path)
	if err != nil {
		return err
	}
	return json.Unmarshal(body, out)
}

func (ch *configHub) unitPath() string { return "/space/" + ch.spaceID + "/unit/" + ch.unitID }

// revisions are the Unit's revisions, oldest first.
func (ch *configHub) revisions() ([]hubRevision, error) {
	var list []struct{ Revision hubRevision }
	if err := ch.get(ch.unitPath()+"/revision", &list); err != nil {
		return nil, err
	}
	out := make([]hubRevision, len(list))
	for i, r := range list {
		out[i] = r.Revision
	}
	return out, nil
}

// unit is the Unit's head and last applied revision.
func (ch *configHub) unit() (head, applied int64, err error) {
	var u struct {
		Unit struct{ HeadRevisionNum, LastReleasedRevisionNum int64 }
	}
	err = ch.get(ch.unitPath()+"?include=HeadRevisionNum", &u)
	return u.Unit.HeadRevisionNum, u.Unit.LastReleasedRevisionNum, err
}

// data is the Unit's data (DownloadUnitData).
func (ch *configHub) data(t *testing.T) string {
	t.Helper()
	body, err := ch.send(http.MethodGet, ch.api+ch.unitPath()+"/data")
	if err != nil {
		t.Fatal(err)
	}
	return string(body)
}

// workerApply is ConfigHub's worker: it releases the Unit's head revision
// through the stand-in's route and server-side applies the revision's
// manifests to the cluster with force as the worker's field manager. It
// returns the revision applied.
func (ch *configHub) workerApply(t *testing.T, c *cluster) int64 {
	t.Helper()
	body, err := ch.send(http.MethodPost, ch.apply+"?space="+hubSpace+"&unit="+hubUnit)
	if err != nil {
		t.Fatalf("ConfigHub's worker: %v", err)
	}
	var applied struct {
		RevisionNum int64
		Data        string
	}
	if err := json.Unmarshal(body, &applied); err != nil {
		t.Fatalf("ConfigHub's worker: %v: %s", err, body)
	}
	objs := decodeYAML(t, fmt.Sprintf("revision %d of %s/%s", applied.RevisionNum, hubSpace, hubUnit), []byte(applied.Data))
	applyObjects(t, c.restConfig(userFlux), hubManager, namespace, objs)
	return applied.RevisionNum
}

// TestConfigHubRoundTrip is the round trip with the desired state in a
// ConfigHub Unit: the Unit (served by backflow localhub's ConfigHub
// stand-in) is applied to the loopback API server as ConfigHub's worker
// would; alice's scale 3 -> 4 is attributed from the audit log, its pull
// request carries the receipt and ConfigHub's dry run and merges itself,
// backflow serve writes revision 2 into the Unit, the test applies it as
// the worker, and the follow-up proves the receipt naming the revision.
// bob's image change is denied: no pull request, no revision.
func TestConfigHubRoundTrip(t *testing.T) {
	if testing.Short() {
		t.Skip("the ConfigHub round trip starts a kube-apiserver, etcd, localhub and backflow serve: run it with make e2e")
	}
	apiserver, bin := binaries(t)
	start := time.Now()
	listen := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	auditToken := token()
	c := startCluster(t, apiserver, tlsFront(t, listen)+"/audit", auditToken)
	unitFile, err := filepath.Abs(filepath.Join("confighub", "redis.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	original, err := os.ReadFile(unitFile)
	if err != nil {
		t.Fatal(err)
	}
	ep := startHubWith(t, bin, "http://"+listen+"/webhook", filepath.Join("confighub", "repo"),
		"--confighub-unit", hubSpace+"/"+hubUnit+"="+unitFile)
	h := newHubClient(t, ep)
	ch := newConfigHub(t, ep)

	// 1. ConfigHub's worker applies revision 1 (replicas 3).
	if n := ch.workerApply(t, c); n != 1 {
		t.Fatalf("the worker applied revision %d of a new Unit, want 1", n)
	}
	if n := replicas(t, c, "redis-replicas"); n != 3 {
		t.Fatalf("after the worker's apply of revision 1 redis-replicas has %d replicas, want 3", n)
	}
	audit := fmt.Sprintf("audit:\n  logFiles: [%s]\n  webhook:\n    tokenFile: audit-token\n", c.auditLog)
	hub := fmt.Sprintf("confighub:\n  url: %s\n  tokenFile: %s\n  timeout: 10s\n", ep.ConfigHubURL, ep.ConfigHubTokenPath)
	w := serveWatch{pattern: replicasKey, manager: hubManager, schedule: "@every 30s"}
	startServe(t, bin, serveConfigFor(t, ep, c, listen, w, audit+hub,
		map[string][]byte{"audit-token": []byte(auditToken + "\n")}), listen)
	t.Logf("timing: harness start %s (cluster, localhub with the ConfigHub stand-in, the worker's first apply, backflow serve)",
		time.Since(start).Round(time.Millisecond))

	// 2. alice (group sre) scales redis-replicas 3 -> 4; backflow
	// attributes it from the audit log and proposes revision 2 of the Unit.
	patch(t, c, userAlice, "redis-replicas", types.MergePatchType, `{"spec":{"replicas":4}}`, "scale")
	changed := time.Now()
	pr := awaitPull(t, h, replicasKey, "a write-back pull request for redis-replicas")
	toPull := time.Since(changed)
	t.Logf("timing: live change to pull request #%d in %s", pr.Number, toPull.Round(time.Millisecond))
	for _, want := range []string{"alice", "audit-log", "confighub-revision", "confighub:prod-us-east/redis@2",
		"revision 2 once this pull request merges (ConfigHub's dry run)", "| `spec.replicas` | `3` | `4` |"} {
		if !strings.Contains(pr.Body, want) {
			t.Errorf("pull request #%d does not name %q:\n%s", pr.Number, want, pr.Body)
		}
	}

	// 3. It merges itself; backflow serve writes revision 2 with If-Match,
	// its description naming the receipt's digest, and the data changes
	// by the one token.
	merged := awaitMerged(t, h, replicasKey, fmt.Sprintf("the pre-authorized pull request #%d merged", pr.Number))
	var revs []hubRevision
	eventually(t, stepTimeout, "revision 2 of the Unit written", func() error {
		var err error
		if revs, err = ch.revisions(); err != nil {
			return err
		}
		if len(revs) < 2 {
			return fmt.Errorf("%d revisions", len(revs))
		}
		return nil
	})
	if len(revs) != 2 || revs[1].RevisionNum != 2 {
		t.Fatalf("the Unit's revisions after the merge: %+v, want 1 and 2", revs)
	}
	// The stand-in dates a revision to the nanosecond, the hub a merge only
	// to the second (both by this machine's clock): the merge came after
	// alice's change and at or after merged_at, so each bounds the time
	// from the merge to the revision.
	bound := min(revs[1].CreatedAt.Sub(changed), revs[1].CreatedAt.Sub(*merged.MergedAt))
	t.Logf("timing: merge of #%d to revision 2 written: at most %s (the revision %s after alice's change,"+
		" %s after merged_at %s)", merged.Number, bound.Round(time.Millisecond),
		revs[1].CreatedAt.Sub(changed).Round(time.Millisecond),
		revs[1].CreatedAt.Sub(*merged.MergedAt).Round(time.Millisecond), merged.MergedAt.UTC().Format(time.RFC3339))
	receiptBytes, err := h.file(t, hubReceiptRel)
	if err != nil {
		t.Fatalf("the proposed receipt on main: %v", err)
	}
	sum := sha256.Sum256(receiptBytes)
	digest := "sha256:" + hex.EncodeToString(sum[:])
	for _, want := range []string{digest, "apps/v1|StatefulSet|redis|redis-replicas spec.replicas 3 -> 4",
		"accepted by alice (role platform-sre)"} {
		if !strings.Contains(revs[1].Description, want) {
			t.Errorf("revision 2's description does not name %q: %s", want, revs[1].Description)
		}
	}
	if want := strings.Replace(string(original), "replicas: 3 #", "replicas: 4 #", 1); ch.data(t) != want {
		t.Fatalf("the Unit's data after revision 2, want only replicas changed:\n%s", ch.data(t))
	}
	if head, applied, err := ch.unit(); err != nil || head != 2 || applied != 1 {
		t.Fatalf("the Unit before the worker's apply: head %d, applied %d (%v); want 2 and 1", head, applied, err)
	}
	// Not proven while ConfigHub has not applied the revision.
	comments, err := h.comments(t, pr.Number)
	if err != nil {
		t.Fatal(err)
	}
	for _, cm := range comments {
		if len(provenReceipts(cm.Body)) > 0 {
			t.Fatalf("#%d was proven before ConfigHub applied revision 2:\n%s", pr.Number, cm.Body)
		}
	}

	// 4. ConfigHub's worker applies revision 2; the follow-up proves the
	// receipt, naming the revision, and backflow verify accepts it.
	if n := ch.workerApply(t, c); n != 2 {
		t.Fatalf("the worker applied revision %d, want 2", n)
	}
	applied := time.Now()
	if n := replicas(t, c, "redis-replicas"); n != 4 {
		t.Fatalf("after the worker's apply of revision 2 redis-replicas has %d replicas, want 4", n)
	}
	receipts := awaitProven(t, h, bin, pr.Number)
	t.Logf("timing: worker's apply of revision 2 to proven receipt %s; live change to proven %s",
		time.Since(applied).Round(time.Millisecond), time.Since(changed).Round(time.Millisecond))
	for _, want := range []string{"status: proven", "actor: alice", "method: confighub-revision",
		"newRevision: confighub:prod-us-east/redis@2", "mergeCommit: " + merged.MergeCommit, "last applied revision is 2"} {
		if !strings.Contains(receipts[0], want) {
			t.Errorf("the proven receipt lacks %q:\n%s", want, receipts[0])
		}
	}

	// 5. bob (no backflow role) changes the image of the same object:
	// denied and reported, no pull request, no revision.
	pullsBefore, err := h.pulls(t)
	if err != nil {
		t.Fatal(err)
	}
	data := ch.data(t)
	patch(t, c, userBob, "redis-replicas", types.StrategicMergePatchType,
		`{"spec":{"template":{"spec":{"containers":[{"name":"redis","image":"`+debugImage+`"}]}}}}`)
	bobAt := time.Now()
	eventually(t, stepTimeout, "bob's change reported as drift", func() error {
		return driftNames(t, h, "`spec.template.spec.containers[0].image`", "| bob |")
	})
	t.Logf("timing: bob's change reported as drift in %s", time.Since(bobAt).Round(time.Millisecond))
	pulls, err := h.pulls(t)
	if err != nil {
		t.Fatal(err)
	}
	if len(pulls) != len(pullsBefore) {
		t.Errorf("bob's change opened a pull request: %d pull requests, want %d", len(pulls), len(pullsBefore))
	}
	if revs, err := ch.revisions(); err != nil || len(revs) != 2 {
		t.Errorf("bob's change wrote a revision (%v): %+v", err, revs)
	}
	if now := ch.data(t); now != data {
		t.Errorf("bob's change edited the Unit's data:\n%s", now)
	}
	t.Logf("timing: ConfigHub round trip wall time %s", time.Since(start).Round(time.Millisecond))
}
