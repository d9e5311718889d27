package server

import "github.com/prometheus/client_golang/prometheus"

// The admission webhook's records: what they hold, in bytes, and how many
// were refused or never confirmed. The wiring tells the reasons (a closed
// set of the record store's) and reads the bytes held at each scrape.

// WatchAdmission registers backflow_admission_held_bytes, read from held
// at each scrape (the bytes of the waiting and of the confirmed records),
// and backflow_admission_records_refused_total at zero for each of reasons.
// It is called once, when the webhook is configured.
func (m *Metrics) WatchAdmission(held func() (waiting, confirmed int64), reasons ...string) {
	for _, st := range []struct {
		state string
		read  func() float64
	}{
		{"waiting", func() float64 { w, _ := held(); return float64(w) }},
		{"confirmed", func() float64 { _, c := held(); return float64(c) }},
	} {
		m.registry.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "backflow_admission_held_bytes",
			Help: "Bytes the admission records hold (estimated as Go keeps them), by state (waiting for the watch, " +
				"confirmed); bounded by admission.maxHeldBytes.",
			ConstLabels: prometheus.Labels{"state": st.state},
		}, st.read))
	}
	for _, r := range reasons {
		m.admissionRefused.WithLabelValues(r)
	}
}

// AdmissionRefused counts an admission record refused or never confirmed,
// by reason (one of the reasons WatchAdmission was told).
func (m *Metrics) AdmissionRefused(reason string) { m.admissionRefused.WithLabelValues(reason).Inc() }

func newAdmissionRefused() *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "backflow_admission_records_refused_total",
		Help: "Admission records refused or never confirmed by the watch, by reason (budget, version, object, change, " +
			"expired).",
	}, []string{"reason"})
}

// WatchAdmissionInFlight registers backflow_admission_inflight_bytes, read
// from inFlight at each scrape (the bytes of the reviews being read), and
// backflow_admission_reviews_busy_total at zero. It is called once, when
// the webhook is configured.
func (m *Metrics) WatchAdmissionInFlight(inFlight func() int64) {
	m.registry.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "backflow_admission_inflight_bytes",
		Help: "Bytes of the admission reviews being read at once (each weighed by its Content-Length); bounded by " +
			"admission.maxInFlightBytes.",
	}, func() float64 { return float64(inFlight()) }), m.admissionBusy)
}

// AdmissionBusy counts a review answered 429 because too many bytes were
// in flight.
func (m *Metrics) AdmissionBusy() { m.admissionBusy.Inc() }
