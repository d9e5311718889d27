package values

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	yaml "go.yaml.in/yaml/v3"
	sigsyaml "sigs.k8s.io/yaml"
)

// token is a rendered scalar: inline goes where the old token was; body,
// when not empty, holds a block scalar's content lines (each starting with a
// line break) and goes after the end of the line.
type token struct {
	inline string
	body   string
}

// renderCtx is what a new token must fit into.
type renderCtx struct {
	oldStyle     yaml.Style
	oldValue     string // the old token's value, to keep `~` as `~`
	flow         bool
	parentIndent int // indentation of the key or dash the value belongs to
	indent       int // content indentation for a block scalar
	nl           string
	// noBlock rules out block scalars: lines after the token that are
	// indented deeper than the parent (comments, usually) would become
	// part of the block's content.
	noBlock bool
}

// renderValue writes v as a scalar token that both readers (yaml.v3 and
// Helm's YAML 1.1 reader) read back as v, keeping the old token's style when
// it can. Candidates are tried in order of preference and each is checked by
// parsing it in a one-entry document.
func renderValue(v any, c renderCtx) (token, error) {
	for _, t := range candidates(v, c) {
		if readsBack(t, v, c) {
			return t, nil
		}
	}
	return token{}, fmt.Errorf("%s: %w", Format(v), ErrUnsupportedVal)
}

func candidates(v any, c renderCtx) []token {
	switch x := v.(type) {
	case nil:
		if c.oldValue == "~" || c.oldValue == "null" || c.oldValue == "Null" || c.oldValue == "NULL" {
			return []token{{inline: c.oldValue}, {inline: "null"}}
		}
		return []token{{inline: "null"}}
	case bool:
		return []token{{inline: strconv.FormatBool(x)}}
	case string:
		return stringCandidates(x, c)
	}
	if s, ok := formatNumber(v); ok {
		return []token{{inline: s}}
	}
	return nil
}

// formatNumber writes a number so that a float stays a float (`4.0`, not `4`)
// and an integer stays exact.
func formatNumber(v any) (string, bool) {
	switch n := v.(type) {
	case int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64:
		return fmt.Sprint(n), true
	case json.Number:
		return n.String(), true
	case float32:
		return formatNumber(float64(n))
	case float64:
		switch {
		case math.IsNaN(n):
			return "", false
		case math.IsInf(n, 1):
			return ".inf", true
		case math.IsInf(n, -1):
			return "-.inf", true
		}
		s := strconv.FormatFloat(n, 'g', -1, 64)
		if !strings.ContainsAny(s, ".eE") {
			s += ".0"
		} else if strings.ContainsAny(s, "eE") && !strings.Contains(s, ".") {
			// YAML 1.1 floats need a dot before the exponent.
			m, e, _ := strings.Cut(s, "e")
			s = m + ".0e" + e
		}
		return s, true
	}
	return "", false
}

func stringCandidates(s string, c renderCtx) []token {
	var out []token
	multiline := strings.Contains(s, "\n")
	block := c.oldStyle&(yaml.LiteralStyle|yaml.FoldedStyle) != 0
	if !c.flow && !c.noBlock && (multiline || block) {
		// A folded scalar keeps its style for a value of one line, with or
		// without final line breaks (its chomping indicator says which):
		// a line break inside would fold into a space.
		if block && c.oldStyle&yaml.FoldedStyle != 0 && !strings.Contains(strings.TrimRight(s, "\n"), "\n") {
			if t, ok := blockToken(s, ">", c); ok {
				out = append(out, t)
			}
		}
		if t, ok := blockToken(s, "|", c); ok {
			out = append(out, t)
		}
	}
	single := token{inline: "'" + strings.ReplaceAll(s, "'", "''") + "'"}
	double := token{inline: doubleQuote(s)}
	switch {
	case c.oldStyle&yaml.SingleQuotedStyle != 0:
		out = append(out, single, double)
	case c.oldStyle&yaml.DoubleQuotedStyle != 0:
		out = append(out, double)
	default:
		if plainSafe(s, c.flow) {
			out = append(out, token{inline: s})
		}
		out = append(out, double)
	}
	return out
}

// plainSafe rules out strings that would not read back as themselves as a
// plain scalar, whatever the reader; readsBack then checks the rest
// (YAML 1.1 look-alikes such as `yes`, `0755`, `1.10`, `~`).
func plainSafe(s string, flow bool) bool {
	if s == "" || strings.TrimSpace(s) != s || strings.ContainsAny(s, "\n\r\t") {
		return false
	}
	if strings.ContainsRune("-?:,[]{}#&*!|>'\"%@`", rune(s[0])) {
		return false
	}
	if strings.Contains(s, ": ") || strings.Contains(s, " #") || strings.HasSuffix(s, ":") {
		return false
	}
	if flow && strings.ContainsAny(s, ",[]{}:") {
		return false
	}
	for _, r := range s {
		if r == utf8.RuneError || !unicode.IsPrint(r) && r != ' ' {
			return false
		}
	}
	return true
}

// doubleQuote writes s as a YAML double-quoted scalar. Go's escapes (\n,
// \t, \x00, \u2028, ...) are all YAML escapes too.
func doubleQuote(s string) string {
	return strconv.Quote(s)
}

// blockToken writes s as a literal (`|`) or folded (`>`, one line only) block
// scalar whose content lines are indented at c.indent.
func blockToken(s, style string, c renderCtx) (token, bool) {
	if !utf8.ValidString(s) || c.indent <= c.parentIndent {
		return token{}, false
	}
	for _, r := range s {
		if r != '\n' && r != '\t' && !unicode.IsPrint(r) {
			return token{}, false
		}
	}
	chomp := "-"
	body := s
	switch {
	case strings.HasSuffix(s, "\n\n"):
		chomp = "+"
		body = s[:len(s)-1]
	case strings.HasSuffix(s, "\n"):
		chomp = ""
		body = s[:len(s)-1]
	}
	if body == "" && chomp != "+" {
		return token{}, false
	}
	lines := strings.Split(body, "\n")
	header := style
	for _, l := range lines {
		if strings.TrimSpace(l) == "" {
			continue
		}
		if l[0] == ' ' || l[0] == '\t' {
			step := c.indent - c.parentIndent
			if step > 9 {
				return token{}, false
			}
			header += strconv.Itoa(step)
		}
		break
	}
	header += chomp
	var b strings.Builder
	pad := strings.Repeat(" ", c.indent)
	for _, l := range lines {
		b.WriteString(c.nl)
		if l != "" {
			b.WriteString(pad)
			b.WriteString(l)
		}
	}
	return token{inline: header, body: b.String()}, true
}

// readsBack checks a candidate token in a one-entry document laid out like
// the file (same indentation, flow or block) with both readers; a token
// whose reading is certain is not parsed.
func readsBack(t token, want any, c renderCtx) bool {
	return certain(t, want) || parsesBack(t, want, c)
}

// certain says both readers read t as want whatever the context: true and
// false are booleans in YAML 1.1 and 1.2, and an integer in canonical
// decimal (no sign but `-`, no leading zero, no `_`) an integer in both,
// exact up to 2^53 through Helm's JSON step. Planning 1,000 units' edits
// spent a quarter of its bytes parsing such tokens.
func certain(t token, want any) bool {
	if t.body != "" {
		return false
	}
	switch w := want.(type) {
	case bool:
		return t.inline == strconv.FormatBool(w)
	case int:
		return smallInt(t.inline, int64(w))
	case int64:
		return smallInt(t.inline, w)
	}
	return false
}

func smallInt(inline string, w int64) bool {
	return -1<<53 < w && w < 1<<53 && inline == strconv.FormatInt(w, 10)
}

// parsesBack reads t in a one-entry document with both readers.
func parsesBack(t token, want any, c renderCtx) bool {
	var doc string
	pad := strings.Repeat(" ", c.parentIndent)
	if c.flow {
		doc = pad + "k: [" + t.inline + "]\n"
	} else {
		doc = pad + "k: " + t.inline + t.body + "\n"
	}
	var v3 map[string]any
	if err := yaml.Unmarshal([]byte(doc), &v3); err != nil {
		return false
	}
	var helm map[string]any
	if err := sigsyaml.Unmarshal([]byte(doc), &helm, useNumber); err != nil {
		return false
	}
	got3, got1 := v3["k"], helm["k"]
	if c.flow {
		l3, ok3 := got3.([]any)
		l1, ok1 := got1.([]any)
		if !ok3 || !ok1 || len(l3) != 1 || len(l1) != 1 {
			return false
		}
		got3, got1 = l3[0], l1[0]
	}
	return sameValue(got3, want) && sameValue(got1, want)
}

func useNumber(d *json.Decoder) *json.Decoder {
	d.UseNumber()
	return d
}

// kindOf names a decoded value's type class: the typing table compares
// numbers by value, but a string never equals a number or a bool.
func kindOf(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "string"
	case bool:
		return "bool"
	case map[string]any, map[any]any:
		return "map"
	case []any:
		return "list"
	}
	if _, ok := AsNumber(v); ok {
		return "number"
	}
	return fmt.Sprintf("%T", v)
}

// sameValue is Equal with matching type classes, NaN equal to NaN, and maps
// with non-string keys (yaml.v3 decodes those) compared by their keys' text.
func sameValue(a, b any) bool {
	a, b = normalize(a), normalize(b)
	if kindOf(a) != kindOf(b) {
		return false
	}
	if fa, ok := a.(float64); ok && math.IsNaN(fa) {
		fb, ok := b.(float64)
		return ok && math.IsNaN(fb)
	}
	switch x := a.(type) {
	case map[string]any:
		y := b.(map[string]any)
		if len(x) != len(y) {
			return false
		}
		for k, v := range x {
			w, ok := y[k]
			if !ok || !sameValue(v, w) {
				return false
			}
		}
		return true
	case []any:
		y := b.([]any)
		if len(x) != len(y) {
			return false
		}
		for i := range x {
			if !sameValue(x[i], y[i]) {
				return false
			}
		}
		return true
	}
	return Equal(a, b)
}

// normalize turns yaml.v3's map[any]any into map[string]any.
func normalize(v any) any {
	m, ok := v.(map[any]any)
	if !ok {
		return v
	}
	out := make(map[string]any, len(m))
	for k, x := range m {
		out[fmt.Sprint(k)] = x
	}
	return out
}
