package lifecycle

import (
	"fmt"
	"strings"

	"github.com/backflow-dev/backflow/internal/forge"
	"github.com/backflow-dev/backflow/internal/plan"
	"github.com/backflow-dev/backflow/internal/values"
)

// DriftIssueTitle is the title of the tracking issue.
const DriftIssueTitle = "backflow: unauthorized live drift"

// TrackingIssue is the wanted state of the drift tracking issue.
type TrackingIssue struct {
	// Number is the issue to edit; 0 opens one.
	Number int
	// URL is the issue's, when it exists.
	URL string
	// Title and Labels are the issue's when it is opened.
	Title  string
	Labels []string
	// Body is the list of drift.
	Body string
	// State is the state to set; nil leaves it.
	State *forge.PRState
	// Done is the report's line once applied ("opened: 2 object(s) ...").
	Done string
}

// Drift keeps the repository's one tracking issue in line with the
// unauthorized drift this cycle denied: opened when there is drift and no
// issue, edited in place when the list changes, closed when it empties.
// issues are the App's issues carrying LabelDrift, open or closed: the
// oldest is the one, so a second is never created. The body holds no time,
// so an unchanged list costs no write. It returns no effect when the issue
// is as it should be.
func (in *Input) Drift(issues []forge.Issue) []Effect {
	var drift []plan.Decision
	for _, d := range in.Result.Decisions {
		if d.Outcome == plan.Deny {
			drift = append(drift, d)
		}
	}
	body := driftBody(drift, in.DefaultBranch, expiriesSection(in.Result.Expiries))
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
		return nil
	case cur == nil:
		return []Effect{
			{
				Kind:   DriftIssue,
				Reason: "open the tracking issue: " + detail,
				Issue:  &TrackingIssue{Title: DriftIssueTitle, Labels: []string{LabelDrift}, Body: body, Done: "opened: " + detail},
			},
		}
	case strings.TrimSpace(cur.Body) == strings.TrimSpace(body) && cur.State == want:
		return nil
	}
	verb, did := "update", "updated"
	if want == forge.StateClosed {
		verb, did = "close", "closed"
	} else if cur.State == forge.StateClosed {
		verb, did = "reopen", "reopened"
	}
	is := &TrackingIssue{Number: cur.Number, URL: cur.URL, Body: body, Done: did + ": " + detail}
	if cur.State != want {
		is.State = &want
	}
	return []Effect{{Kind: DriftIssue, Reason: verb + " the tracking issue: " + detail, Issue: is}}
}

// driftBody lists the open drift, one section per object, in the
// planner's order.
func driftBody(drift []plan.Decision, branch, temporary string) string {
	var b strings.Builder
	if len(drift) == 0 {
		fmt.Fprintf(
			&b,
			"No unauthorized live drift is observed now. backflow reopens this issue when some is.\n\n%s%s\n",
			temporary,
			tagDrift,
		)
		return b.String()
	}
	fmt.Fprintf(
		&b,
		"backflow observed live changes that the policy on `%s` does not authorize. They are **not written back**: fix them "+
			"in the cluster, or change the values and the policy by a reviewed pull request. This list is kept up to date by "+
			"backflow.\n\n",
		branch,
	)
	b.WriteString(
		"| environment | unit | object | field | desired | live | actor |\n| --- | --- | --- | --- | --- | --- | --- |\n",
	)
	for _, d := range drift {
		actor := d.Actor
		if actor == "" {
			actor = "unknown"
		}
		for _, c := range d.Changes {
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s |\n", cell(d.Environment), cell(d.Unit), code(d.Object.String()),
				code(c.Field), code(values.Format(c.From)), code(values.Format(c.To)), cell(actor))
		}
	}
	b.WriteString("\n### Why each is denied\n\n")
	for _, d := range drift {
		fmt.Fprintf(&b, "**%s** in %s\n\n", code(d.Object.String()), cell(d.Environment))
		for _, r := range d.Reasons {
			fmt.Fprintf(&b, "- %s\n", cell(r))
		}
		b.WriteString("\n")
	}
	b.WriteString(temporary)
	body := fitBody(b.String(), maxBody-len(tagDrift)-1, "`backflow plan` lists every decision with its reasons")
	return body + tagDrift + "\n"
}
