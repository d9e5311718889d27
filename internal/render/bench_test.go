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
			children.drain()
			cpu := cpuTime()
			for b.Loop() {
				start := time.Now()
				if _, err := c.Render(context.Background(), opts, []map[string]any{benchValues[name]}); err != nil {
					b.Fatal(err)
				}
				took = append(took, time.Since(start))
			}
			reportCPU(b, cpu)
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

// BenchmarkChildStart renders a one-object chart in a new render child per
// iteration ("cold": the start, the ready line and the chart sent) and in
// the child kept from the last ("warm"): the difference is what a batch of
// renderings pays once.
func BenchmarkChildStart(b *testing.B) {
	files := map[string][]byte{
		"Chart.yaml":        []byte("apiVersion: v2\nname: one\nversion: 0.1.0\n"),
		"templates/cm.yaml": []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: one\n"),
	}
	c, err := LoadFiles("chart one", files)
	if err != nil {
		b.Fatal(err)
	}
	for _, cold := range []bool{true, false} {
		name := map[bool]string{true: "cold", false: "warm"}[cold]
		b.Run(name, func(b *testing.B) {
			children.drain()
			cpu := cpuTime()
			for b.Loop() {
				if cold {
					children.drain()
				}
				if _, err := c.Render(context.Background(), Options{Release: "one", Namespace: "one"}, nil); err != nil {
					b.Fatal(err)
				}
			}
			reportCPU(b, cpu)
		})
	}
}
