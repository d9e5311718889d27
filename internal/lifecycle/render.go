package lifecycle

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/backflow-dev/backflow/internal/forge"
	"github.com/backflow-dev/backflow/internal/observe"
	"github.com/backflow-dev/backflow/internal/plan"
	"github.com/backflow-dev/backflow/internal/repoconfig"
	"github.com/backflow-dev/backflow/internal/values"
)

// CheckName is the check run that carries the receipt verification.
const CheckName = "backflow/receipt"

// Labels the bot manages.
const (
	LabelReverseReconcile = "reverse-reconcile"
	LabelPreAuthorized    = "pre-authorized"
	// LabelPersonCommit marks a write-back pull request that carries a
	// commit backflow did not make: it is a person's pull request now.
	LabelPersonCommit = "person-commit"
	labelEnvPrefix    = "env:"
)

// Title is the pull request's title:
// reverse-reconcile(<env>): <valuePath> <from> -> <to>[, ...] on <object name> | on N objects,
// with the field in place of the value path for manifests and kustomizations.
func Title(env string, changes []MarkerChange) string {
	var parts []string
	seen := map[string]bool{}
	objects := map[observe.ObjectKey]bool{}
	for _, c := range changes {
		objects[c.Object] = true
		// A unit of documents (manifests, a ConfigHub Unit) has no values
		// path: its field names the change.
		p := fmt.Sprintf("%s %s -> %s", cmp.Or(c.ValuePath, c.Field), values.Format(c.From), values.Format(c.To))
		if !seen[p] {
			seen[p] = true
			parts = append(parts, p)
		}
	}
	on := fmt.Sprintf(" on %d objects", len(objects))
	if len(objects) == 1 {
		for o := range objects {
			on = " on " + o.Name
		}
	}
	head := fmt.Sprintf("reverse-reconcile(%s): ", env)
	// GitHub refuses titles longer than 256 characters: list the changes
	// that fit and count the rest.
	for n := len(parts); n > 0; n-- {
		list := strings.Join(parts[:n], ", ")
		if n < len(parts) {
			list += fmt.Sprintf(" and %d more", len(parts)-n)
		}
		if t := head + list + on; utf8.RuneCountInString(t) <= maxTitle || n == 1 {
			if utf8.RuneCountInString(t) > maxTitle {
				t = string([]rune(t)[:maxTitle-1]) + "…"
			}
			return t
		}
	}
	return head + on
}

// maxTitle is the longest title GitHub accepts.
const maxTitle = 256

// maxBody keeps a pull request, issue or comment body, or a check run's
// summary or text, under GitHub's 65,536 characters (bytes count at least
// as many).
const maxBody = 60_000

// maxText bounds one piece of text from outside (an intent, an actor, a
// value, a reason) shown in a body: the full text is in the receipt.
const maxText = 2_000

// clip cuts s to maxText bytes at a character boundary, saying so.
func clip(s string) string {
	if len(s) <= maxText {
		return s
	}
	i := maxText
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return fmt.Sprintf("%s… (%d more bytes, in the receipt)", s[:i], len(s)-i)
}

// fitBody keeps body under room bytes: past it, the body is cut at a line
// break and a collapsed note says where the rest is.
func fitBody(body string, room int, where string) string {
	if len(body) <= room {
		return body
	}
	note := fmt.Sprintf(
		"\n<details><summary>%d more bytes are not shown</summary>\n\nGitHub limits a body to 65,536 characters: "+
			"%s.\n\n</details>\n\n",
		len(body),
		where,
	)
	cut := max(room-len(note), 0)
	if i := strings.LastIndexByte(body[:cut], '\n'); i >= 0 {
		cut = i + 1
	}
	return body[:cut] + strings.Replace(note, fmt.Sprint(len(body)), fmt.Sprint(len(body)-cut), 1)
}

// writeBackDoc is everything the body and the commit message say about one
// write-back.
type writeBackDoc struct {
	wb        plan.WriteBack
	decisions []plan.Decision
	changes   []MarkerChange
	cfg       *repoconfig.Config
	snap      plan.Snapshot
	clusters  []string                                  // the environment's clusters
	observed  map[observe.ObjectKey][]string            // object -> clusters it was observed in
	newest    map[observe.ObjectKey]observe.Observation // object -> the deciding observation
	check     checkResult
	autoMerge bool
	preview   string // the revision store's preview of wb.Revision
}

// commitMessage is the commit's message: the title, a line of context, and
// the trailers that tie the commit to its receipts and its actors.
func (d *writeBackDoc) commitMessage(fingerprint, token string) string {
	var b strings.Builder
	b.WriteString(Title(d.wb.Environment, d.changes))
	b.WriteString("\n\n")
	var files []string
	for _, f := range d.wb.Files {
		files = append(files, f.Path)
	}
	if rv := d.wb.Revision; rv != nil {
		files = append(files, rv.Head.Words.Document)
	}
	fmt.Fprintf(&b, "Accept the authorized live change back into %s, with its receipt.\n\n", strings.Join(files, ", "))
	seenCo := map[string]bool{}
	var co []string
	for _, dec := range decisionsOf(d.wb, d.decisions) {
		fmt.Fprintf(&b, "Reverse-Reconcile-Actor: %s\n", oneLine(dec.Actor))
		fmt.Fprintf(&b, "Reverse-Reconcile-Role: %s\n", oneLine(dec.Role))
		fmt.Fprintf(&b, "Reverse-Reconcile-Intent: %s\n", oneLine(intentOf(dec)))
		fmt.Fprintf(&b, "Reverse-Reconcile-Receipt: %s\n", dec.ReceiptPath)
		if login, ok := d.cfg.Login(dec.Actor); ok && !seenCo[login] {
			seenCo[login] = true
			co = append(co, fmt.Sprintf("Co-authored-by: %s <%s@users.noreply.github.com>\n", login, login))
		}
	}
	fmt.Fprintf(&b, "%s: %s\n", trailerFingerprint, fingerprint)
	if token != "" {
		fmt.Fprintf(&b, "%s: %s\n", trailerToken, token)
	}
	for _, c := range co {
		b.WriteString(c)
	}
	return b.String()
}

func intentOf(d plan.Decision) string {
	if d.Receipt != nil && d.Receipt.Spec.WriteBack.Provenance.Intent != "" {
		return d.Receipt.Spec.WriteBack.Provenance.Intent
	}
	return "unstated"
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// body is the pull request's description.
func (d *writeBackDoc) body(m *Marker) string {
	var b strings.Builder
	b.WriteString(d.intro())
	b.WriteString("### Accepted changes\n\n")
	b.WriteString("| object | field | value path | values file | from | to |\n| --- | --- | --- | --- | --- | --- |\n")
	for _, c := range d.changes {
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s |\n", code(c.Object.String()), code(c.Field), code(c.ValuePath),
			code(c.ValuesFile), code(values.Format(c.From)), code(values.Format(c.To)))
	}
	b.WriteString("\n")
	b.WriteString(d.previewSection())
	b.WriteString("### Why it is accepted\n\n")
	for _, dec := range decisionsOf(d.wb, d.decisions) {
		fmt.Fprintf(&b, "**%s**\n\n", code(dec.Object.String()))
		fmt.Fprintf(&b, "- actor: %s (role %s)\n", code(dec.Actor), code(dec.Role))
		if o, ok := d.newest[dec.Object]; ok {
			fmt.Fprintf(
				&b,
				"- attribution: %s (claimed %s, source %s)\n",
				cell(attributionOf(string(o.Change.Attribution))),
				cell(attributionOf(string(o.Change.Claimed))),
				cell(o.Source),
			)
		}
		fmt.Fprintf(&b, "- intent: %s\n", cell(intentOf(dec)))
		if line := expiryLine(dec); line != "" {
			fmt.Fprintf(&b, "- %s\n", line)
		}
		fmt.Fprintf(&b, "- observed at: %s\n", dec.ObservedAt.UTC().Format(time.RFC3339))
		fmt.Fprintf(
			&b,
			"- clusters observed: %s of %s's %s\n",
			listOrNone(d.observed[dec.Object]),
			d.wb.Environment,
			listOrNone(d.clusters),
		)
		if r := dec.Receipt; r != nil {
			fmt.Fprintf(
				&b,
				"- matched rule: %s in %s: %s\n",
				code(r.Spec.Authority.MatchedRule),
				code(r.Spec.Authority.PolicyRef),
				cell(ruleReason(d.snap, dec.Role)),
			)
		}
		for _, reason := range dec.Reasons {
			fmt.Fprintf(&b, "- %s\n", cell(reason))
		}
		b.WriteString("\n")
	}
	b.WriteString("### Verification\n\n")
	fmt.Fprintf(&b, "%s: %s\n\n", CheckName, d.check.summary())
	if d.autoMerge {
		b.WriteString(
			"Every accepted field is pre-authorized by the policy and the actor is attributed by the audit log: this pull " +
				"request merges automatically once its checks pass.\n\n",
		)
	} else {
		b.WriteString(
			"This change needs a review: not every accepted field is pre-authorized, the actor's attribution is below " +
				"`audit-log`, or auto-merge is off for this repository.\n\n",
		)
	}
	var receipts strings.Builder
	for _, f := range d.wb.Receipts {
		fmt.Fprintf(
			&receipts,
			"<details><summary>Receipt <code>%s</code></summary>\n\n```yaml\n%s```\n\n</details>\n\n",
			htmlEscape(f.Path),
			fence(string(f.Data)),
		)
	}
	marker := holdsSection(m.Holds) + m.Encode() + "\n"
	head := fitBody(
		b.String(),
		maxBody-len(marker)-1_000,
		"the receipts in this pull request's commit carry every field, reason and intent",
	)
	b.Reset()
	b.WriteString(head)
	if b.Len()+receipts.Len()+len(marker) > maxBody {
		// Too long for GitHub: the receipts are in the commit; name them.
		receipts.Reset()
		receipts.WriteString("The receipts are too long to show here; they are in this pull request's commit:\n\n")
		for _, f := range d.wb.Receipts {
			fmt.Fprintf(&receipts, "- %s\n", code(f.Path))
		}
		receipts.WriteString("\n")
	}
	b.WriteString(receipts.String())
	b.WriteString(marker)
	return b.String()
}

// ruleReason is the policy's reason for the role's rule.
func ruleReason(snap plan.Snapshot, role string) string {
	if snap.Policy == nil {
		return ""
	}
	for _, r := range snap.Policy.Rules {
		if r.Role == role {
			return oneLine(r.Reason)
		}
	}
	return ""
}

func attributionOf(a string) string {
	if a == "" {
		return "unknown"
	}
	return a
}

func listOrNone(xs []string) string {
	if len(xs) == 0 {
		return "none"
	}
	return strings.Join(xs, ", ")
}

// cell keeps text that may come from anyone (an intent, an actor, a value,
// a path) inside one Markdown table cell or list item, as text: on one line,
// with the characters that could open an HTML comment or tag (<, >, &),
// start or close a code span or block (`) or end a table cell (|) written as
// HTML character references. No forged marker, comment or table row can
// come out of it.
func cell(s string) string {
	return cellEscaper.Replace(clip(strings.Join(strings.Fields(s), " ")))
}

var cellEscaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", "`", "&#96;", "|", "&#124;")

// code is cell's text shown as code. An HTML code element, not a Markdown
// code span: references inside it read as the characters they stand for.
func code(s string) string { return "<code>" + cell(s) + "</code>" }

func htmlEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}

// fence keeps a receipt from closing its code block early.
func fence(s string) string {
	s = strings.ReplaceAll(s, "```", "`\u200b``")
	if !strings.HasSuffix(s, "\n") {
		s += "\n"
	}
	return s
}

// checkResult is the outcome of verifying a write-back's receipts.
type checkResult struct {
	violations []string // "<receipt path>: <property>: <message>"
	checked    int
}

func (c checkResult) ok() bool { return len(c.violations) == 0 && c.checked > 0 }

// escaped are the violations as Markdown text: they quote values and paths.
func (c checkResult) escaped() []string {
	out := make([]string, len(c.violations))
	for i, v := range c.violations {
		out[i] = cell(v)
	}
	return out
}

func (c checkResult) summary() string {
	if c.ok() {
		return fmt.Sprintf(
			"%d receipt(s) verified against the default branch's policy; every changed file and value path is claimed by them",
			c.checked,
		)
	}
	if c.checked == 0 {
		return "no receipt to verify"
	}
	return fmt.Sprintf("%d violation(s): %s", len(c.violations), strings.Join(c.escaped(), "; "))
}

func (c checkResult) run(head string) forge.CheckRun {
	run := forge.CheckRun{Name: CheckName, HeadSHA: head, Status: forge.CheckCompleted}
	if c.ok() {
		run.Conclusion, run.Title = forge.ConclusionSuccess, "receipt verified"
	} else {
		run.Conclusion, run.Title = forge.ConclusionFailure, "receipt refused"
	}
	where := "backflow verify lists every violation"
	run.Summary = fitBody(c.summary(), maxBody, where)
	if len(c.violations) > 0 {
		run.Text = fitBody("- "+strings.Join(c.escaped(), "\n- "), maxBody, where)
	}
	return run
}

// wantedLabels are the labels a write-back's pull request carries.
func wantedLabels(cfg *repoconfig.Config, env string, autoMerge bool) []string {
	out := []string{LabelReverseReconcile, labelEnvPrefix + env}
	if autoMerge {
		out = append(out, LabelPreAuthorized)
	}
	out = append(out, cfg.PullRequests.Labels...)
	slices.Sort(out)
	return slices.Compact(out)
}
