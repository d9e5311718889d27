package server

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestAdmissionMetrics(t *testing.T) {
	m := NewMetrics()
	waiting, confirmed := int64(0), int64(0)
	m.WatchAdmission(func() (int64, int64) { return waiting, confirmed }, "budget", "change")
	m.AdmissionRefused("change")
	inFlight := int64(0)
	m.WatchAdmissionInFlight(func() int64 { return inFlight })
	m.AdmissionBusy()
	waiting, confirmed, inFlight = 4096, 512, 8192
	w := httptest.NewRecorder()
	m.Handler().ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	body := w.Body.String()
	for _, want := range []string{
		// why: the bytes are read at the scrape, not when registered.
		`backflow_admission_held_bytes{state="waiting"} 4096`,
		`backflow_admission_held_bytes{state="confirmed"} 512`,
		// why: every reason is a series from the start.
		`backflow_admission_records_refused_total{reason="budget"} 0`,
		`backflow_admission_records_refused_total{reason="change"} 1`,
		// why: what is being read, and what was turned away for it.
		`backflow_admission_inflight_bytes 8192`,
		`backflow_admission_reviews_busy_total 1`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}
