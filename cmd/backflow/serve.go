package main

import (
	"context"
	"errors"

	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/backflow-dev/backflow/internal/bot"
	"github.com/backflow-dev/backflow/internal/forge"
	"github.com/backflow-dev/backflow/internal/forge/github"
	"github.com/backflow-dev/backflow/internal/server"
)

func newServeCmd() *cobra.Command {
	var configPath string
	cmd := &cobra.Command{
		Use:   "serve --config FILE",
		Short: "Run backflow as a GitHub App: scheduled cycles, webhooks, pushed observations, metrics",
		Long: `Run backflow as a long-lived GitHub App process. It runs a reconcile cycle
for every repository at start and then on the cron schedule (with jitter),
and at once for a repository when a signed webhook says its default branch
moved, a pull request closed or a check run was re-requested, or when an
observation about its objects is pushed to /observations. One repository
never has two cycles at once.

FILE is the bot config of "backflow run --once" plus a server: section
(listen address, schedule, webhook secret file or variable, observation push
secret or token and trust ceiling). It refuses to start without a webhook
secret. Serves /webhook, /observations, /healthz, /readyz and /metrics; logs
are JSON lines on stderr. SIGTERM or SIGINT stops accepting requests and
lets running cycles finish within server.shutdownTimeout.`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if configPath == "" {
				return usageError("serve: --config is required")
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			logger := slog.New(slog.NewJSONHandler(cmd.ErrOrStderr(), nil))
			return runServe(ctx, configPath, logger, nil)
		},
	}
	cmd.Flags().StringVar(&configPath, "config", "", "the bot config with its server: section (required)")
	return cmd
}

// runServe loads the config, wires the bot to the server and serves until
// ctx ends. listening, when set, is told the bound address and the server
// (for in-process callers).
func runServe(ctx context.Context, configPath string, logger *slog.Logger, listening func(net.Addr, *server.Server)) error {
	cfg, err := loadServeConfig(configPath)
	if err != nil {
		return usageError("serve: %v", err)
	}
	metrics := server.NewMetrics()
	fg, err := github.New(serveForgeConfig(cfg, metrics, logger))
	if err != nil {
		return usageError("serve: %v", err)
	}
	cycler := &botCycler{forge: fg, metrics: metrics, allow: cfg.bot.Repositories}
	var sink server.ObservationSink
	sources := cfg.bot.Sources()
	if cfg.push != nil {
		ps := newPushStore(cfg.trust, cfg.push.Cluster, cycler.known)
		sources = append(sources, ps)
		sink = ps
	}
	cycler.bot, err = bot.New(botOptions(cfg.bot, cfg.privateKey, fg, sources, logger))
	if err != nil {
		return usageError("serve: %v", err)
	}
	routes, attach, err := serveLive(cfg.bot, sources, logger)
	if err != nil {
		return usageError("serve: %v", err)
	}
	srv, err := server.New(cfg.server, server.Deps{Cycler: cycler, Sink: sink, Metrics: metrics, Logger: logger, Handlers: routes})
	if err != nil {
		return usageError("serve: %v", err)
	}
	attach(srv)
	ln, err := net.Listen("tcp", cfg.server.Listen)
	if err != nil {
		return usageError("serve: %v", err)
	}
	if listening != nil {
		listening(ln.Addr(), srv)
	}
	if err := srv.Run(ctx, ln); err != nil {
		return negative("serve: %v", err)
	}
	return nil
}

// serveForgeConfig is the GitHub adapter's config from the bot config, with
// every request counted in the metrics.
func serveForgeConfig(cfg *serveConfig, m *server.Metrics, logger *slog.Logger) github.Config {
	c := forgeConfig(cfg.bot, cfg.privateKey, logger)
	c.Transport = rateLimitGauge{next: http.DefaultTransport, metrics: m}
	c.Observer = func(ev forge.RequestEvent) { m.GitHubRequest(ev.Status) }
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

// botCycler adapts the bot to the server's Cycler: a cycle of one
// repository is a bot cycle limited to it. Cycles are serialised: the bot
// and its observation sources are used from one goroutine at a time.
type botCycler struct {
	forge   *github.Adapter
	bot     *bot.Bot
	allow   []string
	metrics *server.Metrics

	run  sync.Mutex
	mu   sync.Mutex
	last []string // the last repository list
}

// Repositories implements server.Cycler: the repositories the App's
// installations can see, limited by the config's allowlist.
func (c *botCycler) Repositories(ctx context.Context) ([]string, error) {
	repos, err := c.forge.Repositories(ctx)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, r := range repos {
		if len(c.allow) == 0 || slices.ContainsFunc(c.allow, func(a string) bool { return strings.EqualFold(a, r.FullName()) }) {
			out = append(out, r.FullName())
		}
	}
	c.mu.Lock()
	c.last = out
	c.mu.Unlock()
	return out, nil
}

// known is the last repository list.
func (c *botCycler) known() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.last)
}

// Cycle implements server.Cycler. Paused and observe-only repositories are
// the bot's to honour; a repository's failures come back as the error.
func (c *botCycler) Cycle(ctx context.Context, repo string, _ []server.Trigger) error {
	c.run.Lock()
	defer c.run.Unlock()
	rep, err := c.bot.CycleRepos(ctx, []string{repo})
	if rep != nil {
		c.record(rep)
	}
	if err != nil {
		return err
	}
	var errs []error
	for _, rr := range rep.Repos {
		errs = append(errs, rr.Errors...)
	}
	if rl, limited := rep.RateLimited(); limited {
		errs = append(errs, rl)
	}
	return errors.Join(errs...)
}

// servePRActions maps the bot's actions to the pull request metric's actions.
var servePRActions = map[string]string{
	bot.ActOpen: "opened", bot.ActUpdate: "updated", bot.ActClose: "closed",
	bot.ActMerge: "merged", bot.ActAutoMerge: "auto-merge-enabled",
}

// record counts what a cycle decided and did.
func (c *botCycler) record(rep *bot.Report) {
	for range rep.SourceErrors {
		c.metrics.Error("observation")
	}
	if _, limited := rep.RateLimited(); limited {
		c.metrics.Error("rate-limited")
	}
	for _, rr := range rep.Repos {
		for _, d := range rr.Decisions {
			c.metrics.Decision(d.Outcome)
		}
		for _, a := range rr.Actions {
			if a.DryRun {
				continue
			}
			if name, ok := servePRActions[a.Kind]; ok {
				c.metrics.PullRequest(name)
			}
			switch a.Kind {
			case bot.ActProven:
				c.metrics.Fix("proven")
			case bot.ActReverted:
				c.metrics.Fix("reverted")
			}
		}
		for range rr.PlanErrors {
			c.metrics.Error("plan")
		}
		for _, err := range rr.Errors {
			c.metrics.Error(bot.ErrorClass(err))
		}
	}
}
