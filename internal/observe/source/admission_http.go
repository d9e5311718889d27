package source

import (
	"errors"
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/backflow-dev/backflow/internal/observe"
)

// DefaultAdmissionMaxBytes caps one POST /admission body: a review carries
// the object twice (old and new), and the API server caps an object at
// about 1.5 MiB.
const DefaultAdmissionMaxBytes = 4 << 20

// AdmissionHandler serves POST /admission: the API server's validating
// admission webhook. It always allows (backflow only watches): every
// answer is allowed: true, echoing the request uid when the body carries
// one, so it never blocks a change, whatever the body. Reviews of changes
// are kept in Log, to be confirmed by the watch. It logs nothing of a
// review beyond the object's key, the user and the field names. It is
// meant to be served only over TLS, on a listener of its own.
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
