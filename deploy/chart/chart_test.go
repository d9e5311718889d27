package chart_test

// The chart is rendered with the Helm SDK (no helm binary) over a matrix of
// values; every object is decoded strictly into the Kubernetes API types
// (unknown fields are errors), the pods are checked against restricted Pod
// Security, the config file is read with backflow's own strict decoders,
// and the grants, mounts and webhook registration are held to what the
// config needs.

import (
	"bytes"
	"fmt"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"helm.sh/helm/v4/pkg/chart/common"
	"helm.sh/helm/v4/pkg/chart/common/util"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"helm.sh/helm/v4/pkg/engine"
	releaseutil "helm.sh/helm/v4/pkg/release/v1/util"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"
	kjson "k8s.io/apimachinery/pkg/runtime/serializer/json"
	"k8s.io/client-go/kubernetes/scheme"
	psaapi "k8s.io/pod-security-admission/api"
	"k8s.io/pod-security-admission/policy"
	"sigs.k8s.io/yaml"

	"github.com/backflow-dev/backflow/internal/botconfig"
)

const (
	chartDir  = "backflow"
	release   = "bf"
	namespace = "backflow"
	fullname  = "bf-backflow"
)

// base are the values every install must give: the App's id and its
// credentials.
const base = `
github: {appId: 123456}
credentials:
  privateKey: "-----BEGIN PRIVATE KEY-----\nMIGH\n-----END PRIVATE KEY-----\n"
  webhookSecret: s3cret
`

const kubeObjects = `
kube:
  enabled: true
  cluster: prod-us-east-1
  objects:
    - {apiVersion: apps/v1, kind: StatefulSet, namespace: redis, name: "redis-*"}
    - {apiVersion: apps/v1, kind: Deployment, namespace: redis, name: web}
    - {apiVersion: apps/v1, kind: Deployment, namespace: shop, name: web}
    - {apiVersion: networking.k8s.io/v1, kind: NetworkPolicy, namespace: "*", name: redis}
    - {apiVersion: gateway.networking.k8s.io/v1, kind: Gateway, namespace: edge, name: main}
`

// matrix is every combination the chart is tested with: base plus these.
var matrix = []struct{ name, values string }{
	{"defaults", ""},
	{"existing secret", `
credentials: {existingSecret: gh-app, privateKey: "", webhookSecret: ""}
server: {observations: {enabled: true, bearerToken: true, signature: true, urlTokens: true, cluster: prod-us-east-1}}
`},
	{"pushes and audit", `
credentials: {observationToken: tok, observationSecret: sig, observationURLTokens: "0123456789abcdef0123456789abcdef\n", auditToken: at}
server: {observations: {enabled: true, bearerToken: true, signature: true, urlTokens: true, trust: audit-log}}
audit: {webhook: {enabled: true}}
repositories: [acme/gitops]
observations:
  prod-eu-west-1: [{url: "http://cub-scout.observability.svc:8080/trace-diff.json", trust: asserted, timeout: 10s}]
pacing: {writesPerMinute: 40, maxWait: 1m}
charts: {maxBytes: 1048576, timeout: 30s, allowedHosts: [production.cloudflare.docker.com, "registry.example.com:5000"]}
`},
	{"kube watch", kubeObjects},
	{"admission with cert-manager", kubeObjects + `
admission: {enabled: true, maxHeldBytes: 33554432, maxInFlightBytes: 4194304}
networkPolicy: {admissionFrom: [{ipBlock: {cidr: 172.16.0.0/28}}]}
`},
	{"admission with a client CA", kubeObjects + `
admission: {enabled: true, clientCA: "-----BEGIN CERTIFICATE-----\nMIIC\n-----END CERTIFICATE-----\n"}
networkPolicy: {admissionFrom: [{namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: kube-system}}}]}
`},
	{"admission with a provided secret", kubeObjects + `
admission:
  enabled: true
  certificate: {certManager: false, existingSecret: webhook-tls, caBundle: "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"}
networkPolicy:
  enabled: true
  admissionFrom: [{ipBlock: {cidr: 10.0.0.0/16}}]
`},
	{"ingress", `
ingress: {enabled: true, className: nginx, host: backflow.example.com, annotations: {cert-manager.io/cluster-issuer: letsencrypt}}
`},
	{"servicemonitor", `
serviceMonitor: {enabled: true, labels: {release: prometheus}}
`},
	{"networkpolicy", `
networkPolicy:
  enabled: true
  from: [{namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: ingress-nginx}}}]
`},
	{"replicas 2", `
replicas: 2
`},
	{"one replica elects a leader", `
leaderElection: {enabled: true, leaseName: backflow-leader, leaseDuration: 20s, renewDeadline: 15s, retryPeriod: 2s}
`},
	{"image by digest", `
image: {digest: "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"}
`},
}

func loadChart(t *testing.T) *chart.Chart {
	t.Helper()
	ch, err := loader.Load(chartDir)
	if err != nil {
		t.Fatal(err)
	}
	return ch
}

// values reads and merges YAML documents of values, later ones winning.
func values(t *testing.T, docs ...string) map[string]any {
	t.Helper()
	out := map[string]any{}
	for _, d := range docs {
		var m map[string]any
		if err := yaml.Unmarshal([]byte(d), &m); err != nil {
			t.Fatalf("values %q: %v", d, err)
		}
		out = util.MergeTables(m, out)
	}
	return out
}

// render renders the chart as helm install would (schema checked) and
// returns the manifests by template file.
func render(ch *chart.Chart, vals map[string]any) (map[string]string, error) {
	caps := common.DefaultCapabilities.Copy()
	v, err := common.ParseKubeVersion("v1.34.0")
	if err != nil {
		return nil, err
	}
	caps.KubeVersion = *v
	rv, err := util.ToRenderValuesWithSchemaValidation(ch, vals, common.ReleaseOptions{Name: release, Namespace: namespace, IsInstall: true}, caps, false)
	if err != nil {
		return nil, err
	}
	return engine.Engine{Strict: true}.Render(ch, rv)
}

// object is one rendered object, decoded strictly.
type object struct {
	file   string
	kind   string
	name   string
	ns     string
	typed  runtime.Object // nil for the kinds outside client-go's scheme
	fields map[string]any
}

var strict = kjson.NewSerializerWithOptions(kjson.DefaultMetaFactory, scheme.Scheme, scheme.Scheme, kjson.SerializerOptions{Yaml: true, Strict: true})

// shapes are the fields allowed in the objects of kinds outside
// client-go's scheme, as nested sets ("*" for any value).
var shapes = map[string]map[string]any{
	"cert-manager.io/v1|Issuer": {"spec": map[string]any{"selfSigned": map[string]any{}}},
	"cert-manager.io/v1|Certificate": {"spec": map[string]any{
		"secretName": "*", "duration": "*", "renewBefore": "*", "dnsNames": "*",
		"issuerRef":  map[string]any{"name": "*", "kind": "*"},
		"privateKey": map[string]any{"algorithm": "*", "size": "*", "rotationPolicy": "*"},
	}},
	"monitoring.coreos.com/v1|ServiceMonitor": {"spec": map[string]any{
		"selector":          map[string]any{"matchLabels": "*"},
		"namespaceSelector": map[string]any{"matchNames": "*"},
		"endpoints":         []any{map[string]any{"port": "*", "path": "*", "interval": "*", "scrapeTimeout": "*"}},
	}},
}

var metaShape = map[string]any{"name": "*", "namespace": "*", "labels": "*", "annotations": "*"}

// checkShape reports fields of v that shape does not allow.
func checkShape(where string, v, shape any) []string {
	if shape == "*" {
		return nil
	}
	switch s := shape.(type) {
	case map[string]any:
		m, ok := v.(map[string]any)
		if !ok {
			return []string{fmt.Sprintf("%s: want a mapping, got %T", where, v)}
		}
		var errs []string
		for _, k := range slices.Sorted(maps.Keys(m)) {
			sub, ok := s[k]
			if !ok {
				errs = append(errs, fmt.Sprintf("%s.%s: unknown field", where, k))
				continue
			}
			errs = append(errs, checkShape(where+"."+k, m[k], sub)...)
		}
		return errs
	case []any:
		l, ok := v.([]any)
		if !ok {
			return []string{fmt.Sprintf("%s: want a list, got %T", where, v)}
		}
		var errs []string
		for i, e := range l {
			errs = append(errs, checkShape(fmt.Sprintf("%s[%d]", where, i), e, s[0])...)
		}
		return errs
	}
	return nil
}

func decodeAll(t *testing.T, out map[string]string) []object {
	t.Helper()
	var objs []object
	for _, file := range slices.Sorted(maps.Keys(out)) {
		if !strings.HasSuffix(file, ".yaml") {
			continue
		}
		docs := releaseutil.SplitManifests(out[file])
		for _, k := range slices.Sorted(maps.Keys(docs)) {
			doc := docs[k]
			var fields map[string]any
			if err := yaml.Unmarshal([]byte(doc), &fields); err != nil {
				t.Fatalf("%s: %v\n%s", file, err, doc)
			}
			if len(fields) == 0 {
				continue
			}
			o := object{file: path.Base(file), fields: fields}
			o.kind, _ = fields["kind"].(string)
			apiVersion, _ := fields["apiVersion"].(string)
			meta, _ := fields["metadata"].(map[string]any)
			o.name, _ = meta["name"].(string)
			o.ns, _ = meta["namespace"].(string)
			if shape, ok := shapes[apiVersion+"|"+o.kind]; ok {
				top := map[string]any{"apiVersion": "*", "kind": "*", "metadata": metaShape}
				maps.Copy(top, shape)
				if errs := checkShape(o.kind, fields, top); len(errs) > 0 {
					t.Errorf("%s: %s", o.file, strings.Join(errs, "; "))
				}
			} else {
				typed, _, err := strict.Decode([]byte(doc), nil, nil)
				if err != nil {
					t.Errorf("%s: %s %s: %v\n%s", o.file, o.kind, o.name, err, doc)
					continue
				}
				o.typed = typed
			}
			if o.name == "" {
				t.Errorf("%s: %s without a name", o.file, o.kind)
			}
			objs = append(objs, o)
		}
	}
	return objs
}

func find[T runtime.Object](objs []object, kind string) []T {
	var out []T
	for _, o := range objs {
		if t, ok := o.typed.(T); ok && o.kind == kind {
			out = append(out, t)
		}
	}
	return out
}

func one[T runtime.Object](t *testing.T, objs []object, kind string) T {
	t.Helper()
	all := find[T](objs, kind)
	if len(all) != 1 {
		t.Fatalf("%d %s objects, want 1", len(all), kind)
	}
	return all[0]
}

// readmeValues is the values file of deploy/README.md's install steps,
// so the steps a new user follows are rendered and checked too.
func readmeValues(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(data), "# backflow-values.yaml\n")
	block, _, ok2 := strings.Cut(rest, "```")
	if !ok || !ok2 {
		t.Fatal("deploy/README.md has no backflow-values.yaml block")
	}
	var lines []string
	for _, l := range strings.Split(block, "\n") {
		lines = append(lines, strings.TrimPrefix(l, "   "))
	}
	return strings.Join(lines, "\n")
}

func TestChartMatrix(t *testing.T) {
	ch := loadChart(t)
	matrix := append(matrix, struct{ name, values string }{"deploy/README.md's values", readmeValues(t)})
	eval, err := policy.NewEvaluator(policy.DefaultChecks(), nil)
	if err != nil {
		t.Fatal(err)
	}
	restricted := psaapi.LevelVersion{Level: psaapi.LevelRestricted, Version: psaapi.LatestVersion()}
	for _, tc := range matrix {
		t.Run(tc.name, func(t *testing.T) {
			vals := values(t, base, tc.values)
			out, err := render(ch, vals)
			if err != nil {
				t.Fatal(err)
			}
			objs := decodeAll(t, out)
			seen := map[string]bool{}
			for _, o := range objs {
				key := o.kind + "/" + o.ns + "/" + o.name
				if seen[key] {
					t.Errorf("%s rendered twice", key)
				}
				seen[key] = true
				if o.ns == "" && !clusterScoped[o.kind] {
					t.Errorf("%s %s has no namespace", o.kind, o.name)
				}
			}

			dep := one[*appsv1.Deployment](t, objs, "Deployment")
			pod := dep.Spec.Template
			for _, r := range eval.EvaluatePod(restricted, &pod.ObjectMeta, &pod.Spec) {
				if !r.Allowed {
					t.Errorf("restricted Pod Security: %s: %s", r.ForbiddenReason, r.ForbiddenDetail)
				}
			}
			checkConfig(t, tc.name, vals, objs, dep)
			checkRBAC(t, vals, objs, dep)
			checkAdmission(t, vals, objs, dep)
			checkExposure(t, vals, objs)
		})
	}
}

var clusterScoped = map[string]bool{"ClusterRole": true, "ClusterRoleBinding": true, "ValidatingWebhookConfiguration": true}

func get(m map[string]any, keys ...string) any {
	var v any = m
	for _, k := range keys {
		mm, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = mm[k]
	}
	return v
}

// checkConfig reads the ConfigMap's config file with backflow's strict
// decoders and holds every file it names to a mounted key.
func checkConfig(t *testing.T, name string, vals map[string]any, objs []object, dep *appsv1.Deployment) {
	t.Helper()
	cm := one[*corev1.ConfigMap](t, objs, "ConfigMap")
	text := cm.Data["config.yaml"]
	bc, err := botconfig.ParseConfig("ConfigMap config.yaml", []byte(text))
	if err != nil {
		t.Fatalf("not a valid bot config: %v\n%s", err, text)
	}
	srv, err := botconfig.ParseServerSection("ConfigMap config.yaml", []byte(text))
	if err != nil {
		t.Fatalf("server section: %v\n%s", err, text)
	}
	if bc.GitHub.AppID != 123456 {
		t.Errorf("github.appId %d", bc.GitHub.AppID)
	}
	c := dep.Spec.Template.Spec.Containers[0]
	if srv.Listen != ":8080" || c.Ports[0].ContainerPort != 8080 || c.Ports[0].Name != "http" {
		t.Errorf("server.listen %q, container port %v", srv.Listen, c.Ports[0])
	}
	if c.ReadinessProbe.HTTPGet.Path != "/readyz" || c.LivenessProbe.HTTPGet.Path != "/healthz" {
		t.Error("probes are not /readyz and /healthz")
	}
	if !slices.Equal(c.Args[:3], []string{"serve", "--config", "/etc/backflow/config.yaml"}) {
		t.Errorf("args %v", c.Args)
	}

	// Every file the config names is a key of a Secret mounted at its
	// folder; keys of the Secret the chart creates must be there.
	mounts := map[string]string{} // mount path -> secret name
	for _, m := range c.VolumeMounts {
		for _, v := range dep.Spec.Template.Spec.Volumes {
			if v.Name == m.Name && v.Secret != nil {
				mounts[m.MountPath] = v.Secret.SecretName
			}
		}
	}
	secrets := map[string]*corev1.Secret{}
	for _, s := range find[*corev1.Secret](objs, "Secret") {
		secrets[s.Name] = s
	}
	files := []string{bc.GitHub.PrivateKeyFile, srv.Webhook.SecretFile, bc.Audit.Webhook.TokenFile, bc.Audit.Webhook.SecretFile, bc.Admission.CertFile, bc.Admission.KeyFile}
	if o := srv.Observations; o != nil {
		files = append(files, o.TokenFile, o.SecretFile, o.URLTokensFile)
	}
	named := 0
	for _, f := range files {
		if f == "" {
			continue
		}
		named++
		secret, ok := mounts[path.Dir(f)]
		if !ok {
			t.Errorf("%s is in no mounted Secret (%v)", f, mounts)
			continue
		}
		if s := secrets[secret]; s != nil {
			if _, ok := s.Data[path.Base(f)]; !ok {
				t.Errorf("%s: the Secret %s has no key %s", f, secret, path.Base(f))
			}
		} else if secret == fullname {
			t.Errorf("%s: the pod mounts the Secret %s, which the chart does not render", f, secret)
		}
	}
	// The records' budgets reach the config as set (a chart install was
	// otherwise held to the defaults), and stay unset at 0.
	for key, got := range map[string]int64{"maxHeldBytes": bc.Admission.MaxHeldBytes, "maxInFlightBytes": bc.Admission.MaxInFlightBytes} {
		var want int64
		switch v := get(vals, "admission", key).(type) {
		case float64:
			want = int64(v)
		case int64:
			want = v
		case int:
			want = int64(v)
		}
		if got != want {
			t.Errorf("admission.%s %d in the config, %d in the values", key, got, want)
		}
	}
	if ca, _ := get(vals, "admission", "clientCA").(string); ca != "" || bc.Admission.ClientCAFile != "" {
		f := bc.Admission.ClientCAFile
		var mountedCM bool
		for _, m := range c.VolumeMounts {
			for _, v := range dep.Spec.Template.Spec.Volumes {
				mountedCM = mountedCM || (v.Name == m.Name && v.ConfigMap != nil && v.ConfigMap.Name == cm.Name && m.MountPath == path.Dir(f))
			}
		}
		if !mountedCM || cm.Data[path.Base(f)] != strings.TrimSpace(ca)+"\n" {
			t.Errorf("admission.clientCAFile %q is not the ConfigMap's %q mounted where it is read (mounted %v)", f, cm.Data[path.Base(f)], mountedCM)
		}
	}
	existing, _ := get(vals, "credentials", "existingSecret").(string)
	if existing != "" {
		if len(secrets) != 0 {
			t.Errorf("an existing Secret is named, yet the chart renders %v", slices.Collect(maps.Keys(secrets)))
		}
		if mounts["/var/run/secrets/backflow"] != existing {
			t.Errorf("the pod mounts %q, not the existing Secret %s", mounts["/var/run/secrets/backflow"], existing)
		}
	} else if s := secrets[fullname]; s == nil || len(s.Data) != countSecretFiles(files) {
		t.Errorf("the chart's Secret holds %v, the config names %d of its files", s, countSecretFiles(files))
	}
	if named < 2 {
		t.Errorf("the config names %d secret files", named)
	}
	if hosts, _ := get(vals, "charts", "allowedHosts").([]any); fmt.Sprint(hosts) != fmt.Sprint(bc.Charts.AllowedHosts) {
		t.Errorf("charts.allowedHosts %v reached the config as %v", hosts, bc.Charts.AllowedHosts)
	}
	if obs := get(vals, "observations"); obs != nil {
		for cluster := range obs.(map[string]any) {
			if len(bc.Observations[cluster]) == 0 {
				t.Errorf("observations of %s were not rendered", cluster)
			}
		}
	}
}

func countSecretFiles(files []string) int {
	n := 0
	for _, f := range files {
		if strings.HasPrefix(f, "/var/run/secrets/backflow/") {
			n++
		}
	}
	return n
}

// guessResource is Kubernetes' guess of a kind's resource, which the
// chart's template follows: lower case, y after a consonant to ies, s, x,
// ch and sh take es.
func guessResource(kind string) string {
	k := strings.ToLower(kind)
	switch {
	case k == "endpoints":
		return k
	case strings.HasSuffix(k, "y") && !strings.ContainsAny(k[len(k)-2:len(k)-1], "aeiou"):
		return k[:len(k)-1] + "ies"
	case strings.HasSuffix(k, "s") || strings.HasSuffix(k, "x") || strings.HasSuffix(k, "ch") || strings.HasSuffix(k, "sh"):
		return k + "es"
	}
	return k + "s"
}

type grant struct{ ns, group, resource string }

// checkRBAC holds the watch's grants to exactly the kinds of kube.objects,
// in one namespace when the source lists the kind there only, and the
// leader election's Role to leases in the release namespace.
func checkRBAC(t *testing.T, vals map[string]any, objs []object, dep *appsv1.Deployment) {
	t.Helper()
	want := map[grant]bool{}
	if on, _ := get(vals, "kube", "enabled").(bool); on {
		type kind struct{ group, resource string }
		nss := map[kind][]string{}
		for _, o := range get(vals, "kube", "objects").([]any) {
			m := o.(map[string]any)
			group, _, ok := strings.Cut(m["apiVersion"].(string), "/")
			if !ok {
				group = ""
			}
			k := kind{group, guessResource(m["kind"].(string))}
			nss[k] = append(nss[k], m["namespace"].(string))
		}
		for k, ns := range nss {
			ns = slices.Compact(slices.Sorted(slices.Values(ns)))
			scope := ""
			if len(ns) == 1 && !strings.Contains(ns[0], "*") {
				scope = ns[0]
			}
			want[grant{scope, k.group, k.resource}] = true
		}
	}
	got := map[grant]bool{}
	roles := map[string]bool{} // namespace/name
	collect := func(ns string, rules []rbacv1.PolicyRule) {
		for _, r := range rules {
			if slices.Contains(r.APIGroups, "coordination.k8s.io") {
				continue
			}
			if !slices.Equal(r.Verbs, []string{"get", "list", "watch"}) {
				t.Errorf("watch rule verbs %v", r.Verbs)
			}
			for _, g := range r.APIGroups {
				for _, res := range r.Resources {
					got[grant{ns, g, res}] = true
				}
			}
		}
	}
	for _, cr := range find[*rbacv1.ClusterRole](objs, "ClusterRole") {
		collect("", cr.Rules)
	}
	for _, r := range find[*rbacv1.Role](objs, "Role") {
		collect(r.Namespace, r.Rules)
		roles[r.Namespace+"/"+r.Name] = true
	}
	if !maps.Equal(got, want) {
		t.Errorf("watch grants\n got %v\nwant %v", sortedGrants(got), sortedGrants(want))
	}
	sa := dep.Spec.Template.Spec.ServiceAccountName
	for _, b := range find[*rbacv1.RoleBinding](objs, "RoleBinding") {
		if !roles[b.Namespace+"/"+b.RoleRef.Name] || len(b.Subjects) != 1 || b.Subjects[0].Name != sa || b.Subjects[0].Namespace != namespace {
			t.Errorf("RoleBinding %s/%s binds %v to %v", b.Namespace, b.Name, b.RoleRef, b.Subjects)
		}
	}
	for _, b := range find[*rbacv1.ClusterRoleBinding](objs, "ClusterRoleBinding") {
		if len(b.Subjects) != 1 || b.Subjects[0].Name != sa || b.Subjects[0].Namespace != namespace {
			t.Errorf("ClusterRoleBinding %s binds %v", b.Name, b.Subjects)
		}
	}

	replicas, _ := get(vals, "replicas").(float64)
	leader, set := get(vals, "leaderElection", "enabled").(bool)
	if !set {
		leader = replicas > 1
	}
	args := strings.Join(dep.Spec.Template.Spec.Containers[0].Args, " ")
	var lease *rbacv1.Role
	for _, r := range find[*rbacv1.Role](objs, "Role") {
		for _, rule := range r.Rules {
			if slices.Contains(rule.APIGroups, "coordination.k8s.io") {
				lease = r
			}
		}
	}
	if leader != strings.Contains(args, "--leader-elect ") || leader != (lease != nil) {
		t.Fatalf("leader election %v: args %q, lease Role %v", leader, args, lease != nil)
	}
	api := leader || get(vals, "kube", "enabled") == true
	if tok := dep.Spec.Template.Spec.AutomountServiceAccountToken; tok == nil || *tok != api {
		t.Errorf("service account token mounted %v, want %v", tok, api)
	}
	if !leader {
		if dep.Spec.Strategy.Type != appsv1.RecreateDeploymentStrategyType {
			t.Errorf("one writer without leader election needs Recreate, got %s", dep.Spec.Strategy.Type)
		}
		return
	}
	if s := dep.Spec.Strategy; s.Type != appsv1.RollingUpdateDeploymentStrategyType || s.RollingUpdate == nil || s.RollingUpdate.MaxUnavailable.String() != "100%" {
		t.Errorf("a standby is never ready: a rollout must not wait for it, got %+v", s)
	}
	name, _ := get(vals, "leaderElection", "leaseName").(string)
	if name == "" {
		name = fullname
	}
	if lease.Namespace != namespace || !strings.Contains(args, "--leader-elect-namespace="+namespace) || !strings.Contains(args, "--leader-elect-name="+name) {
		t.Errorf("lease Role in %s, args %q; want the release namespace and lease %s", lease.Namespace, args, name)
	}
	verbs := map[string]bool{}
	for _, rule := range lease.Rules {
		if !slices.Equal(rule.Resources, []string{"leases"}) {
			t.Errorf("lease Role grants %v", rule.Resources)
		}
		if len(rule.ResourceNames) > 0 && !slices.Equal(rule.ResourceNames, []string{name}) {
			t.Errorf("lease Role names %v, want %s", rule.ResourceNames, name)
		}
		for _, v := range rule.Verbs {
			verbs[v] = true
		}
	}
	if !maps.Equal(verbs, map[string]bool{"get": true, "create": true, "update": true}) {
		t.Errorf("lease verbs %v, want get, create, update", verbs)
	}
}

func sortedGrants(g map[grant]bool) []string {
	var out []string
	for k := range g {
		out = append(out, fmt.Sprintf("%s:%s/%s", k.ns, k.group, k.resource))
	}
	sort.Strings(out)
	return out
}

// checkAdmission mirrors deploy/admission: a webhook that can never block
// a change, on the watched kinds only, outside the system namespaces, whose
// CA is injected from the Certificate (or given) whose Secret the pod
// mounts where the config reads it.
func checkAdmission(t *testing.T, vals map[string]any, objs []object, dep *appsv1.Deployment) {
	t.Helper()
	hooks := find[*admissionv1.ValidatingWebhookConfiguration](objs, "ValidatingWebhookConfiguration")
	if on, _ := get(vals, "admission", "enabled").(bool); !on {
		if len(hooks) != 0 {
			t.Error("a webhook is registered with admission off")
		}
		return
	}
	if len(hooks) != 1 || len(hooks[0].Webhooks) != 1 {
		t.Fatalf("want one webhook, got %v", hooks)
	}
	hook := hooks[0]
	w := hook.Webhooks[0]
	if *w.FailurePolicy != admissionv1.Ignore || *w.SideEffects != admissionv1.SideEffectClassNone || *w.TimeoutSeconds > 5 {
		t.Errorf("failurePolicy %s, sideEffects %s, timeout %d", *w.FailurePolicy, *w.SideEffects, *w.TimeoutSeconds)
	}
	var resources []string
	for _, r := range w.Rules {
		if !slices.Equal(r.Operations, []admissionv1.OperationType{admissionv1.Update}) {
			t.Errorf("rule operations %v", r.Operations)
		}
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				resources = append(resources, g+"/"+r.APIVersions[0]+"/"+res)
			}
		}
	}
	slices.Sort(resources)
	want := []string{"apps/v1/deployments", "apps/v1/deployments/scale", "apps/v1/statefulsets", "apps/v1/statefulsets/scale",
		"gateway.networking.k8s.io/v1/gateways", "networking.k8s.io/v1/networkpolicies"}
	if !slices.Equal(resources, want) {
		t.Errorf("webhook resources %v, want %v", resources, want)
	}
	excluded := w.NamespaceSelector.MatchExpressions[0].Values
	if !slices.Contains(excluded, "kube-system") || !slices.Contains(excluded, namespace) {
		t.Errorf("namespaceSelector excludes %v", excluded)
	}
	if len(w.MatchConditions) == 0 {
		t.Error("no matchConditions")
	}
	svc := w.ClientConfig.Service
	var admissionSvc *corev1.Service
	for _, s := range find[*corev1.Service](objs, "Service") {
		if s.Name == svc.Name && s.Namespace == svc.Namespace {
			admissionSvc = s
		}
	}
	if admissionSvc == nil || *svc.Path != "/admission" || admissionSvc.Spec.Ports[0].TargetPort.StrVal != "admission" {
		t.Errorf("clientConfig %v does not call the admission Service at /admission", svc)
	}
	var tlsSecret string
	for _, v := range dep.Spec.Template.Spec.Volumes {
		if v.Name == "admission-tls" {
			tlsSecret = v.Secret.SecretName
		}
	}
	certManager := get(vals, "admission", "certificate", "certManager") != false
	if certManager {
		var cert map[string]any
		for _, o := range objs {
			if o.kind == "Certificate" {
				cert = o.fields
			}
		}
		certName := get(cert, "metadata", "name")
		if hook.Annotations["cert-manager.io/inject-ca-from"] != namespace+"/"+fmt.Sprint(certName) {
			t.Errorf("inject-ca-from %q does not name the Certificate %v", hook.Annotations["cert-manager.io/inject-ca-from"], certName)
		}
		if get(cert, "spec", "secretName") != tlsSecret {
			t.Errorf("the pod mounts %s, the Certificate writes %v", tlsSecret, get(cert, "spec", "secretName"))
		}
		dns := fmt.Sprint(get(cert, "spec", "dnsNames"))
		if !strings.Contains(dns, svc.Name+"."+namespace+".svc") {
			t.Errorf("the Certificate's names %s do not cover the Service %s", dns, svc.Name)
		}
		if len(w.ClientConfig.CABundle) != 0 {
			t.Error("caBundle set beside cert-manager's injection")
		}
	} else {
		if tlsSecret != get(vals, "admission", "certificate", "existingSecret") {
			t.Errorf("the pod mounts %s, not the provided Secret", tlsSecret)
		}
		if !bytes.Contains(w.ClientConfig.CABundle, []byte("BEGIN CERTIFICATE")) || hook.Annotations["cert-manager.io/inject-ca-from"] != "" {
			t.Errorf("caBundle %q, annotations %v", w.ClientConfig.CABundle, hook.Annotations)
		}
	}
}

// checkExposure holds the Ingress, the ServiceMonitor and the
// NetworkPolicy to their toggles.
func checkExposure(t *testing.T, vals map[string]any, objs []object) {
	t.Helper()
	ings := find[*networkingv1.Ingress](objs, "Ingress")
	if on, _ := get(vals, "ingress", "enabled").(bool); on != (len(ings) == 1) {
		t.Errorf("ingress.enabled %v, %d Ingress", on, len(ings))
	} else if on {
		ing := ings[0]
		if len(ing.Spec.TLS) != 1 || ing.Spec.TLS[0].Hosts[0] != ing.Spec.Rules[0].Host {
			t.Errorf("Ingress TLS %v does not cover its host", ing.Spec.TLS)
		}
		var paths []string
		for _, p := range ing.Spec.Rules[0].HTTP.Paths {
			paths = append(paths, p.Path)
			if p.Backend.Service.Name != fullname || p.Backend.Service.Port.Name != "http" {
				t.Errorf("path %s goes to %v", p.Path, p.Backend.Service)
			}
		}
		if !slices.Equal(paths, []string{"/webhook", "/observations"}) {
			t.Errorf("Ingress routes %v", paths)
		}
	}
	var monitors int
	for _, o := range objs {
		if o.kind == "ServiceMonitor" {
			monitors++
			ep := get(o.fields, "spec", "endpoints").([]any)[0].(map[string]any)
			if ep["port"] != "http" || ep["path"] != "/metrics" {
				t.Errorf("ServiceMonitor endpoint %v", ep)
			}
		}
	}
	if on, _ := get(vals, "serviceMonitor", "enabled").(bool); on != (monitors == 1) {
		t.Errorf("serviceMonitor.enabled %v, %d ServiceMonitor", on, monitors)
	}
	nps := find[*networkingv1.NetworkPolicy](objs, "NetworkPolicy")
	admission, _ := get(vals, "admission", "enabled").(bool)
	// With the webhook on, its port is closed to all but the control
	// plane whatever networkPolicy.enabled says.
	if on, _ := get(vals, "networkPolicy", "enabled").(bool); (on || admission) != (len(nps) == 1) {
		t.Errorf("networkPolicy.enabled %v, admission %v, %d NetworkPolicy", on, admission, len(nps))
	} else if on || admission {
		for _, r := range nps[0].Spec.Ingress {
			if r.Ports[0].Port.IntVal == 8443 && len(r.From) == 0 {
				t.Error("the admission port is open to every pod")
			}
		}
		if n := len(nps[0].Spec.Ingress); (admission && n != 2) || (!admission && n != 1) {
			t.Errorf("%d ingress rules with admission %v", n, admission)
		}
	}
}

// TestChartRefuses holds the schema and the templates to refusing bad
// values with a message that names the key.
func TestChartRefuses(t *testing.T) {
	ch := loadChart(t)
	for _, tc := range []struct{ name, values, want string }{
		{"unknown key", "replica: 2", "replica"},
		{"unknown nested key", "server: {listen: ':9090'}", "listen"},
		{"wrong type", "replicas: two", "replicas"},
		{"bad trust", "server: {observations: {enabled: true, trust: root}}", "trust"},
		{"bad duration", "server: {jitter: soon}", "jitter"},
		{"an allowed host that is a URL", "charts: {allowedHosts: ['https://charts.example.com/x']}", "allowedHosts"},
		{"bad repository", "repositories: [gitops]", "repositories"},
		{"no app id", "github: {appId: null}", "github.appId is required"},
		{"no private key", "credentials: {privateKey: ''}", "credentials.privateKey is required"},
		{"admission without the watch", "admission: {enabled: true}\nnetworkPolicy: {admissionFrom: [{ipBlock: {cidr: 10.0.0.0/8}}]}", "needs kube.enabled"},
		{"kube without objects", "kube: {enabled: true, cluster: c}", "kube.objects is required"},
		{"provided certificate without its CA", kubeObjects + "admission: {enabled: true, certificate: {certManager: false, existingSecret: tls}}\nnetworkPolicy: {admissionFrom: [{ipBlock: {cidr: 10.0.0.0/8}}]}", "caBundle is required"},
		{"admission port open", kubeObjects + "admission: {enabled: true}\nnetworkPolicy: {enabled: true}", "admissionFrom"},
		// why: with the webhook on and the policy off, nothing kept other
		// pods from posting forged reviews; the schema now refuses it.
		{"admission without source ranges", kubeObjects + "admission: {enabled: true}", "admissionFrom"},
		{"admission with empty source ranges", kubeObjects + "admission: {enabled: true}\nnetworkPolicy: {admissionFrom: []}", "admissionFrom"},
		{"held bytes negative", kubeObjects + "admission: {enabled: true, maxHeldBytes: -1}\nnetworkPolicy: {admissionFrom: [{ipBlock: {cidr: 10.0.0.0/8}}]}", "maxHeldBytes"},
		{"bytes in flight not a number", kubeObjects + "admission: {enabled: true, maxInFlightBytes: 8Mi}\nnetworkPolicy: {admissionFrom: [{ipBlock: {cidr: 10.0.0.0/8}}]}", "maxInFlightBytes"},
		// why: a peer that admits everyone leaves the admission port as
		// open as no policy: every namespace, every address, v4 or v6.
		{"admission from every namespace", kubeObjects + "admission: {enabled: true}\nnetworkPolicy: {admissionFrom: [{namespaceSelector: {}}]}", "admissionFrom"},
		{"admission from an empty selector's labels", kubeObjects + "admission: {enabled: true}\nnetworkPolicy: {admissionFrom: [{namespaceSelector: {matchLabels: {}}}]}", "admissionFrom"},
		{"admission from every IPv4 address", kubeObjects + "admission: {enabled: true}\nnetworkPolicy: {admissionFrom: [{ipBlock: {cidr: 0.0.0.0/0}}]}", "admissionFrom"},
		{"admission from every IPv6 address", kubeObjects + "admission: {enabled: true}\nnetworkPolicy: {admissionFrom: [{ipBlock: {cidr: '::/0'}}]}", "admissionFrom"},
		{"admission from an empty peer", kubeObjects + "admission: {enabled: true}\nnetworkPolicy: {admissionFrom: [{}]}", "admissionFrom"},
		{"admission from a wide peer beside a narrow one", kubeObjects + "admission: {enabled: true}\nnetworkPolicy: {admissionFrom: [{ipBlock: {cidr: 10.0.0.0/8}}, {ipBlock: {cidr: 0.0.0.0/0}}]}", "admissionFrom"},
		{"client CA not PEM", kubeObjects + "admission: {enabled: true, clientCA: abc}\nnetworkPolicy: {admissionFrom: [{ipBlock: {cidr: 10.0.0.0/8}}]}", "clientCA"},
		{"ingress without a host", "ingress: {enabled: true}", "ingress.host is required"},
		{"push token missing", "server: {observations: {enabled: true}}", "credentials.observationToken is required"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := render(ch, values(t, base, tc.values))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one naming %q", err, tc.want)
			}
		})
	}
}

// TestKustomizeManifests keeps the kustomize manifests, the install
// without Helm, as strictly valid as the chart: every object of
// deploy/kubernetes and deploy/admission (patches included) decodes into
// the API types with no unknown field, and the base's pod meets restricted
// Pod Security.
func TestKustomizeManifests(t *testing.T) {
	eval, err := policy.NewEvaluator(policy.DefaultChecks(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{"../kubernetes", "../admission", "../hold"} {
		kdata, err := os.ReadFile(filepath.Join(dir, "kustomization.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		var kust struct {
			Resources []string            `json:"resources"`
			Patches   []map[string]string `json:"patches"`
		}
		if err := yaml.Unmarshal(kdata, &kust); err != nil {
			t.Fatalf("%s: %v", dir, err)
		}
		files := kust.Resources
		for _, p := range kust.Patches {
			files = append(files, p["path"])
		}
		for _, f := range files {
			if strings.HasPrefix(f, "../") {
				continue
			}
			data, err := os.ReadFile(filepath.Join(dir, f))
			if err != nil {
				t.Fatal(err)
			}
			objs := decodeAll(t, map[string]string{filepath.Join(dir, f): string(data)})
			if len(objs) == 0 {
				t.Errorf("%s/%s: no object", dir, f)
			}
			for _, d := range find[*appsv1.Deployment](objs, "Deployment") {
				if len(d.Spec.Template.Spec.Containers) == 0 || d.Spec.Template.Spec.Containers[0].Image == "" {
					continue // a patch
				}
				pod := d.Spec.Template
				for _, r := range eval.EvaluatePod(psaapi.LevelVersion{Level: psaapi.LevelRestricted, Version: psaapi.LatestVersion()}, &pod.ObjectMeta, &pod.Spec) {
					if !r.Allowed {
						t.Errorf("%s/%s: restricted Pod Security: %s: %s", dir, f, r.ForbiddenReason, r.ForbiddenDetail)
					}
				}
			}
		}
	}
}
