package demo

import (
	"context"
	"crypto/rand"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/backflow-dev/backflow/internal/app"
	"github.com/backflow-dev/backflow/internal/bot"
	"github.com/backflow-dev/backflow/internal/botconfig"
	"github.com/backflow-dev/backflow/internal/forge"
	ghforge "github.com/backflow-dev/backflow/internal/forge/github"
	"github.com/backflow-dev/backflow/internal/localhub"
	"github.com/backflow-dev/backflow/internal/observe"
	"github.com/backflow-dev/backflow/internal/policy"
	"github.com/backflow-dev/backflow/internal/receipt"
	"github.com/backflow-dev/backflow/internal/render"
	"github.com/backflow-dev/backflow/internal/repoconfig"
	"github.com/backflow-dev/backflow/internal/values"
	"github.com/backflow-dev/backflow/internal/witness"
)

// sample is the GitOps repository the demo serves.
//
//go:embed all:sample
var sample embed.FS

// The demo's cast and scenery.
const (
	Owner      = "acme"
	RepoName   = "gitops"
	Repository = Owner + "/" + RepoName
	// GitOpsManager is the field manager of the simulated Flux helm-controller.
	GitOpsManager = "helm-controller"

	replicasKey = "apps/v1|StatefulSet|redis|redis-replicas"
	masterKey   = "apps/v1|StatefulSet|redis|redis-master"
	imageField  = "spec.template.spec.containers[0].image"
	// defaultImage is what the chart renders for both StatefulSets.
	defaultImage = "docker.io/bitnami/redis:7.4.2-debian-12-r0"
	// debugImage is bob's unauthorized change.
	debugImage = "docker.io/bitnami/redis:7.4.2-debian-12-r0-debug"
	incident   = "incident-fix: scale replicas to absorb a load spike"

	// The kustomize unit beside the Helm one: the shop's overlay, which
	// Flux's kustomize-controller applies, and its cache StatefulSet.
	shopOverlay  = "apps/shop/overlays/prod-us-east"
	shopCacheKey = "apps/v1|StatefulSet|shop|web-cache"
	shopIncident = "incident-fix: scale the shop's cache for a sale"
)

// sampleFS is the embedded GitOps repository, rooted at its top.
func sampleFS() fs.FS {
	sub, err := fs.Sub(sample, "sample")
	if err != nil {
		panic(err) // "sample" is a valid path: fs.Sub cannot fail on it
	}
	return sub
}

// SampleFiles returns the embedded GitOps repository, by path.
func SampleFiles() (map[string]string, error) {
	out := map[string]string{}
	err := fs.WalkDir(sample, "sample", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := sample.ReadFile(p)
		if err != nil {
			return err
		}
		out[strings.TrimPrefix(p, "sample/")] = string(data)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading the sample repository: %w", err)
	}
	return out, nil
}

// Options configures a demo run.
type Options struct {
	// Out is the folder the proven receipt is written to; empty means a new
	// temporary folder, which is kept (its path is in the summary).
	Out string
	// Narration receives the step-by-step story; nil discards it.
	Narration io.Writer
	// Now is the wall clock; nil means time.Now. The hub runs on it (App
	// tokens are checked against it); the clusters and the bot run on a
	// simulated clock that starts 15 minutes before it.
	Now func() time.Time
	// BreakGlass makes the sample's replicaCount entry accept for
	// BreakGlassFor only, and runs on past that on the simulated clock:
	// the restoring pull request, the forward apply that puts live back,
	// and its proof (expiry.go).
	BreakGlass bool
}

// Summary is what `backflow demo --json` prints.
type Summary struct {
	Repository   string        `json:"repository"`
	HubURL       string        `json:"hubURL"`
	PullRequests []PullRequest `json:"pullRequests"`
	Denied       []Denied      `json:"denied"`
	Receipts     []Receipt     `json:"receipts"`
	// ForwardApply is the live state after the GitOps controller applied
	// the merged values.
	ForwardApply []LiveField `json:"forwardApply"`
	// DriftIssue is the tracking issue of unauthorized drift, as it ends.
	DriftIssue *Issue `json:"driftIssue,omitempty"`
	// Kustomize is the kustomize unit's round trip, after the Helm one's.
	Kustomize *KustomizeRun `json:"kustomize,omitempty"`
	// Expiry is the break-glass part, when Options.BreakGlass asked.
	Expiry   *Expiry  `json:"expiry,omitempty"`
	Requests Requests `json:"requests"`
	Cycles   []Cycle  `json:"cycles"`
	Seconds  float64  `json:"seconds"`
	started  time.Time
}

// PullRequest is a write-back pull request as the hub holds it at the end.
type PullRequest struct {
	Number      int      `json:"number"`
	URL         string   `json:"url"`
	Title       string   `json:"title"`
	Labels      []string `json:"labels"`
	Files       []string `json:"files"`
	Merged      bool     `json:"merged"`
	MergeCommit string   `json:"mergeCommit,omitempty"`
	// Diff is the values file's changed lines, "-" then "+".
	Diff []string `json:"diff"`
	// Checks are the conclusions of the receipt check on the head and the
	// proven check on the merge commit, by name.
	Checks map[string]string `json:"checks"`
}

// Denied is an unauthorized live change the bot refused.
type Denied struct {
	Environment string            `json:"environment"`
	Object      observe.ObjectKey `json:"object"`
	Fields      []string          `json:"fields"`
	Reasons     []string          `json:"reasons"`
	// WrittenBack says a pull request carries it; it never should.
	WrittenBack bool `json:"writtenBack"`
}

// Receipt is a receipt file the demo wrote and what checking it said.
type Receipt struct {
	Path        string   `json:"path"`
	Status      string   `json:"status"`
	MergeCommit string   `json:"mergeCommit"`
	Verified    bool     `json:"verified"`
	Violations  []string `json:"violations,omitempty"`
}

// LiveField is one field's live value in one cluster.
type LiveField struct {
	Cluster string `json:"cluster"`
	Object  string `json:"object"`
	Field   string `json:"field"`
	Live    any    `json:"live"`
	Manager string `json:"manager"`
}

// Issue is the drift tracking issue.
type Issue struct {
	Number int    `json:"number"`
	URL    string `json:"url"`
	State  string `json:"state"`
}

// Requests counts what the hub served to the bot, per cycle.
type Requests struct {
	// FirstCycle is the cycle that opened, checked and merged the pull
	// request and opened the drift issue.
	FirstCycle int `json:"firstCycle"`
	// FollowUpCycle proved the receipt and closed the drift issue.
	FollowUpCycle int `json:"followUpCycle"`
	// IdleCycle is a cycle with nothing new; IdleWrites its writes.
	IdleCycle  int `json:"idleCycle"`
	IdleWrites int `json:"idleWrites"`
	// IdleNotModified are its conditional reads answered 304.
	IdleNotModified int `json:"idleNotModified"`
	// IdleRoutes are the idle cycle's requests by "METHOD /route".
	IdleRoutes map[string]int `json:"idleRoutes"`
}

// Cycle is one reconcile cycle's outcome.
type Cycle struct {
	Name     string       `json:"name"`
	Requests int          `json:"requests"`
	Writes   int          `json:"writes"`
	Actions  []bot.Action `json:"actions"`
}

// run is one demo's state.
type run struct {
	ctx   context.Context
	opts  Options
	out   io.Writer
	wall  func() time.Time
	sum   *Summary
	clock *localhub.FakeClock // the simulated clock of the clusters and the bot

	hub      *localhub.Server
	inst     int64
	work     string
	adapter  *ghforge.Adapter
	bot      *bot.Bot
	repo     forge.Repo
	clusters []*Cluster
	chart    *render.Chart
	policy   *policy.Policy
	polPath  string
	grace    time.Duration
}

// Run runs the demo: hub, repository, clusters, the live changes, and the
// cycles, narrating each step. It needs git and loopback networking only.
func Run(ctx context.Context, opts Options) (*Summary, error) {
	if _, err := exec.LookPath("git"); err != nil {
		return nil, fmt.Errorf(
			"the demo needs git (the local hub serves real git repositories): install it, e.g. apt-get install git: %w",
			err,
		)
	}
	r := newRun(ctx, opts)
	r.sum = &Summary{
		Repository:   Repository,
		PullRequests: []PullRequest{},
		Denied:       []Denied{},
		Receipts:     []Receipt{},
		ForwardApply: []LiveField{},
		Cycles:       []Cycle{},
		started:      r.wall(),
	}
	defer func() { r.sum.Seconds = r.wall().Sub(r.sum.started).Seconds() }()
	var err error
	if r.work, err = os.MkdirTemp("", "backflow-demo-"); err != nil {
		return nil, fmt.Errorf("creating the demo's folder: %w", err)
	}
	defer os.RemoveAll(r.work)
	if r.opts.Out, err = outputFolder(opts.Out); err != nil {
		return nil, err
	}
	if err := r.startHub(); err != nil {
		return nil, err
	}
	defer r.hub.Close()
	steps := []func() error{
		r.startClusters,
		r.liveChanges,
		r.startBot,
		r.firstCycle,
		r.forwardApply,
		r.followUpCycle,
		r.idleCycle,
		r.kustomizeCycle,
		r.kustomizeFollowUp,
	}
	if opts.BreakGlass {
		steps = append(steps, r.expiryCycle, r.restoreApply, r.restoreFollowUp, r.idleAgain)
	}
	for _, step := range steps {
		if err := step(); err != nil {
			return r.sum, err
		}
	}
	r.summary()
	return r.sum, nil
}

// newRun is a demo run on opts, narrating to opts.Narration (nowhere when
// nil) by the wall clock opts.Now (time.Now when nil).
func newRun(ctx context.Context, opts Options) *run {
	r := &run{ctx: ctx, opts: opts, out: opts.Narration, wall: opts.Now}
	if r.out == nil {
		r.out = io.Discard
	}
	if r.wall == nil {
		r.wall = time.Now
	}
	return r
}

// outputFolder is the folder the proven receipts are written to: out,
// created if need be, or a new temporary folder, which is kept, when out is
// empty.
func outputFolder(out string) (string, error) {
	if out == "" {
		dir, err := os.MkdirTemp("", "backflow-demo-out-")
		if err != nil {
			return "", fmt.Errorf("creating the output folder: %w", err)
		}
		return dir, nil
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return "", fmt.Errorf("creating the output folder: %w", err)
	}
	return out, nil
}

func (r *run) say(format string, a ...any) { fmt.Fprintf(r.out, format+"\n", a...) }

func (r *run) step(n int, title string) { r.say("\n%d. %s", n, title) }

// startHub starts the local hub on loopback with the sample repository,
// branch protection requiring the receipt check, auto-merge allowed, and
// the App installed.
func (r *run) startHub() error {
	files, err := SampleFiles()
	if err != nil {
		return err
	}
	if err := r.listenHub(); err != nil {
		return err
	}
	h := r.hub.Hub
	if r.opts.BreakGlass {
		files = breakGlassFiles(files)
	}
	if err := r.createRepo(files); err != nil {
		return err
	}
	r.sum.HubURL = r.hub.URL
	cfg, err := repoconfig.Parse(repoconfig.Path, []byte(files[repoconfig.Path]))
	if err != nil {
		return fmt.Errorf("the sample repository: %w", err)
	}
	r.polPath = cfg.Policy
	if r.policy, err = policy.Parse(cfg.Policy, []byte(files[cfg.Policy])); err != nil {
		return fmt.Errorf("the sample repository: %w", err)
	}
	r.grace = cfg.FollowUp.GracePeriod.Duration
	if r.grace <= 0 {
		r.grace = repoconfig.DefaultGracePeriod
	}
	r.say("backflow demo: reverse reconciliation end to end, against a local GitHub-compatible hub (loopback only)")
	r.step(1, "The GitOps repository")
	r.say("   local hub:  %s (REST, GraphQL and git smart HTTP), App %q installed on %s", r.hub.URL, h.AppSlug(), Owner)
	r.say(
		"   repository: %s, branch main protected: the check %s is required; auto-merge allowed",
		Repository,
		bot.CheckName,
	)
	paths := make([]string, 0, len(files))
	for p := range files {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	charts := 0
	for _, p := range paths {
		if strings.HasPrefix(p, "charts/") {
			charts++
			continue
		}
		r.say("     %s", p)
	}
	r.say(
		"     charts/: the bitnami/redis chart with its common dependency (%d files), rendered by the render witness",
		charts,
	)
	r.say(
		"   policy: default deny; role platform-sre may accept replica.replicaCount (spec.replicas) on redis-replicas, " +
			"autoMerge: true",
	)
	return nil
}

// listenHub starts the local hub on loopback, checking App tokens against
// the wall clock.
func (r *run) listenHub() error {
	hub, err := localhub.Listen("127.0.0.1:0", localhub.Options{AppSlug: "backflow", Clock: clockFunc(r.wall)})
	if err != nil {
		return fmt.Errorf("starting the local hub: %w", err)
	}
	r.hub = hub
	return nil
}

// createRepo creates the demo's repository on the local hub with files on
// main, auto-merge allowed and main protected by the receipt check, and
// installs the App on its owner.
func (r *run) createRepo(files map[string]string) error {
	h := r.hub.Hub
	repo := localhub.RepoOptions{Owner: Owner, Name: RepoName, Files: files, AllowAutoMerge: true}
	if err := h.CreateRepo(repo); err != nil {
		return fmt.Errorf("creating %s: %w", Repository, err)
	}
	if err := h.SetBranchProtection(Repository, "main", bot.CheckName); err != nil {
		return err
	}
	var err error
	if r.inst, err = h.Install(Owner); err != nil {
		return err
	}
	r.repo = forge.Repo{Owner: Owner, Name: RepoName, DefaultBranch: "main"}
	return nil
}

// clockFunc adapts a function to localhub.Clock.
type clockFunc func() time.Time

func (f clockFunc) Now() time.Time { return f() }

// startClock starts the simulated clock of the clusters and the bot 15
// minutes before the wall clock.
func (r *run) startClock() {
	r.clock = localhub.NewFakeClock(r.wall().UTC().Truncate(time.Second).Add(-15 * time.Minute))
}

// startClusters builds one simulated cluster per environment and applies
// the default branch's values to them.
func (r *run) startClusters() error {
	r.startClock()
	files, err := SampleFiles()
	if err != nil {
		return err
	}
	cfg, err := repoconfig.Parse(repoconfig.Path, []byte(files[repoconfig.Path]))
	if err != nil {
		return err
	}
	r.step(2, "The live clusters, as the GitOps controller applied main")
	for _, env := range []string{"prod-us-east", "prod-eu-west"} {
		c := NewCluster(cfg.Environments[env].Clusters[0], env, GitOpsManager, r.clock.Now)
		objs, err := r.render(cfg, env, files)
		if err != nil {
			return err
		}
		// The cluster holds what the GitOps controller applied of the
		// rendering: the fields the live changes below touch.
		for _, key := range []string{masterKey, replicasKey} {
			fields := map[string]any{}
			for _, p := range []string{"spec.replicas", imageField} {
				v, ok := FieldValue(objs.Objects[key], p)
				if !ok {
					return fmt.Errorf("the sample chart renders no %s %s", key, p)
				}
				fields[p] = v
			}
			if err := c.Add(key, fields); err != nil {
				return err
			}
		}
		r.clusters = append(r.clusters, c)
		live, _ := c.Get(replicasKey, "spec.replicas")
		r.say(
			"   %s (%s): %s %s rendered (%d objects); redis-master, redis-replicas (spec.replicas %s) applied by %s",
			c.Name,
			env,
			objs.Chart,
			objs.Version,
			len(objs.Objects),
			values.Format(live),
			GitOpsManager,
		)
	}
	return nil
}

// render renders the sample chart for env's unit with its values files
// (Helm's merge of -f files), as the GitOps controller renders main. The
// chart is read from the embedded sample once: the demo changes values
// files only, never the chart.
func (r *run) render(cfg *repoconfig.Config, env string, files map[string]string) (*witness.Rendering, error) {
	for i := range cfg.Units {
		u := &cfg.Units[i]
		if u.Environment != env || !u.Rendered() {
			continue
		}
		if r.chart == nil {
			c, err := render.LoadFromSource(render.FSSource{FS: sampleFS()}, u.Chart.Path)
			if err != nil {
				return nil, fmt.Errorf("the sample repository: %w", err)
			}
			r.chart = c
		}
		var trees []map[string]any
		for _, f := range u.ValuesFiles {
			tree, err := repoconfig.Values(f, []byte(files[f]), u.RootOf(f))
			if err != nil {
				return nil, err
			}
			trees = append(trees, tree)
		}
		out, err := r.chart.Render(r.ctx, render.OptionsFor(u, render.Bounds{}), trees)
		if err != nil {
			return nil, fmt.Errorf("rendering the sample chart for %s: %w", env, err)
		}
		return out, nil
	}
	return nil, fmt.Errorf("the sample repository has no unit with a chart in %s", env)
}

func (r *run) cluster(env string) *Cluster {
	for _, c := range r.clusters {
		if c.Environment == env {
			return c
		}
	}
	return nil
}

// liveChanges are the seed's incident and one unauthorized change, made by
// hand and recorded by the audit log; the observer then reports them.
func (r *run) liveChanges() error {
	east := r.cluster("prod-us-east")
	r.step(3, "Live changes by hand (the API server's audit log records who)")
	alice := Person{Actor: "alice", Groups: []string{"sre"}, Intent: incident}
	if err := east.Scale(replicasKey, 4, alice); err != nil {
		return err
	}
	r.say(
		"   %s  alice (group sre) scales redis-replicas 3 -> 4 in %s: %q",
		r.clock.Now().Format(time.TimeOnly),
		east.Name,
		incident,
	)
	r.clock.Advance(time.Minute)
	bob := Person{Actor: "bob", Groups: []string{"developers"}, Intent: "debugging a slow master"}
	if err := east.Set(masterKey, imageField, debugImage, bob); err != nil {
		return err
	}
	r.say(
		"   %s  bob (group developers) sets redis-master %s to %s in %s",
		r.clock.Now().Format(time.TimeOnly),
		imageField,
		debugImage,
		east.Name,
	)
	r.clock.Advance(time.Minute)
	return r.observe()
}

// observe writes every cluster's observations where the bot config's
// sources read them.
func (r *run) observe() error {
	dir := filepath.Join(r.work, "observations")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, c := range r.clusters {
		data, err := EncodeObservations(c.Observe())
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, c.Name+".json"), data, 0o644); err != nil {
			return fmt.Errorf("writing observations: %w", err)
		}
	}
	r.say(
		"   %s  the observer reports every object of both clusters (observations/*.json, trusted at audit-log by the bot "+
			"config)",
		r.clock.Now().Format(time.TimeOnly),
	)
	return nil
}

// startBot writes the bot config (the hub's URLs, the App key, the
// observation sources at the audit-log trust ceiling), loads it as `backflow
// run` does, and builds the GitHub adapter and the bot.
func (r *run) startBot() error {
	h := r.hub.Hub
	keyPath := filepath.Join(r.work, "app.pem")
	if err := os.WriteFile(keyPath, h.PrivateKeyPEM(), 0o600); err != nil {
		return fmt.Errorf("writing the App key: %w", err)
	}
	var sources strings.Builder
	for _, c := range r.clusters {
		fmt.Fprintf(&sources, "  %s:\n    - path: observations/%s.json\n      trust: audit-log\n", c.Name, c.Name)
	}
	conf := fmt.Sprintf(`# The demo's bot config: the local hub, and the observer of each cluster,
# trusted at audit-log because it joins the API server's audit log.
version: 1
github:
  appId: %d
  privateKeyFile: app.pem
  baseURL: %s
  appSlug: %s
repositories: [%s]
observations:
%s`, h.AppID(), r.hub.APIURL(), h.AppSlug(), Repository, sources.String())
	return r.loadBot(conf)
}

// loadBot writes the bot config conf beside the App key, loads it as
// `backflow run` does, and builds the GitHub adapter and the bot (with the
// ConfigHub store its confighub section names, if any).
func (r *run) loadBot(conf string) error {
	confPath := filepath.Join(r.work, "backflow.yaml")
	if err := os.WriteFile(confPath, []byte(conf), 0o600); err != nil {
		return fmt.Errorf("writing the bot config: %w", err)
	}
	bc, err := botconfig.LoadConfig(confPath)
	if err != nil {
		return err
	}
	cfg := app.Wire(bc)
	key, err := cfg.PrivateKey()
	if err != nil {
		return err
	}
	fc := app.ForgeConfig(bc, key, nil)
	fc.Backoff = 50 * time.Millisecond
	r.adapter, err = ghforge.New(fc)
	if err != nil {
		return err
	}
	// A fresh commit key: the demo's bot is the only process acting as its App.
	opts := app.BotOptions(cfg, key, r.adapter, cfg.Sources(), slog.New(slog.DiscardHandler))
	opts.Now = r.clock.Now
	if opts.Revisions, err = cfg.Revisions(); err != nil {
		return err
	}
	opts.CommitKey = make([]byte, 32)
	if _, err := rand.Read(opts.CommitKey); err != nil {
		return err
	}
	r.bot, err = bot.New(opts)
	return err
}

// cycle runs one reconcile cycle and counts the hub's requests.
func (r *run) cycle(name string) (*bot.Report, Cycle, ghforge.Counts, error) {
	r.hub.Requests().Reset()
	before := r.adapter.Counts()
	rep, err := r.bot.Cycle(r.ctx)
	if err != nil {
		return nil, Cycle{}, ghforge.Counts{}, fmt.Errorf("%s: %w", name, err)
	}
	after := r.adapter.Counts()
	d := ghforge.Counts{
		Reads:       after.Reads - before.Reads,
		Writes:      after.Writes - before.Writes,
		NotModified: after.NotModified - before.NotModified,
	}
	c := Cycle{Name: name, Requests: len(r.hub.Requests().All()), Writes: int(d.Writes), Actions: []bot.Action{}}
	for _, rr := range rep.Repos {
		c.Actions = append(c.Actions, rr.Actions...)
		if len(rr.Errors) > 0 {
			return rep, c, d, fmt.Errorf("%s: %s: %w", name, rr.Repo, rr.Errors.Join())
		}
	}
	r.sum.Cycles = append(r.sum.Cycles, c)
	return rep, c, d, nil
}

// firstCycle plans the observed changes and writes back the authorized one.
func (r *run) firstCycle() error {
	r.step(4, fmt.Sprintf("Reconcile cycle at %s: plan, write back, check, merge", r.clock.Now().Format(time.TimeOnly)))
	rep, c, _, err := r.cycle("first")
	if err != nil {
		return err
	}
	r.sum.Requests.FirstCycle = c.Requests
	r.decisions(rep)
	r.actions(c)
	prs, err := r.adapter.ListPullRequests(r.ctx, r.repo, forge.PullRequestFilter{State: forge.StateAll})
	if err != nil {
		return err
	}
	for _, pr := range prs {
		p, err := r.pullRequest(pr)
		if err != nil {
			return err
		}
		r.sum.PullRequests = append(r.sum.PullRequests, p)
	}
	for i := range r.sum.Denied {
		r.sum.Denied[i].WrittenBack = r.carried(prs, r.sum.Denied[i].Object)
	}
	r.say("   requests to the hub: %d", c.Requests)
	return nil
}

// decisions shows a cycle's decisions, each deny with its reasons, and
// records the denied changes.
func (r *run) decisions(rep *bot.Report) {
	r.say("   decisions:")
	for _, rr := range rep.Repos {
		for _, d := range rr.Decisions {
			var cs []string
			for _, ch := range d.Changes {
				cs = append(cs, fmt.Sprintf("%s %s -> %s", ch.Field, values.Format(ch.From), values.Format(ch.To)))
			}
			note := ""
			if d.Outcome == "allow" && d.AutoMerge {
				note = " (pre-authorized: auto-merge)"
			}
			r.say(
				"     %-5s %s/%s %s: %s%s",
				d.Outcome,
				d.Environment,
				d.Unit,
				d.Object.Name,
				strings.Join(cs, ", "),
				note,
			)
			if d.Outcome == "deny" {
				for _, why := range d.Reasons {
					r.say("           - %s", why)
				}
				den := Denied{Environment: d.Environment, Object: d.Object, Reasons: d.Reasons, Fields: []string{}}
				for _, ch := range d.Changes {
					den.Fields = append(den.Fields, ch.Field)
				}
				r.sum.Denied = append(r.sum.Denied, den)
			}
		}
	}
}

// carried reports whether a write-back pull request carries a change of object.
func (r *run) carried(prs []forge.PullRequest, object observe.ObjectKey) bool {
	for _, pr := range prs {
		if m, ok := bot.ParseMarker(pr.Body); ok &&
			slices.ContainsFunc(m.Changes, func(c bot.MarkerChange) bool { return c.Object == object }) {
			return true
		}
	}
	return false
}

// actions shows what a cycle did.
func (r *run) actions(c Cycle) {
	r.say("   actions:")
	for _, a := range c.Actions {
		r.say("     %s", describe(a))
	}
}

func describe(a bot.Action) string {
	s := a.Kind
	if a.Branch != "" {
		s += " " + a.Branch
	}
	if a.PR > 0 {
		s += fmt.Sprintf(" #%d", a.PR)
	}
	if a.Detail != "" {
		s += ": " + a.Detail
	}
	return s
}

// pullRequest shows one pull request: title, URL, labels, files, the
// values diff, the receipt and the receipt check.
func (r *run) pullRequest(pr forge.PullRequest) (PullRequest, error) {
	p := PullRequest{
		Number:      pr.Number,
		URL:         pr.URL,
		Title:       pr.Title,
		Labels:      pr.Labels,
		Merged:      pr.Merged,
		MergeCommit: pr.MergeCommitSHA,
		Files:       []string{},
		Diff:        []string{},
		Checks:      map[string]string{},
	}
	if p.Labels == nil {
		p.Labels = []string{}
	}
	files, err := r.pullFiles(pr.Number)
	if err != nil {
		return p, err
	}
	r.say("\n   pull request #%d: %s", pr.Number, pr.Title)
	r.say("     url:    %s", pr.URL)
	r.say("     labels: %s", strings.Join(p.Labels, ", "))
	r.say("     files:")
	for _, f := range files {
		p.Files = append(p.Files, f.Filename)
		r.say("       %s (%s)", f.Filename, f.Status)
		if strings.HasPrefix(f.Filename, ".backflow/") {
			continue
		}
		for _, l := range strings.Split(f.Patch, "\n") {
			if (strings.HasPrefix(l, "-") || strings.HasPrefix(l, "+")) && !strings.HasPrefix(l, "---") &&
				!strings.HasPrefix(l, "+++") {
				p.Diff = append(p.Diff, l)
			}
		}
	}
	what := "the values file"
	if slices.ContainsFunc(p.Files, func(f string) bool { return path.Base(f) == "kustomization.yaml" }) {
		what = "the overlay"
	}
	r.say("     diff of %s:", what)
	for _, l := range p.Diff {
		r.say("       %s", l)
	}
	runs, err := r.adapter.ListCheckRuns(r.ctx, r.repo, pr.HeadSHA, bot.CheckName)
	if err != nil {
		return p, err
	}
	for _, run := range runs {
		p.Checks[run.Name] = run.Conclusion
		r.say("     check %s on the head %s: %s (%s)", run.Name, short(pr.HeadSHA), run.Conclusion, run.Summary)
	}
	if m, ok := bot.ParseMarker(pr.Body); ok && pr.Merged {
		for _, rp := range m.Receipts {
			data, err := r.adapter.ReadFile(r.ctx, r.repo, pr.MergeCommitSHA, rp)
			if err != nil {
				return p, err
			}
			r.say("     receipt %s (status proposed, as merged):", rp)
			for _, l := range strings.Split(strings.TrimRight(string(data), "\n"), "\n") {
				r.say("       | %s", l)
			}
		}
	}
	if pr.Merged {
		r.say("     merged into main as %s (pre-authorized, receipt check green)", short(pr.MergeCommitSHA))
	} else {
		r.say("     not merged")
	}
	return p, nil
}

type pullFile struct {
	Filename string `json:"filename"`
	Status   string `json:"status"`
	Patch    string `json:"patch"`
}

// pullFiles asks the hub for a pull request's files, as a reviewer's
// browser would; the forge port has no call for it because the bot never
// needs one.
func (r *run) pullFiles(number int) ([]pullFile, error) {
	tok, _, err := r.hub.IssueToken(r.inst)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(
		r.ctx,
		http.MethodGet,
		fmt.Sprintf("%srepos/%s/pulls/%d/files", r.hub.APIURL(), Repository, number),
		nil,
	)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "token "+tok)
	req.Header.Set("Accept", "application/vnd.github+json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("reading the files of #%d: %w", number, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("reading the files of #%d: HTTP %d", number, resp.StatusCode)
	}
	var files []pullFile
	if err := json.NewDecoder(io.LimitReader(resp.Body, 8<<20)).Decode(&files); err != nil {
		return nil, fmt.Errorf("reading the files of #%d: %w", number, err)
	}
	return files, nil
}

// forwardApply is the GitOps controller applying main after the merge:
// the accepted value stays, the unauthorized one is reverted.
func (r *run) forwardApply() error {
	return r.applyMain(5, "reverted %s -> %s (not in Git)", true)
}

// applyMain is the GitOps controller applying main at the clock's next
// minute, narrated as step n, each changed field said with changed (its
// from and to); record keeps prod-us-east's live fields in the summary.
func (r *run) applyMain(n int, changed string, record bool) error {
	r.catchUp()
	m, err := r.readMain()
	if err != nil {
		return err
	}
	head := m.head
	r.step(
		n,
		fmt.Sprintf(
			"Forward apply at %s: the GitOps controller applies main @ %s with --force-conflicts",
			r.clock.Now().Format(time.TimeOnly),
			short(head),
		),
	)
	for _, c := range r.clusters {
		applied, err := r.applyTo(c, m)
		if err != nil {
			return err
		}
		for _, a := range applied {
			r.say("   %s: %s %s "+changed, c.Name, a.Object.Name, a.Field, values.Format(a.From), values.Format(a.To))
		}
		if c.Environment != "prod-us-east" {
			continue
		}
		if record {
			for _, lf := range []struct{ object, field string }{{replicasKey, "spec.replicas"}, {masterKey, imageField}} {
				live, _ := c.Get(lf.object, lf.field)
				r.sum.ForwardApply = append(
					r.sum.ForwardApply,
					LiveField{Cluster: c.Name, Object: lf.object, Field: lf.field, Live: live, Manager: GitOpsManager},
				)
			}
		}
		live, _ := c.Get(replicasKey, "spec.replicas")
		r.say("   %s: redis-replicas spec.replicas stays %s: main now says so", c.Name, values.Format(live))
	}
	return nil
}

// catchUp sets the simulated clock to a minute past the later of itself and
// the wall clock: the hub dates a merge by the wall clock, so the clusters'
// clock catches up before anything after the merge is applied or observed.
func (r *run) catchUp() {
	r.clock.Set(maxTime(r.clock.Now(), r.wall().UTC().Truncate(time.Second)).Add(time.Minute))
}

// mainFiles is main as the GitOps controllers read it: its head, the repo
// config there and the files read so far.
type mainFiles struct {
	head  string
	cfg   *repoconfig.Config
	files map[string]string
}

// readMain reads main's head and the repo config there.
func (r *run) readMain() (*mainFiles, error) {
	head, err := r.adapter.BranchHead(r.ctx, r.repo, "main")
	if err != nil {
		return nil, err
	}
	m := &mainFiles{head: head, files: map[string]string{}}
	if err := r.readInto(m, repoconfig.Path); err != nil {
		return nil, err
	}
	if m.cfg, err = repoconfig.Parse(repoconfig.Path, []byte(m.files[repoconfig.Path])); err != nil {
		return nil, err
	}
	return m, nil
}

// readInto reads p at m's head into m.files.
func (r *run) readInto(m *mainFiles, p string) error {
	data, err := r.adapter.ReadFile(r.ctx, r.repo, m.head, p)
	if err != nil {
		return err
	}
	m.files[p] = string(data)
	return nil
}

// applyTo is the GitOps controllers' forward apply of main at head to
// c: the chart rendered with the environment's values files, and each
// kustomize unit's overlay built, as kustomize-controller builds it.
func (r *run) applyTo(c *Cluster, m *mainFiles) ([]Applied, error) {
	desired := map[string]map[string]any{}
	for _, u := range m.cfg.Units {
		if u.Environment != c.Environment {
			continue
		}
		for _, f := range u.ValuesFiles {
			if err := r.readInto(m, f); err != nil {
				return nil, err
			}
		}
		if u.Kustomization != "" {
			b, err := r.build(m.head, u.Kustomization)
			if err != nil {
				return nil, err
			}
			maps.Copy(desired, b.Rendering.Objects)
		}
	}
	objs, err := r.render(m.cfg, c.Environment, m.files)
	if err != nil {
		return nil, err
	}
	maps.Copy(desired, objs.Objects)
	return c.ForwardApply(desired)
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// followUpCycle re-observes after the grace period and runs the cycle that
// proves the receipt.
func (r *run) followUpCycle() error {
	r.clock.Advance(r.grace)
	r.step(
		6,
		fmt.Sprintf("Follow-up: %s later (followUp.gracePeriod), the observer reports again and a cycle runs", r.grace),
	)
	if err := r.observe(); err != nil {
		return err
	}
	_, c, _, err := r.cycle("follow-up")
	if err != nil {
		return err
	}
	r.sum.Requests.FollowUpCycle = c.Requests
	r.actions(c)
	prs, err := r.adapter.ListPullRequests(r.ctx, r.repo, forge.PullRequestFilter{State: forge.StateAll})
	if err != nil {
		return err
	}
	for _, pr := range prs {
		if !pr.Merged {
			continue
		}
		rcs, err := r.provenReceipts(pr)
		if err != nil {
			return err
		}
		r.sum.Receipts = append(r.sum.Receipts, rcs...)
		for i := range r.sum.PullRequests {
			if p := &r.sum.PullRequests[i]; p.Number == pr.Number {
				p.Labels = pr.Labels
				runs, err := r.adapter.ListCheckRuns(r.ctx, r.repo, pr.MergeCommitSHA, bot.ProvenCheckName)
				if err != nil {
					return err
				}
				for _, run := range runs {
					p.Checks[run.Name] = run.Conclusion
					r.say("   check %s on the merge commit %s: %s", run.Name, short(pr.MergeCommitSHA), run.Conclusion)
				}
				r.say("   #%d labels: %s", pr.Number, strings.Join(pr.Labels, ", "))
			}
		}
	}
	issues, err := r.adapter.ListIssues(r.ctx, r.repo, bot.LabelDrift, forge.StateAll)
	if err != nil {
		return err
	}
	for _, is := range issues {
		r.sum.DriftIssue = &Issue{Number: is.Number, URL: is.URL, State: string(is.State)}
		r.say(
			"   drift tracking issue #%d is %s: bob's change was reported, never written back, and the forward apply reverted "+
				"it",
			is.Number,
			is.State,
		)
	}
	r.say("   requests to the hub: %d", c.Requests)
	return nil
}

// provenReceipts takes the proven receipts the follow-up published on the
// pull request, writes them to the output folder and verifies them against
// the default branch's policy, as `backflow verify` would.
func (r *run) provenReceipts(pr forge.PullRequest) ([]Receipt, error) {
	comments, err := r.adapter.ListComments(r.ctx, r.repo, pr.Number)
	if err != nil {
		return nil, err
	}
	head, err := r.adapter.BranchHead(r.ctx, r.repo, "main")
	if err != nil {
		return nil, err
	}
	pdata, err := r.adapter.ReadFile(r.ctx, r.repo, head, r.polPath)
	if err != nil {
		return nil, err
	}
	pol, err := policy.Parse(r.polPath, pdata)
	if err != nil {
		return nil, err
	}
	m, ok := bot.ParseMarker(pr.Body)
	if !ok {
		return nil, fmt.Errorf("#%d carries no marker", pr.Number)
	}
	var got []Receipt
	for _, c := range comments {
		if !c.Mine {
			continue
		}
		docs := bot.ProvenReceipts(c.Body)
		for i, doc := range docs {
			name := fmt.Sprintf("pr-%d-receipt-%d.proven.yaml", pr.Number, i)
			if i < len(m.Receipts) {
				name = strings.TrimSuffix(path.Base(m.Receipts[i]), ".yaml") + ".proven.yaml"
			}
			if slices.ContainsFunc(r.sum.Receipts, func(rc Receipt) bool { return filepath.Base(rc.Path) == name }) {
				// A later write-back of the same object (a restoration)
				// keeps the earlier proof beside it.
				name = fmt.Sprintf("pr-%d-%s", pr.Number, name)
			}
			out := filepath.Join(r.opts.Out, name)
			if err := os.WriteFile(out, []byte(doc), 0o644); err != nil {
				return nil, fmt.Errorf("writing the proven receipt: %w", err)
			}
			rec := Receipt{Path: out}
			c := receipt.Check(out, []byte(doc), pol, r.polPath)
			if c.Err != nil {
				return nil, c.Err
			}
			vs := c.Strict()
			rec.Status, rec.MergeCommit, rec.Verified = c.Receipt.Spec.Status, c.Receipt.Spec.WriteBack.MergeCommit, len(vs) == 0
			for _, v := range vs {
				rec.Violations = append(rec.Violations, v.String())
			}
			got = append(got, rec)
			verdict := "verified against " + r.polPath + " on main"
			if !rec.Verified {
				verdict = "FAILED verification: " + strings.Join(rec.Violations, "; ")
			}
			r.say(
				"   proven receipt of #%d written to %s: status %s, writeBack.mergeCommit %s, %s",
				pr.Number,
				out,
				rec.Status,
				short(rec.MergeCommit),
				verdict,
			)
		}
	}
	return got, nil
}

// idleCycle is a cycle with nothing new: it must write nothing.
func (r *run) idleCycle() error {
	r.clock.Advance(5 * time.Minute)
	r.step(7, "An idle cycle: nothing new to do")
	_, c, d, err := r.cycle("idle")
	if err != nil {
		return err
	}
	r.sum.Requests.IdleCycle, r.sum.Requests.IdleWrites, r.sum.Requests.IdleNotModified = c.Requests, int(
		d.Writes,
	), int(
		d.NotModified,
	)
	r.sum.Requests.IdleRoutes = r.hub.Requests().Counts()
	r.say("   requests to the hub: %d (%d answered 304 Not Modified), writes: %d", c.Requests, d.NotModified, d.Writes)
	if d.Writes != 0 {
		return errors.New("the idle cycle wrote: the cycle is not idempotent")
	}
	return nil
}

func (r *run) summary() {
	r.say("\nSummary")
	for _, p := range r.sum.PullRequests {
		r.say(
			"   pull request #%d merged=%t labels=[%s] files=[%s]",
			p.Number,
			p.Merged,
			strings.Join(p.Labels, ", "),
			strings.Join(p.Files, ", "),
		)
	}
	for _, d := range r.sum.Denied {
		r.say(
			"   denied %s %s [%s]: written back=%t",
			d.Environment,
			d.Object.Name,
			strings.Join(d.Fields, ", "),
			d.WrittenBack,
		)
	}
	for _, rc := range r.sum.Receipts {
		r.say("   receipt %s: %s, verified=%t", rc.Path, rc.Status, rc.Verified)
	}
	if k := r.sum.Kustomize; k != nil {
		p := k.PullRequest
		r.say("   kustomize unit %s: pull request #%d merged=%t labels=[%s] files=[%s]", k.Overlay, p.Number, p.Merged,
			strings.Join(p.Labels, ", "), strings.Join(p.Files, ", "))
		for _, rc := range k.Receipts {
			r.say("   receipt %s: %s, verified=%t", rc.Path, rc.Status, rc.Verified)
		}
	}
	q := r.sum.Requests
	r.say(
		"   hub requests: first cycle %d, follow-up cycle %d, idle cycle %d (writes %d)",
		q.FirstCycle,
		q.FollowUpCycle,
		q.IdleCycle,
		q.IdleWrites,
	)
}

func short(sha string) string {
	if len(sha) > 12 {
		return sha[:12]
	}
	return sha
}
