package reliability

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynfake "k8s.io/client-go/dynamic/fake"

	"github.com/backflow-dev/backflow/internal/bot"
	"github.com/backflow-dev/backflow/internal/forge"
	"github.com/backflow-dev/backflow/internal/observe"
	"github.com/backflow-dev/backflow/internal/observe/source"
	"github.com/backflow-dev/backflow/internal/server"
)

// admissionListener is backflow's admission webhook on loopback: the real
// TLS listener (server.ServeAdmission) serving the real handler, with a
// serving certificate of a CA made for the test.
type admissionListener struct {
	url, addr string
	// serving signed the listener's certificate; clients signs the client
	// certificates it requires, when it does.
	serving, clients *pki
	// client trusts serving and presents a certificate of clients.
	client *http.Client
}

// startAdmissionListener serves h on a loopback TLS listener until the
// test ends; requireClientCerts makes it require client certificates (of
// the listener's clients CA, which its client presents).
func startAdmissionListener(t *testing.T, h http.Handler, requireClientCerts bool) admissionListener {
	t.Helper()
	serving, clients := newPKI(t, "serving CA"), newPKI(t, "API server client CA")
	now := time.Now()
	dir := t.TempDir()
	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	certPEM, keyPEM := serving.issue(t, x509.ExtKeyUsageServerAuth, now.Add(-time.Hour), now.Add(time.Hour))
	at := server.AdmissionTLS{CertFile: write("tls.crt", certPEM), KeyFile: write("tls.key", keyPEM)}
	if requireClientCerts {
		at.ClientCAFile = write("client-ca.crt", clients.caPEM)
	}
	cfg, err := at.Config()
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- server.ServeAdmission(ctx, ln, h, cfg, nil) }()
	t.Cleanup(func() { stop(); <-done })
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(serving.caPEM)
	tc := &tls.Config{RootCAs: roots}
	if requireClientCerts {
		tc.Certificates = []tls.Certificate{clients.leaf(t, x509.ExtKeyUsageClientAuth, now.Add(-time.Hour), now.Add(time.Hour))}
	}
	return admissionListener{url: "https://" + ln.Addr().String() + "/admission", addr: ln.Addr().String(), serving: serving, clients: clients,
		client: &http.Client{Transport: &http.Transport{TLSClientConfig: tc}, Timeout: 30 * time.Second}}
}

// post sends one review body and checks the answer allows it.
func (l admissionListener) post(t *testing.T, body []byte) {
	t.Helper()
	resp, err := l.client.Post(l.url, "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var answer struct {
		Response struct {
			Allowed bool `json:"allowed"`
		} `json:"response"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&answer); err != nil || resp.StatusCode != http.StatusOK || !answer.Response.Allowed {
		t.Fatalf("answer %d %+v (%v): want 200 and allowed: true", resp.StatusCode, answer, err)
	}
}

// scaleReview is an AdmissionReview of a scale of the StatefulSet name
// (uid objUID) from replicas from to to, reviewed at resourceVersion rv,
// by user.
func scaleReview(reviewUID, user string, groups []string, name, objUID, rv string, from, to int) []byte {
	scale := func(n int) string {
		return fmt.Sprintf(`{"kind":"Scale","apiVersion":"autoscaling/v1","metadata":{"name":%q,"namespace":"redis","uid":%q,"resourceVersion":%q},"spec":{"replicas":%d}}`,
			name, objUID, rv, n)
	}
	g, _ := json.Marshal(groups)
	return []byte(fmt.Sprintf(`{"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1","request":{"uid":%q,`+
		`"resource":{"group":"apps","version":"v1","resource":"statefulsets"},"subResource":"scale","name":%q,"namespace":"redis",`+
		`"operation":"UPDATE","userInfo":{"username":%q,"groups":%s},"object":%s,"oldObject":%s,"dryRun":false}}`,
		reviewUID, name, user, g, scale(to), scale(from)))
}

var stsGVR = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "statefulsets"}

// The managedFields of the StatefulSets: the GitOps controller's apply
// owns everything, or everything but replicas, which a scale owns.
const (
	fluxOwnsAll      = `{"f:spec":{"f:replicas":{},"f:serviceName":{}}}`
	fluxOwnsService  = `{"f:spec":{"f:serviceName":{}}}`
	kubectlOwnsScale = `{"f:spec":{"f:replicas":{}}}`
)

// liveSts is a StatefulSet of the redis unit as the API server holds it.
func liveSts(t testing.TB, name, uid, rv string, replicas int64, scaledAt string) *unstructured.Unstructured {
	t.Helper()
	entry := func(manager, op, sub, at, fields string) map[string]any {
		var f map[string]any
		if err := json.Unmarshal([]byte(fields), &f); err != nil {
			t.Fatal(err)
		}
		m := map[string]any{"manager": manager, "operation": op, "apiVersion": "apps/v1", "time": at, "fieldsType": "FieldsV1", "fieldsV1": f}
		if sub != "" {
			m["subresource"] = sub
		}
		return m
	}
	applied := "2026-11-29T09:00:00Z"
	mf := []any{entry("helm-controller", "Apply", "", applied, fluxOwnsAll)}
	if scaledAt != "" {
		mf = []any{entry("helm-controller", "Apply", "", applied, fluxOwnsService), entry("kubectl", "Update", "scale", scaledAt, kubectlOwnsScale)}
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps/v1", "kind": "StatefulSet",
		"metadata": map[string]any{"name": name, "namespace": "redis", "uid": uid, "resourceVersion": rv, "managedFields": mf},
		"spec":     map[string]any{"replicas": replicas, "serviceName": "redis-headless"},
	}}
}

// watchedCluster is a cluster as backflow's kube watch sees it: the real
// KubeSource over client-go's fake dynamic client.
type watchedCluster struct {
	t       testing.TB
	client  *dynfake.FakeDynamicClient
	mapper  meta.RESTMapper
	changed chan observe.ObjectKey
}

func newWatchedCluster(t testing.TB, objs ...runtime.Object) *watchedCluster {
	client := dynfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{stsGVR: "StatefulSetList"}, objs...)
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "StatefulSet"}, meta.RESTScopeNamespace)
	return &watchedCluster{t: t, client: client, mapper: mapper, changed: make(chan observe.ObjectKey, 64)}
}

// watch is a new process's watch of the cluster, confirming into log.
func (c *watchedCluster) watch(log *observe.AdmissionLog, now func() time.Time) *source.KubeSource {
	s := &source.KubeSource{Cluster: usEastNode, Client: c.client, Mapper: c.mapper,
		Objects: []string{"apps/v1|StatefulSet|redis|redis-*"}, GitOpsManagers: []string{"helm-controller"},
		Admission: log, Now: now, OnChange: func(k observe.ObjectKey) { c.changed <- k }}
	c.t.Cleanup(s.Close)
	return s
}

// write updates an object and waits until the watch s has delivered it.
func (c *watchedCluster) write(s *source.KubeSource, obj *unstructured.Unstructured) {
	c.t.Helper()
	if _, err := c.client.Resource(stsGVR).Namespace("redis").Update(context.Background(), obj, metav1.UpdateOptions{}); err != nil {
		c.t.Fatal(err)
	}
	timeout := time.After(20 * time.Second)
	for {
		select {
		case k := <-c.changed:
			if k.Name != obj.GetName() {
				continue
			}
			for _, o := range s.Read(context.Background()).Observations {
				if o.Object.Name == obj.GetName() && o.ResourceVersion == obj.GetResourceVersion() {
					return
				}
			}
		case <-timeout:
			c.t.Fatalf("the watch did not deliver %s at resourceVersion %s", obj.GetName(), obj.GetResourceVersion())
		}
	}
}

// admissionRecords counts what a log's hooks were told.
type admissionRecords struct {
	mu        sync.Mutex
	confirmed []observe.AdmissionRecord
	refused   []observe.AdmissionRefusal
}

func (r *admissionRecords) hook(l *observe.AdmissionLog) *observe.AdmissionLog {
	l.OnConfirm = func(rec observe.AdmissionRecord) { r.mu.Lock(); r.confirmed = append(r.confirmed, rec); r.mu.Unlock() }
	l.OnRefuse = func(ref observe.AdmissionRefusal) { r.mu.Lock(); r.refused = append(r.refused, ref); r.mu.Unlock() }
	return l
}

func (r *admissionRecords) confirmedBy(user string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, c := range r.confirmed {
		if c.User == user {
			n++
		}
	}
	return n
}

func (r *admissionRecords) refusedOf(user string) map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string]int{}
	for _, ref := range r.refused {
		if ref.User == user {
			out[ref.Reason]++
		}
	}
	return out
}

// Case 26: forged admission reviews are never confirmed. A role accepts
// [audit-log, admission]; bob (no role) scales redis-replicas 3 -> 4 and
// his real review is confirmed: denied, drift issue opened. Then three
// forged reviews "by alice (group sre)" reach backflow's real admission
// listener: one of the version the watch already saw, claiming the value
// already live, followed by a status update; one naming redis-replicas
// with redis-master's uid, followed by a write to redis-master; and one of
// resourceVersion 0 posted to a restarted process before its watch's first
// list. None is confirmed, each is reported, nothing is attributed to
// alice, allowed or merged, and bob's drift issue stays open.
func TestCase26ForgedAdmissionNeverConfirmed(t *testing.T) {
	files := gitopsFiles(t)
	files[configPath] = strings.Replace(files[configPath], "attribution: [audit-log]", "attribution: [audit-log, admission]", 1) +
		"driftReport:\n  trackingIssue: true\n"
	e := newHubEnv(t, files)
	a := e.adapter(nil)
	const replicasUID, masterUID = "7b1f6c1e-0d1a-4a43-9a1e-4d7f1c2b9a01", "0c6a3d52-8f0e-4f7b-b2d4-1e9f5a7c3d02"
	cluster := newWatchedCluster(t, liveSts(t, "redis-replicas", replicasUID, "204", 3, ""), liveSts(t, "redis-master", masterUID, "190", 3, ""))
	seen := &admissionRecords{}
	process := func() (*source.KubeSource, admissionListener, *observe.AdmissionLog) {
		log := seen.hook(&observe.AdmissionLog{Now: e.clock.Now})
		h := &source.AdmissionHandler{Log: log, Options: observe.AdmissionOptions{GitOpsUsers: []string{"flux"}}, Logger: e.log}
		return cluster.watch(log, e.clock.Now), startAdmissionListener(t, h, false), log
	}
	watch, listener, _ := process()
	b := e.newBot(a, watch, forge.CommitGit)
	sre := []string{"sre", "system:authenticated"}
	openDrift := func() []forge.Issue {
		t.Helper()
		issues, err := a.ListIssues(e.ctx, e.repo, bot.LabelDrift, forge.StateOpen)
		if err != nil {
			t.Fatal(err)
		}
		return issues
	}
	attributedTo := func(s *source.KubeSource, name string) observe.Change {
		t.Helper()
		for _, o := range s.Read(e.ctx).Observations {
			if o.Object.Name == name {
				return o.Change
			}
		}
		t.Fatalf("no observation of %s", name)
		return observe.Change{}
	}
	if res := watch.Read(e.ctx); len(res.Errors) > 0 {
		t.Fatal(res.Errors)
	}

	// bob's real scale: his review, then the write it asked for.
	listener.post(t, scaleReview("bob-1", "bob", []string{"system:authenticated"}, "redis-replicas", replicasUID, "204", 3, 4))
	cluster.write(watch, liveSts(t, "redis-replicas", replicasUID, "205", 4, "2026-11-29T10:00:20Z"))
	if ch := attributedTo(watch, "redis-replicas"); ch.Actor != "bob" || ch.Attribution != observe.AttributionAdmission {
		t.Fatalf("bob's reviewed scale is attributed %+v, want bob at admission", ch)
	}
	e.cycle(b)
	if n := len(openDrift()); n != 1 {
		t.Fatalf("bob's denied scale opened %d drift issues, want 1", n)
	}
	if prs := e.pulls(a, e.repo); len(prs) != 0 {
		t.Fatalf("bob's scale opened %d pull requests", len(prs))
	}

	toForger := 0
	aliceTo := func() {
		t.Helper()
		e.clock.Advance(time.Minute)
		if ch := attributedTo(watch, "redis-replicas"); ch.Actor == "alice" {
			toForger++
			t.Errorf("redis-replicas attributed to alice: %+v", ch)
		}
		e.cycle(b)
	}
	// 1. Of the version the watch already saw, claiming the value already
	// live, followed by a status update of the object.
	listener.post(t, scaleReview("forged-stale", "alice", sre, "redis-replicas", replicasUID, "205", 3, 4))
	status := liveSts(t, "redis-replicas", replicasUID, "206", 4, "2026-11-29T10:00:20Z")
	status.Object["status"] = map[string]any{"replicas": int64(4), "readyReplicas": int64(4)}
	cluster.write(watch, status)
	aliceTo()
	// 2. Naming redis-replicas with redis-master's uid, followed by a
	// write to redis-master that makes the change the review claims.
	listener.post(t, scaleReview("forged-uid", "alice", sre, "redis-replicas", masterUID, "190", 3, 4))
	cluster.write(watch, liveSts(t, "redis-master", masterUID, "207", 4, "2026-11-29T10:01:00Z"))
	aliceTo()
	// 3. A restart: a new process, whose listener is up before its watch
	// has listed anything, gets a review of resourceVersion 0.
	watch.Close()
	watch, listener, _ = process()
	b = e.newBot(a, watch, forge.CommitGit)
	listener.post(t, scaleReview("forged-zero", "alice", sre, "redis-replicas", replicasUID, "0", 3, 4))
	aliceTo()

	forgedConfirmed := seen.confirmedBy("alice")
	refused := seen.refusedOf("alice")
	forgedRefused := 0
	for _, n := range refused {
		forgedRefused += n
	}
	if forgedConfirmed != 0 || forgedRefused != 3 {
		t.Errorf("forged reviews: %d confirmed, refused %v; want none confirmed, all three reported", forgedConfirmed, refused)
	}
	if refused[observe.RefusedChange] != 1 || refused[observe.RefusedObject] != 1 || refused[observe.RefusedVersion] != 1 {
		t.Errorf("forged reviews refused %v, want one each for change, object and version", refused)
	}
	prs := e.pulls(a, e.repo)
	merged := 0
	for _, pr := range prs {
		if pr.Merged {
			merged++
		}
	}
	drift := openDrift()
	if len(prs) != 0 || len(drift) != 1 {
		t.Errorf("after the forgeries: %d pull requests (%d merged), %d open drift issues; want none and bob's still open", len(prs), merged, len(drift))
	}
	if len(drift) == 1 && strings.Contains(drift[0].Body, "alice") {
		t.Errorf("the drift issue names alice:\n%s", drift[0].Body)
	}
	report(t, "26", "forged-admission-never-confirmed", "forged", 3, "confirmed", forgedConfirmed, "reported", forgedRefused,
		"attributed_to_the_forger", toForger, "pull_requests", len(prs), "merged", merged, "drift_issue_open", len(drift),
		"genuine_confirmed", seen.confirmedBy("bob"))
}
