package render

import (
	"context"
	"testing"
)

var benchValues = map[string]map[string]any{
	"redis":   {"architecture": "replication", "auth": map[string]any{"existingSecret": "redis-auth"}, "replica": map[string]any{"replicaCount": 3}},
	"podinfo": {"replicaCount": 2},
}

// BenchmarkRender renders each chart once per iteration, as the witness
// does twice per write-back.
func BenchmarkRender(b *testing.B) {
	for _, name := range []string{"redis", "podinfo"} {
		b.Run(name, func(b *testing.B) {
			c := loadTestChart(b, name)
			opts := Options{Release: name, Namespace: name}
			for b.Loop() {
				if _, err := c.Render(context.Background(), opts, []map[string]any{benchValues[name]}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkMapRedis is backflow map on the redis chart for the replicas
// StatefulSet's spec.replicas.
func BenchmarkMapRedis(b *testing.B) {
	c := loadTestChart(b, "redis")
	for b.Loop() {
		res, err := c.Map(context.Background(), redisOptions, []map[string]any{benchValues["redis"]}, "apps/v1|StatefulSet|redis|redis-replicas", "spec.replicas", 0)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(res.Renders), "renders/op")
	}
}
