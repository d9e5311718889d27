package e2e

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// testCA is a certificate authority made for one run, and a serving
// certificate for 127.0.0.1 it signed: what cert-manager gives a webhook in
// a cluster.
type testCA struct {
	caPEM, certPEM, keyPEM []byte
}

func newTestCA(t *testing.T) testCA {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "backflow e2e CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "backflow-admission"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour), IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return testCA{
		caPEM:   pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}),
		certPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		keyPEM:  pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}),
	}
}

// registerAdmissionWebhook registers backflow's validating webhook with the
// cluster, as deploy/admission-webhook.yaml does in a real one, but with
// clientConfig.url (the loopback API server has no Service to call) and
// the test CA as caBundle.
func registerAdmissionWebhook(t *testing.T, c *cluster, url string, caPEM []byte) {
	t.Helper()
	cs, err := kubernetes.NewForConfig(c.restConfig(userAdmin))
	if err != nil {
		t.Fatal(err)
	}
	ignore := admissionregistrationv1.Ignore
	none := admissionregistrationv1.SideEffectClassNone
	equivalent := admissionregistrationv1.Equivalent
	timeout := int32(2)
	hook := &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "backflow-admission"},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name:                    "attribution.backflow.dev",
			ClientConfig:            admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: caPEM},
			AdmissionReviewVersions: []string{"v1"},
			SideEffects:             &none,
			FailurePolicy:           &ignore,
			MatchPolicy:             &equivalent,
			TimeoutSeconds:          &timeout,
			Rules: []admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Update},
				Rule: admissionregistrationv1.Rule{APIGroups: []string{"apps"}, APIVersions: []string{"v1"},
					Resources: []string{"statefulsets", "statefulsets/scale"}},
			}},
			NamespaceSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
				Key: "kubernetes.io/metadata.name", Operator: metav1.LabelSelectorOpNotIn,
				Values: []string{"kube-system", "kube-public", "kube-node-lease"},
			}}},
		}},
	}
	if _, err := cs.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(context.Background(), hook, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// TestCaptureAdmissionReviews records the AdmissionReview bodies the real
// API server sends a validating webhook for each kind of write (the
// fixtures of internal/observe/testdata/admission). It runs only when
// BACKFLOW_CAPTURE_ADMISSION names the folder to write them to.
func TestCaptureAdmissionReviews(t *testing.T) {
	out := os.Getenv("BACKFLOW_CAPTURE_ADMISSION")
	if out == "" {
		t.Skip("set BACKFLOW_CAPTURE_ADMISSION to a folder to record AdmissionReview bodies")
	}
	apiserver, _ := binaries(t)
	c := startCluster(t, apiserver, "", "")
	ca := newTestCA(t)
	cert, err := tls.X509KeyPair(ca.certPEM, ca.keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var bodies [][]byte
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		bodies = append(bodies, body)
		mu.Unlock()
		var rv struct {
			Request struct {
				UID string `json:"uid"`
			} `json:"request"`
		}
		_ = json.Unmarshal(body, &rv)
		fmt.Fprintf(w, `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","response":{"uid":%q,"allowed":true}}`, rv.Request.UID)
	}))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	registerAdmissionWebhook(t, c, srv.URL+"/admission", ca.caPEM)

	ctx := context.Background()
	sts := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps/v1", "kind": "StatefulSet",
		"metadata": map[string]any{"name": "redis-replicas", "namespace": namespace},
		"spec": map[string]any{
			"replicas": int64(3), "serviceName": "redis-headless",
			"selector": map[string]any{"matchLabels": map[string]any{"app": "redis"}},
			"template": map[string]any{
				"metadata": map[string]any{"labels": map[string]any{"app": "redis"}},
				"spec": map[string]any{"containers": []any{map[string]any{
					"name": "redis", "image": defaultImage,
					"env": []any{map[string]any{"name": "REDIS_REPLICATION_MODE", "value": "slave"}},
				}}},
			},
		},
	}}
	if _, err := c.dynamic(t, userFlux).Resource(stsGVR).Namespace(namespace).Apply(ctx, "redis-replicas", sts,
		metav1.ApplyOptions{FieldManager: gitopsManager, Force: true}); err != nil {
		t.Fatal(err)
	}
	// The webhook has to be called: the API server's webhook client is set
	// up asynchronously after the configuration is created.
	eventually(t, 30*time.Second, "the webhook called", func() error {
		patch(t, c, userAlice, "redis-replicas", types.MergePatchType, `{"metadata":{"annotations":{"warmup":"`+token()+`"}}}`)
		mu.Lock()
		defer mu.Unlock()
		if len(bodies) == 0 {
			return fmt.Errorf("no review yet")
		}
		return nil
	})

	impersonated := c.restConfig(userAdmin)
	impersonated.Impersonate = rest.ImpersonationConfig{UserName: userAlice, Groups: []string{"sre", "system:authenticated"}}
	writes := []struct {
		name string
		do   func() error
	}{
		{"json-patch", func() error {
			_, err := c.dynamic(t, userAlice).Resource(stsGVR).Namespace(namespace).Patch(ctx, "redis-replicas", types.JSONPatchType,
				[]byte(`[{"op":"replace","path":"/spec/replicas","value":4}]`), metav1.PatchOptions{})
			return err
		}},
		{"merge-patch", func() error {
			_, err := c.dynamic(t, userAlice).Resource(stsGVR).Namespace(namespace).Patch(ctx, "redis-replicas", types.MergePatchType,
				[]byte(`{"spec":{"replicas":5}}`), metav1.PatchOptions{})
			return err
		}},
		{"strategic-merge-patch", func() error {
			_, err := c.dynamic(t, userAlice).Resource(stsGVR).Namespace(namespace).Patch(ctx, "redis-replicas", types.StrategicMergePatchType,
				[]byte(`{"spec":{"template":{"spec":{"containers":[{"name":"redis","image":"`+debugImage+`"}]}}}}`), metav1.PatchOptions{})
			return err
		}},
		{"apply", func() error {
			obj := &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": "apps/v1", "kind": "StatefulSet",
				"metadata": map[string]any{"name": "redis-replicas", "namespace": namespace},
				"spec":     map[string]any{"replicas": int64(6)},
			}}
			_, err := c.dynamic(t, userAlice).Resource(stsGVR).Namespace(namespace).Apply(ctx, "redis-replicas", obj,
				metav1.ApplyOptions{FieldManager: "kubectl", Force: true})
			return err
		}},
		{"scale", func() error {
			_, err := c.dynamic(t, userAlice).Resource(stsGVR).Namespace(namespace).Patch(ctx, "redis-replicas", types.MergePatchType,
				[]byte(`{"spec":{"replicas":4}}`), metav1.PatchOptions{}, "scale")
			return err
		}},
		{"update", func() error {
			d := c.dynamic(t, userAlice).Resource(stsGVR).Namespace(namespace)
			u, err := d.Get(ctx, "redis-replicas", metav1.GetOptions{})
			if err != nil {
				return err
			}
			cs, _, _ := unstructured.NestedSlice(u.Object, "spec", "template", "spec", "containers")
			cs[0].(map[string]any)["env"] = []any{map[string]any{"name": "REDIS_REPLICATION_MODE", "value": "standalone"}}
			if err := unstructured.SetNestedSlice(u.Object, cs, "spec", "template", "spec", "containers"); err != nil {
				return err
			}
			_, err = d.Update(ctx, u, metav1.UpdateOptions{})
			return err
		}},
		{"impersonation", func() error {
			d, err := dynamicFor(impersonated)
			if err != nil {
				return err
			}
			_, err = d.Resource(stsGVR).Namespace(namespace).Patch(ctx, "redis-replicas", types.MergePatchType,
				[]byte(`{"spec":{"replicas":7}}`), metav1.PatchOptions{}, "scale")
			return err
		}},
		{"dry-run", func() error {
			_, err := c.dynamic(t, userAlice).Resource(stsGVR).Namespace(namespace).Patch(ctx, "redis-replicas", types.MergePatchType,
				[]byte(`{"spec":{"replicas":9}}`), metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}}, "scale")
			return err
		}},
		{"gitops-apply", func() error {
			_, err := c.dynamic(t, userFlux).Resource(stsGVR).Namespace(namespace).Apply(ctx, "redis-replicas", sts,
				metav1.ApplyOptions{FieldManager: gitopsManager, Force: true})
			return err
		}},
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, w := range writes {
		mu.Lock()
		before := len(bodies)
		mu.Unlock()
		if err := w.do(); err != nil {
			t.Fatalf("%s: %v", w.name, err)
		}
		mu.Lock()
		got := bodies[before:]
		mu.Unlock()
		if len(got) != 1 {
			t.Fatalf("%s: %d reviews, want 1", w.name, len(got))
		}
		var pretty bytes.Buffer
		if err := json.Indent(&pretty, got[0], "", "  "); err != nil {
			t.Fatalf("%s: %v", w.name, err)
		}
		pretty.WriteByte('\n')
		if err := os.WriteFile(filepath.Join(out, w.name+".json"), pretty.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("recorded %s (%d bytes)", w.name, pretty.Len())
	}
}

func dynamicFor(rc *rest.Config) (dynamic.Interface, error) { return dynamic.NewForConfig(rc) }

// TestAdmissionRoundTrip is the live round trip with the audit webhook off
// and nothing reading the audit log: the only attribution is backflow's
// validating admission webhook, registered with the API server over TLS
// with a CA made for the run.
func TestAdmissionRoundTrip(t *testing.T) {
	if testing.Short() {
		t.Skip("the live round trip starts a kube-apiserver and etcd: run it with make e2e")
	}
	apiserver, bin := binaries(t)
	start := time.Now()
	c := startCluster(t, apiserver, "", "")
	listen := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	admissionAddr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	ca := newTestCA(t)
	ep := startHub(t, bin, "http://"+listen+"/webhook")
	h := newHubClient(t, ep)
	forwardApply(t, c, h)
	section := fmt.Sprintf(`admission:
  listen: %s
  certFile: tls.crt
  keyFile: tls.key
  gitopsUsers: [%s]
`, admissionAddr, userFlux)
	serveLog := startServe(t, bin, serveConfig(t, ep, c, listen, section, map[string][]byte{"tls.crt": ca.certPEM, "tls.key": ca.keyPEM}), listen)
	registerAdmissionWebhook(t, c, "https://"+admissionAddr+"/admission", ca.caPEM)
	t.Logf("timing: harness start %s", time.Since(start).Round(time.Millisecond))

	// 1. A dry-run scale changes nothing: backflow is asked (the API server
	// calls webhooks without side effects on dry runs) and records nothing.
	// The API server starts calling a new webhook a moment after it is
	// registered, so the dry run is repeated until it is.
	ctx := context.Background()
	dryRun := func() {
		_, err := c.dynamic(t, userAlice).Resource(stsGVR).Namespace(namespace).Patch(ctx, "redis-replicas", types.MergePatchType,
			[]byte(`{"spec":{"replicas":9}}`), metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}}, "scale")
		if err != nil {
			t.Fatalf("dry-run scale: %v", err)
		}
	}
	eventually(t, stepTimeout, "the API server calling the admission webhook", func() error {
		dryRun()
		if n := len(admissionLines(t, serveLog, `"skipped":"dry run"`)); n == 0 {
			return errors.New("no dry run reviewed yet")
		}
		return nil
	})
	if n := replicas(t, c, "redis-replicas"); n != 3 {
		t.Fatalf("after the dry run redis-replicas has %d replicas, want 3", n)
	}

	// 2. alice (group sre) scales redis-replicas 3 -> 4 through the scale
	// subresource: attributed at admission, the pull request merges itself.
	patch(t, c, userAlice, "redis-replicas", types.MergePatchType, `{"spec":{"replicas":4}}`, "scale")
	changed := time.Now()
	pr := awaitPull(t, h, replicasKey, "a write-back pull request for redis-replicas")
	t.Logf("timing: admission path change-to-PR %s (live change to pull request #%d opened)", time.Since(changed).Round(time.Millisecond), pr.Number)
	for _, want := range []string{"alice", "admission"} {
		if !strings.Contains(pr.Body, want) {
			t.Errorf("pull request #%d does not name %q:\n%s", pr.Number, want, pr.Body)
		}
	}
	// What an operator checks on a cluster: backflow's log names who it
	// attributed the change to, and at which level.
	attributed := admissionLines(t, serveLog, `"msg":"attributed"`)
	if len(attributed) != 1 || !bytes.Contains(attributed[0], []byte(`"actor":"alice"`)) ||
		!bytes.Contains(attributed[0], []byte(`"attribution":"admission"`)) || !bytes.Contains(attributed[0], []byte(`"fields":["spec.replicas"]`)) {
		t.Errorf("backflow serve's attributed lines: %s", bytes.Join(attributed, []byte("\n")))
	}
	// 3. It merges itself, the forward apply keeps 4, and the receipt is
	// proven and verifies.
	receipts, values := mergeApplyProve(t, c, h, bin, pr, "replicaCount: 4")
	for _, want := range []string{"status: proven", "actor: alice", "at level admission", "admission review "} {
		if !strings.Contains(receipts[0], want) {
			t.Errorf("the proven receipt lacks %q:\n%s", want, receipts[0])
		}
	}
	pullsBefore, err := h.pulls(t)
	if err != nil {
		t.Fatal(err)
	}

	// 4. The GitOps controller's identity scales redis-master outside a
	// forward apply: its review is not a person's change, so the change is
	// attributed to nobody and nothing is written.
	patch(t, c, userFlux, "redis-master", types.MergePatchType, `{"spec":{"replicas":3}}`, "scale")
	eventually(t, stepTimeout, "the controller identity's change reported as drift", func() error {
		return driftNames(t, h, "redis-master` | `spec.replicas` | `2` | `3` | unknown |", "actor-unknown")
	})
	issues, err := h.driftIssues(t)
	if err != nil {
		t.Fatal(err)
	}
	for _, is := range issues {
		if strings.Contains(is.Body, userFlux) || strings.Contains(is.Body, "at level admission") {
			t.Errorf("drift issue #%d attributes the controller identity's change to a person:\n%s", is.Number, is.Body)
		}
	}
	assertNothingWritten(t, h, len(pullsBefore), values)
	if n := len(admissionLines(t, serveLog, `"skipped":"GitOps controller"`)); n == 0 {
		t.Error("no review skipped as the GitOps controller's")
	}
	forwardApply(t, c, h)

	// 5. Forged reviews, posted to the listener as anything that reaches its
	// port can: none is confirmed or attributes anything. bob (no role)
	// scales redis-replicas 4 -> 5 first: his real review is confirmed and
	// the change denied.
	patch(t, c, userBob, "redis-replicas", types.MergePatchType, `{"spec":{"replicas":5}}`, "scale")
	bobsRow := "redis-replicas` | `spec.replicas` | `4` | `5` | bob |"
	eventually(t, stepTimeout, "bob's scale reported as drift", func() error { return driftNames(t, h, bobsRow) })
	forge := newForger(t, "https://"+admissionAddr+"/admission", ca.caPEM)
	//   a. "carol (group sre)" at the version the watch already saw,
	//      claiming the value already live, followed by a status update;
	sts := liveStatefulSet(t, c, "redis-replicas")
	forge.post(t, "forged-stale", "redis-replicas", string(sts.GetUID()), sts.GetResourceVersion(), 4, 5)
	_, err = c.dynamic(t, userAdmin).Resource(stsGVR).Namespace(namespace).Patch(ctx, "redis-replicas", types.MergePatchType,
		[]byte(`{"status":{"currentRevision":"r-`+token()+`"}}`), metav1.PatchOptions{}, "status")
	if err != nil {
		t.Fatalf("status update: %v", err)
	}
	//   b. naming redis-replicas with redis-master's uid, followed by bob's
	//      write to redis-master making the change it claims;
	master := liveStatefulSet(t, c, "redis-master")
	forge.post(t, "forged-uid", "redis-replicas", string(master.GetUID()), master.GetResourceVersion(), replicas(t, c, "redis-master"), 5)
	patch(t, c, userBob, "redis-master", types.MergePatchType, `{"spec":{"replicas":5}}`, "scale")
	//   c. of resourceVersion 0.
	forge.post(t, "forged-zero", "redis-replicas", string(sts.GetUID()), "0", 4, 5)
	// A cycle after the last write still has bob's change as bob's.
	eventually(t, stepTimeout, "bob's writes reported as his drift", func() error {
		return driftNames(t, h, bobsRow, "redis-master` | `spec.replicas` | `2` | `5` | bob |")
	})
	if forged := admissionLines(t, serveLog, `"msg":"attributed"`, `"actor":"carol"`); len(forged) > 0 {
		t.Errorf("a forged review was confirmed: %s", bytes.Join(forged, []byte("\n")))
	}
	assertNothingWritten(t, h, len(pullsBefore), values)
	eventually(t, stepTimeout, "the forged reviews reported", func() error {
		for _, id := range []string{"forged-stale", "forged-uid", "forged-zero"} {
			if len(admissionLines(t, serveLog, `"msg":"admission record refused"`, `"review":"`+id+`"`)) == 0 {
				return fmt.Errorf("review %s not reported", id)
			}
		}
		return nil
	})
	t.Logf("forged reviews: 3 posted, %d confirmed, %d reported", len(admissionLines(t, serveLog, `"msg":"attributed"`, `"actor":"carol"`)),
		len(admissionLines(t, serveLog, `"msg":"admission record refused"`, `"review":"forged-`)))
	forwardApply(t, c, h)

	// 6. The webhook's latency under load: alice's dry runs from eight
	// clients at once (they change nothing).
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 25 {
				dryRun()
			}
		}()
	}
	wg.Wait()
	eventually(t, stepTimeout, "the load's reviews logged", func() error {
		if n := len(admissionLines(t, serveLog, `"skipped":"dry run"`)); n < 200 {
			return fmt.Errorf("%d dry runs reviewed", n)
		}
		return nil
	})
	var micros []int64
	for _, line := range admissionLines(t, serveLog, `"msg":"admission review"`) {
		var v struct {
			Duration int64 `json:"duration_us"`
		}
		if json.Unmarshal(line, &v) == nil {
			micros = append(micros, v.Duration)
		}
	}
	slices.Sort(micros)
	if len(micros) == 0 {
		t.Fatal("no admission review logged a duration")
	}
	pct := func(p float64) time.Duration {
		return time.Duration(micros[int(p*float64(len(micros)-1))]) * time.Microsecond
	}
	t.Logf("timing: admission webhook latency over %d reviews: p50 %s, p99 %s, max %s", len(micros), pct(0.5), pct(0.99), pct(1))
	for _, bad := range admissionLines(t, serveLog, `"msg":"admission review refused"`) {
		t.Errorf("backflow refused a review of the API server: %s", bad)
	}
	t.Logf("timing: whole admission round trip %s", time.Since(start).Round(time.Millisecond))
}

// admissionLines returns the lines of backflow serve's log that contain
// every want.
func admissionLines(t *testing.T, logPath string, want ...string) [][]byte {
	t.Helper()
	data, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	var out [][]byte
	for _, line := range bytes.Split(data, []byte("\n")) {
		if !slices.ContainsFunc(want, func(w string) bool { return !bytes.Contains(line, []byte(w)) }) {
			out = append(out, line)
		}
	}
	return out
}

// forger posts admission reviews to backflow's listener as anything that
// reaches its port could (the listener requires no client certificate
// here), each "by carol (group sre)", whose role accepts admission.
type forger struct {
	url    string
	client *http.Client
}

func newForger(t *testing.T, url string, caPEM []byte) forger {
	t.Helper()
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(caPEM) {
		t.Fatal("the test CA is not PEM")
	}
	return forger{url: url, client: &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}}}}
}

// post sends a review of a scale of the StatefulSet name, carrying uid
// and reviewed at rv, from replicas from to to; backflow must allow it.
func (f forger) post(t *testing.T, reviewUID, name, uid, rv string, from, to int64) {
	t.Helper()
	scale := func(n int64) string {
		return fmt.Sprintf(`{"kind":"Scale","apiVersion":"autoscaling/v1","metadata":{"name":%q,"namespace":%q,"uid":%q,"resourceVersion":%q},"spec":{"replicas":%d}}`,
			name, namespace, uid, rv, n)
	}
	body := fmt.Sprintf(`{"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1","request":{"uid":%q,`+
		`"resource":{"group":"apps","version":"v1","resource":"statefulsets"},"subResource":"scale","name":%q,"namespace":%q,`+
		`"operation":"UPDATE","userInfo":{"username":"carol","groups":["sre","system:authenticated"]},"object":%s,"oldObject":%s,"dryRun":false}}`,
		reviewUID, name, namespace, scale(to), scale(from))
	resp, err := f.client.Post(f.url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatalf("posting %s: %v", reviewUID, err)
	}
	defer resp.Body.Close()
	answer, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || !bytes.Contains(answer, []byte(`"allowed":true`)) {
		t.Fatalf("%s: answer %d %s, want allowed", reviewUID, resp.StatusCode, answer)
	}
}
