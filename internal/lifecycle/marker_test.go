package lifecycle

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/backflow-dev/backflow/internal/observe"
	"github.com/backflow-dev/backflow/internal/plan"
	"github.com/backflow-dev/backflow/internal/repoconfig"
)

func TestMarkerRoundTrip(t *testing.T) {
	m := &Marker{Version: markerVersion, Unit: "redis", Environment: usEast, Branch: branchEast, Fingerprint: "sha256:ab",
		Changes: []MarkerChange{{Object: replicasObject, Field: "spec.replicas", ValuePath: "replica.replicaCount", ValuesFile: valuesEast, From: 3, To: "a --> <b> & c"}},
		Commits: []string{"c1"}}
	body := "text before\n\n" + m.Encode() + "\ntext after"
	got, ok := ParseMarker(body)
	if !ok || got.Changes[0].To != "a --> <b> & c" || got.Fingerprint != m.Fingerprint {
		t.Fatalf("round trip: %+v %v", got, ok)
	}
	if strings.Count(body, "-->") != 1 {
		t.Errorf("a value closed the HTML comment early: %s", body)
	}
	got.Closed = ClosedConverged
	again, ok := ParseMarker(replaceMarker(body, got))
	if !ok || again.Closed != ClosedConverged || strings.Count(replaceMarker(body, got), "backflow:marker") != 1 {
		t.Errorf("replace: %+v", again)
	}
	for _, bad := range []string{"", "<!-- backflow:marker {} -->", "<!-- backflow:marker {\"v\":2,\"fingerprint\":\"x\",\"branch\":\"b\"} -->", "<!-- backflow:marker not json -->"} {
		if _, ok := ParseMarker(bad); ok {
			t.Errorf("%q read as a marker", bad)
		}
	}
}

// A marker's changes name their objects as text and are read back into
// keys; a marker naming something that is no key is not read.
func TestMarkerObjectKey(t *testing.T) {
	m := &Marker{Version: markerVersion, Unit: "redis", Environment: usEast, Branch: branchEast, Fingerprint: "sha256:ab",
		Changes: []MarkerChange{{Object: replicasObject, Field: "spec.replicas", To: 4}}}
	enc := m.Encode()
	if !strings.Contains(enc, `"object":"`+replicasKey+`"`) {
		t.Fatalf("the key is not written as its text: %s", enc)
	}
	for _, tc := range []struct {
		why  string
		text string
		ok   bool
	}{
		{"the key as written is read back", replicasKey, true},
		{"a cluster-scoped key is a key", "v1|Namespace||redis", true},
		{"three segments are no key", "StatefulSet|redis|redis-replicas", false},
		{"an empty name is no key", "apps/v1|StatefulSet|redis|", false},
	} {
		got, ok := ParseMarker(strings.Replace(enc, replicasKey, tc.text, 1))
		if ok != tc.ok || ok && got.Changes[0].Object.String() != tc.text {
			t.Errorf("%s: %q read as %+v, %v", tc.why, tc.text, got, ok)
		}
	}
}

// Numbers fingerprint by value, so a marker read back from JSON matches the
// planner's typed values.
func TestFingerprintNumbers(t *testing.T) {
	a := fingerprintOf(usEast, "redis", []MarkerChange{{Object: replicasObject, Field: "spec.replicas", ValuePath: "replica.replicaCount", To: 4}})
	b := fingerprintOf(usEast, "redis", []MarkerChange{{Object: replicasObject, Field: "spec.replicas", ValuePath: "replica.replicaCount", To: 4.0}})
	c := fingerprintOf(usEast, "redis", []MarkerChange{{Object: replicasObject, Field: "spec.replicas", ValuePath: "replica.replicaCount", To: "4"}})
	if a != b || a == c {
		t.Errorf("4 %s, 4.0 %s, \"4\" %s", a, b, c)
	}
}

func TestTitle(t *testing.T) {
	one := []MarkerChange{{Object: replicasObject, ValuePath: "replica.replicaCount", From: 3, To: 4}}
	two := append(one, MarkerChange{Object: observe.ObjectKey{APIVersion: "apps/v1", Kind: "StatefulSet", Namespace: "redis", Name: "redis-master"}, ValuePath: "replica.replicaCount", From: 3, To: 4},
		MarkerChange{Object: observe.ObjectKey{APIVersion: "apps/v1", Kind: "StatefulSet", Namespace: "redis", Name: "redis-master"}, ValuePath: "master.image.tag", From: "7.2", To: "7.2.5"})
	var many []MarkerChange
	for i := range 40 {
		many = append(many, MarkerChange{Object: replicasObject, ValuePath: fmt.Sprintf("some.rather.long.values.path%d", i), From: i, To: i + 1})
	}
	long := Title(usEast, many)
	if n := utf8.RuneCountInString(long); n > 256 || !strings.HasSuffix(long, "more on redis-replicas") {
		t.Errorf("a long title (%d characters): %q", n, long)
	}
	for _, tc := range []struct{ why, got, want string }{
		{"one object is named", Title(usEast, one), "reverse-reconcile(prod-us-east): replica.replicaCount 3 -> 4 on redis-replicas"},
		{"several objects are counted; a repeated change is listed once", Title(usEast, two), `reverse-reconcile(prod-us-east): replica.replicaCount 3 -> 4, master.image.tag "7.2" -> 7.2.5 on 2 objects`},
		{"a field written as itself (manifests, a kustomization) is named by the field",
			Title(usEast, []MarkerChange{{Object: observe.ObjectKey{APIVersion: "apps/v1", Kind: "StatefulSet", Namespace: "shop", Name: "web-cache"}, Field: "spec.replicas", From: 3, To: 4}}),
			"reverse-reconcile(prod-us-east): spec.replicas 3 -> 4 on web-cache"},
	} {
		if tc.got != tc.want {
			t.Errorf("%s: %q, want %q", tc.why, tc.got, tc.want)
		}
	}
}

// A body that would pass GitHub's size limit names the receipts instead of
// showing them, and keeps its marker.
func TestLongBody(t *testing.T) {
	big := plan.File{Path: ".backflow/receipts/big.yaml", Data: []byte(strings.Repeat("x: y\n", 20_000))}
	d := &writeBackDoc{wb: plan.WriteBack{Environment: usEast, Unit: "redis", Branch: branchEast, Receipts: []plan.File{big}}, cfg: &repoconfig.Config{}}
	m := &Marker{Version: markerVersion, Branch: branchEast, Fingerprint: "sha256:ab"}
	body := d.body(m)
	if len(body) > 65_536 || !strings.Contains(body, "<code>.backflow/receipts/big.yaml</code>") {
		t.Errorf("body of %d bytes", len(body))
	}
	if _, ok := ParseMarker(body); !ok {
		t.Error("the marker was lost")
	}
}
