package source

import (
	"errors"
	"io"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/backflow-dev/backflow/internal/observe"
)

// DefaultAdmissionMaxBytes caps one POST /admission body: a review carries
// the object twice (old and new), and the API server caps an object at
// about 1.5 MiB.
const DefaultAdmissionMaxBytes = 4 << 20

// DefaultAdmissionMaxInFlightBytes bounds the review bytes being read and
// parsed at once: two reviews at the body cap, or thousands of ordinary
// ones (a few KB each). Reading costs the heap up to about ten times the
// bytes (a mapping of many small entries, decoded), so this keeps a burst
// of large reviews to tens of MB.
const DefaultAdmissionMaxInFlightBytes = 8 << 20

// AdmissionRetryAfter is the Retry-After of a review answered 429 because
// too many bytes are in flight: the API server's webhook client (client-go)
// retries a 429 after it within the webhook's timeoutSeconds, and with
// failurePolicy Ignore admits the write unrecorded when time runs out.
const AdmissionRetryAfter = "1"

// AdmissionHandler serves POST /admission: the API server's validating
// admission webhook. It always allows (backflow only watches): every
// answer is allowed: true, echoing the request uid when the body carries
// one, so it never blocks a change, whatever the body. Reviews of changes
// are kept in Log, to be confirmed by the watch. It logs nothing of a
// review beyond the object's key, the user and the field names. It is
// meant to be served only over TLS, on a listener of its own.
//
// The bytes of the reviews being read at once are bounded (MaxInFlightBytes,
// each review weighed by its Content-Length, or the body cap when it gives
// none): a review that does not fit is answered 429 with Retry-After before
// its body is read, which the API server retries and, past its timeout,
// ignores (failurePolicy: Ignore), so the write still goes through. One
// review is always read when none is, whatever its weight.
type AdmissionHandler struct {
	// Log keeps the records.
	Log *observe.AdmissionLog
	// Options say which reviews are not changes (GitOps controllers).
	Options observe.AdmissionOptions
	// MaxBytes caps the body; zero means DefaultAdmissionMaxBytes.
	MaxBytes int64
	// Logger receives one line per review; nil discards.
	Logger *slog.Logger
	// Now is the clock of the durations logged; nil means time.Now.
	Now func() time.Time
	// MaxInFlightBytes bounds the bytes of the reviews being read at once;
	// zero means DefaultAdmissionMaxInFlightBytes.
	MaxInFlightBytes int64
	// OnBusy, when set, is called for each review answered 429.
	OnBusy func()

	mu       sync.Mutex
	inFlight int64
}

// InFlightBytes is the weight of the reviews being read now.
func (h *AdmissionHandler) InFlightBytes() int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.inFlight
}

// acquire takes weight bytes of the in-flight bound, reporting whether they
// fit (or nothing else is in flight).
func (h *AdmissionHandler) acquire(weight int64) bool {
	bound := h.MaxInFlightBytes
	if bound <= 0 {
		bound = DefaultAdmissionMaxInFlightBytes
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.inFlight > 0 && h.inFlight+weight > bound {
		return false
	}
	h.inFlight += weight
	return true
}

func (h *AdmissionHandler) release(weight int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.inFlight -= weight
}

// ServeHTTP implements http.Handler.
func (h *AdmissionHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	now := h.Now
	if now == nil {
		now = time.Now
	}
	start := now()
	log := h.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	limit := h.MaxBytes
	if limit <= 0 {
		limit = DefaultAdmissionMaxBytes
	}
	answer := func(uid string) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(observe.AdmissionAllow(uid))
	}
	if r.TLS == nil {
		// Only the TLS listener carries reviews; allowed all the same.
		log.Warn("admission review refused", "reason", "not over TLS")
		answer("")
		return
	}
	// Weighed before reading: the body cap bounds one review, this bounds
	// them together (40 reviews at the cap, read at once, held the heap at
	// hundreds of MB).
	weight := limit
	if r.ContentLength >= 0 && r.ContentLength < limit {
		weight = r.ContentLength
	}
	if !h.acquire(weight) {
		if h.OnBusy != nil {
			h.OnBusy()
		}
		log.Warn("admission review refused", "reason", "too many bytes in flight", "bytes", weight,
			"retryAfter", AdmissionRetryAfter)
		w.Header().Set("Retry-After", AdmissionRetryAfter)
		http.Error(w, "too many admission review bytes in flight", http.StatusTooManyRequests)
		return
	}
	defer h.release(weight)
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	if err != nil {
		reason := "unreadable body"
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			reason = "body too large"
		}
		log.Warn("admission review refused", "reason", reason, "max", limit)
		answer("")
		return
	}
	rv, err := observe.ParseAdmissionReview(body, h.Options)
	took := func() int64 { return now().Sub(start).Microseconds() }
	switch {
	case err != nil:
		log.Warn("admission review refused", "reason", err.Error(), "duration_us", took())
	case rv.Record == nil:
		log.Info("admission review", "skipped", rv.Skipped, "duration_us", took())
	default:
		rec := rv.Record
		if err := h.Log.Add(*rec); err != nil {
			// Refused records are reported by the log's OnRefuse too.
			var ref *observe.AdmissionRefusal
			reason := "refused"
			if errors.As(err, &ref) {
				reason = ref.Reason
			}
			log.Warn("admission review", "object", rec.Object.String(), "uid", rec.UID, "user", rec.User,
				"fields", rec.FieldPaths(), "kept", false, "refused", reason, "duration_us", took())
			break
		}
		log.Info("admission review", "object", rec.Object.String(), "uid", rec.UID, "user", rec.User,
			"fields", rec.FieldPaths(), "kept", true, "duration_us", took())
	}
	uid := rv.UID
	if uid == "" {
		// A body refused before its uid was read may still carry one.
		uid = observe.AdmissionUID(body)
	}
	answer(uid)
}
