package render

import (
	"context"
	"slices"
	"testing"
	"time"
)

var benchValues = map[string]map[string]any{
	"redis":   {"architecture": "replication", "auth": map[string]any{"existingSecret": "redis-auth"}, "replica": map[string]any{"replicaCount": 3}},
	"podinfo": {"replicaCount": 2},
}

// BenchmarkRender renders each chart once per iteration, as the witness
// does twice per write-back, and reports the median and 99th percentile.
func BenchmarkRender(b *testing.B) {
	for _, name := range []string{"redis", "podinfo"} {
		b.Run(name, func(b *testing.B) {
			c := loadTestChart(b, name)
			opts := Options{Release: name, Namespace: name}
			var took []time.Duration
			for b.Loop() {
				start := time.Now()
				if _, err := c.Render(context.Background(), opts, []map[string]any{benchValues[name]}); err != nil {
					b.Fatal(err)
				}
				took = append(took, time.Since(start))
			}
			slices.Sort(took)
			b.ReportMetric(float64(took[len(took)/2].Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(took[len(took)*99/100].Microseconds())/1000, "p99-ms")
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
