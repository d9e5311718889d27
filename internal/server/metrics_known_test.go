package server

import (
	"io"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
)

func scrape(t *testing.T, m *Metrics) string {
	t.Helper()
	rr := httptest.NewRecorder()
	m.Handler().ServeHTTP(rr, httptest.NewRequest("GET", "/metrics", nil))
	b, err := io.ReadAll(rr.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// Before anything happened, every known series is there at zero, so that a
// rate() or an alert sees the first increment; build_info says what runs.
func TestMetricsStartAtZero(t *testing.T) {
	m := NewMetrics()
	m.SetVersion("v1.2.3")
	m.KnownDecisions("allow", "deny")
	out := scrape(t, m)
	for _, want := range []string{
		`backflow_cycles_total{result="error"} 0`,
		`backflow_webhook_deliveries_total{event="push",result="unauthorized"} 0`,
		`backflow_webhook_deliveries_total{event="other",result="queued"} 0`,
		`backflow_observation_pushes_total{result="unauthorized"} 0`,
		`backflow_decision_attributions_total{attribution="unknown"} 0`,
		`backflow_decisions_total{outcome="deny"} 0`,
		`backflow_errors_total{kind="cycle"} 0`,
		`backflow_receipts_refused_total 0`,
		`backflow_build_info{goversion="` + runtime.Version() + `",revision="`,
		`version="v1.2.3"} 1`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if strings.Contains(out, `version="dev"`) {
		t.Error("build_info kept the version it had before SetVersion")
	}
	m.DecisionAttribution("unknown")
	m.ReceiptRefused()
	out = scrape(t, m)
	for _, want := range []string{`backflow_decision_attributions_total{attribution="unknown"} 1`, `backflow_receipts_refused_total 1`} {
		if !strings.Contains(out, want) {
			t.Errorf("/metrics lacks %s after counting", want)
		}
	}
}
