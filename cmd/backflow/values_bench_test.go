package main

import (
	"fmt"
	"os"
	"os/exec"
	"slices"
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

const (
	corpusDir   = "../../testdata/corpus/values/"
	processFile = corpusDir + "kube-prometheus-stack.values.yaml"
)

// corpusEdits is one edit of every corpus file: a scalar near the middle of
// the file (in the order yq lists leaves), given a new value of its type.
var corpusEdits = []struct{ file, path, value string }{
	{"argo-cd", "server.certificate.enabled", "true"},
	{"bitnami-postgresql", "readReplicas.livenessProbe.timeoutSeconds", "9"},
	{"bitnami-redis", "replica.pdb.minAvailable", "edited"},
	{"cert-manager", "webhook.livenessProbe.failureThreshold", "7"},
	{"external-dns", "readinessProbe.periodSeconds", "14"},
	{"grafana", "sidecar.alerts.label", "edited"},
	{"grafana-enterprise-logs", "gateway.podSecurityContext.runAsNonRoot", "false"},
	{"ingress-nginx", "controller.service.internal.loadBalancerClass", "edited"},
	{"istio-cni", "_internal_defaults_do_not_set.repair.deletePods", "true"},
	{"kube-prometheus-stack", "prometheusOperator.tls.tlsMinVersion", "edited"},
	{"metrics-server", "addonResizer.enabled", "true"},
	{"podinfo", "hooks.postDelete.job.exitCode", "4"},
	{"prometheus-alertmanager", "serviceMonitor.path", "edited"},
	{"tempo-distributed", "rollout_operator.securityContext.allowPrivilegeEscalation", "true"},
	{"traefik", "tracing.otlp.http.enabled", "true"},
	{"vault", "server.livenessProbe.failureThreshold", "6"},
}

// BenchmarkProcessVsYQ runs `backflow values set` and yq v4 as processes
// on the same edits, one after the other, and reports the median time of
// each and yq's time over backflow's (at least 1 is the target; medians,
// because on a shared machine a neighbour's burst lands on one run, not on
// the process): one and ten edits of kube-prometheus-stack's values file,
// then one edit of every corpus file. backflow is the front binary, which
// makes the edit in its own process. It needs BACKFLOW_BIN and YQ_BIN
// (mikefarah yq v4; `make bench-yq` sets them) and skips without them.
func BenchmarkProcessVsYQ(b *testing.B) {
	backflow, yq := os.Getenv("BACKFLOW_BIN"), os.Getenv("YQ_BIN")
	if backflow == "" || yq == "" {
		b.Skip("BACKFLOW_BIN and YQ_BIN are not set (run make bench-yq)")
	}
	if out, err := exec.Command(yq, "--version").CombinedOutput(); err != nil || !strings.Contains(string(out), "mikefarah") {
		b.Skipf("%s is not mikefarah yq v4: %s", yq, out)
	}
	for _, n := range []int{1, 10} {
		var edits [][2]string
		for _, e := range processEdits[:n] {
			edits = append(edits, [2]string{e.path, e.value})
		}
		b.Run(fmt.Sprintf("edits=%d", n), func(b *testing.B) {
			compareProcesses(b, backflow, yq, processFile, edits)
		})
	}
	for _, e := range corpusEdits {
		b.Run("file="+e.file, func(b *testing.B) {
			compareProcesses(b, backflow, yq, corpusDir+e.file+".values.yaml", [][2]string{{e.path, e.value}})
		})
	}
}

// compareProcesses times the two processes making edits (path, value) to
// file.
func compareProcesses(b *testing.B, backflow, yq, file string, edits [][2]string) {
	setArgs := []string{"values", "set", "--file", file}
	var expr []string
	for _, e := range edits {
		setArgs = append(setArgs, "--path", e[0], "--value", e[1])
		expr = append(expr, yqAssignment(e[0], e[1]))
	}
	yqArgs := []string{strings.Join(expr, " | "), file}
	var bfTimes, yqTimes []time.Duration
	for b.Loop() {
		bfTimes = append(bfTimes, timeProcess(b, backflow, setArgs))
		yqTimes = append(yqTimes, timeProcess(b, yq, yqArgs))
	}
	bf, y := median(bfTimes), median(yqTimes)
	b.ReportMetric(ms(bf), "backflow-ms/op")
	b.ReportMetric(ms(y), "yq-ms/op")
	b.ReportMetric(float64(y)/float64(bf), "yq/backflow")
	// The fastest runs are the ones no neighbour disturbed.
	b.ReportMetric(ms(slices.Min(bfTimes)), "backflow-min-ms")
	b.ReportMetric(ms(slices.Min(yqTimes)), "yq-min-ms")
}

func ms(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e6 }

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
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
