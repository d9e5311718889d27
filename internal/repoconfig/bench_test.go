package repoconfig

import (
	"fmt"
	"strings"
	"testing"
)

// benchConfig is a config of n units spread over 10 environments, each unit
// claiming a StatefulSet by glob and a Service by exact key.
func benchConfig(b *testing.B, n int) *Config {
	b.Helper()
	var s strings.Builder
	s.WriteString("version: 1\npolicy: p.yaml\nignoreFields: [\"status.**\", \"metadata.annotations.*\"]\nenvironments:\n")
	for e := 0; e < 10; e++ {
		fmt.Fprintf(&s, "  env-%d: {clusters: [c-%d]}\n", e, e)
	}
	s.WriteString("units:\n")
	for i := 0; i < n; i++ {
		fmt.Fprintf(&s, "  - {name: u%d, environment: env-%d, valuesFiles: [v/%d.yaml], objects: [\"apps/v1|StatefulSet|ns-%d|db-*\", \"v1|Service|ns-%d|svc\"]}\n", i, i%10, i, i, i)
	}
	c, err := Parse(Path, []byte(s.String()))
	if err != nil {
		b.Fatal(err)
	}
	return c
}

// BenchmarkParse1000Units measures loading a 1,000-unit config, including the
// pairwise overlap check of units in the same environment.
func BenchmarkParse1000Units(b *testing.B) {
	var s strings.Builder
	s.WriteString("version: 1\npolicy: p.yaml\nenvironments:\n  e: {clusters: [c]}\nunits:\n")
	for i := 0; i < 1000; i++ {
		fmt.Fprintf(&s, "  - {name: u%d, environment: e, valuesFiles: [v/%d.yaml], objects: [\"apps/v1|StatefulSet|ns-%d|db-*\"]}\n", i, i, i)
	}
	data := []byte(s.String())
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := Parse(Path, data); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLookup10000Fields measures the planner's questions for 10,000
// observed fields against 1,000 units: environment of the cluster, unit of
// the object, and whether the field is ignored.
func BenchmarkLookup10000Fields(b *testing.B) {
	c := benchConfig(b, 1000)
	type q struct{ cluster, object, field string }
	qs := make([]q, 10000)
	for i := range qs {
		u := i % 1000
		obj := fmt.Sprintf("apps/v1|StatefulSet|ns-%d|db-%d", u, i)
		if i%2 == 0 {
			obj = fmt.Sprintf("v1|Service|ns-%d|svc", u)
		}
		qs[i] = q{fmt.Sprintf("c-%d", u%10), obj, "spec.template.spec.containers[0].image"}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for _, x := range qs {
			env, ok := c.EnvironmentOf(x.cluster)
			if !ok {
				b.Fatal("no environment")
			}
			if _, ok := c.UnitFor(env, x.object); !ok {
				b.Fatalf("no unit for %s", x.object)
			}
			c.IgnoresField(x.field)
		}
	}
}
