package lifecycle

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/backflow-dev/backflow/internal/forge"
	"github.com/backflow-dev/backflow/internal/plan"
	"github.com/backflow-dev/backflow/internal/values"
)

// noteExpiryVoid prefixes the note a void expiry's comment leaves in the
// marker of the pull request that carried the acceptance, with the
// receipt's path and the expiry's time (voidNote): said once per
// acceptance, and void from then on (VoidedExpiries).
const noteExpiryVoid = "expiry-void"

// noteExpirySuperseded prefixes the note the comment on a temporary
// acceptance a later one supersedes leaves, as noteExpiryVoid's does.
const noteExpirySuperseded = "expiry-superseded"

// voidNote is the note of the void expiry at receipt path, expiring at.
func voidNote(path, at string) string { return noteExpiryVoid + ":" + path + "@" + at }

// VoidedExpiries are the temporary acceptances already said void, by
// receipt path, each with the expiresAt it was said void at: read from
// the notes of this App's merged pull requests whose markers verify under
// commitKey for repo, so that the plan keeps them void (plan.Snapshot's
// Voided) even when desired holds the accepted values again. An
// acceptance merged without such a pull request is said in the plan
// alone, and has no such record.
func VoidedExpiries(commitKey []byte, repo, defaultBranch string, prs []forge.PullRequest) map[string]string {
	out := map[string]string{}
	for _, pr := range prs {
		if !pr.Mine || !pr.Merged || pr.BaseRef != defaultBranch {
			continue
		}
		m, ok := authenticMarker(commitKey, repo, pr)
		if !ok {
			continue
		}
		for _, n := range m.Notes {
			rest, ok := strings.CutPrefix(n, noteExpiryVoid+":")
			i := strings.LastIndexByte(rest, '@')
			if !ok || i < 0 || !slices.Contains(m.Receipts, rest[:i]) {
				continue
			}
			out[rest[:i]] = rest[i+1:]
		}
	}
	return out
}

// Expiries are the chains the plan's temporary acceptances ask for
// beyond their write-backs (a due expiry's restoring write-back is the
// unit's, decided by Chain and followed up like any other): for a void
// or superseded expiry, a comment once on the merged pull request that
// carried the acceptance, saying nothing is restored and why. An acceptance made
// without a pull request of this App's (the receipt merged by hand) has
// no such pull request; the plan and the drift issue still say it.
func (in *Input) Expiries(prs []forge.PullRequest) [][]Effect {
	var out [][]Effect
	for _, x := range in.Result.Expiries {
		if x.State != plan.Void && x.State != plan.Superseded {
			continue
		}
		st := in.acceptedBy(prs, x)
		if st == nil {
			continue
		}
		note := voidNote(x.Receipt, x.ExpiresAt.UTC().Format(time.RFC3339))
		text := fmt.Sprintf(
			"The temporary acceptance of this pull request (%s, receipt %s) expired at %s, but it is not restored: %s.",
			code(x.Name),
			code(x.Receipt),
			x.ExpiresAt.UTC().Format(time.RFC3339),
			cell(x.Why),
		)
		if x.State == plan.Superseded {
			// Said once, while the later acceptance is proposed: once it
			// merges, its receipt has replaced this one's.
			note = noteExpirySuperseded + ":" + x.Receipt + "@" + x.ExpiresAt.UTC().Format(time.RFC3339)
			text = fmt.Sprintf(
				"The temporary acceptance of this pull request (%s, receipt %s, until %s) will not be restored: %s.",
				code(x.Name),
				code(x.Receipt),
				x.ExpiresAt.UTC().Format(time.RFC3339),
				cell(x.Why),
			)
		}
		if e, ok := commentOnce(st, note, text); ok {
			out = append(out, []Effect{e})
		}
	}
	return out
}

// acceptedBy is the newest merged pull request of this App whose marker
// proposed every accepted change of x, in its unit and environment.
func (in *Input) acceptedBy(prs []forge.PullRequest, x plan.Expiry) *Pull {
	var best *Pull
	for _, pr := range prs {
		if !pr.Mine || !pr.Merged || pr.BaseRef != in.DefaultBranch {
			continue
		}
		m, ok := in.pullMarker(pr)
		if !ok || m.Environment != x.Environment || m.Unit != x.Unit || m.Branch != pr.HeadRef {
			continue
		}
		if carries(m, x) && (best == nil || pr.MergedAt.After(best.PR.MergedAt)) {
			best = &Pull{PR: pr, Marker: m}
		}
	}
	return best
}

// carries reports whether the marker m proposed every accepted change of
// x, in its unit and environment.
func carries(m *Marker, x plan.Expiry) bool {
	if m.Environment != x.Environment || m.Unit != x.Unit {
		return false
	}
	for _, c := range x.Changes {
		if !slices.ContainsFunc(m.Changes, func(mc MarkerChange) bool {
			return mc.Object == c.Object && mc.Field == c.Field && values.Equal(mc.To, c.To)
		}) {
			return false
		}
	}
	return true
}

// expiredAcceptance says which expired temporary acceptance (due,
// waiting, void, refused or restored; not one a later acceptance
// supersedes) the held change merged as: the
// merged pull request st of the hold carried it, on the held object;
// empty when none did.
func (in *Input) expiredAcceptance(st *Pull, h LiveHold) string {
	if st == nil || !st.PR.Merged {
		return ""
	}
	for _, x := range slices.Concat(in.Result.Expiries, in.Result.Restored) {
		// The plan's state says expired by the plan's clock; an expiresAt
		// that is no time is never taken for expired.
		if x.State == plan.InForce || x.State == plan.Superseded || x.ExpiresAt.IsZero() || x.Object != h.Object ||
			!carries(st.Marker, x) {
			continue
		}
		return fmt.Sprintf("the temporary acceptance %s (receipt %s) expired at %s and is %s",
			x.Name, x.Receipt, x.ExpiresAt.UTC().Format(time.RFC3339), x.State)
	}
	return ""
}

// expiryLine is what a pull request's body says of a decision's term: a
// temporary acceptance's expiry, or the acceptance a restoring write-back
// ends; empty for a permanent acceptance.
func expiryLine(d plan.Decision) string {
	if d.Receipt == nil {
		return ""
	}
	s := &d.Receipt.Spec
	switch {
	case s.Expiry != nil:
		x := s.Expiry
		line := fmt.Sprintf("temporary: accepted until **%s** by %s", cell(x.ExpiresAt), code(x.SetBy))
		if x.AcceptFor != "" {
			line += fmt.Sprintf(" (acceptFor %s)", code(x.AcceptFor))
		}
		if x.Requested != "" {
			line += fmt.Sprintf("; the intent asked %s", code(x.Requested))
			if x.Bounded {
				line += ", more than the entry allows, so the entry's term holds"
			}
		}
		return line + "; then backflow opens a pull request restoring the value desired before"
	case s.Trigger.Expired != nil:
		x := s.Trigger.Expired
		return fmt.Sprintf(
			"expiry: restores the value desired before the temporary acceptance %s (receipt %s, set by %s), which expired at %s",
			code(x.Name),
			code(x.Receipt),
			code(x.SetBy),
			cell(x.ExpiresAt),
		)
	}
	return ""
}

// restores reports whether the write-back's decisions restore expired
// acceptances.
func (d *writeBackDoc) restores() bool {
	decs := decisionsOf(d.wb, d.decisions)
	return len(decs) > 0 && !slices.ContainsFunc(decs, func(dec plan.Decision) bool {
		return dec.Receipt == nil || dec.Receipt.Spec.Trigger.Expired == nil
	})
}

// intro is the body's first paragraph.
func (d *writeBackDoc) intro() string {
	if d.restores() {
		return fmt.Sprintf(
			"backflow restores desired state in **%s** to the values it held before a temporary acceptance that has expired, "+
				"under the same policy entry's authority. After the merge and the forward apply, live back at those values "+
				"proves it.\n\n",
			d.wb.Environment,
		)
	}
	return fmt.Sprintf(
		"backflow accepts an authorized live change in **%s** back into desired state, so the next forward apply keeps it "+
			"instead of reverting it.\n\n",
		d.wb.Environment,
	)
}

// termNote is what an Open or Update effect's reason adds for temporary
// acceptances and restoring write-backs.
func (p *Proposal) termNote() string {
	var notes []string
	for _, dec := range decisionsOf(*p.WriteBack, p.doc.decisions) {
		switch r := dec.Receipt; {
		case r == nil:
		case r.Spec.Expiry != nil:
			note := "temporary: until " + r.Spec.Expiry.ExpiresAt
			if r.Spec.Expiry.Bounded {
				note += ", the intent's " + r.Spec.Expiry.Requested + " bounded to the entry's " + r.Spec.Expiry.AcceptFor
			}
			notes = append(notes, note)
		case r.Spec.Trigger.Expired != nil:
			notes = append(notes, "restores "+r.Spec.Trigger.Expired.Name+", expired "+r.Spec.Trigger.Expired.ExpiresAt)
		}
	}
	if len(notes) == 0 {
		return ""
	}
	return " [" + strings.Join(notes, "; ") + "]"
}

// expiriesSection lists the temporary acceptances for the drift issue.
func expiriesSection(xs []plan.Expiry) string {
	if len(xs) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("### Temporary acceptances\n\n")
	b.WriteString(
		"Accepted changes that last a term (break glass); at expiry backflow proposes restoring the value desired " +
			"before.\n\n",
	)
	b.WriteString(
		"| environment | unit | object | accepted change | expires | state |\n| --- | --- | --- | --- | --- | --- |\n",
	)
	for _, x := range xs {
		var changes []string
		for _, c := range x.Changes {
			changes = append(changes, code(c.ValuePath+": "+values.Format(c.From)+" -> "+values.Format(c.To)))
		}
		at := "unknown"
		if !x.ExpiresAt.IsZero() {
			at = x.ExpiresAt.UTC().Format(time.RFC3339)
		}
		fmt.Fprintf(
			&b,
			"| %s | %s | %s | %s | %s | %s: %s |\n",
			cell(x.Environment),
			cell(x.Unit),
			code(x.Object.String()),
			strings.Join(changes, "; "),
			at,
			cell(string(x.State)),
			cell(x.Why),
		)
	}
	return b.String() + "\n"
}
