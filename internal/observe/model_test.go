package observe

import (
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
