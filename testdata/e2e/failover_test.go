package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
)

// The Lease of the failover test and its short terms: a standby takes an
// expired lease over about two seconds after the leader's last renewal.
const (
	leaseNamespace = "backflow"
	leaseName      = "backflow"
	leaseDuration  = "2s"
	renewDeadline  = "1s"
	retryPeriod    = "250ms"
)

// allowLeases lets the backflow identity keep its Lease, as the chart's
// Role does.
func (c *cluster) allowLeases(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	cs, err := kubernetes.NewForConfig(c.restConfig(userAdmin))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: leaseNamespace}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "backflow-leader-election", Namespace: leaseNamespace},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"get", "create", "update"}}}}
	if _, err := cs.RbacV1().Roles(leaseNamespace).Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: role.Name, Namespace: leaseNamespace},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name},
		Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: userBackflow}}}
	if _, err := cs.RbacV1().RoleBindings(leaseNamespace).Create(ctx, rb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// leaseHolder is the identity holding the Lease.
func (c *cluster) leaseHolder(t *testing.T) string {
	t.Helper()
	cs, err := kubernetes.NewForConfig(c.restConfig(userAdmin))
	if err != nil {
		t.Fatal(err)
	}
	l, err := cs.CoordinationV1().Leases(leaseNamespace).Get(context.Background(), leaseName, metav1.GetOptions{})
	if err != nil || l.Spec.HolderIdentity == nil {
		return ""
	}
	return *l.Spec.HolderIdentity
}

// hubProxy stands between the replicas and the hub. It counts the writes
// that reach the hub, by method and route, and can hold the first request
// of one route in flight: a replica killed while it waits never gets it
// through, as a process that dies before its request leaves.
type hubProxy struct {
	srv *httptest.Server

	mu      sync.Mutex
	writes  map[string]int
	holdFor string        // "METHOD /path" to hold; empty holds nothing
	held    chan struct{} // closed when the request to hold arrived
	release chan struct{}
	heldAt  time.Time
}

var numbers = regexp.MustCompile(`/[0-9]+(/|$)`)

func newHubProxy(t *testing.T, hubURL string) *hubProxy {
	t.Helper()
	u, err := url.Parse(hubURL)
	if err != nil {
		t.Fatal(err)
	}
	u.Path = ""
	p := &hubProxy{writes: map[string]int{}}
	rp := httputil.NewSingleHostReverseProxy(u)
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key := r.Method + " " + r.URL.Path
		p.mu.Lock()
		hold := p.holdFor != "" && key == p.holdFor
		var release chan struct{}
		if hold {
			p.holdFor = ""
			close(p.held)
			release = p.release
			p.heldAt = time.Now()
		}
		p.mu.Unlock()
		if hold {
			select {
			case <-release:
			case <-r.Context().Done():
				return // the client died: nothing reaches the hub
			}
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead && !strings.HasSuffix(r.URL.Path, "/git-upload-pack") {
			p.mu.Lock()
			p.writes[r.Method+" "+numbers.ReplaceAllString(r.URL.Path, "/N$1")]++
			p.mu.Unlock()
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(p.srv.Close)
	// A request still held when the test ends is let go, so that closing
	// the proxy does not wait for it.
	t.Cleanup(func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		if p.release != nil {
			close(p.release)
			p.release = nil
		}
	})
	return p
}

// hold holds the next request "METHOD /path"; the channel is closed when it
// arrives.
func (p *hubProxy) hold(key string) <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.holdFor, p.held, p.release = key, make(chan struct{}), make(chan struct{})
	return p.held
}

func (p *hubProxy) counts() map[string]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := map[string]int{}
	for k, v := range p.writes {
		out[k] = v
	}
	return out
}

// via rewrites the hub's endpoints to go through the proxy.
func (p *hubProxy) via(ep endpoints) endpoints {
	pu, _ := url.Parse(p.srv.URL)
	swap := func(s string) string {
		u, err := url.Parse(s)
		if err != nil {
			return s
		}
		u.Host = pu.Host
		return u.String()
	}
	ep.APIURL, ep.GraphQLURL, ep.GitURL = swap(ep.APIURL), swap(ep.GraphQLURL), swap(ep.GitURL)
	return ep
}

// service stands in for the Kubernetes Service in front of the replicas:
// each request goes to a replica whose /readyz answers 200.
func service(t *testing.T, listens func() []string) *httptest.Server {
	t.Helper()
	probe := &http.Client{Timeout: time.Second}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for _, l := range listens() {
			resp, err := probe.Get("http://" + l + "/readyz")
			if err != nil {
				continue
			}
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				httputil.NewSingleHostReverseProxy(&url.URL{Scheme: "http", Host: l}).ServeHTTP(w, r)
				return
			}
		}
		http.Error(w, "no ready endpoint", http.StatusServiceUnavailable)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// replicaProcess is one backflow serve process with --leader-elect.
type replicaProcess struct {
	name, listen, log string
	cmd               *exec.Cmd
}

func startReplica(t *testing.T, bin, config, listen, name string, c *cluster) *replicaProcess {
	t.Helper()
	cmd := exec.Command(bin, "serve", "--config", config, "--leader-elect",
		"--kubeconfig", c.kubeconfig, "--leader-elect-namespace", leaseNamespace, "--leader-elect-name", leaseName,
		"--leader-elect-lease-duration", leaseDuration, "--leader-elect-renew-deadline", renewDeadline,
		"--leader-elect-retry-period", retryPeriod)
	cmd.Env = append(os.Environ(), "POD_NAME="+name)
	dir := t.TempDir()
	return &replicaProcess{name: name, listen: listen, cmd: cmd, log: startProcess(t, dir, name, cmd)}
}

func (r *replicaProcess) status(path string) int {
	resp, err := http.Get("http://" + r.listen + path)
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

// logLine is one JSON line of backflow serve's log.
type logLine struct {
	Time     time.Time `json:"time"`
	Msg      string    `json:"msg"`
	Why      []string  `json:"why"`
	Duration string    `json:"duration"`
}

// lines reads the replica's JSON log lines (client-go's own lines are
// text, and skipped).
func (r *replicaProcess) lines(t *testing.T) []logLine {
	t.Helper()
	data, err := os.ReadFile(r.log)
	if err != nil {
		t.Fatal(err)
	}
	var out []logLine
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var l logLine
		if json.Unmarshal(sc.Bytes(), &l) == nil && l.Msg != "" {
			out = append(out, l)
		}
	}
	return out
}

// first is the first line with msg, and whether there is one.
func (r *replicaProcess) first(t *testing.T, msg string) (logLine, bool) {
	for _, l := range r.lines(t) {
		if l.Msg == msg {
			return l, true
		}
	}
	return logLine{}, false
}

type pullCommit struct {
	SHA string `json:"sha"`
}

// TestFailover runs two backflow serve replicas with --leader-elect against
// the loopback API server and the hub, kills the leader with SIGKILL in the
// middle of the cycle that writes a pull request (its branch pushed and
// checked, the request that opens the pull request in flight), and
// measures the take-over: the standby leads when the lease expires, its
// first cycle finds the dead leader's branch and commit, reuses them, and
// opens the one pull request; nothing is written twice.
func TestFailover(t *testing.T) {
	if testing.Short() {
		t.Skip("the failover starts a kube-apiserver and etcd: run it with make e2e")
	}
	apiserver, bin := binaries(t)
	start := time.Now()
	c := startCluster(t, apiserver, "", "")
	c.allowLeases(t)

	var mu sync.Mutex
	var listens []string
	svc := service(t, func() []string { mu.Lock(); defer mu.Unlock(); return listens })
	ep := startHub(t, bin, svc.URL+"/webhook")
	h := newHubClient(t, ep)
	proxy := newHubProxy(t, ep.APIURL)
	forwardApply(t, c, h)

	// Both replicas read the API server's audit log file, so alice's change
	// is attributed whichever of them plans it.
	audit := fmt.Sprintf("audit:\n  logFiles: [%s]\n", c.auditLog)
	listenA, listenB := fmt.Sprintf("127.0.0.1:%d", freePort(t)), fmt.Sprintf("127.0.0.1:%d", freePort(t))
	a := startReplica(t, bin, serveConfig(t, proxy.via(ep), c, listenA, audit, nil), listenA, "backflow-a", c)
	eventually(t, 60*time.Second, "backflow-a ready (leading)", func() error {
		if s := a.status("/readyz"); s != http.StatusOK {
			return fmt.Errorf("readyz %d", s)
		}
		return nil
	})
	b := startReplica(t, bin, serveConfig(t, proxy.via(ep), c, listenB, audit, nil), listenB, "backflow-b", c)
	mu.Lock()
	listens = []string{listenA, listenB}
	mu.Unlock()
	eventually(t, 60*time.Second, "backflow-b live", func() error {
		if s := b.status("/healthz"); s != http.StatusOK {
			return fmt.Errorf("healthz %d", s)
		}
		if _, ok := b.first(t, "standing by"); !ok {
			return fmt.Errorf("not standing by yet")
		}
		return nil
	})
	if s := b.status("/readyz"); s != http.StatusServiceUnavailable {
		t.Fatalf("the standby's /readyz: %d, want 503", s)
	}
	if holder := c.leaseHolder(t); !strings.HasPrefix(holder, a.name+"_") {
		t.Fatalf("the Lease is held by %q, want %s", holder, a.name)
	}
	eventually(t, stepTimeout, "backflow-a's first cycle", func() error {
		if _, ok := a.first(t, "cycle done"); !ok {
			return fmt.Errorf("no cycle done yet")
		}
		return nil
	})
	t.Logf("timing: harness start %s", time.Since(start).Round(time.Millisecond))

	// alice scales redis-replicas 3 -> 4; the leader plans it, pushes the
	// write-back branch, checks it, and asks the hub to open the pull
	// request: that request is held, and the leader killed meanwhile.
	held := proxy.hold("POST /repos/" + repoName + "/pulls")
	patch(t, c, userAlice, "redis-replicas", types.MergePatchType, `{"spec":{"replicas":4}}`, "scale")
	select {
	case <-held:
	case <-time.After(stepTimeout):
		t.Fatal("the leader never asked to open the pull request")
	}
	before := proxy.counts()
	if err := a.cmd.Process.Kill(); err != nil { // SIGKILL: no release, no shutdown
		t.Fatal(err)
	}
	killed := time.Now()
	if holder := c.leaseHolder(t); !strings.HasPrefix(holder, a.name+"_") {
		t.Fatalf("the Lease was held by %q when the leader was killed, want %s", holder, a.name)
	}

	pr := awaitPull(t, h, replicasKey, "the pull request opened by the new leader")
	opened := time.Since(killed)
	leading, ok := b.first(t, "leading")
	if !ok {
		t.Fatalf("the pull request was opened, but backflow-b never led")
	}
	if holder := c.leaseHolder(t); !strings.HasPrefix(holder, b.name+"_") {
		t.Errorf("the Lease is held by %q, want %s", holder, b.name)
	}
	// The cycle that opened it logs its end a moment later.
	var firstCycle logLine
	eventually(t, stepTimeout, "backflow-b's first cycle logged", func() error {
		for _, l := range b.lines(t) {
			if l.Msg == "cycle done" || l.Msg == "cycle failed" {
				firstCycle = l
				return nil
			}
		}
		return fmt.Errorf("no cycle ended yet")
	})
	d, err := time.ParseDuration(firstCycle.Duration)
	if err != nil {
		t.Fatalf("backflow-b's first cycle: %+v: %v", firstCycle, err)
	}
	cycleStart := firstCycle.Time.Add(-d)

	// Pre-authorized, it merges itself; then count what reached the hub.
	awaitMerged(t, h, replicasKey, fmt.Sprintf("the pull request #%d merged", pr.Number))
	pulls, err := h.pulls(t)
	if err != nil {
		t.Fatal(err)
	}
	var commits []pullCommit
	if err := h.get(t, fmt.Sprintf("/repos/%s/pulls/%d/commits", repoName, pr.Number), &commits); err != nil {
		t.Fatal(err)
	}
	values, err := h.file(t, valuesRel)
	if err != nil {
		t.Fatal(err)
	}
	after := proxy.counts()

	t.Logf("failover: lease %s, renew deadline %s, retry %s", leaseDuration, renewDeadline, retryPeriod)
	t.Logf("failover: leader killed (SIGKILL) with its branch pushed and the request opening the pull request in flight")
	t.Logf("failover: kill -> new leader %s", leading.Time.Sub(killed).Round(time.Millisecond))
	t.Logf("failover: kill -> new leader's first cycle starts %s (why %v, %s long)", cycleStart.Sub(killed).Round(time.Millisecond), firstCycle.Why, firstCycle.Duration)
	t.Logf("failover: kill -> pull request #%d opened %s", pr.Number, opened.Round(time.Millisecond))
	t.Logf("failover: pull requests %d (for %s: %d), commits in #%d: %d", len(pulls), replicasKey, countPulls(pulls, replicasKey), pr.Number, len(commits))
	var keys []string
	for k := range after {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		t.Logf("failover: writes %-60s before the kill %d, after %d", k, before[k], after[k]-before[k])
	}

	if n := countPulls(pulls, replicasKey); n != 1 || len(pulls) != 1 {
		t.Errorf("%d pull requests (%d for %s), want exactly 1", len(pulls), n, replicasKey)
	}
	if len(commits) != 1 {
		t.Errorf("#%d has %d commits, want 1: the new leader must reuse the dead one's commit", pr.Number, len(commits))
	}
	if !bytes.Contains(values, []byte("replicaCount: 4")) {
		t.Errorf("main's values file after the merge:\n%s", values)
	}
	// The branch, its commit and its check were written once, by the dead
	// leader; the new one wrote only what was missing.
	for k, n := range after {
		if n-before[k] > 0 && before[k] > 0 && (strings.Contains(k, "git-receive-pack") || strings.Contains(k, "/git/") || strings.Contains(k, "/check-runs")) {
			t.Errorf("%s written again after the failover (%d before, %d after)", k, before[k], n-before[k])
		}
	}
	if !bytes.Contains(mustRead(t, b.log), []byte(`"why":["elected"]`)) {
		t.Errorf("backflow-b's cycles do not include one for its election")
	}
}

func countPulls(pulls []pull, object string) int {
	n := 0
	for _, p := range pulls {
		if strings.Contains(p.Body, object) {
			n++
		}
	}
	return n
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}
