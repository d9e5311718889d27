package observe

import (
	"os"
	"testing"
	"time"

	"github.com/backflow-dev/backflow/internal/yamlnode"
)

// FuzzParseAuditEvents: any input is read without panicking, every kept
// event is a successful write with a user, and the join over what was kept
// never attributes a field to an empty actor at audit-log.
func FuzzParseAuditEvents(f *testing.F) {
	if data, err := os.ReadFile("testdata/live/audit.jsonl"); err == nil {
		f.Add(data)
	}
	f.Add([]byte(`{"kind":"EventList","apiVersion":"audit.k8s.io/v1","items":[]}`))
	f.Add([]byte(`{"kind":"Event","apiVersion":"audit.k8s.io/v1","stage":"ResponseComplete","verb":"patch","user":{"username":"a"},"objectRef":{"resource":"statefulsets","apiGroup":"apps","namespace":"redis","name":"redis-replicas","subresource":"scale"},"responseStatus":{"code":200},"requestObject":[{"op":"add","path":"/spec/replicas/-"}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		res := ParseAuditEvents(data, "fuzz")
		for _, e := range res.Events {
			if e.User == "" || !writeVerbs[e.Verb] || e.Object.Name == "" {
				t.Fatalf("kept %+v", e)
			}
		}
		o := redisObservation(Field{Path: "spec.replicas", Live: int64(4)}, Field{Path: "spec.template.spec.containers[0].image", Live: "x"})
		o.ObservedAt = time.Now().Add(24 * 365 * time.Hour)
		got := Attribute(o, res.Events)
		for _, fl := range got.Fields {
			if fl.By.Attribution == AttributionAuditLog && fl.By.Actor == "" {
				t.Fatalf("field %s attributed to nobody at audit-log", fl.Path)
			}
		}
	})
}

// BenchmarkAttribute joins one observation with the events of a busy
// object: 10,000 writes.
func BenchmarkAttribute(b *testing.B) {
	var events []AuditEvent
	for i := 0; i < 10_000; i++ {
		events = append(events, AuditEvent{
			AuditID: string(rune(i)), Time: t0.Add(time.Duration(i) * time.Second), Verb: "patch", User: "u", Manager: "kubectl",
			Object:  AuditObject{Group: "apps", Version: "v1", Resource: "statefulsets", Subresource: "scale", Namespace: "redis", Name: "redis-replicas"},
			HasBody: true, Sets: []string{"spec.replicas"}, sets: [][]yamlnode.Segment{{{Key: "spec"}, {Key: "replicas"}}},
		})
	}
	o := redisObservation(Field{Path: "spec.replicas", Live: int64(4), Manager: "kubectl", Subresource: "scale"})
	o.ObservedAt = t0.Add(24 * time.Hour)
	b.ReportAllocs()
	for b.Loop() {
		if got := Attribute(o, events); got.Change.Actor != "u" {
			b.Fatal(got.Change)
		}
	}
}
