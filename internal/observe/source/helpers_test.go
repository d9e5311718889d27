package source

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/backflow-dev/backflow/internal/observe"
)

// t0 is the time the tests' objects were changed.
var t0 = time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)

// scaleEvent is an audit event of `kubectl scale` on the sample chart's
// redis-replicas, as the API server's log backend writes it.
type scaleEvent struct {
	id, user string
	groups   []string
	replicas int
	at       time.Time
}

func (e scaleEvent) json(t *testing.T) string {
	t.Helper()
	at := e.at
	if at.IsZero() {
		at = t0
	}
	b, err := json.Marshal(map[string]any{
		"kind": "Event", "apiVersion": "audit.k8s.io/v1", "level": "Request", "stage": "ResponseComplete",
		"auditID": e.id, "verb": "patch", "userAgent": "kubectl/v1.34.4",
		"user": map[string]any{"username": e.user, "groups": e.groups},
		"objectRef": map[string]any{"apiGroup": "apps", "apiVersion": "v1", "resource": "statefulsets",
			"subresource": "scale", "namespace": "redis", "name": "redis-replicas"},
		"requestReceivedTimestamp": at.Format(time.RFC3339Nano),
		"stageTimestamp":           at.Format(time.RFC3339Nano),
		"responseStatus":           map[string]any{"code": 200},
		"requestObject":            map[string]any{"spec": map[string]any{"replicas": e.replicas}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// parseEvents reads events back as the join sees them.
func parseEvents(t *testing.T, evs ...scaleEvent) []observe.AuditEvent {
	t.Helper()
	lines := make([]string, len(evs))
	for i, e := range evs {
		lines[i] = e.json(t)
	}
	res := observe.ParseAuditEvents([]byte(strings.Join(lines, "\n")), "audit.log")
	if len(res.Errors) > 0 {
		t.Fatal(res.Errors)
	}
	return res.Events
}

// redisObservation is an observation of redis-replicas with fields.
func redisObservation(fields ...observe.Field) observe.Observation {
	return observe.Observation{
		Source: observe.SourceKubernetes, Cluster: "prod-us-east-1", ObservedAt: t0.Add(time.Minute),
		Object: observe.ObjectKey{APIVersion: "apps/v1", Kind: "StatefulSet", Namespace: "redis", Name: "redis-replicas"},
		Change: observe.Change{Attribution: observe.AttributionUnknown, Claimed: observe.AttributionUnknown}, Fields: fields,
	}
}

// seedObservation is the seed's native observation document of
// redis-replicas (its content starts on line 3, after two comment lines).
func seedObservation(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile("../../plan/testdata/scenarios/seed-incident/observations/redis-replicas.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// observationJSON is one native observation document in JSON.
const observationJSON = `{"apiVersion":"backflow.dev/v1alpha1","kind":"ObjectStateObserved","spec":{"cluster":"c1","observedAt":"2026-06-18T12:00:00Z","object":"v1|ConfigMap|ns|cm","fields":[{"field":"data.x","live":"4","desired":4.5}]}}`
