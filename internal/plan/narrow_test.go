package plan

import (
	"testing"

	"github.com/backflow-dev/backflow/internal/observe"
	"github.com/backflow-dev/backflow/internal/policy"
	"github.com/backflow-dev/backflow/internal/repoconfig"
)

// narrowPolicy maps spec.replicas to another values path for dana's role
// than for anyone else: the fields that differ from desired depend on
// whose change it is.
const narrowPolicy = `apiVersion: backflow.dev/v1alpha1
kind: ReverseReconcilePolicy
metadata:
  name: web
spec:
  default: deny
  rules:
    - role: sre
      mayAccept:
        - valuePath: replicas
          field: spec.replicas
          objects: ["apps/v1|StatefulSet|redis|web"]
          environments: [dev]
        - valuePath: a.first
          field: metadata.labels.a
          objects: ["apps/v1|StatefulSet|redis|web"]
          environments: [dev]
        - valuePath: b.first
          field: metadata.labels.b
          objects: ["apps/v1|StatefulSet|redis|web"]
          environments: [dev]
    - role: image-owners
      mayAccept:
        - valuePath: a.second
          field: metadata.labels.a
          objects: ["apps/v1|StatefulSet|redis|web"]
          environments: [dev]
        - valuePath: b.second
          field: metadata.labels.b
          objects: ["apps/v1|StatefulSet|redis|web"]
          environments: [dev]
        - valuePath: legacy.replicas
          field: spec.replicas
          objects: ["apps/v1|StatefulSet|redis|web"]
          environments: [dev]
        - valuePath: image.tag
          field: spec.template.metadata.labels.version
          objects: ["apps/v1|StatefulSet|redis|web"]
          environments: [dev]
`

const narrowConfig = `version: 1
policy: .github/policy.yaml
environments:
  dev:
    clusters: [dev-1]
units:
  - name: web
    environment: dev
    valuesFiles: [values.yaml]
    objects: ["apps/v1|StatefulSet|redis|web"]
roles:
  sre:
    users: [alice]
    attribution: [audit-log]
  image-owners:
    users: [dana]
    attribution: [audit-log]
`

const narrowValues = `replicas: 4
legacy:
  replicas: 2
image:
  tag: "1.4"
a:
  first: x
  second: live-a
b:
  first: live-b
  second: "y"
`

func TestNarrowedChangeIsTheChangeOfItsOwnFields(t *testing.T) {
	cfg, err := repoconfig.Parse(repoconfig.Path, []byte(narrowConfig))
	if err != nil {
		t.Fatal(err)
	}
	pol, err := policy.Parse(".github/policy.yaml", []byte(narrowPolicy))
	if err != nil {
		t.Fatal(err)
	}
	snap := Snapshot{Config: cfg, Policy: pol, PolicyPath: ".github/policy.yaml",
		Files: map[string][]byte{"values.yaml": []byte(narrowValues)}}
	by := func(actor string) *observe.Change {
		return &observe.Change{Actor: actor, Attribution: observe.AttributionAuditLog, Claimed: observe.AttributionAuditLog, At: t0}
	}
	observation := func(replicasBy string) observe.Observation {
		// The watch compared replicas with nothing: the values file says
		// whether it differs.
		replicas, version := observe.Field{Path: "spec.replicas", Live: int64(4)}, field("spec.template.metadata.labels.version", "1.5", "1.4")
		replicas.By, version.By = by(replicasBy), by("dana")
		return observe.Observation{Source: observe.SourceKubernetes, Cluster: "dev-1", ObservedAt: t0, Object: key("web"),
			Fields: []observe.Field{replicas, version}}
	}

	// Found with nobody's roles, replicas maps to replicas: 4, at
	// desired, and only dana's label differs; with dana's roles it maps to
	// legacy.replicas: 2, and alice's replicas differs too. No change is
	// the change of the fields its own roles find: the whole object's
	// change (unknown) is kept, and denied.
	d := only(t, Plan([]observe.Observation{observation("alice")}, nil, snap, testNow))
	if d.Outcome != Deny || d.Actor != "" || !hasReason(d, "actor-unknown:") {
		t.Errorf("alice's replicas beside dana's label: %s by %q, %v", d.Outcome, d.Actor, d.Reasons)
	}

	// When dana set both, her roles find both fields, and the change of
	// both is hers: replicas is decided at her entry's path.
	d = only(t, Plan([]observe.Observation{observation("dana")}, nil, snap, testNow))
	if d.Outcome != Allow || d.Actor != "dana" || len(d.Changes) != 2 || d.Changes[0].ValuePath != "legacy.replicas" {
		t.Errorf("dana's replicas and label: %s by %q, %+v, %v", d.Outcome, d.Actor, d.Changes, d.Reasons)
	}

	// Nobody's roles find only dana's label a; dana's roles find only
	// erin's label b, whose change is erin's, with other roles again: no
	// change is the change of the fields its roles find, and the whole
	// object's (unknown) is kept rather than erin's over fields mapped with
	// dana's roles.
	a, b := observe.Field{Path: "metadata.labels.a", Live: "live-a", By: by("dana")}, observe.Field{Path: "metadata.labels.b", Live: "live-b", By: by("erin")}
	o := observe.Observation{Source: observe.SourceKubernetes, Cluster: "dev-1", ObservedAt: t0, Object: key("web"), Fields: []observe.Field{a, b}}
	d = only(t, Plan([]observe.Observation{o}, nil, snap, testNow))
	if d.Outcome != Deny || d.Actor != "" || !hasReason(d, "actor-unknown:") {
		t.Errorf("dana's label a beside erin's b: %s by %q, %v", d.Outcome, d.Actor, d.Reasons)
	}
}
