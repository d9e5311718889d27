package server

import (
	"context"
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
	body, ok := s.pushBody(w, r)
	if !ok {
		return
	}
	if reason := s.authenticatePush(r, body); reason != "" {
		s.metrics.observation(resultUnauthorized)
		s.log.Warn("observation push refused", "result", resultUnauthorized, "reason", reason)
		refuse(w, http.StatusUnauthorized, "unauthorized")
		return
	}
	s.acceptPush(w, r.WithContext(WithPushVia(r.Context(), ViaHeader)), body)
}

// handleSecretURL takes a push to /observations/{token}, for a sender that
// cannot set a header (cub-scout watch --webhook): the token in the path is
// the only credential. It is compared in constant time with every accepted
// token and never logged; the sink is told the push came this way, so that
// it believes it no higher than the secret URL's own trust ceiling.
func (s *Server) handleSecretURL(w http.ResponseWriter, r *http.Request) {
	if !s.urlTokenAccepted(r.PathValue("token")) {
		s.metrics.observation(resultUnauthorized)
		s.log.Warn(
			"observation push refused",
			"result",
			resultUnauthorized,
			"reason",
			"the secret URL's token is not accepted",
		)
		refuse(w, http.StatusUnauthorized, "unauthorized")
		return
	}
	body, ok := s.pushBody(w, r)
	if !ok {
		return
	}
	s.acceptPush(w, r.WithContext(WithPushVia(r.Context(), ViaSecretURL)), body)
}

// urlTokenAccepted compares got with every accepted secret-URL token, all
// of them whatever the outcome, so that the time taken says nothing about
// which one matched or where they differ.
func (s *Server) urlTokenAccepted(got string) bool {
	ok := false
	for _, want := range s.cfg.ObservationURLTokens {
		if tokenEqual(want, got) {
			ok = true
		}
	}
	return ok
}

// pushBody reads a push's body under the cap, answering 400 or 413 itself.
func (s *Server) pushBody(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	body, status := readBody(w, r, s.cfg.MaxBodyBytes)
	if status != 0 {
		result := resultBadRequest
		if status == http.StatusRequestEntityTooLarge {
			result = resultTooLarge
		}
		s.metrics.observation(result)
		refuse(w, status, result)
		return nil, false
	}
	return body, true
}

// acceptPush hands an authenticated push to the sink and queues a cycle of
// every repository it concerns.
func (s *Server) acceptPush(w http.ResponseWriter, r *http.Request, body []byte) {
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
	for _, n := range res.Notices {
		s.log.Warn("observer notice", "notice", n)
	}
	s.metrics.observation(resultQueued)
	s.log.Info(
		"observation push",
		"via",
		PushVia(r.Context()),
		"accepted",
		res.Accepted,
		"rejected",
		len(res.Rejected),
		"repos",
		res.Repositories,
	)
	writeJSON(w, http.StatusAccepted, res)
}

// Via says how a push reached the server, for a sink that believes pushes
// differently by the way they came.
type Via string

// The ways in: a header (a signature or a bearer token) or a secret URL.
const (
	ViaHeader    Via = "header"
	ViaSecretURL Via = "secret-url"
)

type pushViaKey struct{}

// WithPushVia returns ctx saying the push came in by via.
func WithPushVia(ctx context.Context, via Via) context.Context {
	return context.WithValue(ctx, pushViaKey{}, via)
}

// PushVia is the way the push whose context ctx is came in; ViaHeader when
// the context says nothing.
func PushVia(ctx context.Context) Via {
	if v, ok := ctx.Value(pushViaKey{}).(Via); ok {
		return v
	}
	return ViaHeader
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
