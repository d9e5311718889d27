package localhub

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"
)

// Server is a hub listening on a loopback port, as tests of other packages
// and the demo need it: one call to start, the URLs to give clients.
type Server struct {
	*Hub
	// URL is the hub's root, http://127.0.0.1:port, without a trailing slash.
	URL  string
	srv  *http.Server
	done chan error
}

// Listen starts a hub on addr ("127.0.0.1:0" picks a free port).
func Listen(addr string, opts Options) (*Server, error) {
	h, err := New(opts)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		h.Close()
		return nil, fmt.Errorf("listening on %s: %w", addr, err)
	}
	s := &Server{
		Hub:  h,
		URL:  "http://" + ln.Addr().String(),
		srv:  &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second},
		done: make(chan error, 1),
	}
	h.SetBaseURL(s.URL)
	go func() { s.done <- s.srv.Serve(ln) }()
	return s, nil
}

// APIURL is the REST base URL for go-github (it must end with a slash).
func (s *Server) APIURL() string { return s.URL + "/" }

// GraphQLURL is the GraphQL endpoint.
func (s *Server) GraphQLURL() string { return s.URL + "/graphql" }

// CloneURL is the git smart-HTTP URL of owner/name.
func (s *Server) CloneURL(full string) string { return s.URL + "/" + full + ".git" }

// Done is closed with the serving error if the listener fails.
func (s *Server) Done() <-chan error { return s.done }

// Close stops serving (waiting for requests in flight) and closes the hub.
func (s *Server) Close() error {
	err := s.srv.Close()
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return errors.Join(err, s.Hub.Close())
}
