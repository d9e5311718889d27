package observe

import (
	"encoding/json"
	"os"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// The records in testdata/live come from a real API server (SOURCES.md):
// they hold the parser and the managedFields reader to what Kubernetes
// actually writes, not to what these tests assume it writes.
func TestRealAPIServerRecords(t *testing.T) {
	data, err := os.ReadFile("testdata/live/audit.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	res := ParseAuditEvents(data, "audit.jsonl")
	if len(res.Errors) > 0 {
		t.Fatal(res.Errors)
	}
	var got []string
	for _, e := range res.Events {
		sets := strings.Join(e.Sets, ",")
		if len(e.Sets) > 3 && slices.Contains(e.Sets, "spec.replicas") && slices.Contains(e.Sets, "spec.template.spec.containers[name=redis].image") {
			// A server-side apply sets every field of its manifest.
			sets = "the manifest's fields"
		}
		got = append(got, e.User+" "+e.Verb+" "+e.Object.Resource+"/"+e.Object.Subresource+" "+e.Object.Name+" as "+e.Manager+": "+sets)
	}
	want := []string{
		"flux patch statefulsets/ redis-master as helm-controller: the manifest's fields",
		"flux patch statefulsets/ redis-replicas as helm-controller: the manifest's fields",
		"alice patch statefulsets/scale redis-replicas as kubectl: spec.replicas",
		"bob patch statefulsets/ redis-replicas as kubectl: spec.template.spec.containers[name=redis].image,spec.template.spec.containers[name=redis].name",
		"bob patch statefulsets/ redis-master as kubectl: spec.replicas",
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Fatalf("why: each successful write, who made it and what it set (-want +got):\n%s", d)
	}

	raw, err := os.ReadFile("testdata/live/redis-replicas.json")
	if err != nil {
		t.Fatal(err)
	}
	var obj map[string]any
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.UseNumber()
	if err := dec.Decode(&obj); err != nil {
		t.Fatal(err)
	}
	live, err := LiveChanges(obj, []string{"helm-controller"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var fields []string
	for _, f := range live.Fields {
		fields = append(fields, f.Path+" by "+f.Manager+"/"+f.Subresource)
	}
	sort.Strings(fields)
	wantFields := []string{"spec.replicas by kubectl/scale", "spec.template.spec.containers[0].image by kubectl/"}
	if d := cmp.Diff(wantFields, fields); d != "" {
		t.Fatalf("why: the scale and the image are the live changes, the rest is the forward apply's (-want +got):\n%s", d)
	}

	o := Observation{Source: SourceKubernetes, Cluster: "e2e", ObservedAt: time.Date(2026, 11, 29, 16, 18, 0, 0, time.UTC),
		Object: ObjectKey{APIVersion: "apps/v1", Kind: "StatefulSet", Namespace: "redis", Name: "redis-replicas"},
		Change: Change{Attribution: AttributionUnknown, Claimed: AttributionUnknown}, Fields: live.Fields}
	o = AttributeLive(o, res.Events, nil, obj)
	byField := map[string]string{}
	for _, f := range o.Fields {
		byField[f.Path] = f.By.Actor + "@" + string(f.By.Attribution)
	}
	wantBy := map[string]string{"spec.replicas": "alice@audit-log", "spec.template.spec.containers[0].image": "bob@audit-log"}
	if d := cmp.Diff(wantBy, byField); d != "" {
		t.Errorf("why: each field is attributed to who set it (-want +got):\n%s", d)
	}
	if o.Change.Attribution != AttributionUnknown || !strings.Contains(o.Change.Evidence, "not changed by one known actor") {
		t.Errorf("why: two people's changes to one object have no single actor; change %+v", o.Change)
	}
}
