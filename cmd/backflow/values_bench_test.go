package main

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// processEdits are the edits the process comparison makes, as command-line
// paths and --value arguments.
var processEdits = []struct{ path, value string }{
	{"alertmanager.alertmanagerSpec.replicas", "3"},
	{"grafana.enabled", "false"},
	{"prometheus.prometheusSpec.retention", "30d"},
	{"prometheusOperator.image.tag", "v0.99.0"},
	{"alertmanager.service.port", "9094"},
	{"prometheus.prometheusSpec.scrapeInterval", "15s"},
	{"kubeStateMetrics.enabled", "false"},
	{"nodeExporter.enabled", "false"},
	{"prometheus.service.type", "NodePort"},
	{"prometheus.prometheusSpec.podMetadata.labels.team", "observability"},
}

const processFile = "../../testdata/corpus/values/kube-prometheus-stack.values.yaml"

// BenchmarkProcessVsYQ runs `backflow values set` and yq v4 as processes on
// the same edits of kube-prometheus-stack's values file and reports both
// times and their ratio. It needs BACKFLOW_BIN and YQ_BIN (mikefarah yq v4;
// `make bench-yq` sets both) and skips without them.
func BenchmarkProcessVsYQ(b *testing.B) {
	backflow, yq := os.Getenv("BACKFLOW_BIN"), os.Getenv("YQ_BIN")
	if backflow == "" || yq == "" {
		b.Skip("BACKFLOW_BIN and YQ_BIN are not set (run make bench-yq)")
	}
	if out, err := exec.Command(yq, "--version").CombinedOutput(); err != nil || !strings.Contains(string(out), "mikefarah") {
		b.Skipf("%s is not mikefarah yq v4: %s", yq, out)
	}
	for _, n := range []int{1, 10} {
		b.Run(fmt.Sprintf("edits=%d", n), func(b *testing.B) {
			bfArgs := []string{"values", "set", "--file", processFile}
			var expr []string
			for _, e := range processEdits[:n] {
				bfArgs = append(bfArgs, "--path", e.path, "--value", e.value)
				expr = append(expr, yqAssignment(e.path, e.value))
			}
			yqArgs := []string{strings.Join(expr, " | "), processFile}
			var bfTime, yqTime time.Duration
			for b.Loop() {
				bfTime += timeProcess(b, backflow, bfArgs)
				yqTime += timeProcess(b, yq, yqArgs)
			}
			runs := float64(b.N)
			bf, y := float64(bfTime.Nanoseconds())/runs, float64(yqTime.Nanoseconds())/runs
			b.ReportMetric(bf/1e6, "backflow-ms/op")
			b.ReportMetric(y/1e6, "yq-ms/op")
			b.ReportMetric(y/bf, "yq/backflow")
		})
	}
}

func timeProcess(b *testing.B, bin string, args []string) time.Duration {
	start := time.Now()
	out, err := exec.Command(bin, args...).Output()
	d := time.Since(start)
	if err != nil || len(out) == 0 {
		b.Fatalf("%s %v: %v", bin, args, err)
	}
	return d
}

// yqAssignment writes one edit as a yq expression: numbers and bools bare,
// other values as JSON strings.
func yqAssignment(path, value string) string {
	v := value
	if _, err := strconv.ParseFloat(value, 64); err != nil && value != "true" && value != "false" {
		v = strconv.Quote(value)
	}
	return "." + path + " = " + v
}
