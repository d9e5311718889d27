package demo

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/backflow-dev/backflow/internal/bot"
	"github.com/backflow-dev/backflow/internal/forge"
	"github.com/backflow-dev/backflow/internal/kustomize"
	"github.com/backflow-dev/backflow/internal/observe"
	"github.com/backflow-dev/backflow/internal/values"
)

// KustomizeRun is the kustomize unit's round trip: its write-back pull
// request, its proven receipts and the live field after the forward apply.
type KustomizeRun struct {
	// Overlay is the unit's kustomization folder; Files what kustomize
	// built it from.
	Overlay     string      `json:"overlay"`
	Files       []string    `json:"files"`
	PullRequest PullRequest `json:"pullRequest"`
	Receipts    []Receipt   `json:"receipts"`
	// ForwardApply is the cache's spec.replicas after kustomize-controller
	// applied the merged overlay.
	ForwardApply LiveField `json:"forwardApply"`
}

// build builds the kustomization in dir from the repository at ref, as
// kustomize-controller builds it: only the files it names, read from Git.
func (r *run) build(ref, dir string) (*kustomize.Build, error) {
	read := func(p string) ([]byte, error) { return r.adapter.ReadFile(r.ctx, r.repo, ref, p) }
	files, err := kustomize.Inputs(read, dir)
	if err != nil {
		return nil, fmt.Errorf("the sample repository: %w", err)
	}
	return kustomize.Run(files, dir)
}

// kustomizeCycle is the shop beside redis: kustomize-controller applies
// the shop's overlay, alice scales its cache by hand, and a cycle writes
// the scale into the overlay's replicas: entry and merges it.
func (r *run) kustomizeCycle() error {
	r.clock.Advance(time.Minute)
	r.step(8, "A kustomize unit beside the Helm one: the shop's overlay "+shopOverlay)
	head, err := r.adapter.BranchHead(r.ctx, r.repo, "main")
	if err != nil {
		return err
	}
	b, err := r.build(head, shopOverlay)
	if err != nil {
		return err
	}
	east := r.cluster("prod-us-east")
	obj := b.Rendering.Objects[shopCacheKey]
	fields := map[string]any{}
	for _, p := range []string{"spec.replicas", imageField} {
		v, ok := FieldValue(obj, p)
		if !ok {
			return fmt.Errorf("the sample overlay %s builds no %s %s", shopOverlay, shopCacheKey, p)
		}
		fields[p] = v
	}
	if err := east.Add(shopCacheKey, fields); err != nil {
		return err
	}
	r.sum.Kustomize = &KustomizeRun{Overlay: shopOverlay, Files: b.Files, Receipts: []Receipt{}}
	r.say("   %s: kustomize build %s: %d objects from %s (%s)", east.Name, shopOverlay, len(b.Rendering.Objects),
		strings.Join(b.Files, ", "), kustomize.Renderer)
	r.say("   %s: web-cache (spec.replicas %s, the overlay's replicas: entry) applied by the GitOps controller",
		east.Name, values.Format(fields["spec.replicas"]))
	alice := Person{Actor: "alice", Groups: []string{"sre"}, Intent: shopIncident}
	if err := east.Scale(shopCacheKey, 4, alice); err != nil {
		return err
	}
	r.say("   %s  alice (group sre) scales web-cache 3 -> 4 in %s: %q", r.clock.Now().Format(time.TimeOnly), east.Name,
		shopIncident)
	r.clock.Advance(time.Minute)
	if err := r.observe(); err != nil {
		return err
	}
	before := len(r.sum.PullRequests)
	rep, c, _, err := r.cycle("kustomize")
	if err != nil {
		return err
	}
	r.decisions(rep)
	r.actions(c)
	pr, err := r.shopPull()
	if err != nil {
		return err
	}
	p, err := r.pullRequest(*pr)
	if err != nil {
		return err
	}
	if len(r.sum.PullRequests) != before {
		return fmt.Errorf("the kustomize cycle changed the Helm unit's pull requests")
	}
	r.sum.Kustomize.PullRequest = p
	r.say("   requests to the hub: %d", c.Requests)
	return nil
}

// shopPull is the write-back pull request carrying the shop's cache.
func (r *run) shopPull() (*forge.PullRequest, error) {
	prs, err := r.adapter.ListPullRequests(r.ctx, r.repo, forge.PullRequestFilter{State: forge.StateAll})
	if err != nil {
		return nil, err
	}
	shop, err := observe.ParseObjectKey(shopCacheKey)
	if err != nil {
		return nil, err
	}
	for i := range prs {
		if r.carried(prs[i:i+1], shop) {
			return &prs[i], nil
		}
	}
	return nil, fmt.Errorf("no write-back pull request carries %s", shopCacheKey)
}

// kustomizeFollowUp is kustomize-controller applying the merged overlay,
// then the follow-up after the grace period proving the receipt.
func (r *run) kustomizeFollowUp() error {
	r.clock.Advance(time.Minute)
	m, err := r.readMain()
	if err != nil {
		return err
	}
	r.step(9, fmt.Sprintf("Forward apply at %s: kustomize-controller builds %s from main @ %s and applies it",
		r.clock.Now().Format(time.TimeOnly), shopOverlay, short(m.head)))
	east := r.cluster("prod-us-east")
	changed, err := r.applyTo(east, m)
	if err != nil {
		return err
	}
	for _, a := range changed {
		r.say("   %s: %s %s reverted %s -> %s (not in Git)", east.Name, a.Object.Name, a.Field,
			values.Format(a.From), values.Format(a.To))
	}
	live, _ := east.Get(shopCacheKey, "spec.replicas")
	r.sum.Kustomize.ForwardApply = LiveField{Cluster: east.Name, Object: shopCacheKey, Field: "spec.replicas", Live: live,
		Manager: east.GitOpsManager}
	r.say("   %s: web-cache spec.replicas stays %s: the overlay's replicas: entry now says so", east.Name,
		values.Format(live))

	r.clock.Advance(r.grace)
	r.say("   follow-up %s later (followUp.gracePeriod):", r.grace)
	if err := r.observe(); err != nil {
		return err
	}
	_, c, _, err := r.cycle("kustomize follow-up")
	if err != nil {
		return err
	}
	r.actions(c)
	pr, err := r.shopPull()
	if err != nil {
		return err
	}
	rcs, err := r.provenReceipts(*pr)
	if err != nil {
		return err
	}
	if len(rcs) == 0 {
		return fmt.Errorf("#%d: the follow-up proved no receipt", pr.Number)
	}
	r.sum.Kustomize.Receipts = rcs
	r.sum.Kustomize.PullRequest.Labels = pr.Labels
	runs, err := r.adapter.ListCheckRuns(r.ctx, r.repo, pr.MergeCommitSHA, bot.ProvenCheckName)
	if err != nil {
		return err
	}
	for _, run := range runs {
		r.sum.Kustomize.PullRequest.Checks[run.Name] = run.Conclusion
		r.say("   check %s on the merge commit %s: %s", run.Name, short(pr.MergeCommitSHA), run.Conclusion)
	}
	r.say("   #%d labels: %s", pr.Number, strings.Join(pr.Labels, ", "))
	r.say("   requests to the hub: %d", c.Requests)
	if !slices.ContainsFunc(rcs, func(rc Receipt) bool { return rc.Verified }) {
		return fmt.Errorf("#%d: no proven receipt verifies", pr.Number)
	}
	return nil
}
