package app

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync/atomic"

	"github.com/backflow-dev/backflow/internal/bot"
	"github.com/backflow-dev/backflow/internal/botconfig"
	"github.com/backflow-dev/backflow/internal/observe"
	"github.com/backflow-dev/backflow/internal/observe/source"
	"github.com/backflow-dev/backflow/internal/server"
)

// serveLive connects the live-cluster sources to the server: a watched
// Kubernetes object that changes, and new audit events from the webhook,
// ask for a cycle at once, rather than at the next scheduled run, of the
// repositories concerned lists for their objects. It returns the POST
// /audit route when audit.webhook is configured, and attach, to be called
// with the server once it is built.
func serveLive(c *Wiring, sources []bot.Source, concerned func([]observe.ObjectKey) []string, logger *slog.Logger) (
	routes map[string]http.Handler, attach func(*server.Server), err error,
) {
	var srv atomic.Pointer[server.Server]
	request := func(objects []observe.ObjectKey) {
		repos := concerned(objects)
		s := srv.Load()
		if s == nil {
			return
		}
		for _, repo := range repos {
			s.Request(repo, server.Trigger{Kind: server.TriggerObservation})
		}
	}
	attach = srv.Store
	for _, s := range sources {
		if ks, ok := s.(*source.KubeSource); ok {
			ks.OnChange = func(k observe.ObjectKey) { request([]observe.ObjectKey{k}) }
		}
	}
	w := c.Audit.Webhook
	if !w.Enabled() {
		return nil, attach, nil
	}
	token, err := c.Secret("audit.webhook.token", w.TokenFile, w.TokenEnv)
	if err != nil {
		return nil, nil, err
	}
	secret, err := c.Secret("audit.webhook.secret", w.SecretFile, w.SecretEnv)
	if err != nil {
		return nil, nil, err
	}
	h := &source.AuditHandler{Log: c.AuditLog(), Token: string(token), Secret: secret, MaxBytes: w.MaxBytes,
		Logger: logger, AcceptedObjects: request}
	return map[string]http.Handler{"POST /audit": h}, attach, nil
}

// admissionListener is the admission webhook's own TLS listener, bound
// before the server starts so that a taken port fails the start.
type admissionListener struct {
	ln      net.Listener
	handler http.Handler
	tls     *tls.Config
	logger  *slog.Logger
}

// serveAdmission binds the admission listener when admission is
// configured; nil when it is not.
func serveAdmission(c *Wiring, metrics *server.Metrics, logger *slog.Logger) (*admissionListener, error) {
	a := c.Admission
	if !a.Enabled() {
		return nil, nil
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	tlsFiles := server.AdmissionTLS{
		CertFile: c.Resolve(a.CertFile), KeyFile: c.Resolve(a.KeyFile), ClientCAFile: c.Resolve(a.ClientCAFile),
	}
	cfg, err := tlsFiles.Config()
	if err != nil {
		return nil, err
	}
	addr := a.Listen
	if addr == "" {
		addr = botconfig.DefaultAdmissionListen
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("admission.listen: %w", err)
	}
	log := c.AdmissionLog()
	log.OnConfirm = func(r observe.AdmissionRecord) {
		var fields []string
		for _, f := range r.Fields {
			if f.Confirmed {
				fields = append(fields, f.Path)
			}
		}
		// Who changed which fields, at which level: the check that
		// attribution works on a cluster. Names only, never values.
		logger.Info("attributed", "cluster", r.Cluster, "object", r.Object.String(), "fields", fields,
			"actor", r.User, "groups", r.Groups, "attribution", string(observe.AttributionAdmission),
			"review", r.ReviewUID, "resourceVersion", r.ConfirmedVersion)
	}
	log.OnRefuse = func(r observe.AdmissionRefusal) {
		// A record that claims a transition the watch did not see as it
		// claims: a failed write, or a forged review. Names only.
		level := slog.LevelWarn
		if r.Reason == observe.RefusedExpired {
			// Reviews of objects no watch covers expire too: not news.
			level = slog.LevelDebug
		}
		logger.Log(context.Background(), level, "admission record refused", "reason", r.Reason, "detail", r.Detail,
			"review", r.ReviewUID, "object", r.Object.String(), "uid", r.UID, "actor", r.User)
		if metrics != nil {
			metrics.AdmissionRefused(r.Reason)
		}
	}
	if metrics != nil {
		metrics.WatchAdmission(func() (int64, int64) {
			st := log.Stats()
			return st.PendingBytes, st.ConfirmedBytes
		}, observe.AdmissionRefusalReasons...)
	}
	h := &source.AdmissionHandler{Log: log, MaxBytes: a.MaxBytes, MaxInFlightBytes: a.MaxInFlightBytes, Logger: logger,
		Options: observe.AdmissionOptions{GitOpsUsers: a.GitOpsUsers, GitOpsGroups: a.GitOpsGroups}}
	if metrics != nil {
		metrics.WatchAdmissionInFlight(h.InFlightBytes)
		h.OnBusy = metrics.AdmissionBusy
	}
	return &admissionListener{ln: ln, handler: h, tls: cfg, logger: logger}, nil
}

func (a *admissionListener) run(ctx context.Context) error {
	err := server.ServeAdmission(ctx, a.ln, a.handler, a.tls, a.logger)
	if err != nil {
		a.logger.Error("admission listener", "err", err)
	}
	return err
}
