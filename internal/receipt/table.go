package receipt

import (
	"strings"

	"github.com/backflow-dev/backflow/internal/values"
)

// TableHeader is the rollup table's header, in the seed's format.
const TableHeader = "| Receipt | Chart | Env | Accepted change | Authority | Bounded | Round-trip | Status |\n" +
	"| --- | --- | --- | --- | --- | --- | --- | --- |\n"

// TableRow is r's row of the rollup table, ending in a newline. The accepted
// change shows `valuePath: from -> to` for each changed field, each in its
// own code span, joined by `; `. The row states what the receipt claims;
// Verify says whether the claims hold.
func TableRow(r *Receipt) string {
	s := &r.Spec
	chart := s.Chart
	if s.Version != "" {
		chart += "@" + s.Version
	}
	changes := make([]string, len(s.Bounds.ChangedFields))
	for i, cf := range s.Bounds.ChangedFields {
		changes[i] = code(cf.ValuePath + ": " + formatValue(cf.From) + " -> " + formatValue(cf.To))
	}
	bounded := "**no**"
	if w := s.Bounds.WithinAuthorizedScope; w != nil && *w {
		bounded = "yes"
	}
	cells := []string{
		code(r.Metadata.Name), cell(chart), cell(s.Environment), strings.Join(changes, "; ") + expiryNote(r),
		cell(s.Authority.Decision), bounded, cell(s.RoundTrip.Result), cell(s.Status),
	}
	return "| " + strings.Join(cells, " | ") + " |\n"
}

// Table is the rollup table of rs, one row per receipt in the order given.
func Table(rs []*Receipt) string {
	var b strings.Builder
	b.WriteString(TableHeader)
	for _, r := range rs {
		b.WriteString(TableRow(r))
	}
	return b.String()
}

func formatValue(v Value) string {
	if !v.Set {
		return "?"
	}
	return values.Format(v.V)
}

// cell escapes text for a Markdown table cell: a `|` would end the cell and
// a line break the row.
func cell(s string) string {
	s = strings.ReplaceAll(s, "|", `\|`)
	return strings.Join(strings.Fields(strings.ReplaceAll(s, "\n", " ")), " ")
}

// code writes s as a code span inside a table cell, with a fence longer than
// any run of backticks in s.
func code(s string) string {
	s = cell(s)
	fence := "`"
	for strings.Contains(s, fence) {
		fence += "`"
	}
	if strings.HasPrefix(s, "`") || strings.HasSuffix(s, "`") {
		s = " " + s + " "
	}
	return fence + s + fence
}
