package demo

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/backflow-dev/backflow/internal/forge"
	"github.com/backflow-dev/backflow/internal/receipt"
)

// BreakGlassFor is how long the break-glass demo's policy accepts a scale.
const BreakGlassFor = "2h"

// Expiry is what the break-glass demo shows after the acceptance.
type Expiry struct {
	// ExpiresAt is the merged receipt's expiry (RFC 3339).
	ExpiresAt string `json:"expiresAt"`
	// Restore is the restoring pull request, as the hub holds it at the end.
	Restore PullRequest `json:"restore"`
	// Live is redis-replicas' spec.replicas after the forward apply of the
	// restoring merge.
	Live any `json:"live"`
	// Again is how many pull requests the idle cycle after it opened: an
	// expiry fires once.
	Again int `json:"again"`
}

// breakGlassFiles is the sample with acceptFor on the replicaCount entry.
func breakGlassFiles(files map[string]string) map[string]string {
	const entry = "          autoMerge: true\n"
	p := ".github/reverse-reconcile-policy.yaml"
	files[p] = strings.Replace(
		files[p],
		entry,
		entry+"          # Break glass: an accepted scale lasts the incident, not for ever.\n"+
			"          acceptFor: "+BreakGlassFor+"\n",
		1,
	)
	return files
}

// expiryCycle runs the cycle after the acceptance's term: the merged
// receipt on main has expired by the simulated clock, so the bot opens the
// restoring pull request under the same entry, pre-authorized.
func (r *run) expiryCycle() error {
	head, err := r.adapter.BranchHead(r.ctx, r.repo, "main")
	if err != nil {
		return err
	}
	data, err := r.adapter.ReadFile(r.ctx, r.repo, head, replicasReceipt)
	if err != nil {
		return err
	}
	rec, _, err := receipt.Parse(replicasReceipt, data)
	if err != nil {
		return err
	}
	at, ok := rec.ExpiresAt()
	if !ok {
		return errors.New("the merged receipt has no expiry: the sample's policy sets no acceptFor")
	}
	r.sum.Expiry = &Expiry{ExpiresAt: at.UTC().Format(time.RFC3339)}
	r.clock.Set(maxTime(r.clock.Now(), at).Add(time.Minute))
	r.step(
		10,
		fmt.Sprintf(
			"Break glass: at %s alice's acceptance has expired (expiresAt %s in the merged receipt, acceptFor %s)",
			r.clock.Now().Format(time.TimeOnly),
			at.Format(time.TimeOnly),
			BreakGlassFor,
		),
	)
	pr, err := r.observeAndCycle("expiry")
	if err != nil {
		return err
	}
	if !strings.Contains(pr.Title, "-> 3") {
		return fmt.Errorf("the expiry cycle opened no restoring pull request (newest: #%d %s)", pr.Number, pr.Title)
	}
	p, err := r.pullRequest(pr)
	if err != nil {
		return err
	}
	r.sum.Expiry.Restore = p
	return nil
}

// restoreApply is the forward apply of the restoring merge.
func (r *run) restoreApply() error {
	const restored = "restored %s -> %s (main holds the value desired before the acceptance)"
	if err := r.applyMain(11, restored, false); err != nil {
		return err
	}
	live, _ := r.cluster("prod-us-east").Get(replicasKey, "spec.replicas")
	r.sum.Expiry.Live = live
	return nil
}

// restoreFollowUp proves the restoring write-back: live is back at the
// value desired before, after the grace period.
func (r *run) restoreFollowUp() error {
	r.clock.Advance(r.grace)
	r.step(12, fmt.Sprintf("Follow-up of the restoring pull request, %s later", r.grace))
	pr, err := r.observeAndCycle("restore follow-up")
	if err != nil {
		return err
	}
	r.sum.Expiry.Restore.Labels = pr.Labels
	r.say("   #%d labels: %s", pr.Number, strings.Join(pr.Labels, ", "))
	rcs, err := r.provenReceipts(pr)
	if err != nil {
		return err
	}
	r.sum.Receipts = append(r.sum.Receipts, rcs...)
	return nil
}

// idleAgain is a cycle after the restoration: nothing is due any more,
// and no second restoring pull request is opened.
func (r *run) idleAgain() error {
	before, err := r.newest()
	if err != nil {
		return err
	}
	r.clock.Advance(5 * time.Minute)
	r.step(13, "A cycle after the restoration: the expiry does not fire twice")
	_, c, d, err := r.cycle("after the restoration")
	if err != nil {
		return err
	}
	after, err := r.newest()
	if err != nil {
		return err
	}
	r.sum.Expiry.Again = after.Number - before.Number
	r.say("   requests to the hub: %d, writes: %d, new pull requests: %d", c.Requests, d.Writes, r.sum.Expiry.Again)
	if r.sum.Expiry.Again != 0 || d.Writes != 0 {
		return errors.New("the cycle after the restoration wrote: an expiry fired twice")
	}
	return nil
}

// observeAndCycle has the observer report, runs the cycle name, says
// what it did, and returns the newest pull request after it.
func (r *run) observeAndCycle(name string) (forge.PullRequest, error) {
	if err := r.observe(); err != nil {
		return forge.PullRequest{}, err
	}
	_, c, _, err := r.cycle(name)
	if err != nil {
		return forge.PullRequest{}, err
	}
	r.say("   actions:")
	for _, a := range c.Actions {
		r.say("     %s", describe(a))
	}
	return r.newest()
}

// newest is the repository's newest pull request.
func (r *run) newest() (forge.PullRequest, error) {
	prs, err := r.adapter.ListPullRequests(r.ctx, r.repo, forge.PullRequestFilter{State: forge.StateAll})
	if err != nil {
		return forge.PullRequest{}, err
	}
	var out forge.PullRequest
	for _, pr := range prs {
		if pr.Number > out.Number {
			out = pr
		}
	}
	return out, nil
}

// replicasReceipt is the receipt of redis-replicas in prod-us-east.
const replicasReceipt = ".backflow/receipts/prod-us-east/redis/redis_StatefulSet.apps.v1_redis-replicas.yaml"
