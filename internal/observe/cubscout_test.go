package observe

import (
	"strings"
	"testing"

	"github.com/backflow-dev/backflow/internal/yamlnode"
)

func TestCanonicalFieldPath(t *testing.T) {
	tests := []struct {
		why  string
		kind string
		raw  string
		want string
	}{
		{"a plain path is unchanged", "Deployment", "spec.template.spec.containers[0].image", "spec.template.spec.containers[0].image"},
		{"a label key's dots are one key", "StatefulSet", "metadata.labels.app.kubernetes.io/version", `metadata.labels.app\.kubernetes\.io/version`},
		{"an annotation key too", "Deployment", "metadata.annotations.prometheus.io/scrape", `metadata.annotations.prometheus\.io/scrape`},
		{"a pod template's labels", "Deployment", "spec.template.metadata.labels.app.kubernetes.io/name", `spec.template.metadata.labels.app\.kubernetes\.io/name`},
		{"matchLabels at any depth", "Deployment", "spec.selector.matchLabels.app.kubernetes.io/name", `spec.selector.matchLabels.app\.kubernetes\.io/name`},
		{"nodeSelector", "Deployment", "spec.template.spec.nodeSelector.kubernetes.io/os", `spec.template.spec.nodeSelector.kubernetes\.io/os`},
		{"an extended resource name", "Deployment", "spec.template.spec.containers[1].resources.limits.nvidia.com/gpu", `spec.template.spec.containers[1].resources.limits.nvidia\.com/gpu`},
		{"a Service's selector is a map of strings", "Service", "spec.selector.app.kubernetes.io/name", `spec.selector.app\.kubernetes\.io/name`},
		{"a Deployment's selector is not", "Deployment", "spec.selector.matchLabels.app", "spec.selector.matchLabels.app"},
		{"a ConfigMap's data key", "ConfigMap", "data.application.properties", `data.application\.properties`},
		{"another kind's data is a path", "MyResource", "data.a.b", "data.a.b"},
		{"the map itself", "StatefulSet", "metadata.labels", "metadata.labels"},
		{"the whole object", "ConfigMap", "$", "$"},
	}
	for _, tt := range tests {
		got, err := canonicalFieldPath(tt.kind, tt.raw)
		if err != nil || got != tt.want {
			t.Errorf("%s: %q -> %q, %v; want %q", tt.why, tt.raw, got, err, tt.want)
			continue
		}
		if got == "$" {
			continue
		}
		// why: the canonical spelling is the one ParsePath reads back.
		if _, err := yamlnode.ParsePath(got); err != nil {
			t.Errorf("%s: %q does not parse: %v", tt.why, got, err)
		}
	}
	for _, bad := range []string{"", "a..b", "a.", "a[x]", "a[1", " a"} {
		if _, err := canonicalFieldPath("ConfigMap", bad); err == nil {
			t.Errorf("%q: want an error", bad)
		}
	}
}

func TestCubStructure(t *testing.T) {
	tests := []struct {
		why                 string
		path, desired, live string
		structural          bool
	}{
		{"a list whose length differs names the list and its lengths", "spec.template.spec.containers[0].env", "1", "2", true},
		{"a map printed with %v", "spec.template.spec.securityContext", "map[runAsUser:1000]", "-", true},
		{"a list printed with %v", "spec.template.spec.containers[0].args", "[--a --b]", "[--a]", true},
		{"a type mismatch at the root", "$", "map[a:1]", "x", true},
		{"replicas are a count of a scalar field, a value", "spec.replicas", "3", "4", false},
		{"a value that is a word", "spec.template.spec.containers[0].image", "redis:7.2", "redis:7.4", false},
	}
	for _, tt := range tests {
		if got := cubStructure(tt.path, tt.desired, tt.live, notInScalarMap) != ""; got != tt.structural {
			t.Errorf("%s: structural %v, want %v", tt.why, got, tt.structural)
		}
	}
}

func TestWatchEventShapes(t *testing.T) {
	const head = `{"type":"TYPE","timestamp":"2026-06-18T12:00:30.771029411Z","observation":{"source":"kubernetes-api","mode":"watch-poll","observedAt":"2026-06-18T12:00:30.771029411Z","freshness":"point-in-time","scope":{"cluster":"CLUSTER","namespace":"redis","kind":"StatefulSet"}},"resource":{"kind":"StatefulSet","name":"r","namespace":"redis"},"owner":{"type":"OWNER"},"details":DETAILS}`
	ev := func(typ, cluster, owner, details string) string {
		return strings.NewReplacer("TYPE", typ, "CLUSTER", cluster, "OWNER", owner, "DETAILS", details).Replace(head)
	}
	t.Run("cub-scout's default cluster says nothing", func(t *testing.T) {
		res := ParseBytes([]byte(ev("drift.detected", "default", "Flux", `{"category":"DRIFT","message":"m"}`)), Options{Name: "S"})
		if len(res.Triggers) != 1 || res.Triggers[0].Cluster != "" || res.Triggers[0].Owner != "Flux" {
			t.Errorf("got %+v", res)
		}
	})
	t.Run("ownership away from GitOps is a notice, between controllers it is not", func(t *testing.T) {
		res := ParseBytes([]byte(ev("ownership.changed", "c1", "Native", `{"before":"Flux","after":"Native"}`)+"\n"+
			ev("ownership.changed", "c1", "ArgoCD", `{"before":"Flux","after":"ArgoCD"}`)), Options{Name: "S"})
		if len(res.Notices) != 1 || res.Ignored != 1 || !strings.Contains(res.Notices[0].Message, "from Flux to Native") {
			t.Errorf("got %+v", res)
		}
	})
	t.Run("resource.deleted forgets the object on its cluster", func(t *testing.T) {
		res := ParseBytes([]byte(ev("resource.deleted", "c1", "Flux", `{"lastOwner":"Flux","lastStatus":"Running"}`)), Options{Name: "S"})
		if len(res.Forgets) != 1 || res.Forgets[0].Cluster != "c1" || res.Forgets[0].Object.Name != "r" {
			t.Errorf("got %+v", res)
		}
	})
}

const objectSetDiffReceipt = `{
  "_type": "https://in-toto.io/Statement/v1",
  "subject": [
    {"name": "rendered-object-set://sha256/4b1f0c2e9a7d6c5b", "digest": {"sha256": "4b1f0c2e9a7d6c5b4a39281706f5e4d3c2b1a09f8e7d6c5b4a3928170f6e5d4c"}},
    {"name": "k8s-live-object-set://namespace/redis", "digest": {"sha256": "9f8e7d6c5b4a3928170f6e5d4c4b1f0c2e9a7d6c5b4a39281706f5e4d3c2b1a0"}}
  ],
  "predicateType": "https://cub-scout.dev/receipt/v1",
  "predicate": {
    "version": "v1",
    "claim": "object-set diff between rendered manifests from out/redis and live",
    "scope": {"kind": "ObjectSet", "name": "rendered-install", "namespace": "redis", "cluster": "prod-us-east-1"},
    "verifier": {"tool": "cub-scout", "version": "v2.4.0"},
    "verifiedAt": "2026-06-18T12:00:02Z",
    "predicateName": "object-set-diff",
    "verdict": "BLOCK",
    "evidence": {
      "objectSetDiff": {
        "desiredSource": {"type": "directory", "ref": "out/redis", "objectCount": 9},
        "scope": {"kind": "namespace", "namespace": "redis"},
        "desiredDigest": "4b1f0c2e9a7d6c5b4a39281706f5e4d3c2b1a09f8e7d6c5b4a3928170f6e5d4c",
        "liveDigest": "9f8e7d6c5b4a3928170f6e5d4c4b1f0c2e9a7d6c5b4a39281706f5e4d3c2b1a0",
        "changedObjects": [
          {"id": {"apiVersion": "apps/v1", "kind": "StatefulSet", "namespace": "redis", "name": "redis-replicas"},
           "differences": [{"field": "spec.replicas", "desired": "3", "live": "4", "cause": "manual-edit", "managerHint": "kubectl-scale"}]}
        ],
        "summary": {"total": 9, "changed": 1, "added": 0, "removed": 0}
      }
    },
    "omissions": [],
    "inputAttestations": [],
    "fingerprint": "sha256:0a1b"
  }
}`

func TestCubScoutReceipts(t *testing.T) {
	res := ParseBytes([]byte(objectSetDiffReceipt), Options{Name: "S"})
	if len(res.Errors) != 0 || len(res.Observations) != 1 {
		t.Fatalf("got %+v", res)
	}
	o := res.Observations[0]
	// why: a changed object is an observation; its managerHint stays a hint.
	if o.Object.String() != "apps/v1|StatefulSet|redis|redis-replicas" || o.Cluster != "prod-us-east-1" ||
		o.Fields[0].ManagerHint != "kubectl-scale" || o.Fields[0].Manager != "" || o.Evidence.Receipt != "object-set-diff sha256:0a1b" {
		t.Errorf("got %+v", o)
	}
	// why: a receipt about one object carries no values: a trigger with its anchor and hints.
	one := `{"_type":"https://in-toto.io/Statement/v1","subject":[{"name":"k8s-live://apps/v1/Deployment/prod/api","digest":{"sha256":"ab"}}],"predicateType":"https://cub-scout.dev/receipt/v1","predicate":{"version":"v1","claim":"c","scope":{"kind":"Deployment","name":"api","namespace":"prod","cluster":"c1"},"verifier":{"tool":"cub-scout","version":"v2"},"verifiedAt":"2026-06-18T12:00:00Z","predicateName":"applied-matches-spec","spec":{"anchor":{"type":"git","repoUrl":"https://git.example/r","revision":"abc","path":"envs/prod/api"}},"verdict":"BLOCK","evidence":{"attribution":{"cause":"manual-edit","managerHint":"kubectl-edit","managers":["helm","kubectl-edit"]}},"omissions":[],"inputAttestations":[],"fingerprint":"f"}}`
	res = ParseBytes([]byte(one), Options{Name: "S"})
	if len(res.Errors) != 0 || len(res.Triggers) != 1 || res.Triggers[0].Object.String() != "apps/v1|Deployment|prod|api" ||
		!strings.Contains(res.Triggers[0].Message, "https://git.example/r@abc:envs/prod/api") {
		t.Errorf("got %+v", res)
	}
	// why: another predicate type is not cub-scout's receipt.
	res = ParseBytes([]byte(strings.Replace(objectSetDiffReceipt, "https://cub-scout.dev/receipt/v1", "https://slsa.dev/provenance/v1", 1)), Options{Name: "S"})
	if len(res.Errors) != 1 || !strings.Contains(res.Errors[0].Error(), "backflow reads only cub-scout receipts") {
		t.Errorf("got %+v", res)
	}
}

func TestCubScoutPathJoinsTheAudit(t *testing.T) {
	// why: unescaped, the audit join split cub-scout's label path into five
	// segments and matched no write of the label.
	p, err := canonicalFieldPath("StatefulSet", "metadata.labels.app.kubernetes.io/version")
	if err != nil {
		t.Fatal(err)
	}
	segs, err := fieldSegs(p)
	if err != nil || len(segs) != 3 || segs[2].Key != "app.kubernetes.io/version" {
		t.Errorf("%q reads as %+v, %v; want metadata, labels, app.kubernetes.io/version", p, segs, err)
	}
}
