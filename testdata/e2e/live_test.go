package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
)

// binaries finds the kube-apiserver (KUBE_APISERVER, else built once per
// version into the user's cache by build-kube-apiserver.sh) and backflow
// (BACKFLOW_BIN, with backflow-core beside it, else both built from this
// checkout).
func binaries(t *testing.T) (apiserver, backflow string) {
	t.Helper()
	apiserver = os.Getenv("KUBE_APISERVER")
	if apiserver == "" {
		start := time.Now()
		out, err := exec.Command("./build-kube-apiserver.sh").Output()
		if err != nil {
			t.Fatalf("building kube-apiserver: %v", err)
		}
		apiserver = strings.TrimSpace(string(out))
		t.Logf("timing: kube-apiserver binary ready in %s (%s)", time.Since(start).Round(time.Millisecond), apiserver)
	}
	backflow = os.Getenv("BACKFLOW_BIN")
	if backflow == "" {
		dir := t.TempDir()
		backflow = filepath.Join(dir, "backflow")
		cmd := exec.Command("go", "build", "-o", dir+string(filepath.Separator), "./cmd/backflow", "./cmd/backflow-core")
		cmd.Dir = filepath.Join("..", "..")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("building backflow: %v\n%s", err, out)
		}
	}
	return apiserver, backflow
}

// tlsFront is an HTTPS URL in front of backflow serve at listen: the API
// server sends an audit webhook's token over https only, and TLS in front of
// backflow serve is what an ingress does in a cluster.
func tlsFront(t *testing.T, listen string) string {
	t.Helper()
	front := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: "http", Host: listen})
	// Until backflow serve is up the API server's batches fail and are
	// retried; that is expected, not worth a line each.
	front.ErrorLog = log.New(io.Discard, "", 0)
	srv := httptest.NewTLSServer(front)
	t.Cleanup(srv.Close)
	return srv.URL
}

// liveStatefulSet reads a StatefulSet as the backflow identity sees it.
func liveStatefulSet(t *testing.T, c *cluster, name string) *unstructured.Unstructured {
	t.Helper()
	u, err := c.dynamic(t, userBackflow).Resource(stsGVR).Namespace(namespace).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func replicas(t *testing.T, c *cluster, name string) int64 {
	n, _, _ := unstructured.NestedInt64(liveStatefulSet(t, c, name).Object, "spec", "replicas")
	return n
}

func image(t *testing.T, c *cluster, name string) string {
	cs, _, _ := unstructured.NestedSlice(liveStatefulSet(t, c, name).Object, "spec", "template", "spec", "containers")
	return cs[0].(map[string]any)["image"].(string)
}

func patch(t *testing.T, c *cluster, user, name string, pt types.PatchType, body string, sub ...string) {
	t.Helper()
	_, err := c.dynamic(t, user).Resource(stsGVR).Namespace(namespace).Patch(context.Background(), name, pt, []byte(body), metav1.PatchOptions{}, sub...)
	if err != nil {
		t.Fatalf("%s patching %s: %v", user, name, err)
	}
}

// pullFor is the write-back pull request whose body names object, newest
// first.
func pullFor(pulls []pull, object string) *pull {
	var found *pull
	for i := range pulls {
		if strings.Contains(pulls[i].Body, object) && (found == nil || pulls[i].Number > found.Number) {
			found = &pulls[i]
		}
	}
	return found
}

// awaitPull waits for the write-back pull request whose body names object
// (the newest) and returns it.
func awaitPull(t *testing.T, h *hubClient, object, what string) *pull {
	t.Helper()
	return awaitPullThat(t, h, object, what, func(*pull) error { return nil })
}

// awaitMerged waits until the newest write-back pull request for object
// has merged and returns it.
func awaitMerged(t *testing.T, h *hubClient, object, what string) *pull {
	t.Helper()
	return awaitPullThat(t, h, object, what, func(pr *pull) error {
		if pr.MergedAt == nil {
			return fmt.Errorf("#%d not merged", pr.Number)
		}
		return nil
	})
}

// awaitPullThat waits until the newest write-back pull request for object
// exists and ready says yes to it, and returns it.
func awaitPullThat(t *testing.T, h *hubClient, object, what string, ready func(*pull) error) *pull {
	t.Helper()
	var pr *pull
	eventually(t, stepTimeout, what, func() error {
		pulls, err := h.pulls(t)
		if err != nil {
			return err
		}
		if pr = pullFor(pulls, object); pr == nil {
			return fmt.Errorf("%d pull requests, none for %s", len(pulls), object)
		}
		return ready(pr)
	})
	return pr
}

// awaitReady waits until backflow serve listening at listen answers its
// readiness probe.
func awaitReady(t *testing.T, listen, what string) {
	t.Helper()
	eventually(t, 60*time.Second, what, func() error {
		resp, err := http.Get("http://" + listen + "/readyz")
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("readyz: %s", resp.Status)
		}
		return nil
	})
}

const (
	replicasKey  = "apps/v1|StatefulSet|redis|redis-replicas"
	masterKey    = "apps/v1|StatefulSet|redis|redis-master"
	defaultImage = "docker.io/bitnami/redis:7.4.2-debian-12-r0"
	debugImage   = "docker.io/bitnami/redis:7.4.2-debian-12-r0-debug"
	stepTimeout  = 2 * time.Minute
)

func TestLiveRoundTrip(t *testing.T) {
	if testing.Short() {
		t.Skip("the live round trip starts a kube-apiserver and etcd: run it with make e2e")
	}
	apiserver, bin := binaries(t)
	start := time.Now()
	listen := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	auditToken := token()
	c := startCluster(t, apiserver, tlsFront(t, listen)+"/audit", auditToken)
	clusterReady := time.Since(start)

	ep := startHub(t, bin, "http://"+listen+"/webhook")
	h := newHubClient(t, ep)

	// 1. The forward apply renders the chart from main and applies it.
	forwardApply(t, c, h)
	if n := replicas(t, c, "redis-replicas"); n != 3 {
		t.Fatalf("after the first forward apply redis-replicas has %d replicas, want 3", n)
	}
	audit := fmt.Sprintf("audit:\n  logFiles: [%s]\n  webhook:\n    tokenFile: audit-token\n", c.auditLog)
	serveLog := startServe(t, bin, serveConfig(t, ep, c, listen, audit, map[string][]byte{"audit-token": []byte(auditToken + "\n")}), listen)
	t.Logf("timing: harness start %s (etcd and kube-apiserver ready in %s; then localhub, the first forward apply and backflow serve)",
		time.Since(start).Round(time.Millisecond), clusterReady.Round(time.Millisecond))

	// 2. alice (group sre) scales redis-replicas 3 -> 4 through the scale
	// subresource; the bot observes it, attributes it to alice from the
	// audit log, and the pre-authorized pull request merges itself.
	patch(t, c, userAlice, "redis-replicas", types.MergePatchType, `{"spec":{"replicas":4}}`, "scale")
	changed := time.Now()
	pr := awaitPull(t, h, replicasKey, "a write-back pull request for redis-replicas")
	t.Logf("timing: observation-to-PR latency %s (live change to pull request #%d opened)", time.Since(changed).Round(time.Millisecond), pr.Number)
	for _, want := range []string{"alice", "audit-log"} {
		if !strings.Contains(pr.Body, want) {
			t.Errorf("pull request #%d does not name %q:\n%s", pr.Number, want, pr.Body)
		}
	}
	// 3. It merges itself (the comment on the line stays), the forward
	// apply from the merged main keeps 4, and the receipt is proven and
	// verifies.
	receipts, values := mergeApplyProve(t, c, h, bin, pr, "replicaCount: 4 # absorbs read load; scaled live during incidents")
	for _, want := range []string{"status: proven", "actor: alice"} {
		if !strings.Contains(receipts[0], want) {
			t.Errorf("the proven receipt lacks %q:\n%s", want, receipts[0])
		}
	}
	pullsBefore, err := h.pulls(t)
	if err != nil {
		t.Fatal(err)
	}

	// 4. bob (no backflow role) changes the image: denied and reported,
	// nothing written, and the next forward apply reverts it.
	patch(t, c, userBob, "redis-replicas", types.StrategicMergePatchType,
		`{"spec":{"template":{"spec":{"containers":[{"name":"redis","image":"`+debugImage+`"}]}}}}`)
	eventually(t, stepTimeout, "bob's change reported as drift", func() error {
		return driftNames(t, h, "`spec.template.spec.containers[0].image`", "| bob |")
	})
	assertNothingWritten(t, h, len(pullsBefore), values)
	forwardApply(t, c, h)
	if img := image(t, c, "redis-replicas"); img != defaultImage {
		t.Fatalf("the forward apply left image %s, want %s", img, defaultImage)
	}

	// 5. alice changes replicas and an environment variable together: the
	// variable is not hers to change, so the whole change is denied.
	patch(t, c, userAlice, "redis-replicas", types.StrategicMergePatchType,
		`{"spec":{"replicas":5,"template":{"spec":{"containers":[{"name":"redis","env":[{"name":"REDIS_REPLICATION_MODE","value":"standalone"}]}]}}}}`)
	eventually(t, stepTimeout, "alice's combined change reported as drift", func() error {
		return driftNames(t, h, "`spec.replicas`", "`spec.template.spec.containers[0].env[1].value`", "| alice |")
	})
	assertNothingWritten(t, h, len(pullsBefore), values)
	forwardApply(t, c, h)
	// Once the forward apply has reverted them, nothing is drift any more.
	eventually(t, stepTimeout, "the drift issue closed after the forward apply", func() error {
		issues, err := h.driftIssues(t)
		if err != nil {
			return err
		}
		for _, is := range issues {
			if is.State == "open" {
				return fmt.Errorf("drift issue #%d still open:\n%s", is.Number, is.Body)
			}
		}
		return nil
	})

	// 6. alice scales redis-master, which a person must review; the forward
	// apply reverts it before the merge, and the pull request stays open
	// and says so.
	patch(t, c, userAlice, "redis-master", types.MergePatchType, `{"spec":{"replicas":3}}`, "scale")
	var master *pull
	eventually(t, stepTimeout, "a write-back pull request for redis-master", func() error {
		pulls, err := h.pulls(t)
		if err != nil {
			return err
		}
		if master = pullFor(pulls, masterKey); master == nil || master.State != "open" {
			return fmt.Errorf("no open pull request for %s", masterKey)
		}
		return nil
	})
	forwardApply(t, c, h)
	if n := replicas(t, c, "redis-master"); n != 2 {
		t.Fatalf("the forward apply left redis-master at %d replicas, want 2", n)
	}
	eventually(t, stepTimeout, "the revert recognised on the open pull request", func() error {
		comments, err := h.comments(t, master.Number)
		if err != nil {
			return err
		}
		for _, cm := range comments {
			if strings.Contains(cm.Body, "forward apply reverted") {
				return nil
			}
		}
		return fmt.Errorf("#%d: no comment about the revert among %d", master.Number, len(comments))
	})
	pulls, err := h.pulls(t)
	if err != nil {
		t.Fatal(err)
	}
	if p := pullFor(pulls, masterKey); p.State != "open" {
		t.Errorf("#%d is %s after the revert, want open", p.Number, p.State)
	}
	// The API server's audit webhook delivered its batches to POST /audit
	// (the same events as the log file, so mostly deduplicated).
	eventually(t, stepTimeout, "audit batches received over the webhook", func() error {
		data, err := os.ReadFile(serveLog)
		if err != nil {
			return err
		}
		if !bytes.Contains(data, []byte(`"msg":"audit batch"`)) {
			return errors.New("no audit batch in backflow serve's log")
		}
		for _, bad := range []string{`"msg":"audit batch refused"`, `"msg":"audit batch rejected"`} {
			if bytes.Contains(data, []byte(bad)) {
				return errors.New("backflow serve's log has " + bad)
			}
		}
		// alice's changes were never judged before their audit events came.
		for _, line := range bytes.Split(data, []byte("\n")) {
			if bytes.Contains(line, []byte(`"msg":"unauthorized drift`)) && bytes.Contains(line, []byte("actor-unknown")) {
				return fmt.Errorf("a change was denied for want of its author: %s", line)
			}
		}
		return nil
	})
	t.Logf("timing: whole round trip %s", time.Since(start).Round(time.Millisecond))
}

// markdownText reads back the cells of a drift table as their text: code
// spans may be written <code>...</code>, with | escaped, so that a value
// cannot split a row.
var markdownText = strings.NewReplacer("<code>", "`", "</code>", "`", "&#124;", "|", `\|`, "|")

// driftNames checks that the open drift tracking issue names every want.
func driftNames(t *testing.T, h *hubClient, want ...string) error {
	issues, err := h.driftIssues(t)
	if err != nil {
		return err
	}
	for _, is := range issues {
		if is.State != "open" {
			continue
		}
		body := markdownText.Replace(is.Body)
		missing := ""
		for _, w := range want {
			if !strings.Contains(body, w) {
				missing = w
				break
			}
		}
		if missing == "" {
			return nil
		}
		return fmt.Errorf("drift issue #%d does not name %s:\n%s", is.Number, missing, is.Body)
	}
	return fmt.Errorf("no open drift issue among %d", len(issues))
}

// assertNothingWritten checks that a denied change opened no pull request
// and left main's values file as it was.
func assertNothingWritten(t *testing.T, h *hubClient, pullCount int, values []byte) {
	t.Helper()
	pulls, err := h.pulls(t)
	if err != nil {
		t.Fatal(err)
	}
	if len(pulls) != pullCount {
		t.Errorf("a denied change opened a pull request: %d pull requests, want %d", len(pulls), pullCount)
	}
	now, err := h.file(t, valuesRel)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(now, values) {
		t.Errorf("a denied change edited main's values file:\n%s", now)
	}
}

// verifyReceipt runs backflow verify on a proven receipt, with the policy
// at its path in the repository as a checkout holds it.
func verifyReceipt(t *testing.T, h *hubClient, bin, receipt string) {
	t.Helper()
	policy, err := h.file(t, policyRel)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, ".github"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, policyRel), policy, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "receipt.proven.yaml"), []byte(receipt), 0o600); err != nil {
		t.Fatal(err)
	}
	verify := exec.Command(bin, "verify", "--policy", policyRel, "receipt.proven.yaml")
	verify.Dir = dir
	if out, err := verify.CombinedOutput(); err != nil {
		t.Fatalf("backflow verify refused the proven receipt: %v\n%s\n%s", err, out, receipt)
	}
}

// mergeApplyProve waits for the pre-authorized pull request to merge with
// valuesLine in main's values file, runs the forward apply, which must keep
// 4 replicas, and waits for the follow-up's proven receipts, the first of
// which backflow verify must accept. It returns them and main's values file
// after the merge, which later denied changes must leave as it is.
func mergeApplyProve(t *testing.T, c *cluster, h *hubClient, bin string, pr *pull, valuesLine string) (receipts []string, values []byte) {
	t.Helper()
	awaitMerged(t, h, replicasKey, fmt.Sprintf("the pre-authorized pull request #%d merged", pr.Number))
	values, err := h.file(t, valuesRel)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(values, []byte(valuesLine)) {
		t.Fatalf("main's values file after the merge:\n%s", values)
	}

	// The forward apply from the merged main keeps 4; the follow-up proves
	// the receipt, and backflow verify accepts it.
	forwardApply(t, c, h)
	if n := replicas(t, c, "redis-replicas"); n != 4 {
		t.Fatalf("after the forward apply of the merged values redis-replicas has %d replicas, want 4", n)
	}
	return awaitProven(t, h, bin, pr.Number), values
}

// awaitProven waits for the follow-up's proven receipts on pull request
// number, the first of which backflow verify must accept, and returns them.
func awaitProven(t *testing.T, h *hubClient, bin string, number int) []string {
	t.Helper()
	var receipts []string
	eventually(t, stepTimeout, "the proven receipt", func() error {
		receipts = nil
		comments, err := h.comments(t, number)
		if err != nil {
			return err
		}
		for _, cm := range comments {
			receipts = append(receipts, provenReceipts(cm.Body)...)
		}
		if len(receipts) == 0 {
			return fmt.Errorf("#%d: no proven receipt among %d comments", number, len(comments))
		}
		return nil
	})
	verifyReceipt(t, h, bin, receipts[0])
	return receipts
}
