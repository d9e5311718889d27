package hold

import (
	"reflect"
	"strings"
	"testing"

	"github.com/backflow-dev/backflow/internal/observe"
	"github.com/backflow-dev/backflow/internal/policy"
	"github.com/backflow-dev/backflow/internal/repoconfig"
	"github.com/backflow-dev/backflow/internal/yamlnode"
)

func TestArgoCDFieldPaths(t *testing.T) {
	for _, tc := range []struct {
		why, field, pointer, jq string
	}{
		{"a plain field is a pointer", "spec.replicas", "/spec/replicas", ""},
		{"an index is a pointer's decimal token, the same item backflow means",
			"spec.template.spec.containers[0].image", "/spec/template/spec/containers/0/image", ""},
		{"a / in a key is ~1 (RFC 6901), an escaped dot is a dot",
			`metadata.annotations.app\.kubernetes\.io/name`, "/metadata/annotations/app.kubernetes.io~1name", ""},
		{"a ~ in a key is ~0, before / is replaced", `metadata.labels.a~/b`, "/metadata/labels/a~0~1b", ""},
		{"a list item named by its merge key is no pointer: jq selects it by content",
			"spec.containers[name=web].image", "", `.spec.containers[] | select((.name | tostring) == "web") | .image`},
		{"a merge value that is a number in the object is compared as text",
			"spec.ports[port=80].targetPort", "", `.spec.ports[] | select((.port | tostring) == "80") | .targetPort`},
		{"a key that is no jq identifier is bracketed, the value quoted as JSON",
			`spec.x-y[na-me=a"b][0]`, "", `.spec["x-y"][] | select((.["na-me"] | tostring) == "a\"b") | .[0]`},
		{"a selector at the end selects the item itself",
			"spec.containers[name=sidecar]", "", `.spec.containers[] | select((.name | tostring) == "sidecar")`},
	} {
		segs, err := yamlnode.ParseSelectorPath(tc.field)
		if err != nil {
			t.Fatalf("%s: %v", tc.why, err)
		}
		ptr, ok := jsonPointer(segs)
		if ok != (tc.pointer != "") || ptr != tc.pointer {
			t.Errorf("%s: pointer %q %t, want %q", tc.why, ptr, ok, tc.pointer)
		}
		if tc.jq != "" {
			if got := jqPath(segs); got != tc.jq {
				t.Errorf("%s: jq %s, want %s", tc.why, got, tc.jq)
			}
		}
	}
}

func TestArgoCDTargets(t *testing.T) {
	for _, tc := range []struct {
		why, policy, unit string
		want              target
	}{
		{"literals on both sides are Argo CD's exact fields",
			"apps/v1|StatefulSet|redis|redis-replicas", "apps/v1|StatefulSet|redis|redis-replicas",
			target{group: "apps", kind: "StatefulSet", namespace: "redis", name: "redis-replicas"}},
		{"the policy's literal name is the intersection with the unit's glob",
			"apps/v1|StatefulSet|redis|redis-replicas", "apps/v1|StatefulSet|redis|redis-*",
			target{group: "apps", kind: "StatefulSet", namespace: "redis", name: "redis-replicas"}},
		{"the core group is the empty group", "v1|Service|*|web", "v1|Service|shop|web",
			target{group: "", kind: "Service", namespace: "shop", name: "web"}},
		{"* on both sides is Argo CD's any: no name, no condition", "v1|ConfigMap|shop|*", "v1|ConfigMap|shop|*",
			target{group: "", kind: "ConfigMap", namespace: "shop"}},
		{"a name glob cannot be Argo CD's exact name: a jq condition, regexp metacharacters quoted",
			"apps/v1|Deployment|shop|web.api-*", "apps/v1|Deployment|shop|*",
			target{group: "apps", kind: "Deployment", namespace: "shop",
				conds: []string{`.metadata.name | test("^web\\.api-.*$")`}}},
		{"two different globs are both conditions", "apps/v1|Deployment|team-*|*-web", "apps/v1|Deployment|*-prod|*",
			target{group: "apps", kind: "Deployment", conds: []string{
				`(.metadata.namespace // "") | test("^team-.*$")`,
				`(.metadata.namespace // "") | test("^.*-prod$")`,
				`.metadata.name | test("^.*-web$")`}}},
		{"a version glob with a literal on the other side is that literal's group", "policy/*|PodDisruptionBudget|a|b",
			"policy/v1|PodDisruptionBudget|a|b", target{group: "policy", kind: "PodDisruptionBudget", namespace: "a", name: "b"}},
		{"globs on apiVersion and kind on both sides are any group and kind, with conditions",
			"apps/*|Deploy*|a|b", "*|*|a|b", target{group: "*", kind: "*", namespace: "a", name: "b", conds: []string{
				`.apiVersion | test("^apps/.*$")`, `.kind | test("^Deploy.*$")`}}},
	} {
		pk, err := observe.ParseObjectPattern(tc.policy)
		if err != nil {
			t.Fatal(err)
		}
		uk, err := observe.ParseObjectPattern(tc.unit)
		if err != nil {
			t.Fatal(err)
		}
		if got := argoTarget(pk, uk); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s:\n got %+v\nwant %+v", tc.why, got, tc.want)
		}
	}
}

const argoConfig = `version: 1
policy: p.yaml
environments:
  prod: {clusters: [prod-1]}
  dev: {clusters: [dev-1]}
units:
  - name: web
    environment: prod
    manifests: [web]
    objects: ["apps/v1|Deployment|shop|web-*", "v1|Service|shop|web"]
  - name: web
    environment: dev
    manifests: [web-dev]
    objects: ["apps/v1|Deployment|shop|web-*"]
  - name: api
    environment: prod
    valuesFiles: [api/values.yaml, api/app.yaml]
    valuesRoot: {document: Application/api-prod, path: spec.source.helm.valuesObject}
    objects: ["apps/v1|Deployment|api|api"]
  - name: cache
    environment: prod
    manifests: [cache]
    objects: ["apps/v1|StatefulSet|cache|cache"]
    hold: {controller: flux-helm, applier: flux-system/cache}
  - name: db
    environment: prod
    manifests: [db]
    objects: ["apps/v1|StatefulSet|db|db"]
roles:
  sre: {groups: [sre]}
`

const argoPolicy = `apiVersion: backflow.dev/v1alpha1
kind: ReverseReconcilePolicy
metadata: {name: p}
spec:
  default: deny
  rules:
    - role: sre
      mayAccept:
        - {field: spec.replicas, objects: ["apps/v1|Deployment|shop|web-main"], environments: [prod]}
        - {field: spec.replicas, objects: ["apps/v1|Deployment|*|web-main"], environments: ["*"]}
        - {field: "spec.ports[0].port", objects: ["v1|Service|shop|web"], environments: [prod], maximum: 9000}
        - {field: spec.replicas, objects: ["apps/v1|Deployment|api|api"], environments: [prod], acceptFor: 1h}
        - {field: spec.replicas, objects: ["apps/v1|StatefulSet|*|*"], environments: [prod]}
        - {field: spec.replicas, objects: ["apps/v1|Deployment|other|*"], environments: [prod]}
`

func TestArgoCD(t *testing.T) {
	cfg, err := repoconfig.Parse("backflow.yaml", []byte(argoConfig))
	if err != nil {
		t.Fatal(err)
	}
	p, err := policy.Parse("p.yaml", []byte(argoPolicy))
	if err != nil {
		t.Fatal(err)
	}
	patches, skips, err := ArgoCD(cfg, p, "")
	if err != nil {
		t.Fatal(err)
	}
	byUnit := map[string]ArgoCDPatch{}
	for _, pt := range patches {
		byUnit[pt.Unit+"/"+pt.Environment] = pt
	}
	web := byUnit["web/prod"]
	// why: two entries accepting the same field on the same object are one
	// item with one pointer; items are sorted by group, kind, namespace, name.
	wantWeb := []IgnoreDifference{
		{Group: "", Kind: "Service", Namespace: "shop", Name: "web", JSONPointers: []string{"/spec/ports/0/port"}},
		{Group: "apps", Kind: "Deployment", Namespace: "shop", Name: "web-main", JSONPointers: []string{"/spec/replicas"}},
	}
	if !reflect.DeepEqual(web.Ignore, wantWeb) {
		t.Errorf("web/prod items:\n got %+v\nwant %+v", web.Ignore, wantWeb)
	}
	if !web.NameGuessed || web.Application != "web" {
		t.Errorf("why: without an Application document the name is the unit's, and says so; got %q %t",
			web.Application, web.NameGuessed)
	}
	if len(web.Notes) != 1 || !strings.Contains(web.Notes[0], "spec.rules[0].mayAccept[2] bounds spec.ports[0].port (maximum)") {
		t.Errorf("why: an entry's bounds are said to be out of Argo CD's reach; notes %q", web.Notes)
	}
	// why: the environment glob "*" reaches dev; the prod-only entries do not.
	if dev := byUnit["web/dev"]; len(dev.Ignore) != 1 || dev.Ignore[0].Name != "web-main" {
		t.Errorf("web/dev items %+v", dev.Ignore)
	}
	api := byUnit["api/prod"]
	if api.NameGuessed || api.Application != "api-prod" {
		t.Errorf("why: the Application the unit's values are read from names the patch; got %q %t",
			api.Application, api.NameGuessed)
	}
	if len(api.Notes) != 1 || !strings.Contains(api.Notes[0], "for 1h only") {
		t.Errorf("why: a break-glass term outlives no item silently; notes %q", api.Notes)
	}
	// why: "*|*" on the db unit's literal object is that object.
	if db := byUnit["db/prod"]; len(db.Ignore) != 1 || db.Ignore[0].Name != "db" || db.Ignore[0].Namespace != "db" {
		t.Errorf("db/prod items %+v", db.Ignore)
	}
	if _, ok := byUnit["cache/prod"]; ok {
		t.Error("why: a unit held by Flux gets no Argo CD patch")
	}
	wantSkips := []ArgoCDSkip{{"cache", "prod", "it holds with flux-helm, whose per-object mark backflow places"}}
	if !reflect.DeepEqual(skips, wantSkips) {
		t.Errorf("skips %+v, want %+v", skips, wantSkips)
	}

	// why: --environment keeps only that environment's units.
	patches, _, err = ArgoCD(cfg, p, "dev")
	if err != nil || len(patches) != 1 || patches[0].Environment != "dev" {
		t.Errorf("dev only: %+v %v", patches, err)
	}

	// why: a unit whose objects no entry accepts is skipped, saying so.
	empty, err := policy.Parse("p.yaml", []byte(strings.Replace(argoPolicy, "[prod]", "[staging]", -1)))
	if err != nil {
		t.Fatal(err)
	}
	_, skips, err = ArgoCD(cfg, empty, "prod")
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range skips {
		if s.Unit == "api" && s.Reason != "no mayAccept entry accepts a field of its objects" {
			t.Errorf("api skipped for %q", s.Reason)
		}
	}

	// why: a field that is no path is refused naming its entry.
	bad, err := policy.Parse("p.yaml", []byte(strings.Replace(argoPolicy, "spec.ports[0].port", "spec.ports[0", 1)))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := ArgoCD(cfg, bad, ""); err == nil || !strings.Contains(err.Error(), "p.yaml: spec.rules[0].mayAccept[2].field") {
		t.Errorf("unparseable field: %v", err)
	}
}
