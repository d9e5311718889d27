package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
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
	"sync"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
)

type replicaSeen struct {
	at       time.Time
	replicas int64
	rv       string
	// held says the object carried backflow's backflow.dev/hold.
	held bool
}

// values are the distinct values in the order the watch saw them, and
// reverts how often the value went from 4 back to 3.
func (rw *stsWatch) values() (seq []int64, reverts int) {
	rw.mu.Lock()
	defer rw.mu.Unlock()
	for _, s := range rw.seen {
		if len(seq) > 0 && seq[len(seq)-1] == s.replicas {
			continue
		}
		if len(seq) > 0 && seq[len(seq)-1] == 4 && s.replicas == 3 {
			reverts++
		}
		seq = append(seq, s.replicas)
	}
	return seq, reverts
}

// auditGate holds the audit webhook's batches: a batch waits until the
// gate opens.
type auditGate struct {
	mu    sync.Mutex
	until time.Time // zero: pass
}

func (g *auditGate) hold() { g.mu.Lock(); g.until = time.Now().Add(time.Hour); g.mu.Unlock() }
func (g *auditGate) openAfter(d time.Duration) {
	g.mu.Lock()
	g.until = time.Now().Add(d)
	g.mu.Unlock()
}

func (g *auditGate) wait(ctx context.Context) bool {
	for {
		g.mu.Lock()
		left := time.Until(g.until)
		g.mu.Unlock()
		if left <= 0 {
			return true
		}
		select {
		case <-time.After(min(left, 50*time.Millisecond)):
		case <-ctx.Done():
			return false
		}
	}
}

// slowAuditFront is tlsFront whose POST /audit requests wait at the gate:
// the audit webhook's batches arriving late, as its default batch mode
// delivers them seconds after the write.
func slowAuditFront(t *testing.T, listen string, gate *auditGate) string {
	t.Helper()
	proxy := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: "http", Host: listen})
	proxy.ErrorLog = log.New(io.Discard, "", 0)
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/audit" && !gate.wait(r.Context()) {
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// serveLines are backflow serve's JSON log lines with msg.
func serveLines(t *testing.T, path, msg string) []map[string]any {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var m map[string]any
		if json.Unmarshal(sc.Bytes(), &m) == nil && m["msg"] == msg {
			out = append(out, m)
		}
	}
	return out
}

// TestRevertBeforeCycle: the GitOps controller reverts alice's scale within
// 100 ms, while backflow serve is stopped (SIGSTOP: a cycle delayed past
// the revert, as a busy, slow or paused backflow is), and her audit event
// reaches backflow only in the audit webhook's batch, after the revert.
// The watch still delivers both writes when backflow resumes, the kept
// transition is attributed to alice by the late batch, and her 3 -> 4 is
// proposed (the pull request says the live object was reverted), merges
// itself, and is proven only once the forward apply from the merged main
// has made it live again.
func TestRevertBeforeCycle(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a kube-apiserver and etcd: run it with make e2e")
	}
	apiserver, bin := binaries(t)
	start := time.Now()
	listen := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	auditToken := token()
	// The audit batches are held from before alice's change until two
	// seconds after backflow resumes: her attribution arrives after the
	// revert, and after backflow's watch has delivered both writes.
	gate := &auditGate{}
	c := startCluster(t, apiserver, slowAuditFront(t, listen, gate)+"/audit", auditToken)
	ep := startHub(t, bin, "http://"+listen+"/webhook")
	h := newHubClient(t, ep)
	forwardApply(t, c, h)

	// The controller stand-in's copy of redis-replicas as main renders it,
	// applied with one prepared client so its revert takes one request.
	mainValues, err := h.file(t, valuesRel)
	if err != nil {
		t.Fatal(err)
	}
	objs, err := render(mainValues)
	if err != nil {
		t.Fatal(err)
	}
	var desired *unstructured.Unstructured
	for _, o := range objs {
		if o.GetKind() == "StatefulSet" && o.GetName() == "redis-replicas" {
			desired = o
			desired.SetNamespace(namespace)
		}
	}
	if desired == nil {
		t.Fatal("the chart renders no redis-replicas")
	}
	flux := c.dynamic(t, userFlux).Resource(stsGVR).Namespace(namespace)
	rw := watchSTS(t, c, "redis-replicas")

	// Attribution by the audit webhook only, in its batches of up to a
	// second: the event arrives after the revert.
	audit := "audit:\n  webhook:\n    tokenFile: audit-token\n"
	cfg := serveConfig(t, ep, c, listen, audit, map[string][]byte{"audit-token": []byte(auditToken + "\n")})
	serve := exec.Command(bin, "serve", "--config", cfg)
	serveLog := startProcess(t, filepath.Dir(cfg), "serve", serve)
	awaitReady(t, listen, "backflow serve ready")
	eventually(t, stepTimeout, "backflow serve's first cycle", func() error {
		if len(serveLines(t, serveLog, "cycle done")) == 0 {
			return fmt.Errorf("no cycle yet")
		}
		return nil
	})
	t.Logf("timing: harness start %s", time.Since(start).Round(time.Millisecond))

	// backflow is stopped: no cycle runs until the revert is done.
	gate.hold()
	if err := serve.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	resumed := false
	resume := func() {
		if !resumed {
			resumed = true
			if err := serve.Process.Signal(syscall.SIGCONT); err != nil {
				t.Error(err)
			}
		}
	}
	t.Cleanup(resume)
	patch(t, c, userAlice, "redis-replicas", types.MergePatchType, `{"spec":{"replicas":4}}`, "scale")
	changed := time.Now()
	if _, err := flux.Apply(context.Background(), "redis-replicas", desired.DeepCopy(),
		metav1.ApplyOptions{FieldManager: gitopsManager, Force: true}); err != nil {
		t.Fatal(err)
	}
	revertedIn := time.Since(changed)
	if revertedIn > 100*time.Millisecond {
		t.Fatalf("the controller stand-in took %s to revert, want within 100ms", revertedIn)
	}
	if n := replicas(t, c, "redis-replicas"); n != 3 {
		t.Fatalf("after the revert redis-replicas has %d replicas, want 3", n)
	}
	// Stopped a moment longer: a cycle delayed past the revert.
	time.Sleep(time.Second)
	gate.openAfter(2 * time.Second)
	resume()
	resumedAt := time.Now()
	t.Logf("FIGURE revert: alice's 3 -> 4 reverted by the stand-in in %s; backflow serve stopped for %s from before the change",
		revertedIn.Round(time.Microsecond), resumedAt.Sub(changed).Round(time.Millisecond))

	pr := awaitPull(t, h, replicasKey, "a write-back pull request for the reverted redis-replicas")
	t.Logf("FIGURE revert: live change to pull request #%d in %s (%s after backflow resumed)", pr.Number,
		time.Since(changed).Round(time.Millisecond), time.Since(resumedAt).Round(time.Millisecond))
	body := markdownText.Replace(pr.Body)
	for _, want := range []string{"alice", "audit-log", "reverted live: spec.replicas was set to 4", "wrote it back to 3"} {
		if !strings.Contains(body, want) {
			t.Errorf("pull request #%d does not say %q:\n%s", pr.Number, want, pr.Body)
		}
	}
	merged := awaitMerged(t, h, replicasKey, fmt.Sprintf("the pre-authorized pull request #%d merged", pr.Number))
	values, err := h.file(t, valuesRel)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(values, []byte("replicaCount: 4")) {
		t.Fatalf("main's values file after the merge:\n%s", values)
	}

	// Merged, but live is still the reverted 3: the follow-up waits.
	eventually(t, stepTimeout, "the follow-up waiting while live is 3", func() error {
		for _, m := range serveLines(t, serveLog, "follow-up") {
			if n, _ := m["pr"].(float64); int(n) == merged.Number && strings.Contains(fmt.Sprint(m["detail"]), "waiting") {
				return nil
			}
		}
		return fmt.Errorf("no follow-up of #%d waiting yet", merged.Number)
	})
	if n := replicas(t, c, "redis-replicas"); n != 3 {
		t.Fatalf("before the forward apply of the merge redis-replicas has %d replicas, want 3", n)
	}
	assertNotProven := func() {
		t.Helper()
		comments, err := h.comments(t, merged.Number)
		if err != nil {
			t.Fatal(err)
		}
		for _, cm := range comments {
			if len(provenReceipts(cm.Body)) > 0 {
				t.Fatalf("#%d was proven while live was still the reverted 3:\n%s", merged.Number, cm.Body)
			}
		}
	}
	assertNotProven()

	// The forward apply of the merged main makes 4 live: proven.
	forwardApply(t, c, h)
	applied := time.Now()
	receipts := awaitProven(t, h, bin, merged.Number)
	for _, want := range []string{"status: proven", "actor: alice"} {
		if !strings.Contains(receipts[0], want) {
			t.Errorf("the proven receipt lacks %q:\n%s", want, receipts[0])
		}
	}
	seq, reverts := rw.values()
	t.Logf("FIGURE revert: merged value applied to proven in %s; the watch saw spec.replicas %v (%d revert(s) of 4 to 3); whole test %s",
		time.Since(applied).Round(time.Millisecond), seq, reverts, time.Since(start).Round(time.Millisecond))
	if want := []int64{3, 4, 3, 4}; fmt.Sprint(seq) != fmt.Sprint(want) || reverts != 1 {
		t.Errorf("the watch saw spec.replicas %v, want %v: one revert, then the merged value", seq, want)
	}
}
