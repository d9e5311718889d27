package source

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strings"

	"github.com/backflow-dev/backflow/internal/observe"
)

// AuditSignatureHeader carries the HMAC-SHA256 of a POST /audit body under
// the audit secret, as "sha256=" and 64 hex characters.
const AuditSignatureHeader = "X-Backflow-Audit-Signature-256"

// DefaultAuditMaxBytes caps one POST /audit body: the API server's webhook
// backend sends batches of up to 400 events.
const DefaultAuditMaxBytes = 16 << 20

// AuditHandler serves POST /audit: the Kubernetes API server's audit webhook
// backend posts EventList batches to it. It has its own credential, apart
// from the GitHub webhook's and the observation push's: a bearer token (what
// the backend's kubeconfig sends) or an HMAC signature of the body. With
// neither configured it refuses every request (fail closed).
type AuditHandler struct {
	// Log keeps the accepted events.
	Log *AuditLog
	// Token is the bearer token the webhook backend presents.
	Token string
	// Secret keys AuditSignatureHeader.
	Secret []byte
	// MaxBytes caps the body; zero means DefaultAuditMaxBytes.
	MaxBytes int64
	// Logger receives one line per refused or accepted batch; nil discards.
	Logger *slog.Logger
	// Accepted, when set, is told how many new events each batch brought
	// (to start a cycle, say).
	Accepted func(n int)
	// AcceptedObjects, when set, is told the objects of each accepted
	// batch's events (Kind empty: an audit event names a resource), so that
	// only the repositories claiming them are cycled.
	AcceptedObjects func(objects []observe.ObjectKey)
}

// auditAnswer is the JSON answer of POST /audit.
type auditAnswer struct {
	Accepted int      `json:"accepted"`
	Skipped  int      `json:"skipped"`
	Errors   []string `json:"errors,omitempty"`
}

// ServeHTTP implements http.Handler.
func (h *AuditHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
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
		limit = DefaultAuditMaxBytes
	}
	// The body is capped before anything reads it, the signature included.
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			log.Warn("audit batch refused", "reason", "body too large", "max", limit)
			http.Error(w, "body too large", http.StatusRequestEntityTooLarge)
			return
		}
		http.Error(w, "unreadable body", http.StatusBadRequest)
		return
	}
	if reason := h.authenticate(r, body); reason != "" {
		log.Warn("audit batch refused", "reason", reason)
		http.Error(w, "unauthorized", http.StatusUnauthorized)
		return
	}
	res := observe.ParseAuditEvents(body, "audit webhook")
	if len(res.Events) == 0 && res.Skipped == 0 && len(res.Errors) > 0 {
		log.Warn("audit batch rejected", "error", res.Errors[0])
		http.Error(w, res.Errors[0].Error(), http.StatusBadRequest)
		return
	}
	added := h.Log.Add(res.Events...)
	ans := auditAnswer{Accepted: added, Skipped: res.Skipped + len(res.Events) - added}
	for _, e := range res.Errors {
		ans.Errors = append(ans.Errors, e.Error())
	}
	log.Info("audit batch", "accepted", added, "skipped", ans.Skipped, "errors", len(res.Errors))
	if added > 0 && h.Accepted != nil {
		h.Accepted(added)
	}
	if added > 0 && h.AcceptedObjects != nil {
		objects := make([]observe.ObjectKey, 0, len(res.Events))
		for _, e := range res.Events {
			objects = append(objects, e.Object.Key())
		}
		h.AcceptedObjects(objects)
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(ans)
}

// authenticate returns why the request is refused, or "". A signature, when
// present, must verify; a token cannot rescue a bad one.
func (h *AuditHandler) authenticate(r *http.Request, body []byte) string {
	if h.Token == "" && len(h.Secret) == 0 {
		return "no audit credential is configured"
	}
	if sig := r.Header.Get(AuditSignatureHeader); sig != "" {
		if len(h.Secret) == 0 {
			return "signed, but no audit secret is configured"
		}
		hexSum, ok := strings.CutPrefix(sig, "sha256=")
		got, err := hex.DecodeString(hexSum)
		if !ok || err != nil || len(got) != sha256.Size {
			return "malformed signature"
		}
		mac := hmac.New(sha256.New, h.Secret)
		mac.Write(body)
		if !hmac.Equal(got, mac.Sum(nil)) {
			return "signature mismatch"
		}
		return ""
	}
	scheme, token, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || h.Token == "" {
		return "no signature and no bearer token"
	}
	// Compare digests so the comparison takes the same time whatever the
	// lengths.
	want, have := sha256.Sum256([]byte(h.Token)), sha256.Sum256([]byte(strings.TrimSpace(token)))
	if subtle.ConstantTimeCompare(want[:], have[:]) != 1 {
		return "wrong bearer token"
	}
	return ""
}
