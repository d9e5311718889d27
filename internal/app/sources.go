package app

import (
	"context"
	"fmt"
	"maps"
	"net/url"
	"reflect"
	"slices"

	"github.com/backflow-dev/backflow/internal/bot"
	"github.com/backflow-dev/backflow/internal/botconfig"
	"github.com/backflow-dev/backflow/internal/observe"
	"github.com/backflow-dev/backflow/internal/observe/source"
)

// Wiring is a bot config with what the sources built from it share: the
// audit event store and the admission record store, each built once.
type Wiring struct {
	*botconfig.Config
	// audit is the audit event store, built by AuditLog.
	audit *source.AuditLog
	// admission is the admission record store, built by AdmissionLog.
	admission *observe.AdmissionLog
}

// Wire is c with no store built yet.
func Wire(c *botconfig.Config) *Wiring { return &Wiring{Config: c} }

// Managers is the list of GitOps field managers in force.
func (c *Wiring) Managers() []string {
	if len(c.GitOpsManagers) == 0 {
		return bot.DefaultGitOpsManagers
	}
	return c.GitOpsManagers
}

// Sources builds the observation sources the config lists, in cluster
// order. With audit events or admission records configured, every
// source's observations are attributed from them.
func (c *Wiring) Sources() []bot.Source {
	audit := c.AuditLog()
	admission := c.AdmissionLog()
	var out []bot.Source
	for _, cluster := range slices.Sorted(maps.Keys(c.Observations)) {
		for _, s := range c.Observations[cluster] {
			ceiling := observe.Attribution(s.Trust)
			var src bot.Source
			switch {
			case !reflect.ValueOf(s.Kube).IsZero():
				k := s.Kube
				cfg := &source.KubeConfig{Kubeconfig: c.Resolve(k.Kubeconfig), Context: k.Context, InCluster: k.InCluster}
				out = append(out, &source.KubeSource{Cluster: cluster, Config: cfg, Objects: k.Objects,
					GitOpsManagers: c.Managers(), IgnoreManagers: k.IgnoreManagers, Resync: k.Resync.Duration,
					Audit: audit, Admission: admission, Transitions: &observe.TransitionLog{Window: k.TransitionWindow.Duration}})
				continue
			case s.URL != "":
				poller := &source.HTTPSource{URL: s.URL, Timeout: s.Timeout.Duration, MaxBytes: s.MaxBytes, Ceiling: ceiling}
				src = &HTTPSource{Cluster: cluster, Poller: poller}
			default:
				src = &PathSource{Cluster: cluster, Path: c.Resolve(s.Path), Ceiling: ceiling, MaxBytes: s.MaxBytes}
			}
			if audit != nil || admission != nil {
				src = &source.Attributing{Source: src, Log: audit, Admission: admission}
			}
			out = append(out, src)
		}
	}
	return out
}

// AuditLog is the store of audit events every source is joined with: the
// tailed log files and what the webhook receives. It is built once; nil
// when neither is configured.
func (c *Wiring) AuditLog() *source.AuditLog {
	if len(c.Audit.LogFiles) == 0 && !c.Audit.Webhook.Enabled() {
		return nil
	}
	if c.audit == nil {
		c.audit = &source.AuditLog{}
		for _, f := range c.Audit.LogFiles {
			c.audit.Tail(c.Resolve(f))
		}
	}
	return c.audit
}

// AdmissionLog is the store of admission records every source is joined
// with, confirmed by the clusters' watches. It is built once; nil when the
// webhook is not configured.
func (c *Wiring) AdmissionLog() *observe.AdmissionLog {
	if !c.Admission.Enabled() {
		return nil
	}
	if c.admission == nil {
		c.admission = &observe.AdmissionLog{TTL: c.Admission.TTL.Duration, MaxHeldBytes: c.Admission.MaxHeldBytes}
	}
	return c.admission
}

// PathSource reads a file or a folder of observation documents each cycle.
type PathSource struct {
	// Cluster is the cluster the source observes: documents that name no
	// cluster are taken to be of it, and documents naming another are refused.
	Cluster string
	// Path is the file or folder.
	Path string
	// Ceiling is the source's trust ceiling.
	Ceiling observe.Attribution
	// MaxBytes caps each file; zero means observe's default.
	MaxBytes int64
}

// Name implements bot.Source.
func (s *PathSource) Name() string { return s.Path }

// Read implements bot.Source.
func (s *PathSource) Read(ctx context.Context) observe.Result {
	res := source.LoadPath(s.Path, observe.Options{Ceiling: s.Ceiling, MaxBytes: s.MaxBytes})
	return keyByCluster(res, s.Cluster, s.Path)
}

// HTTPSource polls a URL each cycle (a 304 answer reuses the last result).
type HTTPSource struct {
	// Cluster is as for PathSource.
	Cluster string
	// Poller is the observe package's HTTP source, holding the ETag.
	Poller *source.HTTPSource
}

// Name implements bot.Source: the URL without any password in it.
func (s *HTTPSource) Name() string {
	if u, err := url.Parse(s.Poller.URL); err == nil {
		return u.Redacted()
	}
	return "observation URL"
}

// Read implements bot.Source.
func (s *HTTPSource) Read(ctx context.Context) observe.Result {
	res, _, err := s.Poller.Poll(ctx)
	if err != nil {
		return observe.Result{Errors: []error{err}}
	}
	return keyByCluster(res, s.Cluster, s.Name())
}

// keyByCluster holds a source to the cluster it is configured for: a
// document without a cluster is of that cluster, and one naming another
// cluster is dropped, because a source trusted for one cluster must not
// speak for another.
func keyByCluster(res observe.Result, cluster, name string) observe.Result {
	if cluster == "" {
		return res
	}
	out := observe.Result{Errors: res.Errors, Ignored: res.Ignored}
	for _, o := range res.Observations {
		switch o.Cluster {
		case "":
			o.Cluster = cluster
		case cluster:
		default:
			out.Errors = append(out.Errors, fmt.Errorf(
				"%s: %s: observation of cluster %q refused: the source is configured for cluster %q",
				name, o.Origin, o.Cluster, cluster))
			continue
		}
		out.Observations = append(out.Observations, o)
	}
	for _, t := range res.Triggers {
		if t.Cluster == "" {
			t.Cluster = cluster
		}
		if t.Cluster == cluster {
			out.Triggers = append(out.Triggers, t)
		}
	}
	for _, f := range res.Forgets {
		if f.Cluster == "" {
			f.Cluster = cluster
		}
		if f.Cluster == cluster {
			out.Forgets = append(out.Forgets, f)
		}
	}
	for _, n := range res.Notices {
		if n.Cluster == "" {
			n.Cluster = cluster
		}
		if n.Cluster == cluster {
			out.Notices = append(out.Notices, n)
		}
	}
	return out
}
