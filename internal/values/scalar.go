package values

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"regexp"
	"strconv"
	"strings"

	yaml "go.yaml.in/yaml/v3"
)

// This file is the project's one typing table for values that do not come
// from a values file: command-line arguments, cub-scout's string values, and
// comparisons between values read by different decoders.

var (
	coreInt   = regexp.MustCompile(`^[-+]?[0-9]+$`)
	coreOct   = regexp.MustCompile(`^0o[0-7]+$`)
	coreHex   = regexp.MustCompile(`^0x[0-9a-fA-F]+$`)
	coreFloat = regexp.MustCompile(`^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$`)
	coreInf   = regexp.MustCompile(`^[-+]?\.(inf|Inf|INF)$`)
	coreNaN   = regexp.MustCompile(`^\.(nan|NaN|NAN)$`)
)

// ParseScalar reads s as a YAML 1.2 core-schema scalar, the way `--value`
// is read: `4` is an int, `4.5` a float, `true`/`false` a bool, `null` or `~`
// null, a single- or double-quoted scalar the string it quotes, and anything
// else (including the empty string) the string itself. Integers that do not
// fit in an int64 are floats.
func ParseScalar(s string) (any, error) {
	if len(s) >= 2 && (s[0] == '"' && s[len(s)-1] == '"' || s[0] == '\'' && s[len(s)-1] == '\'') {
		// The parser stops at the first closing quote and drops what
		// follows (`'a'b'` would read as "a"), so the quote that closes
		// the scalar must be the last byte.
		if closingQuote(s) != len(s)-1 {
			return nil, fmt.Errorf("invalid quoted scalar %s: text after the closing quote", s)
		}
		var out string
		if err := yaml.Unmarshal([]byte(s), &out); err != nil {
			return nil, fmt.Errorf("invalid quoted scalar %s: %w", s, err)
		}
		return out, nil
	}
	switch s {
	case "null", "Null", "NULL", "~":
		return nil, nil
	case "true", "True", "TRUE":
		return true, nil
	case "false", "False", "FALSE":
		return false, nil
	}
	switch {
	case coreInt.MatchString(s):
		if n, err := strconv.ParseInt(s, 10, 64); err == nil {
			return n, nil
		}
		f, _ := strconv.ParseFloat(s, 64)
		return f, nil
	case coreOct.MatchString(s):
		if n, err := strconv.ParseInt(s[2:], 8, 64); err == nil {
			return n, nil
		}
	case coreHex.MatchString(s):
		if n, err := strconv.ParseInt(s[2:], 16, 64); err == nil {
			return n, nil
		}
	case coreFloat.MatchString(s):
		f, err := strconv.ParseFloat(s, 64)
		if err == nil {
			return f, nil
		}
	case coreInf.MatchString(s):
		if s[0] == '-' {
			return math.Inf(-1), nil
		}
		return math.Inf(1), nil
	case coreNaN.MatchString(s):
		return math.NaN(), nil
	}
	return s, nil
}

// closingQuote is the offset of the quote that closes the quoted scalar
// starting at s[0], or -1 when there is none.
func closingQuote(s string) int {
	q := s[0]
	for i := 1; i < len(s); i++ {
		switch {
		case q == '"' && s[i] == '\\':
			i++
		case s[i] == q && q == '\'' && i+1 < len(s) && s[i+1] == '\'':
			i++
		case s[i] == q:
			return i
		}
	}
	return -1
}

// ConvertLike reads s, a value written as text by an observer (cub-scout's
// `live` and `desired`), as the type of like, the value the values file holds
// at the mapped path. Where like is nil (no value there) or s does not read
// as like's type, s is read as ParseScalar reads it.
func ConvertLike(s string, like any) any {
	switch like.(type) {
	case string:
		return s
	case bool:
		switch strings.ToLower(s) {
		case "true":
			return true
		case "false":
			return false
		}
	case int, int64, int32, uint64, float64, float32, json.Number:
		if v, err := ParseScalar(s); err == nil {
			if _, ok := AsNumber(v); ok {
				return v
			}
		}
	}
	v, err := ParseScalar(s)
	if err != nil {
		return s
	}
	return v
}

// AsNumber reports the value of v as a float64 when v is a number of any Go
// numeric type a YAML or JSON decoder produces.
func AsNumber(v any) (float64, bool) {
	switch n := v.(type) {
	case int:
		return float64(n), true
	case int8:
		return float64(n), true
	case int16:
		return float64(n), true
	case int32:
		return float64(n), true
	case int64:
		return float64(n), true
	case uint:
		return float64(n), true
	case uint8:
		return float64(n), true
	case uint16:
		return float64(n), true
	case uint32:
		return float64(n), true
	case uint64:
		return float64(n), true
	case float32:
		return float64(n), true
	case float64:
		return n, true
	case json.Number:
		f, err := n.Float64()
		return f, err == nil
	}
	return 0, false
}

// Equal compares two decoded values as receipts and the planner do: numbers
// by value whatever their Go type (`4` equals `4.0`), a string never equals a
// number (`4` is not `"4"`), maps and lists element by element.
func Equal(a, b any) bool {
	if fa, ok := AsNumber(a); ok {
		fb, ok := AsNumber(b)
		if !ok {
			return false
		}
		// Integers beyond 2^53 lose precision as floats: compare them exactly.
		if ia, ok := asInt64(a); ok {
			if ib, ok := asInt64(b); ok {
				return ia == ib
			}
		}
		return fa == fb
	}
	if _, ok := AsNumber(b); ok {
		return false
	}
	switch x := a.(type) {
	case nil:
		return b == nil
	case string:
		y, ok := b.(string)
		return ok && x == y
	case bool:
		y, ok := b.(bool)
		return ok && x == y
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, v := range x {
			w, ok := y[k]
			if !ok || !Equal(v, w) {
				return false
			}
		}
		return true
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !Equal(x[i], y[i]) {
				return false
			}
		}
		return true
	}
	return reflect.DeepEqual(a, b)
}

func asInt64(v any) (int64, bool) {
	switch n := v.(type) {
	case int:
		return int64(n), true
	case int32:
		return int64(n), true
	case int64:
		return n, true
	case float64:
		if n == math.Trunc(n) && math.Abs(n) < 1<<63 {
			return int64(n), true
		}
	case json.Number:
		i, err := n.Int64()
		return i, err == nil
	}
	return 0, false
}

// Format writes v on one line for tables, titles and messages: scalars as
// YAML flow scalars (strings quoted only where a plain scalar would read as
// another type), maps and lists as JSON.
func Format(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case string:
		if p, err := ParseScalar(x); err == nil && p == any(x) && x != "" && !strings.ContainsAny(x, "\n\"'#:") &&
			strings.TrimSpace(x) == x {
			return x
		}
		return strconv.Quote(x)
	case bool:
		return strconv.FormatBool(x)
	case map[string]any, []any:
		b, err := json.Marshal(x)
		if err != nil {
			return fmt.Sprint(x)
		}
		return string(b)
	}
	if f, ok := AsNumber(v); ok {
		if i, ok := asInt64(v); ok {
			return strconv.FormatInt(i, 10)
		}
		return strconv.FormatFloat(f, 'g', -1, 64)
	}
	return fmt.Sprint(v)
}
