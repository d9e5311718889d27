package bot

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/backflow-dev/backflow/internal/forge"
	"github.com/backflow-dev/backflow/internal/lifecycle"
	"github.com/backflow-dev/backflow/internal/observe"
	"github.com/backflow-dev/backflow/internal/plan"
	"github.com/backflow-dev/backflow/internal/values"
)

// Report is what one cycle decided and did, for the caller to print.
type Report struct {
	// Started is the cycle's time, from the bot's clock.
	Started time.Time `json:"started"`
	// DryRun says nothing was written.
	DryRun bool `json:"dryRun"`
	// Observations counts the observations read from every source.
	Observations int `json:"observations"`
	// SourceErrors are documents or sources that could not be read.
	SourceErrors Errors `json:"sourceErrors"`
	// Repos are the repositories reconciled, sorted by name.
	Repos []*RepoReport `json:"repositories"`

	rateLimit error
}

// RepoReport is one repository's part of a cycle.
type RepoReport struct {
	// Repo is "owner/name".
	Repo string `json:"repository"`
	// Head is the default-branch commit everything was read at.
	Head string `json:"head,omitempty"`
	// Skipped says why the repository was not reconciled, when it was not.
	Skipped string `json:"skipped,omitempty"`
	// Decisions are the planner's decisions about objects the repository's
	// units claim (noop and unmapped left out).
	Decisions []DecisionReport `json:"decisions"`
	// Expiries are the temporary acceptances on the default branch, each
	// with its state at the cycle (expiry.go).
	Expiries []ExpiryReport `json:"expiries,omitempty"`
	// Actions are what the cycle did to write-backs, in order.
	Actions []Action `json:"actions"`
	// PlanErrors are the planner's own problems (decisions failed closed).
	PlanErrors []string `json:"planErrors"`
	// Errors are failures reading or writing the repository, each as the
	// error that occurred: errors.Is finds the forge's and the packages'
	// sentinels in them (ErrorClass names them).
	Errors Errors `json:"errors"`
	// Holds is what the cycle found and did of the holds, for the metrics
	// (the actions already say it to people).
	Holds HoldsReport `json:"-"`
}

// HoldsReport is one repository's holds in a cycle.
type HoldsReport struct {
	// Read says the live holds were read this cycle, so InPlace counts.
	Read bool
	// InPlace is how many of the repository's sealed holds are on the live
	// objects after the cycle.
	InPlace int
	// Held are the at-risk windows the cycle's holds closed: from each
	// live change to its hold placed.
	Held []time.Duration
	// Reverts are the forward controller's reverts of a person's change
	// seen on objects without a hold.
	Reverts []RevertReport
	// Released are the causes (hold.Causes) of the holds released.
	Released []string
}

// RevertReport is one revert of a person's change, seen without a hold.
type RevertReport struct {
	// Key names the revert (cluster, object, field, the person's and the
	// controller's resourceVersions): a revert seen again next cycle has
	// the same key, so it is counted once.
	Key string
	// Window is from the person's change to the revert observed.
	Window time.Duration
}

// DecisionReport is one planner decision as reported.
type DecisionReport struct {
	// Unit, Environment and Object say what was decided about.
	Unit        string            `json:"unit"`
	Environment string            `json:"environment"`
	Object      observe.ObjectKey `json:"object"`
	// Outcome is allow, deny or stale.
	Outcome string `json:"outcome"`
	// AutoMerge says an allow qualifies for auto-merge.
	AutoMerge bool `json:"autoMerge"`
	// Reasons explain the outcome; a deny lists every reason.
	Reasons []string `json:"reasons"`
	// Changes are the changed fields (Secrets' values redacted).
	Changes []ChangeReport `json:"changes"`
	// Attribution is how far the actor is believed, for the metrics by
	// attribution (the reasons already say it to people).
	Attribution string `json:"-"`
}

// ChangeReport is one changed field of a decision.
type ChangeReport struct {
	// Field is the Kubernetes field path; ValuePath the values path, if mapped.
	Field     string `json:"field"`
	ValuePath string `json:"valuePath,omitempty"`
	// From and To are the desired and live values, typed as plan reports
	// them (a number stays a number; nil is null).
	From any `json:"from"`
	To   any `json:"to"`
	// Authorized says the policy lets the actor's role accept the field.
	Authorized bool `json:"authorized"`
}

// Action kinds callers match on: an Action's Kind is always its effect's
// lifecycle.Kind, whose string is also the effect's name in the log and
// its metric label.
const (
	ActOpen      = string(lifecycle.Open)      // a pull request opened
	ActUpdate    = string(lifecycle.Update)    // its branch rewritten and its body updated
	ActKeep      = string(lifecycle.Keep)      // left as it is, with the reason
	ActClose     = string(lifecycle.Close)     // closed by the bot (superseded, converged)
	ActComment   = string(lifecycle.Comment)   // a one-time comment
	ActAutoMerge = string(lifecycle.AutoMerge) // auto-merge armed, pinned to the head
	ActMerge     = string(lifecycle.Merge)     // merged over REST, pinned to the head
	ActSkip      = string(lifecycle.Skip)      // a proposal not written (closed before, a foreign branch)
	ActCheck     = string(lifecycle.Check)     // a failed receipt check posted on an open pull request
	ActProven    = string(lifecycle.Proven)    // a merged write-back proven by re-observation
	ActReverted  = string(lifecycle.Reverted)  // a merged write-back found reverted
)

// Action is one thing the cycle did (or, in a dry run, would do) to a
// write-back.
type Action struct {
	// Kind is its effect's lifecycle.Kind, as a string; the Act
	// constants name the kinds callers match on.
	Kind string `json:"kind"`
	// Branch is the write-back branch, <branchPrefix><environment>/<unit>.
	Branch string `json:"branch"`
	// PR and URL identify the pull request, when there is one.
	PR  int    `json:"pullRequest,omitempty"`
	URL string `json:"url,omitempty"`
	// Detail says what and why, in a line.
	Detail string `json:"detail,omitempty"`
	// DryRun marks an action that was only described.
	DryRun bool `json:"dryRun,omitempty"`
	// Then are, in a dry run, the steps decided to follow this one in its
	// chain (reviewers, labels, auto-merge), none of them done.
	Then []Action `json:"then,omitempty"`
}

func decisionReport(d plan.Decision) DecisionReport {
	out := DecisionReport{Unit: d.Unit, Environment: d.Environment, Object: d.Object, Outcome: string(d.Outcome),
		AutoMerge: d.AutoMerge, Reasons: append([]string{}, d.Reasons...), Changes: []ChangeReport{},
		Attribution: string(d.Attribution)}
	for _, c := range d.Changes {
		ch := ChangeReport{Field: c.Field, ValuePath: c.ValuePath, From: c.From, To: c.To, Authorized: c.Authorized}
		out.Changes = append(out.Changes, ch)
	}
	return out
}

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

// Failed reports whether any repository could not be reconciled fully.
func (r *Report) Failed() bool {
	for _, rr := range r.Repos {
		if len(rr.Errors) > 0 {
			return true
		}
	}
	return r.rateLimit != nil
}

// RateLimited returns the rate limit that stopped the cycle, if any.
func (r *Report) RateLimited() (*forge.RateLimitError, bool) {
	return forge.IsRateLimited(r.rateLimit)
}

// JSON is the report as indented JSON.
func (r *Report) JSON() ([]byte, error) {
	c := *r
	for i, rr := range c.Repos {
		cp := *rr
		if cp.PlanErrors == nil {
			cp.PlanErrors = []string{}
		}
		if cp.Decisions == nil {
			cp.Decisions = []DecisionReport{}
		}
		if cp.Actions == nil {
			cp.Actions = []Action{}
		}
		c.Repos[i] = &cp
	}
	if c.Repos == nil {
		c.Repos = []*RepoReport{}
	}
	out, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(out, '\n'), nil
}

// Text is the human-readable summary.
func (r *Report) Text() string {
	var b strings.Builder
	mode := ""
	if r.DryRun {
		mode = " (dry run: nothing written)"
	}
	fmt.Fprintf(&b, "cycle at %s%s: %d observation(s), %d repositor%s\n", r.Started.Format(time.RFC3339), mode,
		r.Observations, len(r.Repos), plural(len(r.Repos), "y", "ies"))
	for _, e := range r.SourceErrors {
		fmt.Fprintf(&b, "  source error: %s\n", e)
	}
	for _, rr := range r.Repos {
		head := rr.Head
		if len(head) > 12 {
			head = head[:12]
		}
		fmt.Fprintf(&b, "\n%s", rr.Repo)
		if head != "" {
			fmt.Fprintf(&b, " @ %s", head)
		}
		if rr.Skipped != "" {
			fmt.Fprintf(&b, ": %s", rr.Skipped)
		}
		b.WriteString("\n")
		for _, d := range rr.Decisions {
			fmt.Fprintf(&b, "  %-5s %s/%s %s", d.Outcome, d.Environment, d.Unit, d.Object)
			var cs []string
			for _, c := range d.Changes {
				cs = append(cs, fmt.Sprintf("%s %s -> %s", c.Field, values.Format(c.From), values.Format(c.To)))
			}
			if len(cs) > 0 {
				fmt.Fprintf(&b, ": %s", strings.Join(cs, ", "))
			}
			b.WriteString("\n")
			if d.Outcome != string(plan.Allow) {
				for _, why := range d.Reasons {
					fmt.Fprintf(&b, "        - %s\n", why)
				}
			}
		}
		for _, a := range rr.Actions {
			verb := a.Kind
			if a.DryRun {
				verb = "would " + a.Kind
			}
			fmt.Fprintf(&b, "  %s %s", verb, a.Branch)
			if a.PR > 0 {
				fmt.Fprintf(&b, " #%d", a.PR)
			}
			if a.Detail != "" {
				fmt.Fprintf(&b, ": %s", a.Detail)
			}
			if a.URL != "" {
				fmt.Fprintf(&b, " (%s)", a.URL)
			}
			b.WriteString("\n")
			for _, t := range a.Then {
				fmt.Fprintf(&b, "    then would %s: %s\n", t.Kind, t.Detail)
			}
		}
		for _, e := range rr.PlanErrors {
			fmt.Fprintf(&b, "  plan error: %s\n", e)
		}
		for _, e := range rr.Errors {
			fmt.Fprintf(&b, "  error: %s\n", e)
		}
	}
	return b.String()
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
