package lifecycle

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/backflow-dev/backflow/internal/forge"
	"github.com/backflow-dev/backflow/internal/observe"
	"github.com/backflow-dev/backflow/internal/plan"
	"github.com/backflow-dev/backflow/internal/policy"
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

// Hidden tags in the follow-up's comments, so a crash between the comment
// and the label does not repeat the comment.
const (
	TagProven   = "<!-- backflow:note proven -->"
	tagReverted = "<!-- backflow:note reverted -->"
	tagDrift    = "<!-- backflow:drift-report -->"
)

// Evidence is the evidence about one merged write-back.
type Evidence struct {
	// Verdicts are what the re-observation says of each accepted field.
	Verdicts []Verdict
	// Reverted is the verdict that shows the fix did not stick (Reverted).
	Reverted *Verdict
	// Tag marks the comment, so it is made once; Label marks the pull
	// request done.
	Tag, Label string
	// Text is the comment of a Reverted.
	Text string
	// Store, on a Proven, is the revision store the receipts are proven
	// through (it checks the revision written for each was applied); nil
	// when the default branch's receipts are proven as they are.
	Store *repoconfig.StoreRef

	// against is what the proven receipts are verified against.
	against proofBasis
}

// proofBasis is the default branch's policy a proven receipt must verify
// against, as `backflow verify` checks it.
type proofBasis struct {
	store         plan.Store
	policy        *policy.Policy
	policyPath    string
	defaultBranch string
}

// Verdict is what the re-observation says of one accepted field.
type Verdict struct {
	Change MarkerChange
	// Obs is the newest observation since the merge.
	Obs *observe.Observation
	// Live is the live value it shows; Gone says the field is absent.
	Live any
	Gone bool
	// Equal says live equals the accepted value.
	Equal bool
	// Applied says the GitOps controller's forward apply wrote the field
	// at the accepted value: positive evidence that it stuck without
	// waiting out the grace period.
	Applied bool
}

// FollowUps decides every merged write-back of the App that has no result
// yet, one chain each. It needs no state of its own: the pull requests,
// their markers and labels are listed each cycle anyway, and a pull
// request still waiting costs no request.
func (in *Input) FollowUps(prs []forge.PullRequest) [][]Effect {
	var out [][]Effect
	for _, pr := range prs {
		if !pr.Mine || !pr.Merged || pr.BaseRef != in.DefaultBranch || !slices.Contains(pr.Labels, LabelReverseReconcile) ||
			slices.Contains(pr.Labels, LabelProven) || slices.Contains(pr.Labels, LabelReverted) {
			continue
		}
		m, ok := in.pullMarker(pr)
		if !ok || m.Branch != pr.HeadRef || len(m.Changes) == 0 {
			continue
		}
		if !m.OwnsHead(pr.HeadSHA) {
			// The marker is bound to the head the bot last wrote: one that
			// does not name the merged head is an older marker pasted back
			// (its changes are not what merged), or a person's commit
			// merged. Either way its changes prove nothing.
			out = append(out, []Effect{{Kind: Skip, Branch: m.Branch, Pull: &Pull{PR: pr, Marker: m},
				Reason: fmt.Sprintf(
					"not followed up: %v, or a person's commit was merged: it does not record the merged head %s",
					ErrMarkerReplayed,
					Short(pr.HeadSHA),
				)}})
			continue
		}
		if in.revisionFollowedByChain(pr, m) {
			continue // its revision is still to be written, or it was replanned
		}
		out = append(out, []Effect{in.followMerged(&Pull{PR: pr, Marker: m})})
	}
	return out
}

// followMerged decides one merged write-back. Every accepted field must be
// re-observed after the merge. All of them at the accepted value, either
// written by the forward apply or still so in an observation made after the
// grace period: proven. Any of them at another value in an observation
// made after the grace period: reverted. Anything else waits; no
// observation at all is never evidence.
func (in *Input) followMerged(st *Pull) Effect {
	pr, m := st.PR, st.Marker
	merged := pr.MergedAt
	if merged.IsZero() {
		merged = pr.ClosedAt
	}
	grace := in.Snapshot.Config.FollowUp.GracePeriod.Duration
	if grace <= 0 {
		grace = repoconfig.DefaultGracePeriod
	}
	settled := merged.Add(grace)
	wait := func(why string) Effect { return Effect{Kind: FollowUp, Branch: m.Branch, Pull: st, Reason: why} }
	var vs []Verdict
	for _, c := range m.Changes {
		v, ok, lower := in.reobserve(m, c, merged)
		if !ok && lower > 0 {
			return wait(
				fmt.Sprintf(
					"merged %s; %s observed since the merge only by sources trusted below %s, the attribution its receipt was "+
						"accepted on (%d observation(s) ignored)",
					Short(pr.MergeCommitSHA),
					c.Object.Name,
					c.proofTrust(),
					lower,
				),
			)
		}
		if !ok {
			return wait(
				fmt.Sprintf("merged %s; %s not observed since the merge", Short(pr.MergeCommitSHA), c.Object.Name),
			)
		}
		vs = append(vs, v)
	}
	// After the grace period by the observation's date and by backflow's
	// own clock: a document cannot date itself past the wait.
	after := func(v Verdict) bool {
		return !v.Obs.ObservedAt.Before(settled) && (in.Now.IsZero() || !in.Now.Before(settled))
	}
	for _, v := range vs {
		if !v.Equal && after(v) {
			return in.reverted(st, v, grace)
		}
	}
	for _, v := range vs {
		if !v.Equal || !(v.Applied || after(v)) {
			return wait(
				fmt.Sprintf(
					"merged %s; waiting for an observation after the grace period (%s, until %s)",
					Short(pr.MergeCommitSHA),
					grace,
					settled.UTC().Format(time.RFC3339),
				),
			)
		}
	}
	basis := proofBasis{
		store:         in.Snapshot.StoreOf(),
		policy:        in.Snapshot.Policy,
		policyPath:    in.Snapshot.PolicyPath,
		defaultBranch: in.DefaultBranch,
	}
	return Effect{
		Kind:     Proven,
		Branch:   m.Branch,
		Pull:     st,
		Evidence: &Evidence{Verdicts: vs, Tag: TagProven, Label: LabelProven, Store: proveAt(m), against: basis},
		Reason:   fmt.Sprintf("re-observed after the merge %s: %s", Short(pr.MergeCommitSHA), describeVerdicts(vs)),
	}
}

// reobserve finds the newest observation of the change's object in the
// write-back's environment made after the merge by a source trusted at
// least as far as the attribution the change was accepted on, and what it
// says of the field: neither a proof nor a revert rests on a source the
// receipt's attribution would not have been believed from. lower counts
// the observations left out for their trust. A field the observation does
// not list is at the observer's desired value, which after the merge is
// the default branch's.
func (in *Input) reobserve(m *Marker, c MarkerChange, merged time.Time) (v Verdict, ok bool, lower int) {
	var newest *observe.Observation
	need := c.proofTrust().Rank()
	var seen []observe.Observation
	if s := in.Result.ObservedOf(m.Environment, c.Object); s != nil {
		seen = s.Observations
	}
	for i := range seen {
		o := &seen[i]
		if !o.ObservedAt.After(merged) {
			continue
		}
		if o.TrustLevel().Rank() < need {
			lower++
			continue
		}
		if newest == nil || o.ObservedAt.After(newest.ObservedAt) {
			newest = o
		}
	}
	if newest == nil {
		return Verdict{}, false, lower
	}
	v = Verdict{Change: c, Obs: newest}
	i := slices.IndexFunc(newest.Fields, func(f observe.Field) bool { return f.Path == c.Field })
	if i >= 0 && newest.Fields[i].Ambiguous != "" {
		// The observer's text cannot say what the field holds (cub-scout's
		// "-"): it neither proves nor reverts, so the follow-up waits for a
		// source that reads the object itself.
		return Verdict{}, false, lower
	}
	switch {
	case i < 0:
		if u := in.unit(m.Environment, m.Unit); u != nil && c.ValuePath == "" {
			// A field of manifests or a kustomization is written as
			// itself: its desired value is the object's own.
			v.Live, _ = in.Result.DesiredFieldOf(u.Environment, u.Name, c.Object, c.Field)
		} else if u != nil {
			v.Live, _ = in.Result.DesiredOf(u.Environment, u.Name, c.ValuePath)
		}
		v.Equal = values.Equal(v.Live, c.To)
	case newest.Fields[i].Removed:
		v.Gone = true
	default:
		f := liveNow(newest.Fields[i])
		v.Live = f.LiveLike(c.To)
		v.Equal = values.Equal(v.Live, c.To)
		v.Applied = v.Equal && slices.Contains(in.GitOpsManagers, f.Manager)
	}
	return v, true, lower
}

// reverted says on the pull request that the fix did not stick and labels
// it, so it is not looked at again.
func (in *Input) reverted(st *Pull, v Verdict, grace time.Duration) Effect {
	pr := st.PR
	live := code(values.Format(v.Live))
	if v.Gone {
		live = "absent"
	}
	manager := ""
	i := slices.IndexFunc(v.Obs.Fields, func(f observe.Field) bool { return f.Path == v.Change.Field })
	if i >= 0 && liveNow(v.Obs.Fields[i]).Manager != "" {
		manager = fmt.Sprintf(" (last written by %s)", cell(liveNow(v.Obs.Fields[i]).Manager))
	}
	text := fmt.Sprintf(
		"**Reverted.** After the merge %s and the grace period (%s), %s on %s is live %s%s in %s at %s, not the accepted "+
			"%s. The fix did not stick; the receipt stays proposed.",
		Short(pr.MergeCommitSHA),
		grace,
		code(v.Change.Field),
		code(v.Change.Object.String()),
		live,
		manager,
		cell(v.Obs.Cluster),
		v.Obs.ObservedAt.UTC().Format(time.RFC3339),
		code(values.Format(v.Change.To)),
	)
	detail := fmt.Sprintf(
		"%s %s is live %s, not %s",
		v.Change.Object.Name,
		v.Change.Field,
		values.Format(v.Live),
		values.Format(v.Change.To),
	)
	return Effect{Kind: Reverted, Branch: st.Marker.Branch, Pull: st, Reason: detail,
		Evidence: &Evidence{Reverted: &v, Tag: tagReverted, Label: LabelReverted, Text: text}}
}

// Proven is what a Proven effect publishes, given the receipts as the default
// branch holds them: the check run on the merge commit and the comment,
// both carrying the receipts with status proven and the merge commit. Each
// receipt is verified against the default branch's policy first; one that
// fails is an error, and nothing is to be written.
func (f *Evidence) Proven(st *Pull, receipts []plan.File) (forge.CheckRun, string, error) {
	in := f.against
	pr := st.PR
	if len(receipts) == 0 {
		return forge.CheckRun{}, "", fmt.Errorf("#%d records no receipt to prove", pr.Number)
	}
	proven := make([]plan.File, 0, len(receipts))
	for _, r := range receipts {
		out, err := in.provenReceipt(r.Path, r.Data, pr, f.Verdicts)
		if err != nil {
			return forge.CheckRun{}, "", err
		}
		proven = append(proven, plan.File{Path: r.Path, Data: out})
	}
	return f.publish(st, proven)
}

// publish is the check run on the merge commit and the comment carrying
// the proven receipts.
func (f *Evidence) publish(st *Pull, proven []plan.File) (forge.CheckRun, string, error) {
	in := f.against
	pr := st.PR
	if len(proven) == 0 {
		return forge.CheckRun{}, "", fmt.Errorf("#%d records no receipt to prove", pr.Number)
	}
	var blocks strings.Builder
	for _, r := range proven {
		out := r.Data
		fmt.Fprintf(
			&blocks,
			"<details><summary>Proven receipt <code>%s</code></summary>\n\n```yaml\n%s```\n\n</details>\n\n",
			htmlEscape(r.Path),
			fence(string(out)),
		)
	}
	summary := fmt.Sprintf(
		"The accepted change stuck: %s. The receipt(s) are proven and verify against %s on %s.",
		describeVerdicts(f.Verdicts),
		in.policyPath,
		in.defaultBranch,
	)
	run := forge.CheckRun{
		Name:       ProvenCheckName,
		HeadSHA:    pr.MergeCommitSHA,
		Status:     forge.CheckCompleted,
		Conclusion: forge.ConclusionSuccess,
		Title:      "fix proven",
		Summary:    summary,
		Text:       blocks.String(),
	}
	return run, "**Proven.** " + summary + "\n\n" + blocks.String(), nil
}

// provenReceipt turns the receipt the write-back committed into its proven
// form and checks it as `backflow verify` would.
func (in proofBasis) provenReceipt(p string, data []byte, pr forge.PullRequest, vs []Verdict) ([]byte, error) {
	r, _, err := receipt.Parse(p, data)
	if err != nil {
		return nil, fmt.Errorf("error reading receipt %s: %w", p, err)
	}
	r.Spec.Status = receipt.StatusProven
	r.Spec.WriteBack.MergeCommit = pr.MergeCommitSHA
	if r.Spec.WriteBack.Method == in.store.Method() {
		// A receipt of the pull request's own store names the merge
		// commit once merged; one another store carries out (a revision
		// store's) names its revision, which the merge authorized.
		r.Spec.WriteBack.NewRevision = in.store.Applied(pr.MergeCommitSHA)
	}
	notClaimed := []string{
		fmt.Sprintf(
			"Proven by re-observation: after the merge %s into %s, %s. Live changes made after that observation are not "+
				"claimed.",
			pr.MergeCommitSHA,
			in.defaultBranch,
			describeVerdicts(vs),
		),
	}
	for _, n := range r.Spec.NotClaimed {
		if !strings.HasPrefix(n, "Proposed, not proven") {
			notClaimed = append(notClaimed, n)
		}
	}
	r.Spec.NotClaimed = notClaimed
	if vs := receipt.Verify(r, in.policy, in.policyPath); len(vs) > 0 {
		return nil, fmt.Errorf(
			"the proven receipt %s fails verification against %s: %s",
			p,
			in.policyPath,
			receipt.JoinViolations(vs),
		)
	}
	return receipt.Marshal(r)
}

func describeVerdicts(vs []Verdict) string {
	parts := make([]string, 0, len(vs))
	for _, v := range vs {
		how := "observed"
		if v.Applied {
			how = "written by the forward apply"
		}
		parts = append(parts, fmt.Sprintf("%s %s is %s (%s in %s at %s)", v.Change.Object.Name, v.Change.Field,
			values.Format(v.Live), how, v.Obs.Cluster, v.Obs.ObservedAt.UTC().Format(time.RFC3339)))
	}
	return strings.Join(parts, "; ")
}

// ProvenReceipts returns the receipts, as YAML, that a follow-up comment
// or proven check run carries, in order.
func ProvenReceipts(body string) []string {
	var out []string
	const opening, closing = "```yaml\n", "```"
	for {
		i := strings.Index(body, opening)
		if i < 0 {
			return out
		}
		body = body[i+len(opening):]
		j := strings.Index(body, closing)
		if j < 0 {
			return out
		}
		out = append(out, body[:j])
		body = body[j+len(closing):]
	}
}
