package server

import (
	"errors"
	"net/http"
	"strings"
)

// ObservationSignatureHeader carries the HMAC-SHA256 signature of a push to
// /observations, in the X-Hub-Signature-256 format ("sha256=" and 64 hex
// characters) under the observation secret.
const ObservationSignatureHeader = "X-Backflow-Signature-256"

// handleObservations takes a push of observations: body cap (413), then
// authentication by signature or bearer token (401, with no other effect),
// then the sink, then an immediate cycle of every repository the push
// concerns.
func (s *Server) handleObservations(w http.ResponseWriter, r *http.Request) {
	body, status := readBody(w, r, s.cfg.MaxBodyBytes)
	if status != 0 {
		result := resultBadRequest
		if status == http.StatusRequestEntityTooLarge {
			result = resultTooLarge
		}
		s.metrics.observation(result)
		refuse(w, status, result)
		return
	}
	if reason := s.authenticatePush(r, body); reason != "" {
		s.metrics.observation(resultUnauthorized)
		s.log.Warn("observation push refused", "result", resultUnauthorized, "reason", reason)
		refuse(w, http.StatusUnauthorized, "unauthorized")
		return
	}
	res, err := s.sink.Accept(r.Context(), body)
	if err != nil {
		if errors.Is(err, ErrInvalidPush) {
			s.metrics.observation(resultBadRequest)
			s.log.Warn("observation push rejected", "err", err)
			refuse(w, http.StatusBadRequest, err.Error())
			return
		}
		s.metrics.observation(resultError)
		s.metrics.Error("observations")
		s.log.Error("observation push failed", "err", err)
		refuse(w, http.StatusInternalServerError, "internal error")
		return
	}
	for _, repo := range res.Repositories {
		if !s.queue.enqueue(repo, Trigger{Kind: TriggerObservation}) {
			s.metrics.observation(resultUnavailable)
			refuse(w, http.StatusServiceUnavailable, "shutting down")
			return
		}
	}
	if res.Repositories == nil {
		res.Repositories = []string{}
	}
	s.metrics.observation(resultQueued)
	s.log.Info("observation push", "accepted", res.Accepted, "rejected", len(res.Rejected), "repos", res.Repositories)
	writeJSON(w, http.StatusAccepted, res)
}

// authenticatePush checks the push's signature, or else its bearer token,
// and returns why it is refused ("" when it is not). A signature, when
// present, must verify: a token cannot rescue a request with a bad one.
func (s *Server) authenticatePush(r *http.Request, body []byte) string {
	if sig := r.Header.Get(ObservationSignatureHeader); sig != "" {
		if err := VerifySignature(s.cfg.ObservationSecret, body, sig); err != nil {
			return err.Error()
		}
		return ""
	}
	auth := r.Header.Get("Authorization")
	if auth == "" {
		return "no signature and no bearer token"
	}
	scheme, token, ok := strings.Cut(auth, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "authorization scheme is not Bearer"
	}
	if !tokenEqual(s.cfg.ObservationToken, token) {
		return "bearer token does not match"
	}
	return ""
}
