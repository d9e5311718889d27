package app

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"

	"github.com/backflow-dev/backflow/internal/bot"
	"github.com/backflow-dev/backflow/internal/botconfig"
	"github.com/backflow-dev/backflow/internal/forge"
	"github.com/backflow-dev/backflow/internal/forge/github"
	"github.com/backflow-dev/backflow/internal/kustomize/builder"
	"github.com/backflow-dev/backflow/internal/observe/source"
	"github.com/backflow-dev/backflow/internal/render"
	"github.com/backflow-dev/backflow/internal/server"
	"github.com/backflow-dev/backflow/internal/witness"
)

// SetupError is a command that could not start: its config, its secrets or
// what it wires from them. Err keeps the cause (and its sentinels).
type SetupError struct{ Err error }

// Error implements error with the cause's message.
func (e *SetupError) Error() string { return e.Err.Error() }

// Unwrap returns the cause.
func (e *SetupError) Unwrap() error { return e.Err }

func setup(err error) error { return &SetupError{Err: err} }

// ForgeConfig is the GitHub adapter's config as the bot config says it, for
// every command that acts as the App.
func ForgeConfig(c *botconfig.Config, key []byte, logger *slog.Logger) github.Config {
	return github.Config{
		AppID: c.GitHub.AppID, PrivateKey: key,
		BaseURL: c.GitHub.BaseURL, GraphQLURL: c.GitHub.GraphQLURL, GitURL: c.GitHub.GitURL,
		Allowlist:       c.Repositories,
		WritesPerMinute: c.Pacing.WritesPerMinute, MaxWait: c.Pacing.MaxWait.Duration,
		Attempts: c.Pacing.Attempts, RequestTimeout: c.Pacing.RequestTimeout.Duration, Backoff: c.Pacing.Backoff.Duration,
		Logger: logger,
	}
}

// BotOptions is the bot as the bot config says it, acting through fg on
// the observations of sources. The commit key comes from the App's key, so
// that every process acting as the App recognises the others' commits.
func BotOptions(c *Wiring, key []byte, fg bot.Forge, sources []bot.Source, logger *slog.Logger) bot.Options {
	return bot.Options{
		Forge: fg, Sources: sources, Logger: logger,
		AppSlug: c.GitHub.AppSlug, BotUserID: c.GitHub.BotUserID,
		CommitMethod: c.Method(), Repositories: c.Repositories, GitOpsManagers: c.Managers(),
		CommitKey: botconfig.CommitKey(key), Renderer: RendererWith(c.Fetcher(), c.RenderBounds()),
		Kustomizer: &builder.Builder{}, Holds: c.HoldPort(sources),
	}
}

// Fetcher is the fetcher of units' remote charts as the config's charts
// section says it.
func (c *Wiring) Fetcher() *render.Fetcher {
	return render.NewFetcher(render.FetchOptions{CacheDir: c.Charts.CacheDir, MaxBytes: c.Charts.MaxBytes,
		Timeout: c.Charts.Timeout.Duration, AllowedHosts: c.Charts.AllowedHosts})
}

// RenderBounds are the bounds of one rendering as the config's
// charts.render section says them.
func (c *Wiring) RenderBounds() render.Bounds {
	r := c.Charts.Render
	return render.Bounds{Timeout: r.Timeout.Duration, MaxMemory: r.MaxMemory,
		MaxOutputBytes: r.MaxOutputBytes, MaxObjects: r.MaxObjects}
}

// Renderer is the render witness with remote charts fetched into render's
// default cache, with its default bounds.
func Renderer(ctx context.Context, files bot.ChartFiles) witness.Renderer {
	return render.NewUnits(ctx, files, render.NewFetcher(render.FetchOptions{}), render.Bounds{})
}

// RendererWith is the render witness the bot plans with: the Helm SDK
// rendering a unit's chart read through files or fetched with fetch, each
// rendering within bounds.
func RendererWith(fetch *render.Fetcher, bounds render.Bounds) bot.RendererFunc {
	return func(ctx context.Context, files bot.ChartFiles) witness.Renderer {
		return render.NewUnits(ctx, files, fetch, bounds)
	}
}

// RunOnce is backflow run --once: one reconcile cycle over every repository
// the config at configPath allows, through GitHub, with the config's
// sources. A *SetupError means the cycle could not start; a repository's
// failure is in the report.
func RunOnce(ctx context.Context, configPath string, dryRun bool, logger *slog.Logger) (*bot.Report, error) {
	bc, err := botconfig.LoadConfig(configPath)
	if err != nil {
		return nil, setup(err)
	}
	cfg := Wire(bc)
	key, err := cfg.PrivateKey()
	if err != nil {
		return nil, setup(fmt.Errorf("%s: %w", configPath, err))
	}
	fg, err := github.New(ForgeConfig(cfg.Config, key, logger))
	if err != nil {
		return nil, setup(err)
	}
	opts := BotOptions(cfg, key, fg, cfg.Sources(), logger)
	opts.DryRun = dryRun
	if opts.Revisions, err = cfg.Revisions(); err != nil {
		return nil, setup(fmt.Errorf("%s: %w", configPath, err))
	}
	b, err := bot.New(opts)
	if err != nil {
		return nil, setup(err)
	}
	rep, err := NewCycler(b, nil).CycleAll(ctx)
	if err != nil {
		return rep, setup(err)
	}
	return rep, nil
}

// Serve is backflow serve with one replica: ServeWith and no options.
func Serve(
	ctx context.Context,
	configPath string,
	logger *slog.Logger,
	listening func(net.Addr, *server.Server),
) error {
	return ServeWith(ctx, configPath, ServeOptions{}, logger, listening)
}

// ServeWith is backflow serve: it loads the config at configPath, wires the
// bot to the server (the sources, the pushed observations, the live
// sources' triggers, the metrics, the leader election of opts) and serves
// until ctx ends. listening, when set, is told the bound address and the
// server (for in-process callers). A *SetupError means it could not start.
func ServeWith(
	ctx context.Context,
	configPath string,
	opts ServeOptions,
	logger *slog.Logger,
	listening func(net.Addr, *server.Server),
) error {
	cfg, err := botconfig.LoadServeConfig(configPath)
	if err != nil {
		return setup(err)
	}
	wired := Wire(cfg.Bot)
	metrics := NewMetrics(opts.Version)
	fg, err := github.New(serveForgeConfig(cfg, metrics, logger))
	if err != nil {
		return setup(err)
	}
	cycler := NewCycler(nil, metrics)
	cycler.SetPerInstallation(cfg.Server.MaxConcurrentPerInstallation)
	var sink server.ObservationSink
	var ps *PushStore
	sources := wired.Sources()
	if cfg.Push != nil {
		ps = NewPushStore(cfg.Trust, cfg.Push.Cluster, cycler.Concerned)
		ps.SetURLCeiling(cfg.URLTrust)
		sink = ps
		// Pushed observations are joined with the audit events like every
		// other source's: a pushed value is attributed only when a recorded
		// write set it.
		var src bot.Source = ps
		if audit := wired.AuditLog(); audit != nil {
			src = &source.Attributing{Source: ps, Log: audit}
		}
		sources = append(sources, src)
	}
	botOpts := BotOptions(wired, cfg.PrivateKey, fg, sources, logger)
	// Webhooks say when a repository changes: its state is read once and
	// kept until one does, or until the revalidation period asks its
	// latest event whether one was missed.
	state := bot.NewStateCache(cfg.Server.Revalidate, fg.LatestEvent)
	botOpts.State = state
	if botOpts.Revisions, err = wired.Revisions(); err != nil {
		return setup(err)
	}
	if cycler.bot, err = bot.New(botOpts); err != nil {
		return setup(err)
	}
	routes, attach, err := serveLive(wired, sources, cycler.Concerned, logger)
	if err != nil {
		return setup(err)
	}
	var srv *server.Server
	var gate server.Gate
	var startElection func() (stop func())
	if opts.LeaderElection != nil {
		// A replica that stops leading forgets its pushes and the
		// repositories' state: the next leader writes without telling it,
		// and webhooks go to the leader only.
		forget := func() {
			if ps != nil {
				ps.Forget()
			}
			for _, r := range srv.Repositories() {
				state.Invalidate(r, bot.PartAll)
			}
		}
		current := func() *server.Server { return srv }
		if gate, startElection, err = elect(opts.LeaderElection, metrics, logger, current, forget); err != nil {
			return setup(err)
		}
	}
	srv, err = server.New(
		cfg.Server,
		server.Deps{Cycler: cycler, Sink: sink, Metrics: metrics, Logger: logger, Handlers: routes, Gate: gate,
			Changed: func(repo, event, _ string) { invalidate(state, repo, event) }},
	)
	if err != nil {
		return setup(err)
	}
	attach(srv)
	admission, err := serveAdmission(wired, metrics, logger)
	if err != nil {
		return setup(err)
	}
	ln, err := net.Listen("tcp", cfg.Server.Listen)
	if err != nil {
		if admission != nil {
			admission.ln.Close()
		}
		return setup(err)
	}
	if listening != nil {
		listening(ln.Addr(), srv)
	}
	if admission != nil {
		done := make(chan error, 1)
		actx, stop := context.WithCancel(ctx)
		defer func() { stop(); <-done }()
		go func() { done <- admission.run(actx) }()
	}
	if startElection != nil {
		// Stopped once Run has let the cycles finish: the lease is
		// released only when nothing of this replica writes any more.
		stopElection := startElection()
		defer stopElection()
	}
	return srv.Run(ctx, ln)
}

// changes are the parts of a repository's state each webhook event says
// changed: a push moves the default branch or a pull request's head, a
// check run changes a pull request's checks.
var changes = map[string]bot.Part{
	"push": bot.PartHead | bot.PartPulls, "pull_request": bot.PartPulls, "issues": bot.PartIssues,
	"check_run": bot.PartPulls, "check_suite": bot.PartPulls,
}

// invalidate drops what event says changed of repo's cached state.
func invalidate(state *bot.StateCache, repo, event string) {
	if parts, ok := changes[event]; ok {
		state.Invalidate(repo, parts)
	}
}

// serveForgeConfig is the GitHub adapter's config from the bot config, with
// every request counted in the metrics.
func serveForgeConfig(cfg *botconfig.ServeConfig, m *server.Metrics, logger *slog.Logger) github.Config {
	c := ForgeConfig(cfg.Bot, cfg.PrivateKey, logger)
	c.Transport = rateLimitGauge{next: http.DefaultTransport, metrics: m}
	c.Observer = func(ev forge.RequestEvent) { m.GitHubRequest(ev.Status) }
	c.Waited = m.GitHubWait
	return c
}

// rateLimitGauge reports GitHub's X-RateLimit-Remaining to the metrics.
type rateLimitGauge struct {
	next    http.RoundTripper
	metrics *server.Metrics
}

func (t rateLimitGauge) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(r)
	if err == nil {
		if n, perr := strconv.Atoi(resp.Header.Get("X-RateLimit-Remaining")); perr == nil {
			t.metrics.RateLimitRemaining(n)
		}
	}
	return resp, err
}
