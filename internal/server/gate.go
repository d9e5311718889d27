package server

import (
	"context"
	"net/http"
)

// Gate says whether this process may write: with several replicas, only
// the one holding the lease runs cycles, and only it is ready, so that the
// Service sends the push endpoints to it. Deps.Gate nil means this process
// always leads (one replica).
type Gate interface {
	// Term returns a context that ends when this process stops leading,
	// and false when it does not lead now.
	Term() (context.Context, bool)
}

// leading reports whether this process leads now.
func (s *Server) leading() bool {
	if s.gate == nil {
		return true
	}
	_, ok := s.gate.Term()
	return ok
}

// term is the context one cycle runs in: ctx, ended as well the moment
// this process stops leading, so that a replica that lost its lease stops
// writing at once. ok is false when this process does not lead: the cycle
// does not run. release frees the context.
func (s *Server) term(ctx context.Context) (cycle context.Context, release context.CancelFunc, ok bool) {
	if s.gate == nil {
		return ctx, func() {}, true
	}
	term, ok := s.gate.Term()
	if !ok {
		return nil, nil, false
	}
	cycle, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(term, cancel)
	return cycle, func() { stop(); cancel() }, true
}

// leaderOnly answers 503 on a standby replica for the routes whose requests
// only the leader can act on (webhooks, pushed observations, audit
// batches): what a standby accepted would never reach the cycles. The
// senders retry (the API server's audit backend does; cub-scout re-pushes),
// and the Service, which reads /readyz, sends them to the leader.
func (s *Server) leaderOnly(h http.Handler) http.Handler {
	if s.gate == nil {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.leading() {
			s.log.Debug("refused on standby", "path", r.URL.Path)
			w.Header().Set("Retry-After", "1")
			refuse(w, http.StatusServiceUnavailable, "standby: another replica leads")
			return
		}
		h.ServeHTTP(w, r)
	})
}
