package repoconfig

import (
	"strings"
	"testing"
	"time"
)

const holdBase = `version: 1
policy: .github/policy.yaml
environments:
  prod:
    clusters: [prod-1]
%s
units:
  - name: web
    environment: prod
    manifests: [envs/prod]
    objects: ["apps/v1|Deployment|web|web"]
%s
  - name: cache
    environment: prod
    manifests: [envs/prod-cache]
    objects: ["apps/v1|StatefulSet|web|cache"]
`

func TestHoldOptIn(t *testing.T) {
	env := "    hold: {controller: flux-kustomize, applier: flux-system/apps}"
	unit := "    hold: {controller: flux-helm, applier: web/web, maxDuration: 20m}"
	c, err := Parse(Path, []byte(strings.Replace(strings.Replace(holdBase, "%s", env, 1), "%s", unit, 1)))
	if err != nil {
		t.Fatal(err)
	}
	web, cache := &c.Units[0], &c.Units[1]
	if h := c.HoldOf(web); h == nil || h.Controller != HoldFluxHelm || h.Max() != 20*time.Minute || h.Applier != "web/web" {
		t.Errorf("why: a unit's own hold replaces its environment's; got %+v", h)
	}
	h := c.HoldOf(cache)
	if h == nil || h.Controller != HoldFluxKustomize || h.Max() != DefaultMaxHold {
		t.Fatalf("why: a unit without its own hold takes the environment's; got %+v", h)
	}
	if ns, name := h.ApplierRef(); ns != "flux-system" || name != "apps" {
		t.Errorf("applier %s/%s", ns, name)
	}
	c, err = Parse(Path, []byte(strings.Replace(strings.Replace(holdBase, "%s", "", 1), "%s", "", 1)))
	if err != nil {
		t.Fatal(err)
	}
	if c.HoldOf(&c.Units[0]) != nil {
		t.Error("why: without the opt-in nothing is held")
	}
}

func TestHoldRefused(t *testing.T) {
	for _, tc := range []struct{ why, env, unit, want string }{
		{"a controller is required", "", "    hold: {applier: a/b}", "units[0].hold.controller: required"},
		{"only Flux's controllers have a per-object mark", "", "    hold: {controller: argocd, applier: a/b}", `units[0].hold.controller: "argocd"`},
		{"the applier is namespace/name", "    hold: {controller: flux-kustomize, applier: apps}", "", `environments.prod.hold.applier: "apps"`},
		{"a negative maximum", "", "    hold: {controller: flux-helm, applier: a/b, maxDuration: -1m}", "units[0].hold.maxDuration: must not be negative"},
		{"unknown keys are errors", "", "    hold: {controller: flux-helm, applier: a/b, forever: true}", "forever"},
	} {
		_, err := Parse(Path, []byte(strings.Replace(strings.Replace(holdBase, "%s", tc.env, 1), "%s", tc.unit, 1)))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("why: %s: error %v, want %q", tc.why, err, tc.want)
		}
	}
}
