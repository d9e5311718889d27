package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"
)

// The chart as deploy/README.md installs it: release backflow in namespace
// backflow, the App's Secret backflow-app made beforehand.
const (
	chartDir       = "../../deploy/chart/backflow"
	installNS      = "backflow"
	installRelease = "backflow"
	appSecret      = "backflow-app"
	chartCluster   = "prod-us-east-1"
)

// installValues are the docs' example values (deploy/README.md, "Install
// with the Helm chart", step 2) for the e2e's cluster: the App at the local
// hub, the kube source watching the redis StatefulSets, the Ingress and
// NetworkPolicy on, the API server's audit webhook as the attribution, and
// leader election so that the Lease's Role is used too.
func installValues(ep endpoints) string {
	base := ep.APIURL
	if !strings.HasSuffix(base, "/") {
		base += "/"
	}
	return fmt.Sprintf(`github: {appId: %d, baseURL: %q, graphqlURL: %q, gitURL: %q, appSlug: backflow}
credentials: {existingSecret: %s}
repositories: [%s]
gitopsManagers: [%s]
kube:
  enabled: true
  cluster: %s
  objects:
    - {apiVersion: apps/v1, kind: StatefulSet, namespace: %s, name: "redis-*"}
ingress:
  enabled: true
  className: nginx
  host: backflow.example.com
  annotations: {cert-manager.io/cluster-issuer: letsencrypt}
networkPolicy: {enabled: true}
audit: {webhook: {enabled: true}}
leaderElection: {enabled: true}
server: {jitter: 0s}
`, ep.AppID, base, ep.GraphQLURL, ep.GitURL, appSecret, repoName, gitopsManager, chartCluster, namespace)
}

// installChart follows the docs' install steps on the loopback API server:
// the namespace and the App's Secret (step 1, as kubectl create does), then
// the chart rendered with values and every object server-side applied as
// helm does (step 3), objects keep leaves some out. It returns the objects
// applied.
func installChart(t *testing.T, c *cluster, ns, release, values string, secret map[string][]byte, keep func(*unstructured.Unstructured) bool) []*unstructured.Unstructured {
	t.Helper()
	ctx := context.Background()
	cs, err := kubernetes.NewForConfig(c.restConfig(userAdmin))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("kubectl create namespace %s: %v", ns, err)
	}
	if _, err := cs.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: appSecret}, Data: secret}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("kubectl create secret generic %s: %v", appSecret, err)
	}
	objs, err := renderChart(chartDir, release, ns, []byte(values))
	if err != nil {
		t.Fatalf("rendering %s: %v", chartDir, err)
	}
	var applied []*unstructured.Unstructured
	for _, o := range objs {
		if keep == nil || keep(o) {
			applied = append(applied, o)
		}
	}
	applyObjects(t, c.restConfig(userAdmin), "helm", ns, applied)
	return applied
}

// pod is what the kubelet would run of the release's Deployment, as a
// process: the ConfigMap and Secret volumes read back from the API server
// and written under root at their mount paths, the container's args and
// env, and the service account's identity.
type pod struct {
	root, listen, kubeconfig, log string
	args                          []string
	env                           []string
}

// saKubeconfig is a kubeconfig whose requests are the service account's:
// the admin's token impersonating system:serviceaccount:NS:NAME.
func (c *cluster) saKubeconfig(t *testing.T, dir, ns, name string) string {
	t.Helper()
	kc := fmt.Sprintf(`apiVersion: v1
kind: Config
current-context: sa
clusters:
  - name: e2e
    cluster: {server: %s, insecure-skip-tls-verify: true}
users:
  - name: sa
    user: {token: %s, as: "system:serviceaccount:%s:%s"}
contexts:
  - name: sa
    context: {cluster: e2e, user: sa}
`, c.server, c.tokens[userAdmin], ns, name)
	p := filepath.Join(dir, "sa.kubeconfig")
	if err := os.WriteFile(p, []byte(kc), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// podOf lays out the release's Deployment as a process. The paths the
// config and the args name are rewritten only by the prefix root; the
// server listens on listen instead of :8080 (the admission webhook on a free
// loopback port instead of :8443), and the kube source,
// which would use the pod's service account token (inCluster), uses the
// service account's kubeconfig instead: there is no kubelet to mount one.
func podOf(t *testing.T, c *cluster, objs []*unstructured.Unstructured, ns, listen string) *pod {
	t.Helper()
	ctx := context.Background()
	cs, err := kubernetes.NewForConfig(c.restConfig(userAdmin))
	if err != nil {
		t.Fatal(err)
	}
	var dep appsv1.Deployment
	for _, o := range objs {
		if o.GetKind() == "Deployment" {
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &dep); err != nil {
				t.Fatal(err)
			}
		}
	}
	if dep.Name == "" {
		t.Fatal("the chart rendered no Deployment")
	}
	spec := dep.Spec.Template.Spec
	if _, err := cs.CoreV1().ServiceAccounts(ns).Get(ctx, spec.ServiceAccountName, metav1.GetOptions{}); err != nil {
		t.Fatalf("the Deployment's service account: %v", err)
	}
	p := &pod{root: t.TempDir(), listen: listen}
	p.kubeconfig = c.saKubeconfig(t, p.root, ns, spec.ServiceAccountName)
	volumes := map[string]corev1.Volume{}
	for _, v := range spec.Volumes {
		volumes[v.Name] = v
	}
	ctr := spec.Containers[0]
	var mounts []string
	for _, m := range ctr.VolumeMounts {
		dir := filepath.Join(p.root, m.MountPath)
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		mounts = append(mounts, m.MountPath)
		files := map[string][]byte{}
		switch v := volumes[m.Name]; {
		case v.ConfigMap != nil:
			cm, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, v.ConfigMap.Name, metav1.GetOptions{})
			if err != nil {
				t.Fatalf("volume %s: %v", m.Name, err)
			}
			for k, d := range cm.Data {
				files[k] = []byte(d)
			}
		case v.Secret != nil:
			s, err := cs.CoreV1().Secrets(ns).Get(ctx, v.Secret.SecretName, metav1.GetOptions{})
			if err != nil {
				t.Fatalf("volume %s: %v", m.Name, err)
			}
			files = s.Data
		case v.EmptyDir != nil:
			p.env = append(p.env, "TMPDIR="+dir)
		default:
			t.Fatalf("volume %s of the Deployment: no ConfigMap, Secret or emptyDir", m.Name)
		}
		for k, d := range files {
			if err := os.WriteFile(filepath.Join(dir, k), d, 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	rebase := func(s string) string {
		for _, m := range mounts {
			if s == m || strings.HasPrefix(s, m+"/") {
				return filepath.Join(p.root, s)
			}
		}
		return s
	}
	for _, a := range ctr.Args {
		if name, val, ok := strings.Cut(a, "="); ok {
			a = name + "=" + rebase(val)
		}
		p.args = append(p.args, rebase(a))
	}
	p.args = append(p.args, "--kubeconfig", p.kubeconfig)
	for _, e := range ctr.Env {
		switch {
		case e.ValueFrom != nil && e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.name":
			p.env = append(p.env, e.Name+"="+dep.Name+"-0")
		case e.ValueFrom != nil && e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.namespace":
			p.env = append(p.env, e.Name+"="+ns)
		case e.ValueFrom != nil && e.ValueFrom.ResourceFieldRef != nil && e.ValueFrom.ResourceFieldRef.Resource == "limits.memory":
			// What the kubelet gives: the limit in bytes.
			limit := ctr.Resources.Limits.Memory()
			if limit.IsZero() {
				t.Fatalf("env %s of the Deployment: no memory limit to take", e.Name)
			}
			p.env = append(p.env, fmt.Sprintf("%s=%d", e.Name, limit.Value()))
		case e.ValueFrom == nil:
			p.env = append(p.env, e.Name+"="+e.Value)
		default:
			t.Fatalf("env %s of the Deployment: unknown source", e.Name)
		}
	}

	// The config file the args name, with its paths rebased.
	var config string
	for i, a := range p.args {
		if a == "--config" && i+1 < len(p.args) {
			config = p.args[i+1]
		}
	}
	data, err := os.ReadFile(config)
	if err != nil {
		t.Fatalf("the config file the Deployment's args name: %v", err)
	}
	var cfg map[string]any
	if err := yaml.Unmarshal(data, &cfg); err != nil {
		t.Fatalf("%s: %v", config, err)
	}
	var walk func(v any) any
	walk = func(v any) any {
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				x[k] = walk(e)
			}
			if x["inCluster"] == true {
				delete(x, "inCluster")
				x["kubeconfig"] = p.kubeconfig
			}
		case []any:
			for i, e := range x {
				x[i] = walk(e)
			}
		case string:
			return rebase(x)
		}
		return v
	}
	walk(cfg)
	server, _ := cfg["server"].(map[string]any)
	if server == nil {
		t.Fatalf("%s has no server section", config)
	}
	server["listen"] = p.listen
	if adm, ok := cfg["admission"].(map[string]any); ok {
		adm["listen"] = fmt.Sprintf("127.0.0.1:%d", freePort(t))
	}
	out, err := yaml.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(config, out, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// start runs the pod's backflow serve.
func (p *pod) start(t *testing.T, bin string) {
	t.Helper()
	cmd := exec.Command(bin, p.args...)
	cmd.Env = append(os.Environ(), p.env...)
	p.log = startProcess(t, p.root, "serve", cmd)
}

var forbidden = regexp.MustCompile(`(?i)forbidden`)

// TestChartInstall follows deploy/README.md's "Install with the Helm
// chart" on the loopback API server: the App's Secret, the chart rendered
// with the docs' values and every object applied (the API server validates
// each), then the Deployment's pod run as a process with the chart's
// service account (impersonated): it gets ready, takes the Lease, watches
// the StatefulSets with the chart's grants, and a live scale becomes a
// pull request. Without the chart's watch Role the same pod's watch is
// refused, and its log says so.
func TestChartInstall(t *testing.T) {
	if testing.Short() {
		t.Skip("the chart install starts a kube-apiserver and etcd: run it with make e2e")
	}
	apiserver, bin := binaries(t)
	start := time.Now()
	listen := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	auditToken := token()
	c := startCluster(t, apiserver, tlsFront(t, listen)+"/audit", auditToken)
	ep := startHub(t, bin, "http://"+listen+"/webhook")
	h := newHubClient(t, ep)
	forwardApply(t, c, h)
	secret := map[string][]byte{"audit-token": []byte(auditToken)}
	for k, path := range map[string]string{"private-key.pem": ep.PrivateKeyPath, "webhook-secret": ep.WebhookSecretPath} {
		secret[k] = mustRead(t, path)
	}

	objs := installChart(t, c, installNS, installRelease, installValues(ep), secret, nil)
	kinds := map[string]int{}
	for _, o := range objs {
		kinds[o.GetKind()]++
	}
	t.Logf("install: applied %d objects %v in %s", len(objs), kinds, time.Since(start).Round(time.Millisecond))
	for _, k := range []string{"ServiceAccount", "ConfigMap", "Deployment", "Service", "Ingress", "NetworkPolicy", "Role", "RoleBinding"} {
		if kinds[k] == 0 {
			t.Errorf("the chart rendered no %s with the docs' values: %v", k, kinds)
		}
	}
	// The hub's webhooks and the API server's audit batches go to listen.
	p := podOf(t, c, objs, installNS, listen)
	p.start(t, bin)
	awaitReady(t, p.listen, "the chart's backflow serve ready")
	cs, err := kubernetes.NewForConfig(c.restConfig(userAdmin))
	if err != nil {
		t.Fatal(err)
	}
	lease, err := cs.CoordinationV1().Leases(installNS).Get(context.Background(), installRelease, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the Lease %s/%s: %v", installNS, installRelease, err)
	}
	if h := lease.Spec.HolderIdentity; h == nil || !strings.HasPrefix(*h, installRelease+"-0") {
		t.Errorf("the Lease's holder: %v, want the pod %s-0", h, installRelease)
	}
	eventually(t, stepTimeout, "the chart's backflow serve: a cycle with the kube source", func() error {
		if _, ok := (&replicaProcess{log: p.log}).first(t, "cycle done"); !ok {
			return fmt.Errorf("no cycle done yet")
		}
		return nil
	})
	log := mustRead(t, p.log)
	if forbidden.Match(log) || strings.Contains(string(log), `"observation skipped"`) {
		t.Fatalf("the chart's service account could not read what the kube source watches:\n%s", log)
	}
	// The line the docs' step 3 tells the reader to look for.
	if !strings.Contains(string(log), `"msg":"repositories loaded"`) {
		t.Errorf("no \"repositories loaded\" line in the log (deploy/README.md, step 3):\n%s", log)
	}
	t.Logf("timing: chart installed and its serve ready, leading and through a cycle %s after the start", time.Since(start).Round(time.Millisecond))

	patch(t, c, userAlice, "redis-replicas", types.MergePatchType, `{"spec":{"replicas":4}}`, "scale")
	changed := time.Now()
	eventually(t, stepTimeout, "a write-back pull request for redis-replicas", func() error {
		pulls, err := h.pulls(t)
		if err != nil {
			return err
		}
		pr := pullFor(pulls, replicasKey)
		if pr == nil {
			return fmt.Errorf("%d pull requests, none for %s", len(pulls), replicasKey)
		}
		if !strings.Contains(pr.Body, "alice") {
			return fmt.Errorf("#%d does not name alice:\n%s", pr.Number, pr.Body)
		}
		return nil
	})
	t.Logf("timing: live scale to pull request %s", time.Since(changed).Round(time.Millisecond))

	t.Run("WithoutWatchRole", func(t *testing.T) {
		// The same install without the chart's watch Role and its binding:
		// the pod's list of the StatefulSets is refused, and its log names
		// the service account and the resource. This one also turns the
		// admission webhook on, with a provided certificate (the docs' step
		// 5 without cert-manager), so its Service and registration meet
		// the API server too; nothing changes a StatefulSet after it.
		ns := installNS + "-denied"
		ca := newTestCA(t)
		cs, err := kubernetes.NewForConfig(c.restConfig(userAdmin))
		if err != nil {
			t.Fatal(err)
		}
		values := strings.Replace(installValues(ep), "networkPolicy: {enabled: true}",
			"networkPolicy: {enabled: true, admissionFrom: [{ipBlock: {cidr: 10.0.0.0/16}}]}", 1) + fmt.Sprintf("admission:\n  enabled: true\n  certificate: {certManager: false, existingSecret: backflow-admission-tls, caBundle: %q}\n", ca.caPEM)
		objs := installChart(t, c, ns, installRelease, values, secret, func(o *unstructured.Unstructured) bool {
			if o.GetKind() == "Namespace" {
				return true
			}
			if o.GetName() == installRelease && o.GetKind() == "ServiceAccount" {
				// The TLS Secret the values name, made before the pod's
				// volumes are read.
				if _, err := cs.CoreV1().Secrets(ns).Create(context.Background(), &corev1.Secret{
					ObjectMeta: metav1.ObjectMeta{Name: "backflow-admission-tls"}, Type: corev1.SecretTypeTLS,
					Data: map[string][]byte{"tls.crt": ca.certPEM, "tls.key": ca.keyPEM}}, metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			return !strings.HasSuffix(o.GetName(), "-watch")
		})
		if !hasKind(objs, "ValidatingWebhookConfiguration") {
			t.Fatalf("no ValidatingWebhookConfiguration rendered with admission.enabled")
		}
		for _, o := range objs {
			if strings.HasPrefix(o.GetKind(), "Role") || strings.HasPrefix(o.GetKind(), "ClusterRole") {
				if strings.HasSuffix(o.GetName(), "-watch") {
					t.Fatalf("%s %s still applied", o.GetKind(), o.GetName())
				}
			}
		}
		denied := podOf(t, c, objs, ns, fmt.Sprintf("127.0.0.1:%d", freePort(t)))
		denied.start(t, bin)
		want := regexp.MustCompile(`(?i)system:serviceaccount:` + ns + `:` + installRelease + `.{0,40}cannot (list|watch) resource .{0,4}statefulsets`)
		eventually(t, stepTimeout, "the watch refused (Forbidden) in serve's log", func() error {
			if want.Find(mustRead(t, denied.log)) == nil {
				return fmt.Errorf("no line matching %s yet", want)
			}
			return nil
		})
		t.Logf("refused: %s", want.Find(mustRead(t, denied.log)))
	})
}

func hasKind(objs []*unstructured.Unstructured, kind string) bool {
	for _, o := range objs {
		if o.GetKind() == kind {
			return true
		}
	}
	return false
}
