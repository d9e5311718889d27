package server

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"sync"
	"time"
)

// AdmissionTLS is the credential of the admission webhook's own listener:
// the serving certificate the operator provides (cert-manager's Secret, or
// one made by hand), and optionally the CA of client certificates to
// require (an API server configured to present one).
type AdmissionTLS struct {
	// CertFile and KeyFile are PEM files, as a kubernetes.io/tls Secret is
	// mounted (tls.crt, tls.key). They are read again when they change, so
	// a renewed certificate is served without a restart.
	CertFile, KeyFile string
	// ClientCAFile, when set, makes the listener require a client
	// certificate signed by one of its CAs.
	ClientCAFile string
	// Now is the clock of the reload checks; nil means time.Now.
	Now func() time.Time
}

// certReloadEvery is how often the certificate files are checked for a
// change.
const certReloadEvery = 30 * time.Second

// certReloader serves the certificate of two files, read again when their
// modification time changes.
type certReloader struct {
	certFile, keyFile string
	now               func() time.Time

	mu      sync.Mutex
	cert    *tls.Certificate
	mod     time.Time
	checked time.Time
}

func (c *certReloader) load() error {
	ci, err := os.Stat(c.certFile)
	if err != nil {
		return fmt.Errorf("admission certificate: %w", err)
	}
	ki, err := os.Stat(c.keyFile)
	if err != nil {
		return fmt.Errorf("admission key: %w", err)
	}
	mod := ci.ModTime()
	if ki.ModTime().After(mod) {
		mod = ki.ModTime()
	}
	if c.cert != nil && mod.Equal(c.mod) {
		return nil
	}
	cert, err := tls.LoadX509KeyPair(c.certFile, c.keyFile)
	if err != nil {
		return fmt.Errorf("admission certificate %s and key %s: %w", c.certFile, c.keyFile, err)
	}
	c.cert, c.mod = &cert, mod
	return nil
}

func (c *certReloader) get(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if now := c.now(); now.Sub(c.checked) >= certReloadEvery {
		c.checked = now
		// A half-written renewal keeps the certificate served so far.
		_ = c.load()
	}
	return c.cert, nil
}

// Config builds the listener's TLS configuration; it fails when the
// certificate, the key or the client CA cannot be read.
func (a AdmissionTLS) Config() (*tls.Config, error) {
	if a.CertFile == "" || a.KeyFile == "" {
		return nil, errors.New("admission: certFile and keyFile are required: the webhook is served over TLS only")
	}
	now := a.Now
	if now == nil {
		now = time.Now
	}
	r := &certReloader{certFile: a.CertFile, keyFile: a.KeyFile, now: now}
	if err := r.load(); err != nil {
		return nil, err
	}
	r.checked = now()
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: r.get}
	if a.ClientCAFile != "" {
		pem, err := os.ReadFile(a.ClientCAFile)
		if err != nil {
			return nil, fmt.Errorf("admission client CA: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("admission client CA %s: no PEM certificate in it", a.ClientCAFile)
		}
		cfg.ClientCAs, cfg.ClientAuth = pool, tls.RequireAndVerifyClientCert
	}
	return cfg, nil
}

// ServeAdmission serves POST /admission with h over TLS on ln until ctx
// ends, then stops within a few seconds. Nothing else is served there, and
// nothing of h is served on the main listener.
func ServeAdmission(ctx context.Context, ln net.Listener, h http.Handler, cfg *tls.Config, logger *slog.Logger) error {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	mux := http.NewServeMux()
	mux.Handle("POST /admission", h)
	hs := &http.Server{
		Handler: mux, TLSConfig: cfg,
		// The API server waits at most its timeoutSeconds for an answer.
		ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 10 * time.Second, WriteTimeout: 10 * time.Second,
		IdleTimeout: 2 * time.Minute, MaxHeaderBytes: 64 << 10,
		ErrorLog: slog.NewLogLogger(logger.Handler(), slog.LevelDebug),
	}
	served := make(chan error, 1)
	go func() { served <- hs.Serve(tls.NewListener(ln, cfg)) }()
	logger.Info(
		"serving admission reviews",
		"addr",
		ln.Addr().String(),
		"clientCertificates",
		cfg.ClientAuth == tls.RequireAndVerifyClientCert,
	)
	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}
	stop, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := hs.Shutdown(stop); err != nil {
		return fmt.Errorf("stopping the admission listener: %w", err)
	}
	return nil
}
