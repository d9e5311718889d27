package reliability

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
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

// returned serves h and sends on the channel when each ServeHTTP has
// returned, so a measure taken after it sees what the handler kept, not
// the body it was still reading: the client has its answer before the
// handler's goroutine lets go of the body.
func returned(h http.Handler) (http.Handler, <-chan struct{}) {
	done := make(chan struct{}, 1)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() { done <- struct{}{} }()
		h.ServeHTTP(w, r)
	}), done
}

// liveHeap is the heap in use after two collections: the first can find
// a review's buffer still on the stack of the client's or the listener's
// connection goroutine, which lets go of it a moment later (seen as an
// extra review's bytes in one reading of three under -race).
func liveHeap() uint64 {
	runtime.GC()
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
	h, served := returned(&source.AdmissionHandler{Log: log})
	l := startAdmissionListener(t, h, false)
	l.post(t, admissionBody("warm-up")) // the listener's and the client's buffers
	<-served
	before := liveHeap()
	peak := before
	var peakHeld int64
	for i := range n {
		body := bigReview(i, size)
		if len(body) > source.DefaultAdmissionMaxBytes {
			t.Fatalf("review %d is %d bytes, over the body cap", i, len(body))
		}
		l.post(t, body)
		<-served
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

// Case 27b: the reviews being read at once are bounded by bytes. 40
// reviews (10 in the short form) of ~4 MiB, posted to the real listener
// all at once (no client certificate): the bytes in flight stay within
// admission.maxInFlightBytes (the default), the reviews beyond it are
// answered 429 with Retry-After before their bodies are read, and the
// live heap grows by about the in-flight bound and the records' budget,
// not by the reviews' sum.
func TestCase27ConcurrentReviewsBoundedInFlight(t *testing.T) {
	n := count(10, 40)
	size := 4<<20 - 4096
	var busy atomic.Int64
	log := &observe.AdmissionLog{}
	h := &source.AdmissionHandler{Log: log, OnBusy: func() { busy.Add(1) }}
	l := startAdmissionListener(t, h, false)
	l.post(t, admissionBody("warm-up"))
	// Two bodies shared by every request, so the client's copies are in
	// the heap before the measure starts.
	bodies := [][]byte{bigReview(0, size), bigReview(1, size)}
	before := liveHeap()
	stop, sampled := make(chan struct{}), make(chan uint64)
	go func() {
		peak := before
		for {
			select {
			case <-stop:
				sampled <- peak
				return
			default:
				peak = max(peak, liveHeap())
			}
		}
	}()
	var (
		wg               sync.WaitGroup
		start            = make(chan struct{})
		mu               sync.Mutex
		statuses         = map[int]int{}
		failed           int
		retryAfter       = true
		peakInFlight     int64
		peakInFlightSeen = make(chan struct{})
	)
	go func() {
		defer close(peakInFlightSeen)
		for {
			select {
			case <-stop:
				return
			default:
				v := h.InFlightBytes()
				mu.Lock()
				peakInFlight = max(peakInFlight, v)
				mu.Unlock()
				runtime.Gosched()
			}
		}
	}()
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			resp, err := l.client.Post(l.url, "application/json", bytes.NewReader(bodies[i%2]))
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				// The listener closes a connection whose unread body it
				// refused; the API server counts that as a failed call.
				failed++
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			statuses[resp.StatusCode]++
			if resp.StatusCode == http.StatusTooManyRequests && resp.Header.Get("Retry-After") != source.AdmissionRetryAfter {
				retryAfter = false
			}
		}()
	}
	close(start)
	wg.Wait()
	close(stop)
	peak := <-sampled
	<-peakInFlightSeen
	after := liveHeap()
	growth := int64(peak) - int64(before)
	bound := int64(source.DefaultAdmissionMaxInFlightBytes)
	budget := int64(observe.DefaultAdmissionMaxHeldBytes)
	if peakInFlight > bound {
		t.Errorf("%d bytes in flight, over the bound of %d", peakInFlight, bound)
	}
	if statuses[http.StatusOK] == 0 || statuses[http.StatusOK]+statuses[http.StatusTooManyRequests]+failed != n {
		t.Errorf("answers %v and %d failed calls for %d reviews: want some read and the rest turned away", statuses, failed, n)
	}
	if n > 4 && statuses[http.StatusTooManyRequests]+failed == 0 {
		t.Errorf("no review of %d turned away: the bound did not hold", n)
	}
	if !retryAfter {
		t.Errorf("a 429 without Retry-After: %s", source.AdmissionRetryAfter)
	}
	// Reading a review costs the heap up to about ten times its bytes
	// (the body, then a mapping of many small entries decoded; twelve
	// under the race detector); what is held waiting is within its own
	// budget. Unbounded, the 40 reviews grew it by about 950 MB.
	if limit := 16*bound + budget; growth > limit {
		t.Errorf("the live heap grew by %d bytes over %d concurrent reviews, more than %d", growth, n, limit)
	}
	report(t, "27b", "admission-reads-bounded-in-flight", "reviews", n, "review_bytes", size, "in_flight_bound_bytes", bound,
		"peak_in_flight_bytes", peakInFlight, "read", statuses[http.StatusOK], "answered_429", statuses[http.StatusTooManyRequests],
		"connections_closed", failed, "busy_counted", busy.Load(), "heap_before_bytes", before, "peak_heap_bytes", peak,
		"heap_after_bytes", after, "peak_heap_growth_bytes", growth)
}
