package main

import (
	"bytes"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"sync/atomic"

	"github.com/backflow-dev/backflow/internal/bot"
	"github.com/backflow-dev/backflow/internal/observe"
	"github.com/backflow-dev/backflow/internal/observe/source"
	"github.com/backflow-dev/backflow/internal/server"
)

// serveLive connects the live-cluster sources to the server: a watched
// Kubernetes object that changes, and new audit events from the webhook,
// ask for a cycle of every repository at once, rather than at the next
// scheduled run. It returns the POST /audit route when audit.webhook is
// configured, and attach, to be called with the server once it is built.
func serveLive(c *bot.Config, sources []bot.Source, logger *slog.Logger) (routes map[string]http.Handler, attach func(*server.Server), err error) {
	var srv atomic.Pointer[server.Server]
	request := func() {
		if s := srv.Load(); s != nil {
			s.RequestAll(server.Trigger{Kind: server.TriggerObservation})
		}
	}
	attach = srv.Store
	for _, s := range sources {
		if ks, ok := s.(*source.KubeSource); ok {
			ks.OnChange = func(observe.ObjectKey) { request() }
		}
	}
	w := c.Audit.Webhook
	if !w.Enabled() {
		return nil, attach, nil
	}
	token, err := serveSecret(c, "audit.webhook.token", w.TokenFile, w.TokenEnv)
	if err != nil {
		return nil, nil, err
	}
	secret, err := serveSecret(c, "audit.webhook.secret", w.SecretFile, w.SecretEnv)
	if err != nil {
		return nil, nil, err
	}
	h := &source.AuditHandler{Log: c.AuditLog(), Token: string(token), Secret: secret, MaxBytes: w.MaxBytes,
		Logger: logger, Accepted: func(int) { request() }}
	return map[string]http.Handler{"POST /audit": h}, attach, nil
}

// serveSecret reads a secret named by a file (relative to the config's
// folder; one trailing newline ignored) or an environment variable. Neither
// named is no secret. Errors name the key and where, never the value.
func serveSecret(c *bot.Config, key, file, env string) ([]byte, error) {
	switch {
	case file != "":
		b, err := os.ReadFile(c.Resolve(file))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", key, err)
		}
		b = bytes.TrimSuffix(bytes.TrimSuffix(b, []byte("\n")), []byte("\r"))
		if len(b) == 0 {
			return nil, fmt.Errorf("%s: %s is empty", key, file)
		}
		return b, nil
	case env != "":
		v, ok := os.LookupEnv(env)
		if !ok || v == "" {
			return nil, fmt.Errorf("%s: environment variable %s is empty or unset", key, env)
		}
		return []byte(v), nil
	}
	return nil, nil
}
