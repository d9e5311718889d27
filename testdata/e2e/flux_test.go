package e2e

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"
)

// The Flux forward apply: the objects the overlay in kustomize/envs/prod
// builds, and how often Flux fetches and applies it.
const (
	fluxNamespace = "flux-system"
	fluxInterval  = 5 * time.Second
	fluxSTS       = "web-cache"
	fluxImage     = "registry.local/cache:7.2.4"
)

var (
	crdGVR           = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	gitRepositoryGVR = schema.GroupVersionResource{Group: "source.toolkit.fluxcd.io", Version: "v1", Resource: "gitrepositories"}
	kustomizationGVR = schema.GroupVersionResource{Group: "kustomize.toolkit.fluxcd.io", Version: "v1", Resource: "kustomizations"}
	deploymentGVR    = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
)

// fluxControllers are the paths of the Flux controllers' binaries.
type fluxControllers struct{ kustomize, source, helm string }

// fluxBinaries finds kustomize-controller, source-controller and
// helm-controller (KUSTOMIZE_CONTROLLER, SOURCE_CONTROLLER and
// HELM_CONTROLLER, else built once per version into the user's cache by
// build-flux.sh).
func fluxBinaries(t *testing.T) fluxControllers {
	t.Helper()
	fc := fluxControllers{os.Getenv("KUSTOMIZE_CONTROLLER"), os.Getenv("SOURCE_CONTROLLER"), os.Getenv("HELM_CONTROLLER")}
	if fc.kustomize != "" && fc.source != "" && fc.helm != "" {
		return fc
	}
	start := time.Now()
	out, err := exec.Command("./build-flux.sh").Output()
	if err != nil {
		t.Fatalf("building the Flux controllers (build-flux.sh): %v", err)
	}
	paths := strings.Fields(string(out))
	if len(paths) != 3 {
		t.Fatalf("build-flux.sh printed %q, want the paths of kustomize-controller, source-controller and helm-controller", out)
	}
	t.Logf("timing: Flux controllers ready in %s (%s)", time.Since(start).Round(time.Millisecond), strings.Join(paths, ", "))
	return fluxControllers{paths[0], paths[1], paths[2]}
}

// fluxCRDs reads the custom resource definitions that come with the
// controllers' modules (config/crd/bases of each main module), found in
// the module cache through the module that builds each controller.
func fluxCRDs(t *testing.T) []*unstructured.Unstructured {
	t.Helper()
	var crds []*unstructured.Unstructured
	for _, name := range []string{"source-controller", "kustomize-controller", "helm-controller"} {
		cmd := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/fluxcd/"+name)
		cmd.Dir = filepath.Join("flux", name)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("finding %s's module (go list -m in %s): %v", name, cmd.Dir, err)
		}
		files, err := filepath.Glob(filepath.Join(strings.TrimSpace(string(out)), "config", "crd", "bases", "*.yaml"))
		if err != nil || len(files) == 0 {
			t.Fatalf("%s's module has no config/crd/bases/*.yaml (%v)", name, err)
		}
		for _, f := range files {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			crds = append(crds, decodeYAML(t, f, data)...)
		}
	}
	return crds
}

// decodeYAML splits a YAML stream into its objects.
func decodeYAML(t *testing.T, name string, data []byte) []*unstructured.Unstructured {
	t.Helper()
	var objs []*unstructured.Unstructured
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return objs
		}
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var obj map[string]any
		if err := yaml.Unmarshal(doc, &obj); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(obj) > 0 {
			objs = append(objs, &unstructured.Unstructured{Object: obj})
		}
	}
}

// applyAs server-side applies obj as user (field manager e2e).
func applyAs(t *testing.T, c *cluster, user string, gvr schema.GroupVersionResource, obj *unstructured.Unstructured) {
	t.Helper()
	res := c.dynamic(t, user).Resource(gvr)
	var err error
	opts := metav1.ApplyOptions{FieldManager: "e2e", Force: true}
	if ns := obj.GetNamespace(); ns != "" {
		_, err = res.Namespace(ns).Apply(context.Background(), obj.GetName(), obj, opts)
	} else {
		_, err = res.Apply(context.Background(), obj.GetName(), obj, opts)
	}
	if err != nil {
		t.Fatalf("applying %s %s: %v", obj.GetKind(), obj.GetName(), err)
	}
}

// condition is the status and message of a condition of a Flux object.
func condition(obj *unstructured.Unstructured, kind string) (status, message string) {
	conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == kind {
			s, _ := m["status"].(string)
			msg, _ := m["message"].(string)
			return s, msg
		}
	}
	return "Unknown", "no " + kind + " condition yet"
}

// fluxObject reads a Flux object in flux-system as the admin.
func fluxObject(t *testing.T, c *cluster, gvr schema.GroupVersionResource, name string) (*unstructured.Unstructured, error) {
	return c.dynamic(t, userAdmin).Resource(gvr).Namespace(fluxNamespace).Get(context.Background(), name, metav1.GetOptions{})
}

// startFlux installs the controllers' CRDs and runs source-controller and
// kustomize-controller as the admin against the cluster, on loopback ports,
// watching all namespaces, without leader election.
func startFlux(t *testing.T, c *cluster) { startFluxWith(t, c, false) }

// startFluxWith is startFlux, with helm-controller run the same way when
// helm says so (a Helm install and upgrade only write to the API server,
// so no kubelet is needed).
func startFluxWith(t *testing.T, c *cluster, helm bool) {
	t.Helper()
	fc := fluxBinaries(t)
	for _, crd := range fluxCRDs(t) {
		applyAs(t, c, userAdmin, crdGVR, crd)
	}
	for _, crd := range fluxCRDs(t) {
		eventually(t, 30*time.Second, "CRD "+crd.GetName()+" established", func() error {
			got, err := c.dynamic(t, userAdmin).Resource(crdGVR).Get(context.Background(), crd.GetName(), metav1.GetOptions{})
			if err != nil {
				return err
			}
			if s, msg := condition(got, "Established"); s != "True" {
				return fmt.Errorf("established %s: %s", s, msg)
			}
			return nil
		})
	}
	cs, err := kubernetes.NewForConfig(c.restConfig(userAdmin))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fluxNamespace}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	kubeconfig := filepath.Join(dir, "admin.kubeconfig")
	cfg := strings.Replace(c.kubeconfigYAML(), "current-context: "+userBackflow, "current-context: "+userAdmin, 1)
	if err := os.WriteFile(kubeconfig, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), "KUBECONFIG="+kubeconfig, "RUNTIME_NAMESPACE="+fluxNamespace)
	loopback := func() string { return fmt.Sprintf("127.0.0.1:%d", freePort(t)) }
	common := func() []string {
		return []string{"--metrics-addr", loopback(), "--health-addr", loopback(),
			"--watch-all-namespaces=true", "--enable-leader-election=false", "--log-level=debug"}
	}
	storage := loopback()
	// source-controller refuses a storage path that does not exist.
	if err := os.Mkdir(filepath.Join(dir, "storage"), 0o700); err != nil {
		t.Fatal(err)
	}
	src := exec.Command(fc.source, append(common(), "--storage-path", filepath.Join(dir, "storage"),
		"--storage-addr", storage, "--storage-adv-addr", storage)...)
	src.Env = env
	startProcess(t, dir, "source-controller", src)
	// A Kustomization whose source has no artifact yet retries after
	// --requeue-dependency (30s by default): one interval here.
	kc := exec.Command(fc.kustomize, append(common(), "--requeue-dependency", fluxInterval.String())...)
	kc.Env = env
	startProcess(t, dir, "kustomize-controller", kc)
	if helm {
		// A HelmRelease whose chart is not built yet retries after
		// --requeue-dependency too.
		hc := exec.Command(fc.helm, append(common(), "--requeue-dependency", fluxInterval.String())...)
		hc.Env = env
		startProcess(t, dir, "helm-controller", hc)
	}
}

// fluxSync points a GitRepository at the local hub's repository (smart HTTP
// on loopback, with an installation token) and a Kustomization at the prod
// overlay, both every fluxInterval, applied with force and pruning.
func fluxSync(t *testing.T, c *cluster, h *hubClient) {
	t.Helper()
	tok, err := h.installationToken()
	if err != nil {
		t.Fatalf("an installation token for source-controller: %v", err)
	}
	objs := decodeYAML(t, "the Flux objects", fmt.Appendf(nil, `apiVersion: v1
kind: Secret
metadata: {name: hub-auth, namespace: %[1]s}
stringData: {username: x-access-token, password: %[2]s}
---
apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata: {name: gitops, namespace: %[1]s}
spec:
  url: %[3]s%[4]s.git
  ref: {branch: main}
  interval: %[5]s
  timeout: 20s
  secretRef: {name: hub-auth}
---
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: prod, namespace: %[1]s}
spec:
  sourceRef: {kind: GitRepository, name: gitops}
  path: ./envs/prod
  interval: %[5]s
  retryInterval: %[5]s
  timeout: 30s
  force: true
  prune: true
`, fluxNamespace, tok, h.ep.GitURL, repoName, fluxInterval))
	applyAs(t, c, userAdmin, schema.GroupVersionResource{Version: "v1", Resource: "secrets"}, objs[0])
	applyAs(t, c, userAdmin, gitRepositoryGVR, objs[1])
	applyAs(t, c, userAdmin, kustomizationGVR, objs[2])
}

// awaitApplied waits until the Kustomization is Ready at the revision the
// GitRepository's artifact carries, and returns that revision.
func awaitApplied(t *testing.T, c *cluster, timeout time.Duration) string {
	t.Helper()
	var revision string
	eventually(t, timeout, "Flux applying the prod overlay", func() error {
		repo, err := fluxObject(t, c, gitRepositoryGVR, "gitops")
		if err != nil {
			return err
		}
		if s, msg := condition(repo, "Ready"); s != "True" {
			return fmt.Errorf("GitRepository gitops not ready: %s", msg)
		}
		ks, err := fluxObject(t, c, kustomizationGVR, "prod")
		if err != nil {
			return err
		}
		if s, msg := condition(ks, "Ready"); s != "True" {
			return fmt.Errorf("Kustomization prod not ready: %s", msg)
		}
		revision, _, _ = unstructured.NestedString(ks.Object, "status", "lastAppliedRevision")
		return nil
	})
	return revision
}

// awaitReverted waits, within three intervals, until check holds again after
// a live change at changed, and returns how long the change stood.
func awaitReverted(t *testing.T, what string, changed time.Time, check func() error) time.Duration {
	t.Helper()
	eventually(t, 3*fluxInterval+10*time.Second, what, check)
	return time.Since(changed)
}

func TestFluxForwardApply(t *testing.T) {
	if testing.Short() {
		t.Skip("the Flux forward apply starts a kube-apiserver, etcd and Flux's controllers: run it with make e2e")
	}
	apiserver, bin := binaries(t)
	start := time.Now()
	c := startCluster(t, apiserver, "", "")
	// The hub's webhooks have no bot to go to here.
	sink := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	t.Cleanup(sink.Close)
	ep := startHubWith(t, bin, sink.URL+"/webhook", "kustomize")
	h := newHubClient(t, ep)
	startFlux(t, c)
	fluxSync(t, c, h)
	revision := awaitApplied(t, c, 3*time.Minute)
	t.Logf("FIGURE flux first apply: %s from the harness start (cluster, hub, CRDs, both controllers, fetch and apply of %s)",
		time.Since(start).Round(time.Millisecond), revision)
	if n := replicas(t, c, fluxSTS); n != 3 {
		t.Fatalf("kustomize-controller applied %s with %d replicas, want the overlay's 3", fluxSTS, n)
	}
	web, err := c.dynamic(t, userAdmin).Resource(deploymentGVR).Namespace(namespace).Get(context.Background(), "web", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the overlay's Deployment web: %v", err)
	}
	if n, _, _ := unstructured.NestedInt64(web.Object, "spec", "replicas"); n != 2 {
		t.Fatalf("kustomize-controller applied Deployment web with %d replicas, want the overlay's 2", n)
	}

	// alice (group sre) scales the StatefulSet 3 -> 4; with nothing to
	// write it back, the real forward apply clobbers it within an interval.
	var stood []time.Duration
	for round := range 2 {
		patch(t, c, userAlice, fluxSTS, types.MergePatchType, `{"spec":{"replicas":4}}`, "scale")
		changed := time.Now()
		if n := replicas(t, c, fluxSTS); n != 4 && round == 0 {
			t.Logf("alice's 4 was reverted before it could be read back (%d)", n)
		}
		d := awaitReverted(t, "kustomize-controller reverting alice's 4 to 3", changed, func() error {
			if n := replicas(t, c, fluxSTS); n != 3 {
				return fmt.Errorf("%s has %d replicas", fluxSTS, n)
			}
			return nil
		})
		stood = append(stood, d)
		t.Logf("FIGURE flux revert of alice's scale (round %d): live sat at 4 for %s before kustomize-controller applied 3 (interval %s)",
			round+1, d.Round(100*time.Millisecond), fluxInterval)
	}
	for _, d := range stood {
		if d > 2*fluxInterval+5*time.Second {
			t.Errorf("a revert took %s, more than two intervals of %s", d.Round(time.Millisecond), fluxInterval)
		}
	}
	if err := managedBy(t, c, fluxSTS, "kustomize-controller", "spec", "replicas"); err != nil {
		t.Error(err)
	}

	// bob changes the image: kustomize-controller reverts it itself.
	patch(t, c, userBob, fluxSTS, types.StrategicMergePatchType,
		`{"spec":{"template":{"spec":{"containers":[{"name":"cache","image":"`+debugImage+`"}]}}}}`)
	changed := time.Now()
	d := awaitReverted(t, "kustomize-controller reverting bob's image", changed, func() error {
		if img := image(t, c, fluxSTS); img != fluxImage {
			return fmt.Errorf("%s runs %s", fluxSTS, img)
		}
		return nil
	})
	t.Logf("FIGURE flux revert of bob's image: live ran %s for %s before kustomize-controller applied %s (interval %s)",
		debugImage, d.Round(100*time.Millisecond), fluxImage, fluxInterval)
	t.Logf("FIGURE flux e2e wall time: %s", time.Since(start).Round(time.Millisecond))
}

// managedBy checks that manager owns the field at path of the StatefulSet
// name (the applier took the field back, not merely set the same value).
func managedBy(t *testing.T, c *cluster, name, manager string, path ...string) error {
	t.Helper()
	sts := liveStatefulSet(t, c, name)
	key := "f:" + strings.Join(path, ".f:")
	for _, mf := range sts.GetManagedFields() {
		if mf.FieldsV1 == nil {
			continue
		}
		fields, err := fieldPaths(mf.FieldsV1.Raw)
		if err != nil {
			return err
		}
		if fields[key] {
			if mf.Manager != manager {
				return fmt.Errorf("%s's %s is managed by %s, want %s", name, strings.Join(path, "."), mf.Manager, manager)
			}
			return nil
		}
	}
	return fmt.Errorf("no manager owns %s's %s", name, strings.Join(path, "."))
}

// fieldPaths flattens a managedFields FieldsV1 set into dotted keys.
func fieldPaths(raw []byte) (map[string]bool, error) {
	var tree map[string]any
	if err := yaml.Unmarshal(raw, &tree); err != nil {
		return nil, err
	}
	out := map[string]bool{}
	var walk func(prefix string, m map[string]any)
	walk = func(prefix string, m map[string]any) {
		for k, v := range m {
			p := k
			if prefix != "" {
				p = prefix + "." + k
			}
			out[p] = true
			if sub, ok := v.(map[string]any); ok {
				walk(p, sub)
			}
		}
	}
	walk("", tree)
	return out, nil
}
