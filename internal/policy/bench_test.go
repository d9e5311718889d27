package policy

import (
	"os"
	"testing"
)

func BenchmarkParsePolicy(b *testing.B) {
	data, err := os.ReadFile("testdata/bounds-and-globs.yaml")
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := Parse("p.yaml", data); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkEvaluate(b *testing.B) {
	p, err := Load("testdata/bounds-and-globs.yaml")
	if err != nil {
		b.Fatal(err)
	}
	for _, bc := range []struct {
		name string
		req  Request
	}{
		{"allow-exact", Request{Roles: []string{"platform-sre"}, Environment: "prod-us-east", Object: replicas, Field: "spec.replicas", ValuePath: "replica.replicaCount", Value: 4, HasValue: true}},
		{"allow-glob-bounds", Request{Roles: []string{"platform-sre"}, Environment: "prod-eu-west", Object: master, Field: memField, ValuePath: "replica.resources.limits.memory", Value: "512Mi", HasValue: true}},
		{"deny-every-reason", Request{Roles: []string{"dba", "developer"}, Environment: "prod", Object: replicas, Field: imgField, ValuePath: "image.tag", Value: "6", HasValue: true}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				p.Evaluate(bc.req)
			}
		})
	}
}
