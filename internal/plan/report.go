package plan

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/backflow-dev/backflow/internal/helmvalues"
	"github.com/backflow-dev/backflow/internal/observe"
	"github.com/backflow-dev/backflow/internal/receipt"
	"github.com/backflow-dev/backflow/internal/values"
	yaml "go.yaml.in/yaml/v3"
)

// The JSON contract of `backflow plan --format json`. Key order and types
// are part of it: unit, environment, valuePath, valuesFile and writeBack are
// null where unknown; receipt is present on allows only; values keep their
// types (4 is a number, "4" a string).
type (
	jsonResult struct {
		Decisions []jsonDecision `json:"decisions"`
		Triggers  []jsonTrigger  `json:"triggers"`
		Notices   []jsonNotice   `json:"notices,omitempty"`
		Expiries  []jsonExpiry   `json:"expiries,omitempty"`
		Errors    []string       `json:"errors"`
	}
	jsonNotice struct {
		Object  observe.ObjectKey `json:"object"`
		Cluster string            `json:"cluster"`
		At      string            `json:"at"`
		Message string            `json:"message"`
	}
	jsonDecision struct {
		Unit        *string           `json:"unit"`
		Environment *string           `json:"environment"`
		Object      observe.ObjectKey `json:"object"`
		Outcome     Outcome           `json:"outcome"`
		AutoMerge   bool              `json:"autoMerge"`
		WriteBack   *string           `json:"writeBack"`
		Reasons     []string          `json:"reasons"`
		Changes     []jsonChange      `json:"changes"`
		Receipt     json.RawMessage   `json:"receipt,omitempty"`
	}
	jsonChange struct {
		Object     observe.ObjectKey `json:"object"`
		Field      string            `json:"field"`
		ValuePath  *string           `json:"valuePath"`
		ValuesFile *string           `json:"valuesFile"`
		From       any               `json:"from"`
		To         any               `json:"to"`
		Authorized bool              `json:"authorized"`
	}
	jsonTrigger struct {
		Object  observe.ObjectKey `json:"object"`
		Cluster string            `json:"cluster"`
		At      string            `json:"at"`
		Owner   string            `json:"owner,omitempty"`
	}
)

func nullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// JSON writes the result in the plan contract, indented, with a final
// newline.
func (r Result) JSON() ([]byte, error) {
	out := jsonResult{Decisions: []jsonDecision{}, Triggers: []jsonTrigger{}, Errors: r.Errors}
	if out.Errors == nil {
		out.Errors = []string{}
	}
	for _, d := range r.Decisions {
		jd := jsonDecision{
			Unit: nullable(d.Unit), Environment: nullable(d.Environment), Object: d.Object, Outcome: d.Outcome,
			AutoMerge: d.AutoMerge, WriteBack: nullable(d.WriteBack), Reasons: d.Reasons, Changes: []jsonChange{},
		}
		if jd.Reasons == nil {
			jd.Reasons = []string{}
		}
		for _, c := range d.Changes {
			jd.Changes = append(jd.Changes, jsonChange{
				Object: c.Object, Field: c.Field, ValuePath: nullable(c.ValuePath), ValuesFile: nullable(c.ValuesFile),
				From: jsonSafe(c.From), To: jsonSafe(c.To), Authorized: c.Authorized,
			})
		}
		if d.Receipt != nil {
			raw, err := receiptJSON(d.Receipt)
			if err != nil {
				return nil, err
			}
			jd.Receipt = raw
		}
		out.Decisions = append(out.Decisions, jd)
	}
	for _, t := range r.Triggers {
		jt := jsonTrigger{Object: t.Object, Cluster: t.Cluster, Owner: t.Owner}
		if !t.At.IsZero() {
			jt.At = t.At.UTC().Format(time.RFC3339)
		}
		out.Triggers = append(out.Triggers, jt)
	}
	for _, n := range r.Notices {
		out.Notices = append(
			out.Notices,
			jsonNotice{Object: n.Object, Cluster: n.Cluster, At: n.At.UTC().Format(time.RFC3339), Message: n.Message},
		)
	}
	out.Expiries = jsonExpiries(r.Expiries)
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(out); err != nil {
		return nil, fmt.Errorf("error writing the plan as JSON: %w", err)
	}
	return buf.Bytes(), nil
}

// jsonSafe replaces what JSON cannot hold (NaN and infinities, which YAML
// can) with their YAML spelling as a string.
func jsonSafe(v any) any {
	return helmvalues.Map(v, func(s any) any {
		if x, ok := s.(float64); ok && (math.IsNaN(x) || math.IsInf(x, 0)) {
			return values.Format(x)
		}
		return s
	})
}

// receiptJSON writes a receipt as JSON in the seed's key order, with the
// types its YAML has.
func receiptJSON(r *receipt.Receipt) (json.RawMessage, error) {
	data, err := receipt.Marshal(r)
	if err != nil {
		return nil, err
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("error reading back receipt %s: %w", r.Metadata.Name, err)
	}
	var buf bytes.Buffer
	if err := nodeJSON(&buf, &doc); err != nil {
		return nil, fmt.Errorf("error writing receipt %s as JSON: %w", r.Metadata.Name, err)
	}
	return buf.Bytes(), nil
}

func nodeJSON(buf *bytes.Buffer, n *yaml.Node) error {
	switch n.Kind {
	case yaml.DocumentNode:
		if len(n.Content) == 0 {
			buf.WriteString("null")
			return nil
		}
		return nodeJSON(buf, n.Content[0])
	case yaml.AliasNode:
		return nodeJSON(buf, n.Alias)
	case yaml.MappingNode:
		buf.WriteByte('{')
		for i := 0; i+1 < len(n.Content); i += 2 {
			if i > 0 {
				buf.WriteByte(',')
			}
			writeJSONString(buf, n.Content[i].Value)
			buf.WriteByte(':')
			if err := nodeJSON(buf, n.Content[i+1]); err != nil {
				return err
			}
		}
		buf.WriteByte('}')
	case yaml.SequenceNode:
		buf.WriteByte('[')
		for i, c := range n.Content {
			if i > 0 {
				buf.WriteByte(',')
			}
			if err := nodeJSON(buf, c); err != nil {
				return err
			}
		}
		buf.WriteByte(']')
	case yaml.ScalarNode:
		var v any
		if err := n.Decode(&v); err != nil {
			return err
		}
		b, err := json.Marshal(jsonSafe(helmvalues.Plain(v)))
		if err != nil {
			return err
		}
		buf.Write(b)
	}
	return nil
}

func writeJSONString(buf *bytes.Buffer, s string) {
	b, _ := json.Marshal(s)
	buf.Write(b)
}

// Markdown writes the result as a pull request body or a report shows it:
// a summary table, then per decision its reasons, a table of its changes and
// its receipt in a collapsible block.
func (r Result) Markdown() ([]byte, error) {
	var b strings.Builder
	b.WriteString("## backflow plan\n\n")
	if len(r.Decisions) == 0 {
		b.WriteString("No object was observed.\n")
	} else {
		b.WriteString("| Unit | Environment | Object | Outcome | Auto-merge | Write-back |\n" +
			"| --- | --- | --- | --- | --- | --- |\n")
		for _, d := range r.Decisions {
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s |\n", cell(orDash(d.Unit)), cell(orDash(d.Environment)),
				code(d.Object.String()), outcomeWord(d), yesNo(d.AutoMerge), codeOrDash(d.WriteBack))
		}
	}
	for _, d := range r.Decisions {
		fmt.Fprintf(&b, "\n### %s: %s", outcomeWord(d), codeSpan(d.Object.String()))
		if d.Unit != "" || d.Environment != "" {
			fmt.Fprintf(&b, " (%s)", strings.Join(nonEmpty(d.Unit, d.Environment), ", "))
		}
		b.WriteString("\n\n")
		for _, reason := range d.Reasons {
			fmt.Fprintf(&b, "- %s\n", reason)
		}
		if len(d.Changes) > 0 {
			b.WriteString(
				"\n| Field | Value path | Values file | From | To | Authorized |\n| --- | --- | --- | --- | --- | --- |\n",
			)
			for _, c := range d.Changes {
				fmt.Fprintf(
					&b,
					"| %s | %s | %s | %s | %s | %s |\n",
					code(c.Field),
					codeOrDash(c.ValuePath),
					codeOrDash(c.ValuesFile),
					code(values.Format(c.From)),
					code(values.Format(c.To)),
					yesNo(c.Authorized),
				)
			}
		}
		if d.Receipt != nil {
			data, err := receipt.Marshal(d.Receipt)
			if err != nil {
				return nil, err
			}
			name := d.ReceiptPath
			if name == "" {
				name = d.Receipt.Metadata.Name
			}
			fmt.Fprintf(
				&b,
				"\n<details><summary>Receipt <code>%s</code></summary>\n\n```yaml\n%s```\n\n</details>\n",
				htmlEscape(name),
				data,
			)
		}
	}
	if len(r.Triggers) > 0 {
		b.WriteString("\n### Objects to look at again\n\n")
		for _, t := range r.Triggers {
			fmt.Fprintf(&b, "- %s on %s at %s\n", codeSpan(t.Object.String()), orDash(t.Cluster),
				t.At.UTC().Format(time.RFC3339))
		}
	}
	if len(r.Notices) > 0 {
		b.WriteString("\n### Notices\n\n")
		for _, n := range r.Notices {
			fmt.Fprintf(&b, "- %s on %s at %s: %s\n", codeSpan(n.Object.String()), orDash(n.Cluster),
				n.At.UTC().Format(time.RFC3339), n.Message)
		}
	}
	b.WriteString(markdownExpiries(r.Expiries))
	if len(r.Errors) > 0 {
		b.WriteString("\n### Errors\n\n")
		for _, e := range r.Errors {
			fmt.Fprintf(&b, "- %s\n", e)
		}
	}
	return []byte(b.String()), nil
}

// Table writes one line per decision, aligned, then the reasons, triggers
// and errors: the terminal's view of a plan.
func (r Result) Table() ([]byte, error) {
	var buf bytes.Buffer
	tw := tabwriter.NewWriter(&buf, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "UNIT\tENVIRONMENT\tOBJECT\tOUTCOME\tCHANGES\tAUTO-MERGE\tWRITE-BACK")
	for _, d := range r.Decisions {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\t%s\n", orDash(d.Unit), orDash(d.Environment), d.Object, outcomeWord(d),
			len(d.Changes), yesNo(d.AutoMerge), orDash(d.WriteBack))
	}
	if err := tw.Flush(); err != nil {
		return nil, err
	}
	for _, d := range r.Decisions {
		fmt.Fprintf(&buf, "\n%s %s (%s):\n", d.Object, orDash(d.Environment), outcomeWord(d))
		for _, reason := range d.Reasons {
			fmt.Fprintf(&buf, "  - %s\n", reason)
		}
		for _, c := range d.Changes {
			fmt.Fprintf(
				&buf,
				"  %s -> %s: %s -> %s (%s)\n",
				c.Field,
				orDash(c.ValuePath),
				values.Format(c.From),
				values.Format(c.To),
				authorizedWord(c.Authorized),
			)
		}
	}
	if len(r.Triggers) > 0 {
		buf.WriteString("\ntriggers (look again):\n")
		for _, t := range r.Triggers {
			fmt.Fprintf(&buf, "  %s on %s at %s\n", t.Object.String(), orDash(t.Cluster), t.At.UTC().Format(time.RFC3339))
		}
	}
	if len(r.Notices) > 0 {
		buf.WriteString("\nnotices:\n")
		for _, n := range r.Notices {
			fmt.Fprintf(
				&buf,
				"  %s on %s at %s: %s\n",
				n.Object.String(),
				orDash(n.Cluster),
				n.At.UTC().Format(time.RFC3339),
				n.Message,
			)
		}
	}
	buf.WriteString(tableExpiries(r.Expiries))
	if len(r.Errors) > 0 {
		buf.WriteString("\nerrors:\n")
		for _, e := range r.Errors {
			fmt.Fprintf(&buf, "  %s\n", e)
		}
	}
	return buf.Bytes(), nil
}

// outcomeWord is the outcome, marking an allow that is only reported.
func outcomeWord(d Decision) string {
	if d.Outcome == Allow && d.Reported {
		return "allow (report only)"
	}
	return string(d.Outcome)
}

func authorizedWord(ok bool) string {
	if ok {
		return "authorized"
	}
	return "unauthorized"
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func nonEmpty(ss ...string) []string {
	var out []string
	for _, s := range ss {
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}

// cell escapes a Markdown table cell: a `|` would end it, a newline the row.
func cell(s string) string {
	s = strings.ReplaceAll(s, "|", `\|`)
	return strings.ReplaceAll(s, "\n", " ")
}

// code writes s as a code span inside a table cell; GitHub reads `\|` as a
// pipe even there.
func code(s string) string { return codeSpan(cell(s)) }

// codeSpan writes s as a code span outside tables, with a fence longer than
// any run of backticks in s.
func codeSpan(s string) string {
	fence := "`"
	for strings.Contains(s, fence) {
		fence += "`"
	}
	pad := ""
	if strings.HasPrefix(s, "`") || strings.HasSuffix(s, "`") {
		pad = " "
	}
	return fence + pad + s + pad + fence
}

func codeOrDash(s string) string {
	if s == "" {
		return "-"
	}
	return code(s)
}

func htmlEscape(s string) string {
	r := strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;")
	return r.Replace(s)
}
