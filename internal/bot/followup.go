package bot

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/backflow-dev/backflow/internal/forge"
	"github.com/backflow-dev/backflow/internal/observe"
	"github.com/backflow-dev/backflow/internal/plan"
	"github.com/backflow-dev/backflow/internal/receipt"
	"github.com/backflow-dev/backflow/internal/repoconfig"
	"github.com/backflow-dev/backflow/internal/values"
)

// Labels and the check run of the follow-up after a merge. The two result
// labels are the follow-up's memory: a merged pull request carrying either
// is never looked at again.
const (
	LabelProven   = "reverse-reconcile:proven"
	LabelReverted = "reverse-reconcile:reverted"
	// LabelDrift marks the tracking issue of unauthorized drift.
	LabelDrift = "reverse-reconcile:drift"
	// ProvenCheckName is the check run on the merge commit that carries the
	// proven receipt.
	ProvenCheckName = "backflow/proven"
)

// Action kinds of the follow-up and the drift report.
const (
	ActProven   = "proven"
	ActReverted = "reverted"
	ActWaiting  = "follow-up"
	ActDrift    = "drift-issue"
)

// DriftIssueTitle is the title of the tracking issue.
const DriftIssueTitle = "backflow: unauthorized live drift"

// Hidden tags in the follow-up's comments, so a crash between the comment
// and the label does not repeat the comment.
const (
	tagProven   = "<!-- backflow:note proven -->"
	tagReverted = "<!-- backflow:note reverted -->"
	tagDrift    = "<!-- backflow:drift-report -->"
)

// FollowUps counts the merged write-backs this cycle proved and found
// reverted (dry-run actions excluded), for metrics.
func (r *Report) FollowUps() (proven, reverted int) {
	for _, rr := range r.Repos {
		for _, a := range rr.Actions {
			switch {
			case a.DryRun:
			case a.Kind == ActProven:
				proven++
			case a.Kind == ActReverted:
				reverted++
			}
		}
	}
	return proven, reverted
}

// Drift counts the objects whose live change this cycle denied as
// unauthorized drift, for metrics.
func (r *Report) Drift() int {
	n := 0
	for _, rr := range r.Repos {
		for _, d := range rr.Decisions {
			if d.Outcome == string(plan.Deny) {
				n++
			}
		}
	}
	return n
}

// followUp looks at every merged write-back that has no result yet. It
// needs no state of its own: the pull requests, their markers and labels
// are listed each cycle anyway, and a pull request still waiting costs no
// request.
func (rc *repoCycle) followUp(prs []forge.PullRequest) {
	for _, pr := range prs {
		if rc.rateLimit != nil {
			return
		}
		if !pr.Mine || !pr.Merged || pr.BaseRef != rc.repo.DefaultBranch || !slices.Contains(pr.Labels, LabelReverseReconcile) ||
			slices.Contains(pr.Labels, LabelProven) || slices.Contains(pr.Labels, LabelReverted) {
			continue
		}
		m, ok := ParseMarker(pr.Body)
		if !ok || m.Branch != pr.HeadRef || len(m.Changes) == 0 {
			continue
		}
		rc.followMerged(pr, m)
	}
}

// verdict is what the re-observation says of one accepted field.
type verdict struct {
	change MarkerChange
	obs    *observe.Observation // the newest observation since the merge
	live   any                  // the live value it shows
	gone   bool                 // the field is absent live
	equal  bool                 // live equals the accepted value
	// applied says the GitOps controller's forward apply wrote the field
	// at the accepted value: positive evidence that it stuck without
	// waiting out the grace period.
	applied bool
}

// followMerged decides one merged write-back. Every accepted field must be
// re-observed after the merge. All of them at the accepted value, either
// written by the forward apply or still so in an observation made after the
// grace period: proven. Any of them at another value in an observation
// made after the grace period: reverted. Anything else waits; no
// observation at all is never evidence.
func (rc *repoCycle) followMerged(pr forge.PullRequest, m *Marker) {
	merged := pr.MergedAt
	if merged.IsZero() {
		merged = pr.ClosedAt
	}
	grace := rc.cfg.FollowUp.GracePeriod.Duration
	if grace <= 0 {
		grace = repoconfig.DefaultGracePeriod
	}
	settled := merged.Add(grace)
	var vs []verdict
	for _, c := range m.Changes {
		v, ok := rc.reobserve(m, c, merged)
		if !ok {
			rc.act(Action{Kind: ActWaiting, Branch: m.Branch, PR: pr.Number, URL: pr.URL,
				Detail: fmt.Sprintf("merged %s; %s not observed since the merge", short(pr.MergeCommitSHA), objectName(c.Object))})
			return
		}
		vs = append(vs, v)
	}
	after := func(v verdict) bool { return !v.obs.ObservedAt.Before(settled) }
	for _, v := range vs {
		if !v.equal && after(v) {
			rc.reverted(pr, m, v, grace)
			return
		}
	}
	for _, v := range vs {
		if !v.equal || !(v.applied || after(v)) {
			rc.act(Action{Kind: ActWaiting, Branch: m.Branch, PR: pr.Number, URL: pr.URL,
				Detail: fmt.Sprintf("merged %s; waiting for an observation after the grace period (%s, until %s)", short(pr.MergeCommitSHA), grace, settled.UTC().Format(time.RFC3339))})
			return
		}
	}
	rc.proven(pr, m, vs)
}

// reobserve finds the newest observation of the change's object in the
// write-back's environment made after the merge, and what it says of the
// field. A field the observation does not list is at the observer's
// desired value, which after the merge is the default branch's.
func (rc *repoCycle) reobserve(m *Marker, c MarkerChange, merged time.Time) (verdict, bool) {
	var newest *observe.Observation
	for i := range rc.obs.Observations {
		o := &rc.obs.Observations[i]
		if o.Object.String() != c.Object || rc.envOf(*o) != m.Environment || !o.ObservedAt.After(merged) {
			continue
		}
		if newest == nil || o.ObservedAt.After(newest.ObservedAt) {
			newest = o
		}
	}
	if newest == nil {
		return verdict{}, false
	}
	v := verdict{change: c, obs: newest}
	i := slices.IndexFunc(newest.Fields, func(f observe.Field) bool { return f.Path == c.Field })
	switch {
	case i < 0:
		if u := rc.unit(m.Environment, m.Unit); u != nil {
			v.live, _ = rc.desired(u, c.ValuePath)
		}
		v.equal = values.Equal(v.live, c.To)
	case newest.Fields[i].Removed:
		v.gone = true
	default:
		f := newest.Fields[i]
		v.live = f.LiveLike(c.To)
		v.equal = values.Equal(v.live, c.To)
		v.applied = v.equal && slices.Contains(rc.b.opts.GitOpsManagers, f.Manager)
	}
	return v, true
}

// proven publishes the receipts, as the default branch holds them, with
// status proven and the merge commit: a check run on the merge commit, a
// comment, then the label, which marks the follow-up done. Each receipt is
// verified against the default branch's policy first; one that fails is an
// error and nothing is written.
func (rc *repoCycle) proven(pr forge.PullRequest, m *Marker, vs []verdict) {
	detail := fmt.Sprintf("re-observed after the merge %s: %s", short(pr.MergeCommitSHA), describeVerdicts(vs))
	if rc.b.opts.DryRun {
		rc.act(Action{Kind: ActProven, Branch: m.Branch, PR: pr.Number, URL: pr.URL, Detail: detail})
		return
	}
	f := rc.b.opts.Forge
	var docs []plan.File
	for _, p := range m.Receipts {
		// The receipt as the default branch holds it now, read at the
		// cycle's head like everything else the bot reads.
		data, err := rc.b.readFile(rc.ctx, rc.repo, rc.head, p)
		if err != nil {
			rc.fail(m.Branch, fmt.Errorf("error reading receipt %s on %s: %w", p, rc.repo.DefaultBranch, err))
			return
		}
		out, err := rc.provenReceipt(p, data, pr, vs)
		if err != nil {
			rc.fail(m.Branch, err)
			return
		}
		docs = append(docs, plan.File{Path: p, Data: out})
	}
	if len(docs) == 0 {
		rc.fail(m.Branch, fmt.Errorf("#%d records no receipt to prove", pr.Number))
		return
	}
	var blocks strings.Builder
	for _, d := range docs {
		fmt.Fprintf(&blocks, "<details><summary>Proven receipt <code>%s</code></summary>\n\n```yaml\n%s```\n\n</details>\n\n", htmlEscape(d.Path), fence(string(d.Data)))
	}
	summary := fmt.Sprintf("The accepted change stuck: %s. The receipt(s) are proven and verify against %s on %s.", describeVerdicts(vs), rc.snap.PolicyPath, rc.repo.DefaultBranch)
	runs, err := f.ListCheckRuns(rc.ctx, rc.repo, pr.MergeCommitSHA, ProvenCheckName)
	if err != nil {
		rc.fail(m.Branch, fmt.Errorf("error listing the %s checks of %s: %w", ProvenCheckName, short(pr.MergeCommitSHA), err))
		return
	}
	if !slices.ContainsFunc(runs, func(r forge.CheckRun) bool { return r.Mine }) {
		run := forge.CheckRun{Name: ProvenCheckName, HeadSHA: pr.MergeCommitSHA, Status: forge.CheckCompleted, Conclusion: forge.ConclusionSuccess,
			Title: "fix proven", Summary: summary, Text: blocks.String()}
		if _, err := f.CreateCheckRun(rc.ctx, rc.repo, run); err != nil {
			rc.fail(m.Branch, fmt.Errorf("error creating the %s check on %s: %w", ProvenCheckName, short(pr.MergeCommitSHA), err))
			return
		}
	}
	if !rc.commentTagged(pr, m, tagProven, "**Proven.** "+summary+"\n\n"+blocks.String()) {
		return
	}
	if err := f.AddLabels(rc.ctx, rc.repo, pr.Number, LabelProven); err != nil {
		rc.fail(m.Branch, fmt.Errorf("error labelling #%d: %w", pr.Number, err))
		return
	}
	rc.log.Info("proven", "unit", m.Unit, "environment", m.Environment, "pr", pr.Number, "merge", pr.MergeCommitSHA)
	rc.act(Action{Kind: ActProven, Branch: m.Branch, PR: pr.Number, URL: pr.URL, Detail: detail})
}

// provenReceipt turns the receipt the write-back committed into its proven
// form and checks it as `backflow verify` would.
func (rc *repoCycle) provenReceipt(p string, data []byte, pr forge.PullRequest, vs []verdict) ([]byte, error) {
	r, _, err := receipt.Parse(p, data)
	if err != nil {
		return nil, fmt.Errorf("error reading receipt %s: %w", p, err)
	}
	r.Spec.Status = receipt.StatusProven
	r.Spec.WriteBack.MergeCommit = pr.MergeCommitSHA
	r.Spec.WriteBack.NewRevision = pr.MergeCommitSHA
	var seen []string
	for _, v := range vs {
		if c := v.obs.Cluster; !slices.Contains(seen, c) {
			seen = append(seen, c)
		}
	}
	slices.Sort(seen)
	notClaimed := []string{fmt.Sprintf("Proven by re-observation: after the merge %s into %s, %s. Live changes made after that observation are not claimed.",
		pr.MergeCommitSHA, rc.repo.DefaultBranch, describeVerdicts(vs))}
	for _, n := range r.Spec.NotClaimed {
		if !strings.HasPrefix(n, "Proposed, not proven") {
			notClaimed = append(notClaimed, n)
		}
	}
	r.Spec.NotClaimed = notClaimed
	if vs := receipt.Verify(r, rc.snap.Policy, rc.snap.PolicyPath); len(vs) > 0 {
		msgs := make([]string, len(vs))
		for i, v := range vs {
			msgs[i] = v.String()
		}
		return nil, fmt.Errorf("the proven receipt %s fails verification against %s: %s", p, rc.snap.PolicyPath, strings.Join(msgs, "; "))
	}
	return receipt.Marshal(r)
}

// reverted says on the pull request that the fix did not stick and labels
// it, so it is not looked at again.
func (rc *repoCycle) reverted(pr forge.PullRequest, m *Marker, v verdict, grace time.Duration) {
	live := "`" + values.Format(v.live) + "`"
	if v.gone {
		live = "absent"
	}
	manager := ""
	if i := slices.IndexFunc(v.obs.Fields, func(f observe.Field) bool { return f.Path == v.change.Field }); i >= 0 && v.obs.Fields[i].Manager != "" {
		manager = fmt.Sprintf(" (last written by %s)", v.obs.Fields[i].Manager)
	}
	text := fmt.Sprintf("**Reverted.** After the merge %s and the grace period (%s), `%s` on `%s` is live %s%s in %s at %s, not the accepted `%s`. The fix did not stick; the receipt stays proposed.",
		short(pr.MergeCommitSHA), grace, v.change.Field, v.change.Object, live, manager, v.obs.Cluster,
		v.obs.ObservedAt.UTC().Format(time.RFC3339), values.Format(v.change.To))
	detail := fmt.Sprintf("%s %s is live %s, not %s", objectName(v.change.Object), v.change.Field, strings.Trim(live, "`"), values.Format(v.change.To))
	if rc.b.opts.DryRun {
		rc.act(Action{Kind: ActReverted, Branch: m.Branch, PR: pr.Number, URL: pr.URL, Detail: detail})
		return
	}
	if !rc.commentTagged(pr, m, tagReverted, text) {
		return
	}
	if err := rc.b.opts.Forge.AddLabels(rc.ctx, rc.repo, pr.Number, LabelReverted); err != nil {
		rc.fail(m.Branch, fmt.Errorf("error labelling #%d: %w", pr.Number, err))
		return
	}
	rc.log.Warn("reverted after merge", "unit", m.Unit, "environment", m.Environment, "pr", pr.Number, "object", v.change.Object, "field", v.change.Field)
	rc.act(Action{Kind: ActReverted, Branch: m.Branch, PR: pr.Number, URL: pr.URL, Detail: detail})
}

// commentTagged adds a comment carrying tag unless one of the bot's
// comments already does. It reports false when it failed.
func (rc *repoCycle) commentTagged(pr forge.PullRequest, m *Marker, tag, text string) bool {
	f := rc.b.opts.Forge
	comments, err := f.ListComments(rc.ctx, rc.repo, pr.Number)
	if err != nil {
		rc.fail(m.Branch, fmt.Errorf("error listing comments of #%d: %w", pr.Number, err))
		return false
	}
	if slices.ContainsFunc(comments, func(c forge.Comment) bool { return c.Mine && strings.Contains(c.Body, tag) }) {
		return true
	}
	if _, err := f.CreateComment(rc.ctx, rc.repo, pr.Number, text+"\n\n"+tag); err != nil {
		rc.fail(m.Branch, fmt.Errorf("error commenting on #%d: %w", pr.Number, err))
		return false
	}
	return true
}

func describeVerdicts(vs []verdict) string {
	parts := make([]string, 0, len(vs))
	for _, v := range vs {
		how := "observed"
		if v.applied {
			how = "written by the forward apply"
		}
		parts = append(parts, fmt.Sprintf("%s %s is %s (%s in %s at %s)", objectName(v.change.Object), v.change.Field,
			values.Format(v.live), how, v.obs.Cluster, v.obs.ObservedAt.UTC().Format(time.RFC3339)))
	}
	return strings.Join(parts, "; ")
}

// trackDrift keeps the repository's one tracking issue in line with the
// unauthorized drift this cycle denied: opened when there is drift and no
// issue, edited in place when the list changes, closed when it empties. It
// is found by its label among the bot's own issues, open or closed, so a
// second one is never created. The body holds no time, so an unchanged
// list costs no write.
func (rc *repoCycle) trackDrift() {
	if rc.rateLimit != nil || !rc.cfg.DriftReport.TrackingIssue {
		return
	}
	var drift []plan.Decision
	for _, d := range rc.res.Decisions {
		if d.Outcome == plan.Deny {
			drift = append(drift, d)
		}
	}
	body := driftBody(drift, rc.repo.DefaultBranch)
	f := rc.b.opts.Forge
	issues, err := f.ListIssues(rc.ctx, rc.repo, LabelDrift, forge.StateAll)
	if err != nil {
		rc.fail("", fmt.Errorf("error listing the drift tracking issue: %w", err))
		return
	}
	var cur *forge.Issue
	for i := range issues {
		if issues[i].Mine && (cur == nil || issues[i].Number < cur.Number) {
			cur = &issues[i]
		}
	}
	want := forge.StateOpen
	if len(drift) == 0 {
		want = forge.StateClosed
	}
	detail := fmt.Sprintf("%d object(s) with unauthorized drift", len(drift))
	switch {
	case cur == nil && len(drift) == 0:
		return
	case cur == nil:
		if rc.b.opts.DryRun {
			rc.act(Action{Kind: ActDrift, Detail: "open the tracking issue: " + detail})
			return
		}
		is, err := f.CreateIssue(rc.ctx, rc.repo, forge.NewIssue{Title: DriftIssueTitle, Body: body, Labels: []string{LabelDrift}})
		if err != nil {
			rc.fail("", fmt.Errorf("error opening the drift tracking issue: %w", err))
			return
		}
		rc.act(Action{Kind: ActDrift, PR: is.Number, URL: is.URL, Detail: "opened: " + detail})
	case strings.TrimSpace(cur.Body) == strings.TrimSpace(body) && cur.State == want:
		return
	default:
		verb := "updated"
		if want == forge.StateClosed {
			verb = "closed"
		} else if cur.State == forge.StateClosed {
			verb = "reopened"
		}
		if rc.b.opts.DryRun {
			rc.act(Action{Kind: ActDrift, PR: cur.Number, URL: cur.URL, Detail: "would be " + verb + ": " + detail})
			return
		}
		upd := forge.IssueUpdate{Body: &body}
		if cur.State != want {
			upd.State = &want
		}
		if _, err := f.UpdateIssue(rc.ctx, rc.repo, cur.Number, upd); err != nil {
			rc.fail("", fmt.Errorf("error updating the drift tracking issue #%d: %w", cur.Number, err))
			return
		}
		rc.act(Action{Kind: ActDrift, PR: cur.Number, URL: cur.URL, Detail: verb + ": " + detail})
	}
}

// driftBody lists the open drift, one section per object, in the
// planner's order.
func driftBody(drift []plan.Decision, branch string) string {
	var b strings.Builder
	if len(drift) == 0 {
		fmt.Fprintf(&b, "No unauthorized live drift is observed now. backflow reopens this issue when some is.\n\n%s\n", tagDrift)
		return b.String()
	}
	fmt.Fprintf(&b, "backflow observed live changes that the policy on `%s` does not authorize. They are **not written back**: fix them in the cluster, or change the values and the policy by a reviewed pull request. This list is kept up to date by backflow.\n\n", branch)
	b.WriteString("| environment | unit | object | field | desired | live | actor |\n| --- | --- | --- | --- | --- | --- | --- |\n")
	for _, d := range drift {
		actor := d.Actor
		if actor == "" {
			actor = "unknown"
		}
		for _, c := range d.Changes {
			fmt.Fprintf(&b, "| %s | %s | `%s` | `%s` | `%s` | `%s` | %s |\n", cell(d.Environment), cell(d.Unit), cell(d.Object), cell(c.Field),
				cell(values.Format(c.From)), cell(values.Format(c.To)), cell(actor))
		}
	}
	b.WriteString("\n### Why each is denied\n\n")
	for _, d := range drift {
		fmt.Fprintf(&b, "**`%s`** in %s\n\n", cell(d.Object), cell(d.Environment))
		for _, r := range d.Reasons {
			fmt.Fprintf(&b, "- %s\n", cell(r))
		}
		b.WriteString("\n")
	}
	b.WriteString(tagDrift + "\n")
	return b.String()
}

// ProvenReceipts returns the receipts, as YAML, that a follow-up comment
// or proven check run carries, in order.
func ProvenReceipts(body string) []string {
	var out []string
	const open, close = "```yaml\n", "```"
	for {
		i := strings.Index(body, open)
		if i < 0 {
			return out
		}
		body = body[i+len(open):]
		j := strings.Index(body, close)
		if j < 0 {
			return out
		}
		out = append(out, body[:j])
		body = body[j+len(close):]
	}
}
