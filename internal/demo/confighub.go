package demo

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/backflow-dev/backflow/internal/confighub/confighubtest"
	"github.com/backflow-dev/backflow/internal/forge"
	"github.com/backflow-dev/backflow/internal/lifecycle"
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
	r := newRun(ctx, opts)
	r.sum = &Summary{}
	started := r.wall()
	var err error
	if r.work, err = os.MkdirTemp("", "backflow-demo-confighub-"); err != nil {
		return nil, fmt.Errorf("creating the demo's folder: %w", err)
	}
	defer os.RemoveAll(r.work)
	if err := r.listenHub(); err != nil {
		return nil, err
	}
	defer r.hub.Close()
	r.startClock()
	ch := confighubtest.New(confighubtest.Options{Tokens: map[string]string{hubToken: hubUser}, Now: r.clock.Now})
	chURL, stop, err := ch.Listen()
	if err != nil {
		return nil, fmt.Errorf("starting the ConfigHub stand-in: %w", err)
	}
	defer stop()
	d := &hubRun{run: r, ch: ch, chURL: chURL, result: &HubSummary{Repository: Repository}}
	if err := d.seed(); err != nil {
		return nil, err
	}
	if err := d.liveScale(); err != nil {
		return nil, err
	}
	if err := d.hubBot(chURL); err != nil {
		return nil, err
	}
	for _, step := range []func() error{d.proposeCycle, d.writeCycle, d.applyRevision, d.proveCycle} {
		if err := step(); err != nil {
			return d.result, err
		}
	}
	d.result.Seconds = r.wall().Sub(started).Seconds()
	return d.result, nil
}

// hubRun is one ConfigHub demo: the run it shares with the Git demo, the
// ConfigHub stand-in that holds the Unit prod-us-east/redis and its URL, the
// cluster ConfigHub's worker applies the Unit to, and what the demo shows.
type hubRun struct {
	*run
	ch     *confighubtest.Server
	chURL  string
	east   *Cluster
	result *HubSummary
}

// seed puts the Unit prod-us-east/redis at revision 1 in the ConfigHub
// stand-in and the repository, with the repo config and the policy, on the
// local hub.
func (d *hubRun) seed() error {
	d.ch.AddSpace("prod-us-east")
	if _, err := d.ch.AddUnit("prod-us-east", "redis", confighubtest.ToolchainKubernetesYAML, []byte(hubUnitData),
		"bob"); err != nil {
		return err
	}
	if err := d.hubRepo(); err != nil {
		return err
	}
	d.say("backflow demo (ConfigHub): desired state in a ConfigHub Unit, authority and review in Git (loopback only)")
	d.say("   local hub %s holds %s; the ConfigHub stand-in %s holds the Unit prod-us-east/redis (revision 1)",
		d.hub.URL, Repository, d.chURL)
	return nil
}

// liveScale is the seed's incident in prod-us-east-1, whose redis-replicas
// runs the Unit's 3 replicas: alice scales it to 4 by hand, and the observer
// reports it a minute later.
func (d *hubRun) liveScale() error {
	d.east = NewCluster("prod-us-east-1", "prod-us-east", GitOpsManager, d.clock.Now)
	if err := d.east.Add(replicasKey, map[string]any{"spec.replicas": 3}); err != nil {
		return err
	}
	d.clusters = []*Cluster{d.east}
	if err := d.east.Scale(replicasKey, 4, Person{Actor: "alice", Groups: []string{"sre"}, Intent: incident}); err != nil {
		return err
	}
	d.say("   alice (group sre) scales redis-replicas 3 -> 4 in prod-us-east-1: %q", incident)
	d.clock.Advance(time.Minute)
	return d.observe()
}

// hubCycle runs one reconcile cycle, says each of its actions and keeps it
// in the summary, a failed cycle too.
func (d *hubRun) hubCycle(name string) error {
	_, c, _, err := d.cycle(name)
	for _, a := range c.Actions {
		d.say("   %s", describe(a))
	}
	d.result.Cycles = append(d.result.Cycles, c)
	return err
}

// proposeCycle is step 1: the bot plans alice's change against the Unit and
// proposes it in a pull request carrying the receipt and ConfigHub's dry-run
// diff, which auto-merges.
func (d *hubRun) proposeCycle() error {
	d.say("\n1. Cycle: plan against the Unit, propose the receipt with ConfigHub's dry run, merge")
	if err := d.hubCycle("propose"); err != nil {
		return err
	}
	prs, err := d.adapter.ListPullRequests(d.ctx, d.repo, forge.PullRequestFilter{State: forge.StateAll})
	if err != nil {
		return err
	}
	if len(prs) != 1 || !prs[0].Merged {
		return fmt.Errorf("the write-back pull request did not merge: %d pull requests", len(prs))
	}
	d.result.PullRequest = prs[0].Number
	return nil
}

// writeCycle is step 2: the merge authorizes the revision, which the bot
// writes to the Unit conditionally on the data hash it planned against.
func (d *hubRun) writeCycle() error {
	d.say("\n2. Cycle: the merge authorizes the revision; written with If-Match on the planned data hash")
	if err := d.hubCycle("write"); err != nil {
		return err
	}
	revs := d.ch.Revisions("prod-us-east", "redis")
	last := revs[len(revs)-1]
	if len(revs) != 2 || last.UserID != hubUser {
		return fmt.Errorf("the revision was not written: %d revisions", len(revs))
	}
	d.result.Revision, d.result.Description = last.Num, last.Description
	d.say("   revision %d: %s", last.Num, last.Description)
	return nil
}

// applyRevision is step 3: once the clusters' clock has caught up with the
// merge, ConfigHub's worker applies the Unit's revision to prod-us-east-1.
func (d *hubRun) applyRevision() error {
	d.catchUp()
	num, data, err := d.ch.Apply("prod-us-east", "redis")
	if err != nil {
		return err
	}
	objs, err := unitObjects(data)
	if err != nil {
		return err
	}
	if _, err := d.east.ForwardApply(objs); err != nil {
		return err
	}
	d.result.Live, _ = d.east.Get(replicasKey, "spec.replicas")
	d.say("\n3. ConfigHub's worker applies revision %d to prod-us-east-1: spec.replicas is %v", num, d.result.Live)
	return nil
}

// proveCycle is step 4: after the grace period the observer reports again
// and the follow-up proves the receipt through the Unit, naming the revision
// written; the proven receipt is written to the output folder.
func (d *hubRun) proveCycle() error {
	d.clock.Advance(6 * time.Minute)
	if err := d.observe(); err != nil {
		return err
	}
	d.say("\n4. Cycle after the grace period: the follow-up proves the receipt through the Unit")
	if err := d.hubCycle("follow-up"); err != nil {
		return err
	}
	var err error
	if d.result.Proven, err = d.provenComment(d.result.PullRequest); err != nil {
		return err
	}
	want := fmt.Sprintf("newRevision: confighub:prod-us-east/redis@%d", d.result.Revision)
	if !strings.Contains(d.result.Proven, "status: proven") || !strings.Contains(d.result.Proven, want) {
		return fmt.Errorf("the receipt was not proven naming revision %d:\n%s", d.result.Revision, d.result.Proven)
	}
	out, err := outputFolder(d.opts.Out)
	if err != nil {
		return err
	}
	d.result.ProvenPath = filepath.Join(out, "proven-receipt.yaml")
	if err := os.WriteFile(d.result.ProvenPath, []byte(d.result.Proven), 0o644); err != nil {
		return fmt.Errorf("writing the proven receipt: %w", err)
	}
	d.say("   proven: %s (%s)", want, d.result.ProvenPath)
	return nil
}

// hubRepo creates the ConfigHub demo's repository on the hub, with its repo
// config, policy and README, and installs the App.
func (r *run) hubRepo() error {
	files := map[string]string{".github/backflow.yaml": hubConfig, ".github/reverse-reconcile-policy.yaml": hubPolicy,
		"README.md": "# gitops\n\nprod-us-east/redis lives in ConfigHub; its authority lives here.\n"}
	return r.createRepo(files)
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
