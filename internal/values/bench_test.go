package values

import (
	"os"
	"testing"

	"github.com/backflow-dev/backflow/internal/cputime"
)

const benchFile = "../../testdata/corpus/values/kube-prometheus-stack.values.yaml"

// benchEdits are ten edits spread over kube-prometheus-stack's values file:
// scalars of each type, a quoted string, list items and a new key.
var benchEdits = []Edit{
	{Path: "alertmanager.alertmanagerSpec.replicas", Value: int64(3)},
	{Path: "grafana.enabled", Value: false},
	{Path: "prometheus.prometheusSpec.retention", Value: "30d"},
	{Path: "prometheusOperator.image.tag", Value: "v0.99.0"},
	{Path: "alertmanager.service.port", Value: int64(9094)},
	{Path: "prometheus.prometheusSpec.scrapeInterval", Value: "15s"},
	{Path: "kubeStateMetrics.enabled", Value: false},
	{Path: "nodeExporter.enabled", Value: false},
	{Path: "prometheus.service.type", Value: "NodePort"},
	{Path: "prometheus.prometheusSpec.podMetadata.labels.team", Value: "observability"},
}

func benchData(b *testing.B) []byte {
	data, err := os.ReadFile(benchFile)
	if err != nil {
		b.Fatal(err)
	}
	return data
}

func BenchmarkSetOne(b *testing.B) {
	data := benchData(b)
	b.ReportAllocs()
	defer cputime.Report(b, cputime.Now(b))
	for b.Loop() {
		if _, _, err := Set(data, benchEdits[:1], Options{}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkSetTen(b *testing.B) {
	data := benchData(b)
	b.ReportAllocs()
	defer cputime.Report(b, cputime.Now(b))
	for b.Loop() {
		if _, _, err := Set(data, benchEdits, Options{}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkFileSetOne is one edit on a file already read (File.Set): the
// cost of planning, splicing and verifying, without reading the original.
func BenchmarkFileSetOne(b *testing.B) {
	f, err := Parse(benchData(b), Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	defer cputime.Report(b, cputime.Now(b))
	for b.Loop() {
		if _, _, err := f.Set(benchEdits[:1]); err != nil {
			b.Fatal(err)
		}
	}
}
