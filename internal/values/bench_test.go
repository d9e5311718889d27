package values

import (
	"fmt"
	"os"
	"strings"
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

// smallFiles are values files shaped as the planner's benchmark has them:
// 15 lines each, a comment on most, and seven edits of each.
func smallFiles(n int) ([][]byte, []Edit) {
	files := make([][]byte, n)
	for i := range files {
		var b strings.Builder
		fmt.Fprintf(&b, "# app-%04d values\nimage:\n  repository: example/app-%04d\n  tag: \"1.0\"\nsettings:\n", i, i)
		for f := range 10 {
			fmt.Fprintf(&b, "  f%d: 1 # tuned by hand\n", f)
		}
		files[i] = []byte(b.String())
	}
	var edits []Edit
	for f := range 7 {
		edits = append(edits, Edit{Path: fmt.Sprintf("settings.f%d", f), Value: int64(2)})
	}
	return files, edits
}

// BenchmarkSmallFiles reads 100 small files as the planner does (Helm's
// reading, then Parse and SetRead with the same Readings): cold, with a
// new Readings each time, as one plan starts; warm, with one Readings kept
// across, as a process plans the same files again.
func BenchmarkSmallFiles(b *testing.B) {
	files, edits := smallFiles(100)
	run := func(b *testing.B, r *Readings) {
		for _, data := range files {
			if _, err := r.HelmUnmarshal(data); err != nil {
				b.Fatal(err)
			}
			f, err := Parse(data, Options{Readings: r})
			if err != nil {
				b.Fatal(err)
			}
			if _, _, err := f.SetRead(edits); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.Run("cold", func(b *testing.B) {
		b.ReportAllocs()
		defer cputime.Report(b, cputime.Now(b))
		for b.Loop() {
			run(b, NewReadings())
		}
	})
	b.Run("warm", func(b *testing.B) {
		r := NewBoundedReadings(64 << 20)
		run(b, r)
		b.ReportAllocs()
		defer cputime.Report(b, cputime.Now(b))
		for b.Loop() {
			run(b, r)
		}
	})
}
