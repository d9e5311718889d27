package observe

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestRedact(t *testing.T) {
	secret := Observation{
		Object: ObjectKey{APIVersion: "v1", Kind: "Secret", Namespace: "ns", Name: "db"},
		Fields: []Field{
			{Path: "data.password", Live: "aHVudGVyMg==", Desired: "b2xk", HasDesired: true, Textual: true},
			{Path: "data.gone", Removed: true},
		},
	}
	got := Redact(secret)
	if got.Fields[0].Live != Redacted || got.Fields[0].Desired != Redacted || got.Fields[1].Live != nil {
		t.Errorf("secret values leaked: %+v", got.Fields)
	}
	if got.Fields[0].Path != "data.password" {
		t.Error("redaction must keep the paths, so reports can say what changed")
	}
	if secret.Fields[0].Live != "aHVudGVyMg==" {
		t.Error("Redact modified its argument")
	}
	cm := secret
	cm.Object.Kind = "ConfigMap"
	if Redact(cm).Fields[0].Live != "aHVudGVyMg==" {
		t.Error("a ConfigMap was redacted")
	}
}

func TestFieldLike(t *testing.T) {
	tests := []struct {
		why  string
		f    Field
		like any
		want any
	}{
		{"cub-scout text becomes the values file's number", Field{Live: "4", Textual: true}, 3, int64(4)},
		{"text stays text where the values file holds a string", Field{Live: "4", Textual: true}, "3", "4"},
		{"with nothing to be like, text reads as --value does", Field{Live: "true", Textual: true}, nil, true},
		{"a typed value from a native document is not re-read", Field{Live: "4"}, 3, "4"},
	}
	for _, tt := range tests {
		if got := tt.f.LiveLike(tt.like); got != tt.want {
			t.Errorf("%s: got %#v, want %#v", tt.why, got, tt.want)
		}
	}
	f := Field{Desired: "3", HasDesired: true, Textual: true}
	if got := f.DesiredLike(3); got != int64(3) {
		t.Errorf("DesiredLike: %#v", got)
	}
}

func TestParseObjectKey(t *testing.T) {
	tests := []struct {
		why string
		in  string
		ok  bool
	}{
		{"the canonical form", "apps/v1|StatefulSet|redis|redis-replicas", true},
		{"cluster-scoped objects have an empty namespace", "v1|Namespace||redis", true},
		{"three segments is not a key", "StatefulSet|redis|redis-replicas", false},
		{"an empty kind is not a key", "apps/v1||redis|x", false},
		{"whitespace cannot be part of a key", "apps/v1|StatefulSet|redis|a b", false},
	}
	for _, tt := range tests {
		k, err := ParseObjectKey(tt.in)
		if (err == nil) != tt.ok || (tt.ok && k.String() != tt.in) {
			t.Errorf("%s: %q -> %v, %v", tt.why, tt.in, k, err)
		}
	}
}

// A pattern is read into the key's segments as written, globs and empty
// segments included; only its shape is checked, and the shape error says
// how many segments there were.
func TestParseObjectPattern(t *testing.T) {
	tests := []struct {
		why      string
		in       string
		segments int
	}{
		{"a pattern's segments are globs", "apps/v1|StatefulSet|redis|redis-*", 4},
		{"any segment may be empty or a glob", "*|||*", 4},
		{"three segments is not a pattern", "StatefulSet|redis|redis-replicas", 3},
		{"a separator too many", "apps/v1|StatefulSet|redis|a|b", 5},
	}
	for _, tt := range tests {
		k, err := ParseObjectPattern(tt.in)
		var shape *ObjectKeyShapeError
		switch {
		case tt.segments == 4 && (err != nil || k.String() != tt.in || strings.Join(k.Segments(), "|") != tt.in):
			t.Errorf("%s: %q -> %v, %v", tt.why, tt.in, k, err)
		case tt.segments != 4 && (!errors.As(err, &shape) || shape.Segments != tt.segments):
			t.Errorf("%s: %q -> %v, want a shape error of %d segments", tt.why, tt.in, err, tt.segments)
		}
	}
}

// Compare orders keys exactly as their printed forms order, so a sort by
// key writes what a sort by the key's text wrote.
func TestObjectKeyCompare(t *testing.T) {
	tests := []struct {
		why  string
		a, b string
	}{
		{"equal keys", "apps/v1|Deployment|web|api", "apps/v1|Deployment|web|api"},
		{"the first differing segment decides", "apps/v1|Deployment|web|api", "apps/v1|StatefulSet|web|api"},
		{"a later segment decides when the earlier agree", "v1|ConfigMap|a|z", "v1|ConfigMap|b|a"},
		{"a shorter segment is followed by | which sorts after -", "v1|ConfigMap|web|api", "v1|ConfigMap|web-2|api"},
		{"a shorter segment is followed by | which sorts before ~", "v1|ConfigMap|web|api", "v1|ConfigMap|web~2|api"},
		{"an empty namespace against a named one", "v1|Namespace||redis", "v1|Namespace|a|redis"},
		{"a shorter name ends the text", "v1|ConfigMap|web|api", "v1|ConfigMap|web|api-2"},
		{"a segment holding | falls back to the text", "v1|ConfigMap|a||b", "v1|ConfigMap|a|b"},
		{"a segment holding | against a shorter one", "v1|Config|Map|a|b", "v1|Config||"},
		{"the zero key sorts first", "|||", "v1|ConfigMap||a"},
	}
	for _, tt := range tests {
		a, b := rawKey(tt.a), rawKey(tt.b)
		want := strings.Compare(a.String(), b.String())
		if got := a.Compare(b); got != want {
			t.Errorf("%s: %q vs %q: Compare = %d, want %d", tt.why, tt.a, tt.b, got, want)
		}
		if got := b.Compare(a); got != -want {
			t.Errorf("%s: %q vs %q: Compare = %d, want %d", tt.why, tt.b, tt.a, got, -want)
		}
	}
}

// Every pair of keys built from segments around "|" in byte order (empty,
// a prefix, one byte below and above "|", a "|" inside) orders as its text.
func TestObjectKeyCompareExhaustive(t *testing.T) {
	segs := []string{"", "a", "a-", "a~", "a|b"}
	var keys []ObjectKey
	for _, v := range segs {
		for _, k := range segs {
			for _, ns := range segs {
				for _, n := range segs {
					keys = append(keys, ObjectKey{APIVersion: v, Kind: k, Namespace: ns, Name: n})
				}
			}
		}
	}
	for _, a := range keys {
		for _, b := range keys {
			if got, want := a.Compare(b), strings.Compare(a.String(), b.String()); got != want {
				t.Fatalf("%q vs %q: Compare = %d, want %d", a, b, got, want)
			}
		}
	}
}

// rawKey splits s into a key's segments with the last segment taking the
// rest, so a test can hold a segment with a | in it.
func rawKey(s string) ObjectKey {
	p := strings.SplitN(s, "|", 4)
	for len(p) < 4 {
		p = append(p, "")
	}
	return ObjectKey{APIVersion: p[0], Kind: p[1], Namespace: p[2], Name: p[3]}
}

// A key is written as its text and read back only when it is a key.
func TestObjectKeyText(t *testing.T) {
	tests := []struct {
		why string
		in  string
		ok  bool
	}{
		{"a namespaced key round-trips", "apps/v1|StatefulSet|redis|redis-replicas", true},
		{"a cluster-scoped key round-trips", "v1|Namespace||redis", true},
		{"a pattern's empty name is not a key", "apps/v1|StatefulSet|redis|", false},
		{"three segments are not a key", "StatefulSet|redis|redis-replicas", false},
		{"whitespace is refused as ParseObjectKey refuses it", "apps/v1|StatefulSet|redis|a b", false},
	}
	for _, tt := range tests {
		var k ObjectKey
		err := k.UnmarshalText([]byte(tt.in))
		if (err == nil) != tt.ok {
			t.Errorf("%s: UnmarshalText(%q) = %v", tt.why, tt.in, err)
			continue
		}
		if !tt.ok {
			if k != (ObjectKey{}) {
				t.Errorf("%s: a refused key left %v", tt.why, k)
			}
			continue
		}
		out, err := k.MarshalText()
		if err != nil || string(out) != tt.in {
			t.Errorf("%s: MarshalText = %q, %v, want %q", tt.why, out, err, tt.in)
		}
	}
	// Through encoding/json, as a report carries it: a string, never an object.
	type doc struct {
		Object ObjectKey `json:"object"`
	}
	data, err := json.Marshal(doc{Object: ObjectKey{APIVersion: "v1", Kind: "ConfigMap", Name: "a"}})
	if err != nil || string(data) != `{"object":"v1|ConfigMap||a"}` {
		t.Fatalf("json.Marshal = %s, %v", data, err)
	}
	var back doc
	if err := json.Unmarshal([]byte(`{"object":"v1|ConfigMap|"}`), &back); err == nil {
		t.Errorf("json.Unmarshal took a three-segment key: %v", back.Object)
	}
}
