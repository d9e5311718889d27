package server

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
)

// writeJSON answers with v as JSON.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// readBody reads a request body up to limit bytes. A body over the cap is
// refused with 413 before any of it is hashed or parsed: at once when
// Content-Length says so, otherwise as soon as the reader passes the cap
// (chunked bodies have no Content-Length), so memory stays bounded by limit.
// It returns 0 and the body, or the status to answer with.
func readBody(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, int) {
	if r.ContentLength > limit {
		return nil, http.StatusRequestEntityTooLarge
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return nil, http.StatusRequestEntityTooLarge
		}
		return nil, http.StatusBadRequest
	}
	return body, 0
}

// refuse answers status with a short reason.
func refuse(w http.ResponseWriter, status int, reason string) {
	writeJSON(w, status, map[string]string{"error": reason})
}
