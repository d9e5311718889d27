package demo

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/backflow-dev/backflow/internal/bot"
	"github.com/backflow-dev/backflow/internal/confighub/confighubtest"
	"github.com/backflow-dev/backflow/internal/forge"
	"github.com/backflow-dev/backflow/internal/lifecycle"
	"github.com/backflow-dev/backflow/internal/localhub"
	"github.com/backflow-dev/backflow/internal/observe"
	"github.com/backflow-dev/backflow/internal/yamlnode"
	"sigs.k8s.io/yaml"
)

// hubConfig and hubPolicy are the GitOps repository of the ConfigHub demo:
// prod-us-east's redis has its desired state in a ConfigHub Unit, and the
// policy (in the repository, with the review) names the field alone.
const (
	hubConfig = `# The ConfigHub demo's GitOps repository: authority and review live here,
# desired state lives in the ConfigHub Unit prod-us-east/redis.
version: 1
policy: .github/reverse-reconcile-policy.yaml
environments:
  prod-us-east:
    clusters: [prod-us-east-1]
units:
  - name: redis
    environment: prod-us-east
    confighub: {space: prod-us-east, unit: redis}
    objects: ["apps/v1|StatefulSet|redis|redis-*"]
roles:
  platform-sre:
    groups: [sre]
    attribution: [audit-log]
autoMerge:
  enabled: true
  method: squash
followUp:
  gracePeriod: 5m
`
	hubPolicy = `apiVersion: backflow.dev/v1alpha1
kind: ReverseReconcilePolicy
metadata:
  name: redis-reverse-reconcile-authority
spec:
  default: deny
  rules:
    - role: platform-sre
      reason: SRE may absorb a load spike by scaling replicas live.
      mayAccept:
        - field: spec.replicas
          objects: ["apps/v1|StatefulSet|redis|redis-replicas"]
          environments: [prod-us-east]
          autoMerge: true
`
	hubUnitData = `# prod-us-east/redis, rendered (toolchain Kubernetes/YAML)
apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: redis-replicas
  namespace: redis
spec:
  replicas: 3 # scaled live during incidents
  template:
    spec:
      containers:
      - name: redis
        image: redis:7
`
	hubToken = "demo-confighub-token"
	hubUser  = "0b07b07b-0000-4000-8000-000000000001"
)

// HubSummary is what the ConfigHub demo shows.
type HubSummary struct {
	Repository string `json:"repository"`
	// PullRequest is the write-back pull request, merged.
	PullRequest int `json:"pullRequest"`
	// Revision is the revision written, Description its change
	// description.
	Revision    int64  `json:"revision"`
	Description string `json:"description"`
	// Proven is the proven receipt, as the pull request's comment carries
	// it; ProvenPath where it was written (under Options.Out).
	Proven     string `json:"proven"`
	ProvenPath string `json:"provenPath"`
	// Live is spec.replicas live after ConfigHub applied the revision.
	Live    any     `json:"live"`
	Cycles  []Cycle `json:"cycles"`
	Seconds float64 `json:"seconds"`
}

// RunConfigHub runs the seed's incident with the desired state in a
// ConfigHub Unit: the local hub holds the repository (repo config, policy,
// receipts), the ConfigHub stand-in on loopback the Unit; alice's 3 -> 4
// is accepted, the pull request carrying the receipt and the Unit's
// dry-run diff auto-merges, the bot writes the revision conditionally, the
// stand-in applies it to the cluster, and the receipt is proven naming the
// revision. The bot is built from a bot config with a confighub section,
// as `backflow run` builds it.
func RunConfigHub(ctx context.Context, opts Options) (*HubSummary, error) {
	r := &run{ctx: ctx, opts: opts, out: opts.Narration, wall: opts.Now, sum: &Summary{}}
	if r.out == nil {
		r.out = io.Discard
	}
	if r.wall == nil {
		r.wall = time.Now
	}
	started := r.wall()
	sum := &HubSummary{Repository: Repository}
	var err error
	if r.work, err = os.MkdirTemp("", "backflow-demo-confighub-"); err != nil {
		return nil, fmt.Errorf("creating the demo's folder: %w", err)
	}
	defer os.RemoveAll(r.work)
	r.hub, err = localhub.Listen("127.0.0.1:0", localhub.Options{AppSlug: "backflow", Clock: clockFunc(r.wall)})
	if err != nil {
		return nil, fmt.Errorf("starting the local hub: %w", err)
	}
	defer r.hub.Close()
	r.clock = localhub.NewFakeClock(r.wall().UTC().Truncate(time.Second).Add(-15 * time.Minute))
	ch := confighubtest.New(confighubtest.Options{Tokens: map[string]string{hubToken: hubUser}, Now: r.clock.Now})
	hubURL, stop, err := ch.Listen()
	if err != nil {
		return nil, fmt.Errorf("starting the ConfigHub stand-in: %w", err)
	}
	defer stop()
	ch.AddSpace("prod-us-east")
	if _, err := ch.AddUnit("prod-us-east", "redis", confighubtest.ToolchainKubernetesYAML, []byte(hubUnitData),
		"bob"); err != nil {
		return nil, err
	}
	if err := r.hubRepo(); err != nil {
		return nil, err
	}
	r.say("backflow demo (ConfigHub): desired state in a ConfigHub Unit, authority and review in Git (loopback only)")
	r.say("   local hub %s holds %s; the ConfigHub stand-in %s holds the Unit prod-us-east/redis (revision 1)",
		r.hub.URL, Repository, hubURL)
	east := NewCluster("prod-us-east-1", "prod-us-east", GitOpsManager, r.clock.Now)
	if err := east.Add(replicasKey, map[string]any{"spec.replicas": 3}); err != nil {
		return nil, err
	}
	r.clusters = []*Cluster{east}
	if err := east.Scale(replicasKey, 4, Person{Actor: "alice", Groups: []string{"sre"}, Intent: incident}); err != nil {
		return nil, err
	}
	r.say("   alice (group sre) scales redis-replicas 3 -> 4 in prod-us-east-1: %q", incident)
	r.clock.Advance(time.Minute)
	if err := r.observe(); err != nil {
		return nil, err
	}
	if err := r.hubBot(hubURL); err != nil {
		return nil, err
	}
	cycle := func(name string) error {
		_, c, _, err := r.cycle(name)
		for _, a := range c.Actions {
			r.say("   %s", describe(a))
		}
		sum.Cycles = append(sum.Cycles, c)
		return err
	}
	r.say("\n1. Cycle: plan against the Unit, propose the receipt with ConfigHub's dry run, merge")
	if err := cycle("propose"); err != nil {
		return sum, err
	}
	prs, err := r.adapter.ListPullRequests(ctx, r.repo, forge.PullRequestFilter{State: forge.StateAll})
	if err != nil {
		return sum, err
	}
	if len(prs) != 1 || !prs[0].Merged {
		return sum, fmt.Errorf("the write-back pull request did not merge: %d pull requests", len(prs))
	}
	sum.PullRequest = prs[0].Number
	r.say("\n2. Cycle: the merge authorizes the revision; written with If-Match on the planned data hash")
	if err := cycle("write"); err != nil {
		return sum, err
	}
	revs := ch.Revisions("prod-us-east", "redis")
	last := revs[len(revs)-1]
	if len(revs) != 2 || last.UserID != hubUser {
		return sum, fmt.Errorf("the revision was not written: %d revisions", len(revs))
	}
	sum.Revision, sum.Description = last.Num, last.Description
	r.say("   revision %d: %s", last.Num, last.Description)
	// The merge is dated by the hub's clock, the wall's: the cluster's
	// clock catches up before anything after the merge is observed.
	r.clock.Set(maxTime(r.clock.Now(), r.wall().UTC().Truncate(time.Second)).Add(time.Minute))
	num, data, err := ch.Apply("prod-us-east", "redis")
	if err != nil {
		return sum, err
	}
	objs, err := unitObjects(data)
	if err != nil {
		return sum, err
	}
	if _, err := east.ForwardApply(objs); err != nil {
		return sum, err
	}
	sum.Live, _ = east.Get(replicasKey, "spec.replicas")
	r.say("\n3. ConfigHub's worker applies revision %d to prod-us-east-1: spec.replicas is %v", num, sum.Live)
	r.clock.Advance(6 * time.Minute)
	if err := r.observe(); err != nil {
		return sum, err
	}
	r.say("\n4. Cycle after the grace period: the follow-up proves the receipt through the Unit")
	if err := cycle("follow-up"); err != nil {
		return sum, err
	}
	if sum.Proven, err = r.provenComment(sum.PullRequest); err != nil {
		return sum, err
	}
	want := fmt.Sprintf("newRevision: confighub:prod-us-east/redis@%d", sum.Revision)
	if !strings.Contains(sum.Proven, "status: proven") || !strings.Contains(sum.Proven, want) {
		return sum, fmt.Errorf("the receipt was not proven naming revision %d:\n%s", sum.Revision, sum.Proven)
	}
	out := opts.Out
	if out == "" {
		if out, err = os.MkdirTemp("", "backflow-demo-out-"); err != nil {
			return sum, fmt.Errorf("creating the output folder: %w", err)
		}
	} else if err := os.MkdirAll(out, 0o755); err != nil {
		return sum, fmt.Errorf("creating the output folder: %w", err)
	}
	sum.ProvenPath = filepath.Join(out, "proven-receipt.yaml")
	if err := os.WriteFile(sum.ProvenPath, []byte(sum.Proven), 0o644); err != nil {
		return sum, fmt.Errorf("writing the proven receipt: %w", err)
	}
	r.say("   proven: %s (%s)", want, sum.ProvenPath)
	sum.Seconds = r.wall().Sub(started).Seconds()
	return sum, nil
}

// hubRepo creates the demo's repository on the hub and installs the App.
func (r *run) hubRepo() error {
	h := r.hub.Hub
	files := map[string]string{".github/backflow.yaml": hubConfig, ".github/reverse-reconcile-policy.yaml": hubPolicy,
		"README.md": "# gitops\n\nprod-us-east/redis lives in ConfigHub; its authority lives here.\n"}
	if err := h.CreateRepo(localhub.RepoOptions{Owner: Owner, Name: RepoName, Files: files,
		AllowAutoMerge: true}); err != nil {
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

// hubBot writes the bot config, with its confighub section and the token
// in a file beside it, and builds the bot as `backflow run` does
// (loadBot).
func (r *run) hubBot(hubURL string) error {
	h := r.hub.Hub
	if err := os.WriteFile(filepath.Join(r.work, "app.pem"), h.PrivateKeyPEM(), 0o600); err != nil {
		return fmt.Errorf("writing the App key: %w", err)
	}
	if err := os.WriteFile(filepath.Join(r.work, "confighub-token"), []byte(hubToken+"\n"), 0o600); err != nil {
		return fmt.Errorf("writing the ConfigHub token: %w", err)
	}
	conf := fmt.Sprintf(`version: 1
github:
  appId: %d
  privateKeyFile: app.pem
  baseURL: %s
  appSlug: %s
repositories: [%s]
observations:
  prod-us-east-1:
    - path: observations/prod-us-east-1.json
      trust: audit-log
confighub:
  url: %s
  tokenFile: confighub-token
  timeout: 10s
`, h.AppID(), r.hub.APIURL(), h.AppSlug(), Repository, hubURL)
	return r.loadBot(conf)
}

// provenComment is the proven receipt the follow-up's comment carries.
func (r *run) provenComment(number int) (string, error) {
	cs, err := r.adapter.ListComments(r.ctx, r.repo, number)
	if err != nil {
		return "", err
	}
	i := slices.IndexFunc(cs, func(c forge.Comment) bool { return strings.Contains(c.Body, lifecycle.TagProven) })
	if i < 0 {
		return "", fmt.Errorf("#%d has no proven receipt", number)
	}
	docs := lifecycle.ProvenReceipts(cs[i].Body)
	if len(docs) != 1 {
		return "", fmt.Errorf("#%d's proof carries %d receipts", number, len(docs))
	}
	return docs[0], nil
}

// unitObjects are the Unit's documents by object key, as ConfigHub's
// worker applies them.
func unitObjects(data []byte) (map[string]map[string]any, error) {
	out := map[string]map[string]any{}
	for _, d := range yamlnode.SplitDocuments(data) {
		if d.Empty {
			continue
		}
		var obj map[string]any
		if err := yaml.Unmarshal(data[d.Start:d.End], &obj); err != nil {
			return nil, fmt.Errorf("the Unit's data: %w", err)
		}
		if len(obj) == 0 {
			continue
		}
		meta, _ := obj["metadata"].(map[string]any)
		key := observe.ObjectKey{APIVersion: fmt.Sprint(obj["apiVersion"]), Kind: fmt.Sprint(obj["kind"]),
			Namespace: fmt.Sprint(meta["namespace"]), Name: fmt.Sprint(meta["name"])}
		out[key.String()] = obj
	}
	return out, nil
}
