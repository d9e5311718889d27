package chart_test

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/backflow-dev/backflow/internal/botconfig"
)

const holdValues = kubeObjects + `
hold:
  enabled: true
  objects:
    - {apiVersion: apps/v1, kind: StatefulSet, namespace: redis, name: "redis-*"}
    - {apiVersion: apps/v1, kind: Deployment, namespace: shop, name: web}
  appliers:
    - {apiVersion: kustomize.toolkit.fluxcd.io/v1, kind: Kustomization, namespace: flux-system, name: apps}
`

// patchRules are the rules granting patch, by namespace ("" for a
// ClusterRole).
func patchRules(objs []object) map[string][]rbacv1.PolicyRule {
	out := map[string][]rbacv1.PolicyRule{}
	for _, cr := range find[*rbacv1.ClusterRole](objs, "ClusterRole") {
		for _, r := range cr.Rules {
			if slices.Contains(r.Verbs, "patch") {
				out[""] = append(out[""], r)
			}
		}
	}
	for _, role := range find[*rbacv1.Role](objs, "Role") {
		for _, r := range role.Rules {
			if slices.Contains(r.Verbs, "patch") {
				out[role.Namespace] = append(out[role.Namespace], r)
			}
		}
	}
	return out
}

func TestChartHold(t *testing.T) {
	ch := loadChart(t)
	// why: without the opt-in backflow stays read-only on the cluster.
	out, err := render(ch, values(t, base, kubeObjects))
	if err != nil {
		t.Fatal(err)
	}
	objs := decodeAll(t, out)
	if p := patchRules(objs); len(p) != 0 {
		t.Errorf("why: without hold nothing grants patch; got %v", p)
	}
	if bc, err := botconfig.ParseConfig("config.yaml", []byte(one[*corev1.ConfigMap](t, objs, "ConfigMap").Data["config.yaml"])); err != nil ||
		bc.Hold.Enabled {
		t.Errorf("why: without hold backflow's config places no hold; %v", err)
	}
	if n := len(find[*admissionv1.ValidatingAdmissionPolicy](objs, "ValidatingAdmissionPolicy")); n != 0 {
		t.Errorf("why: without hold there is no admission policy; got %d", n)
	}

	out, err = render(ch, values(t, base, holdValues))
	if err != nil {
		t.Fatal(err)
	}
	objs = decodeAll(t, out)
	p := patchRules(objs)
	want := map[string]string{"redis": "apps/statefulsets", "shop": "apps/deployments", "flux-system": "kustomize.toolkit.fluxcd.io/kustomizations"}
	if len(p) != len(want) {
		t.Errorf("why: patch only where units hold and on their appliers; got %v", p)
	}
	for ns, what := range want {
		rules := p[ns]
		if len(rules) != 1 || rules[0].APIGroups[0]+"/"+rules[0].Resources[0] != what {
			t.Errorf("why: %s: patch on exactly %s; got %+v", ns, what, rules)
			continue
		}
		r := rules[0]
		switch ns {
		case "flux-system":
			if !slices.Equal(r.Verbs, []string{"get", "patch"}) || !slices.Equal(r.ResourceNames, []string{"apps"}) {
				t.Errorf("why: the applier is read and asked to reconcile by name only; got %+v", r)
			}
		default:
			if !slices.Equal(r.Verbs, []string{"patch"}) {
				t.Errorf("why: a hold only patches; got %+v", r)
			}
		}
	}
	if bc, err := botconfig.ParseConfig("config.yaml", []byte(one[*corev1.ConfigMap](t, objs, "ConfigMap").Data["config.yaml"])); err != nil ||
		!bc.Hold.Enabled {
		t.Errorf("why: hold.enabled turns holds on in backflow's config, not only its grants; %v", err)
	}
	sa := one[*rbacv1.RoleBinding](t, filterName(objs, fullname+"-hold", "redis"), "RoleBinding").Subjects[0]
	if sa.Kind != "ServiceAccount" || sa.Namespace != namespace {
		t.Errorf("the hold's binding names %+v", sa)
	}
	vap := one[*admissionv1.ValidatingAdmissionPolicy](t, objs, "ValidatingAdmissionPolicy")
	user := "system:serviceaccount:" + namespace + ":" + sa.Name
	if len(vap.Spec.MatchConditions) != 1 || !strings.Contains(vap.Spec.MatchConditions[0].Expression, `"`+user+`"`) {
		t.Errorf("why: the policy applies to backflow's service account; got %+v", vap.Spec.MatchConditions)
	}
	if vap.Spec.FailurePolicy == nil || *vap.Spec.FailurePolicy != admissionv1.Fail {
		t.Errorf("why: the policy fails closed; got %v", vap.Spec.FailurePolicy)
	}
	var kinds []string
	for _, r := range vap.Spec.MatchConstraints.ResourceRules {
		kinds = append(kinds, r.APIGroups[0]+"/"+r.Resources[0])
		if !slices.Equal(r.Operations, []admissionv1.OperationType{admissionv1.Update}) {
			t.Errorf("rule operations %v", r.Operations)
		}
	}
	slices.Sort(kinds)
	if !slices.Equal(kinds, []string{"apps/deployments", "apps/statefulsets", "kustomize.toolkit.fluxcd.io/kustomizations"}) {
		t.Errorf("why: the policy covers every kind backflow may patch; got %v", kinds)
	}
	var messages []string
	for _, v := range vap.Spec.Validations {
		messages = append(messages, v.Message)
	}
	for _, w := range []string{"not spec, data or any other field", "not labels, finalizers, owners or other metadata",
		"only its hold annotations"} {
		if !slices.ContainsFunc(messages, func(m string) bool { return strings.Contains(m, w) }) {
			t.Errorf("why: the policy refuses a change %s; messages %q", w, messages)
		}
	}
	checkFrozenWhole(t, vap)
	b := one[*admissionv1.ValidatingAdmissionPolicyBinding](t, objs, "ValidatingAdmissionPolicyBinding")
	if b.Spec.PolicyName != vap.Name || !slices.Equal(b.Spec.ValidationActions, []admissionv1.ValidationAction{admissionv1.Deny}) {
		t.Errorf("binding %+v", b.Spec)
	}

	for _, tc := range []struct{ name, values, want string }{
		{"hold without objects", kubeObjects + "hold: {enabled: true}", "objects"},
		{"an applier that is no Flux object", kubeObjects + "hold: {enabled: true, objects: [{apiVersion: v1, kind: ConfigMap, namespace: a, name: b}], appliers: [{apiVersion: argoproj.io/v1alpha1, kind: Application, namespace: argocd, name: x}]}", "appliers"},
		{"a HelmRelease without the Kustomization applying it, whose hold could never be released as applied", kubeObjects + "hold: {enabled: true, objects: [{apiVersion: v1, kind: ConfigMap, namespace: a, name: b}], appliers: [{apiVersion: helm.toolkit.fluxcd.io/v2, kind: HelmRelease, namespace: a, name: web}]}", "appliedBy"},
		{"a Kustomization names no Kustomization applying it", kubeObjects + "hold: {enabled: true, objects: [{apiVersion: v1, kind: ConfigMap, namespace: a, name: b}], appliers: [{apiVersion: kustomize.toolkit.fluxcd.io/v1, kind: Kustomization, namespace: a, name: apps, appliedBy: {namespace: a, name: root}}]}", "appliers"},
		{"a reader without a name", kubeObjects + "hold: {enabled: true, objects: [{apiVersion: v1, kind: ConfigMap, namespace: a, name: b}], appliers: [{apiVersion: helm.toolkit.fluxcd.io/v2, kind: HelmRelease, namespace: a, name: web, appliedBy: {namespace: a}}]}", "name"},
	} {
		if _, err := render(ch, values(t, base, tc.values)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one naming %q", tc.name, err, tc.want)
		}
	}
}

// TestChartHoldHelmRelease: a HelmRelease applier is read and patched by
// name, and the Kustomization applying it and its HelmChart are only
// read, by name, where they live: what says a merge is applied, and no
// more.
func TestChartHoldHelmRelease(t *testing.T) {
	ch := loadChart(t)
	out, err := render(ch, values(t, base, kubeObjects+`
hold:
  enabled: true
  objects:
    - {apiVersion: apps/v1, kind: Deployment, namespace: shop, name: web}
  appliers:
    - apiVersion: helm.toolkit.fluxcd.io/v2
      kind: HelmRelease
      namespace: shop
      name: web
      appliedBy: {namespace: flux-system, name: apps}
      chart: {namespace: flux-system, name: shop-web}
`))
	if err != nil {
		t.Fatal(err)
	}
	objs := decodeAll(t, out)
	type grant struct{ ns, what, name, verbs string }
	var got []grant
	for _, role := range find[*rbacv1.Role](objs, "Role") {
		for _, r := range role.Rules {
			if strings.Contains(r.APIGroups[0], "fluxcd.io") {
				got = append(got, grant{role.Namespace, r.APIGroups[0] + "/" + r.Resources[0], strings.Join(r.ResourceNames, ","),
					strings.Join(r.Verbs, ",")})
			}
		}
	}
	slices.SortFunc(got, func(a, b grant) int { return strings.Compare(a.what, b.what) })
	want := []grant{
		{"shop", "helm.toolkit.fluxcd.io/helmreleases", "web", "get,patch"},          // read, asked to reconcile
		{"flux-system", "kustomize.toolkit.fluxcd.io/kustomizations", "apps", "get"}, // which commit it applied
		{"flux-system", "source.toolkit.fluxcd.io/helmcharts", "shop-web", "get"},    // the chart built from it
	}
	slices.SortFunc(want, func(a, b grant) int { return strings.Compare(a.what, b.what) })
	if !slices.Equal(got, want) {
		t.Errorf("why: the HelmRelease read and patched, what applied it only read, each by name;\ngot  %v\nwant %v", got, want)
	}
	for _, rb := range find[*rbacv1.RoleBinding](objs, "RoleBinding") {
		if strings.Contains(rb.Name, "-applier-0-") && (rb.RoleRef.Name != rb.Name || rb.Subjects[0].Kind != "ServiceAccount") {
			t.Errorf("binding %s: %+v %+v", rb.Name, rb.RoleRef, rb.Subjects)
		}
	}
	vap := one[*admissionv1.ValidatingAdmissionPolicy](t, objs, "ValidatingAdmissionPolicy")
	for _, r := range vap.Spec.MatchConstraints.ResourceRules {
		if r.Resources[0] == "kustomizations" || r.Resources[0] == "helmcharts" {
			t.Errorf("why: what is only read needs no admission policy; got %v", r.Resources)
		}
	}
}

func filterName(objs []object, name, ns string) []object {
	var out []object
	for _, o := range objs {
		if o.name == name && o.ns == ns {
			out = append(out, o)
		}
	}
	return out
}

// checkFrozenWhole holds the hold's admission policy to comparing objects
// whole: every top-level field but metadata, every metadata field but the
// annotations and those the API server sets on each update, so a kind's
// own fields (a ConfigMap's data, binaryData, immutable) need no listing;
// no validation names a field of one kind.
func checkFrozenWhole(t *testing.T, vap *admissionv1.ValidatingAdmissionPolicy) {
	t.Helper()
	var exprs []string
	for _, v := range vap.Spec.Validations {
		exprs = append(exprs, v.Expression)
	}
	for _, w := range []string{
		"object.all(k, k == 'metadata' || k in oldObject && object[k] == oldObject[k])",
		"oldObject.all(k, k == 'metadata' || k in object)",
		"object.metadata.all(k, k in variables.unfrozen || k in oldObject.metadata && object.metadata[k] == oldObject.metadata[k])",
		"oldObject.metadata.all(k, k in variables.unfrozen || k in object.metadata)",
	} {
		if !slices.ContainsFunc(exprs, func(e string) bool { return strings.Contains(e, w) }) {
			t.Errorf("why: the policy compares the objects whole (%s); expressions %q", w, exprs)
		}
	}
	for _, e := range exprs {
		for _, field := range []string{"object.spec", "object.data", "object.metadata.labels", "object.metadata.finalizers"} {
			if strings.Contains(e, field) {
				t.Errorf("why: a listed field leaves the others of another kind free; %q names %s", e, field)
			}
		}
	}
	unfrozen := ""
	for _, v := range vap.Spec.Variables {
		if v.Name == "unfrozen" {
			unfrozen = v.Expression
		}
	}
	if unfrozen != "['annotations', 'generation', 'managedFields', 'resourceVersion']" {
		t.Errorf("why: only the annotations (checked key by key) and what the API server sets on an update "+
			"are not compared whole; unfrozen is %q", unfrozen)
	}
}

func TestChartHoldConfigMap(t *testing.T) {
	ch := loadChart(t)
	// why: hold.objects takes any kind; a ConfigMap's policy covers
	// configmaps and freezes data like any field.
	out, err := render(ch, values(t, base, kubeObjects+`
hold:
  enabled: true
  objects:
    - {apiVersion: v1, kind: ConfigMap, namespace: shop, name: web-config}
`))
	if err != nil {
		t.Fatal(err)
	}
	objs := decodeAll(t, out)
	vap := one[*admissionv1.ValidatingAdmissionPolicy](t, objs, "ValidatingAdmissionPolicy")
	rules := vap.Spec.MatchConstraints.ResourceRules
	if len(rules) != 1 || rules[0].APIGroups[0] != "" || rules[0].Resources[0] != "configmaps" {
		t.Errorf("why: the policy covers the configmaps backflow may patch; got %+v", rules)
	}
	checkFrozenWhole(t, vap)
}

// TestKustomizeHold holds deploy/hold, the plain manifests with holds on,
// to what the chart renders with hold.enabled for the same objects: the
// same admission policy, patch only where the chart grants it, and holds
// on in the config.
func TestKustomizeHold(t *testing.T) {
	res, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), "../hold")
	if err != nil {
		t.Fatalf("kustomize build deploy/hold: %v", err)
	}
	built, err := res.AsYaml()
	if err != nil {
		t.Fatal(err)
	}
	objs := decodeAll(t, map[string]string{"hold.yaml": string(built)})

	// why: the watch's config is deploy/admission's, with holds on.
	cm := one[*corev1.ConfigMap](t, objs, "ConfigMap")
	bc, err := botconfig.ParseConfig("deploy/hold config.yaml", []byte(cm.Data["config.yaml"]))
	if err != nil {
		t.Fatalf("deploy/hold: not a valid bot config: %v", err)
	}
	if !bc.Hold.Enabled || len(bc.Observations) == 0 {
		t.Errorf("why: deploy/hold turns holds on beside the watch; hold %+v, observations %v", bc.Hold, bc.Observations)
	}

	// why: patch only on the held kind in its namespace, get and patch on
	// the applier by name, as the chart grants them.
	p := patchRules(objs)
	want := map[string]string{"redis": "apps/statefulsets", "flux-system": "kustomize.toolkit.fluxcd.io/kustomizations"}
	if len(p) != len(want) {
		t.Errorf("deploy/hold grants patch in %v, want %v", p, want)
	}
	for ns, what := range want {
		if rules := p[ns]; len(rules) != 1 || rules[0].APIGroups[0]+"/"+rules[0].Resources[0] != what {
			t.Errorf("deploy/hold: %s: patch on exactly %s; got %+v", ns, what, rules)
		}
	}
	for _, rb := range find[*rbacv1.RoleBinding](objs, "RoleBinding") {
		if s := rb.Subjects[0]; s.Kind != "ServiceAccount" || s.Name != "backflow" || s.Namespace != "backflow" {
			t.Errorf("deploy/hold: RoleBinding %s/%s binds %+v, want backflow's service account", rb.Namespace, rb.Name, s)
		}
	}

	// why: the same policy as the chart's, for backflow's service account.
	ch := loadChart(t)
	out, err := render(ch, values(t, base, kubeObjects+`
hold:
  enabled: true
  objects:
    - {apiVersion: apps/v1, kind: StatefulSet, namespace: redis, name: "redis-*"}
  appliers:
    - {apiVersion: kustomize.toolkit.fluxcd.io/v1, kind: Kustomization, namespace: flux-system, name: apps}
`))
	if err != nil {
		t.Fatal(err)
	}
	chartVAP := one[*admissionv1.ValidatingAdmissionPolicy](t, decodeAll(t, out), "ValidatingAdmissionPolicy").Spec
	plain := one[*admissionv1.ValidatingAdmissionPolicy](t, objs, "ValidatingAdmissionPolicy")
	checkFrozenWhole(t, plain)
	got := plain.Spec
	if !reflect.DeepEqual(got.Variables, chartVAP.Variables) || !reflect.DeepEqual(got.Validations, chartVAP.Validations) ||
		!reflect.DeepEqual(got.FailurePolicy, chartVAP.FailurePolicy) {
		t.Errorf("deploy/hold's admission policy differs from the chart's:\n got %+v\nwant %+v", got, chartVAP)
	}
	rules := func(s admissionv1.ValidatingAdmissionPolicySpec) []string {
		var out []string
		for _, r := range s.MatchConstraints.ResourceRules {
			out = append(out, fmt.Sprint(r.APIGroups, r.APIVersions, r.Resources, r.Operations))
		}
		slices.Sort(out)
		return out
	}
	if !slices.Equal(rules(got), rules(chartVAP)) {
		t.Errorf("deploy/hold's policy covers %v, the chart's %v", rules(got), rules(chartVAP))
	}
	if len(got.MatchConditions) != 1 ||
		got.MatchConditions[0].Expression != `request.userInfo.username == "system:serviceaccount:backflow:backflow"` {
		t.Errorf("why: the policy binds backflow's service account of deploy/kubernetes; got %+v", got.MatchConditions)
	}
	b := one[*admissionv1.ValidatingAdmissionPolicyBinding](t, objs, "ValidatingAdmissionPolicyBinding")
	if b.Spec.PolicyName != plain.Name || !slices.Equal(b.Spec.ValidationActions, []admissionv1.ValidationAction{admissionv1.Deny}) {
		t.Errorf("deploy/hold binding %+v", b.Spec)
	}
}
