package reliability

import (
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/backflow-dev/backflow/internal/observe"
	"github.com/backflow-dev/backflow/internal/observe/source"
)

// bigReview is a review of ~size bytes, under the body cap, that adds one
// large field to redis-replicas: a string (even i) or a mapping of many
// small entries (odd i), which Go holds at several times its JSON size.
func bigReview(i, size int) []byte {
	var added string
	if i%2 == 0 {
		added = fmt.Sprintf(`"blob":%q`, strings.Repeat("x", size-2048))
	} else {
		var b strings.Builder
		b.WriteString(`"blob":{`)
		for n := 0; b.Len() < size-2048; n++ {
			if n > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `"k%07d":"v"`, n)
		}
		b.WriteByte('}')
		added = b.String()
	}
	obj := func(extra string) string {
		return `{"apiVersion":"apps/v1","kind":"StatefulSet","metadata":{"name":"redis-replicas","namespace":"redis","uid":"sts-uid","resourceVersion":"204"},` +
			`"spec":{"replicas":3` + extra + `}}`
	}
	return []byte(fmt.Sprintf(`{"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1","request":{"uid":"big-%d",`+
		`"resource":{"group":"apps","version":"v1","resource":"statefulsets"},"name":"redis-replicas","namespace":"redis",`+
		`"operation":"UPDATE","userInfo":{"username":"mallory","groups":["sre"]},"object":%s,"oldObject":%s,"dryRun":false}}`,
		i, obj(","+added), obj("")))
}

// liveHeap is the heap in use after a collection.
func liveHeap() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// Case 27: admission records are bounded by bytes. 40 reviews (10 in the
// short form) of ~4 MiB
// (under the body cap, no client certificate), each adding a large field
// that no watch ever confirms, are posted to the real listener: the bytes
// the waiting records hold stay within the budget (the default,
// admission.maxHeldBytes), the reviews beyond it are refused and counted,
// and the live heap grows by no more than the budget and the listener's
// own buffers.
func TestCase27AdmissionRecordsBoundedByBytes(t *testing.T) {
	n := count(10, 40)
	size := 4<<20 - 4096
	log := &observe.AdmissionLog{}
	refused := 0
	log.OnRefuse = func(r observe.AdmissionRefusal) {
		if r.Reason == observe.RefusedBudget {
			refused++
		}
	}
	l := startAdmissionListener(t, &source.AdmissionHandler{Log: log}, false)
	l.post(t, admissionBody("warm-up")) // the listener's and the client's buffers
	before := liveHeap()
	peak := before
	var peakHeld int64
	for i := range n {
		body := bigReview(i, size)
		if len(body) > source.DefaultAdmissionMaxBytes {
			t.Fatalf("review %d is %d bytes, over the body cap", i, len(body))
		}
		l.post(t, body)
		peak = max(peak, liveHeap())
		st := log.Stats()
		peakHeld = max(peakHeld, st.PendingBytes+st.ConfirmedBytes)
	}
	after := liveHeap()
	st := log.Stats()
	budget := int64(observe.DefaultAdmissionMaxHeldBytes)
	growth := int64(peak) - int64(before)
	if peakHeld > budget {
		t.Errorf("the records held %d bytes, over the budget of %d", peakHeld, budget)
	}
	// The estimate errs high: what the records really cost the heap stays
	// under the budget, with room for the listener's connection buffers.
	if slack := int64(4 << 20); growth > budget+slack {
		t.Errorf("the live heap grew by %d bytes over %d reviews, more than the budget of %d and %d of slack", growth, n, budget, slack)
	}
	if refused == 0 || st.Pending+refused != n+1 {
		t.Errorf("kept %d and refused %d of %d reviews", st.Pending, refused, n)
	}
	report(t, "27", "admission-records-bounded-by-bytes", "reviews", n, "review_bytes", size, "budget_bytes", budget,
		"held_bytes", st.PendingBytes+st.ConfirmedBytes, "peak_held_bytes", peakHeld, "kept", st.Pending-1, "refused_for_budget", refused,
		"heap_before_bytes", before, "peak_heap_bytes", peak, "heap_after_bytes", after, "peak_heap_growth_bytes", growth)
}
