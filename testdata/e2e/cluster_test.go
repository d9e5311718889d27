package e2e

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// The identities of the loopback cluster (token authentication).
const (
	userAdmin     = "admin"    // system:masters, sets the cluster up
	userAlice     = "alice"    // group sre: may scale and edit the StatefulSets
	userBob       = "bob"      // no backflow role; RBAC lets him edit them
	userFlux      = "flux"     // the GitOps controller (field manager helm-controller)
	userBackflow  = "backflow" // the bot's watch: read-only
	gitopsManager = "helm-controller"
	namespace     = "redis"
)

// cluster is etcd and a kube-apiserver on loopback, with an audit log.
type cluster struct {
	dir      string
	server   string
	auditLog string
	tokens   map[string]string
	// kubeconfig holds one context per identity, named after it.
	kubeconfig string
}

// freePort asks the kernel for a free loopback port.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// startProcess starts a command whose output goes to a log file in dir,
// and stops it (SIGTERM, then SIGKILL) when the test ends.
func startProcess(t *testing.T, dir, name string, cmd *exec.Cmd) string {
	t.Helper()
	logPath := filepath.Join(dir, name+".log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	if cmd.Stdout == nil {
		cmd.Stdout = logFile
	}
	cmd.Stderr = logFile
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", name, err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		logFile.Close()
		// E2E_LOGS=1 shows the logs of a passing run too.
		if t.Failed() || os.Getenv("E2E_LOGS") != "" {
			data, _ := os.ReadFile(logPath)
			if len(data) > 6000 && os.Getenv("E2E_LOGS") == "" {
				data = data[len(data)-6000:]
			}
			t.Logf("--- tail of %s:\n%s", name, data)
		}
	})
	return logPath
}

// eventually polls check until it returns nil or the timeout passes; the
// cluster and the bot are other processes, so there is nothing to wait on
// but their answers.
func eventually(t *testing.T, timeout time.Duration, what string, check func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var err error
	for {
		if err = check(); err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s: %v", what, timeout, err)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

func token() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// startCluster starts etcd and the kube-apiserver at apiserver, waits until
// the API server is ready and sets up the namespace and RBAC. The audit
// events go to a log file and, when auditURL is set, to that webhook with
// the bearer token auditToken, in batches of at most a second.
func startCluster(t *testing.T, apiserver, auditURL, auditToken string) *cluster {
	t.Helper()
	dir := t.TempDir()
	etcdBin, err := exec.LookPath("etcd")
	if err != nil {
		t.Fatal("etcd is not installed: make e2e installs Debian's etcd-server (apt-get install etcd-server)")
	}
	clientPort, peerPort := freePort(t), freePort(t)
	etcdURL := fmt.Sprintf("http://127.0.0.1:%d", clientPort)
	peerURL := fmt.Sprintf("http://127.0.0.1:%d", peerPort)
	startProcess(t, dir, "etcd", exec.Command(etcdBin, "--name", "e2e", "--data-dir", filepath.Join(dir, "etcd"),
		"--listen-client-urls", etcdURL, "--advertise-client-urls", etcdURL,
		"--listen-peer-urls", peerURL, "--initial-advertise-peer-urls", peerURL,
		"--initial-cluster", "e2e="+peerURL))

	c := &cluster{dir: dir, tokens: map[string]string{}, auditLog: filepath.Join(dir, "audit.log")}
	var csv strings.Builder
	groups := map[string]string{userAdmin: "system:masters", userAlice: "sre", userBob: "developers", userFlux: "gitops", userBackflow: "backflow"}
	for i, u := range []string{userAdmin, userAlice, userBob, userFlux, userBackflow} {
		c.tokens[u] = token()
		fmt.Fprintf(&csv, "%s,%s,%d,\"%s\"\n", c.tokens[u], u, 1000+i, groups[u])
	}
	write := func(name, data string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	tokens := write("tokens.csv", csv.String())
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	saKey := write("sa.key", string(pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})))
	// Writes of StatefulSets (and their scale subresource) are logged with
	// their request bodies, which say which fields each write set.
	policy := write("audit-policy.yaml", `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
  - level: Request
    verbs: [create, update, patch]
    resources:
      - group: apps
        resources: [statefulsets, statefulsets/scale]
  - level: None
`)
	port := freePort(t)
	c.server = fmt.Sprintf("https://127.0.0.1:%d", port)
	args := []string{}
	if auditURL != "" {
		hook := write("audit-webhook.kubeconfig", fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
  - name: backflow
    cluster: {server: %q, insecure-skip-tls-verify: true}
users:
  - name: kube-apiserver
    user: {token: %q}
contexts:
  - name: audit
    context: {cluster: backflow, user: kube-apiserver}
current-context: audit
`, auditURL, auditToken))
		args = append(args, "--audit-webhook-config-file", hook, "--audit-webhook-mode", "batch",
			"--audit-webhook-batch-max-wait", "1s", "--audit-webhook-initial-backoff", "1s")
	}
	startProcess(t, dir, "kube-apiserver", exec.Command(apiserver, append(args,
		"--etcd-servers", etcdURL,
		"--secure-port", fmt.Sprint(port), "--bind-address", "127.0.0.1",
		"--cert-dir", filepath.Join(dir, "certs"),
		"--service-account-issuer", "https://kubernetes.default.svc",
		"--service-account-key-file", saKey, "--service-account-signing-key-file", saKey,
		"--token-auth-file", tokens,
		"--authorization-mode", "RBAC",
		"--audit-policy-file", policy, "--audit-log-path", c.auditLog,
		"--service-cluster-ip-range", "10.96.0.0/24",
		"--enable-priority-and-fairness=false")...))
	c.kubeconfig = write("kubeconfig", c.kubeconfigYAML())

	ready := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	eventually(t, 90*time.Second, "kube-apiserver ready", func() error {
		req, _ := http.NewRequest(http.MethodGet, c.server+"/readyz", nil)
		req.Header.Set("Authorization", "Bearer "+c.tokens[userAdmin])
		resp, err := ready.Do(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("readyz: %s", resp.Status)
		}
		return nil
	})
	c.setupRBAC(t)
	return c
}

// restConfig is a client config for user, with kubectl's user agent so
// managedFields name the manager as kubectl's writes do.
func (c *cluster) restConfig(user string) *rest.Config {
	return &rest.Config{
		Host: c.server, BearerToken: c.tokens[user],
		TLSClientConfig: rest.TLSClientConfig{Insecure: true},
		UserAgent:       "kubectl/v1.34.4 (linux/amd64) kubernetes/e2e",
		QPS:             50, Burst: 100,
	}
}

func (c *cluster) dynamic(t *testing.T, user string) dynamic.Interface {
	t.Helper()
	d, err := dynamic.NewForConfig(c.restConfig(user))
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func (c *cluster) kubeconfigYAML() string {
	var b strings.Builder
	fmt.Fprintf(&b, "apiVersion: v1\nkind: Config\ncurrent-context: %s\nclusters:\n  - name: e2e\n    cluster:\n      server: %s\n      insecure-skip-tls-verify: true\n", userBackflow, c.server)
	b.WriteString("users:\n")
	for u, tok := range c.tokens {
		fmt.Fprintf(&b, "  - name: %s\n    user:\n      token: %s\n", u, tok)
	}
	b.WriteString("contexts:\n")
	for u := range c.tokens {
		fmt.Fprintf(&b, "  - name: %s\n    context:\n      cluster: e2e\n      user: %s\n", u, u)
	}
	return b.String()
}

// setupRBAC creates the namespace and the roles: sre may scale and edit
// the StatefulSets, bob may edit them (he has no backflow role), the GitOps
// controller may do anything with them, and backflow may only read them.
func (c *cluster) setupRBAC(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	cs, err := kubernetes.NewForConfig(c.restConfig(userAdmin))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	sts := []string{"statefulsets", "statefulsets/scale"}
	roles := []struct {
		name  string
		verbs []string
		subj  rbacv1.Subject
	}{
		{"sre", []string{"get", "list", "watch", "patch", "update"}, rbacv1.Subject{Kind: rbacv1.GroupKind, Name: "sre"}},
		{"bob-edit", []string{"get", "list", "watch", "patch", "update"}, rbacv1.Subject{Kind: rbacv1.UserKind, Name: userBob}},
		{"gitops", []string{"*"}, rbacv1.Subject{Kind: rbacv1.UserKind, Name: userFlux}},
		{"backflow-observer", []string{"get", "list", "watch"}, rbacv1.Subject{Kind: rbacv1.UserKind, Name: userBackflow}},
	}
	for _, r := range roles {
		role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: r.name, Namespace: namespace},
			Rules: []rbacv1.PolicyRule{{APIGroups: []string{"apps"}, Resources: sts, Verbs: r.verbs}}}
		if r.subj.Name == userFlux {
			// The forward apply applies the whole release: its services,
			// config maps, service accounts, disruption budgets and
			// network policy besides the StatefulSets.
			role.Rules = append(role.Rules, rbacv1.PolicyRule{
				APIGroups: []string{"", "policy", "networking.k8s.io"},
				Resources: []string{"services", "configmaps", "serviceaccounts", "secrets", "poddisruptionbudgets", "networkpolicies"},
				Verbs:     r.verbs,
			})
		}
		if _, err := cs.RbacV1().Roles(namespace).Create(ctx, role, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: r.name, Namespace: namespace},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: r.name},
			Subjects: []rbacv1.Subject{r.subj}}
		if r.subj.Kind != rbacv1.ServiceAccountKind {
			rb.Subjects[0].APIGroup = rbacv1.GroupName
		}
		if _, err := cs.RbacV1().RoleBindings(namespace).Create(ctx, rb, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}
