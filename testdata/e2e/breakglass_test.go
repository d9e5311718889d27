package e2e

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// breakGlassFor is the e2e policy's acceptFor: short, so the expiry comes
// within the test, and longer than a cycle, so the acceptance is proven
// before it.
const breakGlassFor = "40s"

// TestLiveBreakGlass is a temporary acceptance on the real kube-apiserver:
// alice's scale to 4 is accepted for 40s (the values line says until when),
// merged, applied and proven; once the term has passed by backflow's clock,
// a cycle of backflow serve opens the pull request restoring 3, which merges
// pre-authorized; the forward apply puts live back at 3, and its follow-up
// proves the restoring receipt, which backflow verify accepts. (That the
// expiry fires once is held by the bot's hub test and the demo.)
func TestLiveBreakGlass(t *testing.T) {
	if testing.Short() {
		t.Skip("the live round trip starts a kube-apiserver and etcd: run it with make e2e")
	}
	apiserver, bin := binaries(t)
	repo := filepath.Join(t.TempDir(), "repo")
	if err := os.CopyFS(repo, os.DirFS("repo")); err != nil {
		t.Fatal(err)
	}
	pol := filepath.Join(repo, policyRel)
	data, err := os.ReadFile(pol)
	if err != nil {
		t.Fatal(err)
	}
	const entry = "          autoMerge: true\n"
	if !bytes.Contains(data, []byte(entry)) {
		t.Fatalf("the e2e policy has no autoMerge entry:\n%s", data)
	}
	data = bytes.Replace(data, []byte(entry), []byte(entry+"          acceptFor: "+breakGlassFor+"\n"), 1)
	if err := os.WriteFile(pol, data, 0o600); err != nil {
		t.Fatal(err)
	}

	listen := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	auditToken := token()
	c := startCluster(t, apiserver, tlsFront(t, listen)+"/audit", auditToken)
	ep := startHubWith(t, bin, "http://"+listen+"/webhook", repo)
	h := newHubClient(t, ep)
	forwardApply(t, c, h)
	audit := fmt.Sprintf("audit:\n  logFiles: [%s]\n  webhook:\n    tokenFile: audit-token\n", c.auditLog)
	files := map[string][]byte{"audit-token": []byte(auditToken + "\n")}
	startServe(t, bin, serveConfig(t, ep, c, listen, audit, files), listen)

	// 1. alice scales to 4: accepted for 40s, merged, kept, proven.
	patch(t, c, userAlice, "redis-replicas", types.MergePatchType, `{"spec":{"replicas":4}}`, "scale")
	pr := awaitPull(t, h, replicasKey, "a write-back pull request for redis-replicas")
	accepted := time.Now()
	if !strings.Contains(pr.Body, "temporary: accepted until") {
		t.Errorf("pull request #%d does not say the acceptance is temporary:\n%s", pr.Number, pr.Body)
	}
	mergeApplyProve(t, c, h, bin, pr,
		"replicaCount: 4 # absorbs read load; scaled live during incidents | backflow: accepted until ")

	// 2. After the term, a cycle restores 3 by a pre-authorized pull request.
	restore := awaitPullThat(t, h, replicasKey, "the restoring pull request merged", func(p *pull) error {
		if p.Number == pr.Number || !strings.Contains(p.Title, "replica.replicaCount 4 -> 3") {
			return fmt.Errorf("newest is #%d %q", p.Number, p.Title)
		}
		if p.MergedAt == nil {
			return fmt.Errorf("#%d not merged", p.Number)
		}
		return nil
	})
	t.Logf("timing: the restoring pull request #%d merged %s after the acceptance's pull request "+
		"(acceptFor %s, cycles every 30s)",
		restore.Number, time.Since(accepted).Round(time.Second), breakGlassFor)
	if !strings.Contains(restore.Body, "expiry: restores the value desired before the temporary acceptance") {
		t.Errorf("#%d does not say what it restores:\n%s", restore.Number, restore.Body)
	}
	values, err := h.file(t, valuesRel)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(values, []byte("replicaCount: 3 # absorbs read load; scaled live during incidents\n")) {
		t.Fatalf("main's values file after the restoration:\n%s", values)
	}

	// 3. The forward apply puts live back at 3; the follow-up proves it.
	forwardApply(t, c, h)
	if n := replicas(t, c, "redis-replicas"); n != 3 {
		t.Fatalf("after the forward apply of the restoration redis-replicas has %d replicas, want 3", n)
	}
	var receipts []string
	eventually(t, stepTimeout, "the restoring receipt proven", func() error {
		comments, err := h.comments(t, restore.Number)
		if err != nil {
			return err
		}
		for _, cm := range comments {
			receipts = append(receipts, provenReceipts(cm.Body)...)
		}
		if len(receipts) == 0 {
			return fmt.Errorf("#%d: no proven receipt among %d comments", restore.Number, len(comments))
		}
		return nil
	})
	for _, want := range []string{"status: proven", "expired:\n", "predicate: acceptance-expired"} {
		if !strings.Contains(receipts[0], want) {
			t.Errorf("the proven restoring receipt lacks %q:\n%s", want, receipts[0])
		}
	}
	verifyReceipt(t, h, bin, receipts[0])
}
