package observe

import (
	"strconv"
	"strings"
)

// cub-scout prints every desired and live value as text with
// formatObjectSetDiffValue: nil, an absent value and "" print as "-", a
// string as itself, anything else with Go's %v. Desired manifests are
// decoded into float64 numbers, so a desired 1073741824 prints as
// 1.073741824e+09 and 1000000 as 1e+06, while a live number (an int64) or a
// quantity (a string) prints as its digits. What that text can and cannot
// say is read here.

// cubPlaceholder is what cub-scout prints for nil, an absent value and "".
const cubPlaceholder = "-"

// cubNothing reports cub-scout's rendering of nothing: "-" (and "", which
// its formatter never writes, but an empty text says no more). It stands
// for a field absent, null, "" or holding the string "-": which of them,
// the text cannot say. "<nil>" is never cub-scout's placeholder (its
// formatter prints nil as "-"), so it is the string it says.
func cubNothing(s string) bool { return s == cubPlaceholder || s == "" }

// cubAmbiguousLive is why a live "-" is neither a removal nor a value.
const cubAmbiguousLive = `cub-scout prints "-" live for a field that is absent, null, "" or the string "-", ` +
	`so its output cannot say which this field holds`

// rendersAsNothing reports whether cub-scout prints v as its placeholder:
// null, "" and the string "-" all print as "-".
func rendersAsNothing(v any) bool {
	s, ok := v.(string)
	return v == nil || ok && cubNothing(s)
}

// cubSameValue reports whether cub-scout's desired and live texts of a
// field (a key of the map of scalars under, if any) print one value: the
// same text (cub-scout compared the number 1 with the quantity "1"), or,
// outside a map of strings, desired is how %v prints the float64 of live's
// number. The placeholder is never one value: it stands for several.
func cubSameValue(desired, live string, under scalarMap) bool {
	if cubNothing(desired) || cubNothing(live) {
		return false
	}
	return desired == live || under != inStringMap && cubPrintedNumber(live) && cubSameNumber(desired, live)
}

// cubSameNumber reports whether desired is the text cub-scout prints for n's
// number decoded as a desired float64: strconv.FormatFloat(f, 'g', -1, 64),
// which is Go's %v of a float64 (1073741824 prints 1.073741824e+09, 1000000
// prints 1e+06, 1 prints 1). Only the desired side is a float64, so the
// rule has a direction: a desired "1.10", "1.0" or "5e-01" is no float64's
// %v, so it is a string, and differs from a live 1.1, 1 or 0.5.
func cubSameNumber(desired, n string) bool {
	if !isJSONNumber(n) {
		return false
	}
	f, err := strconv.ParseFloat(n, 64)
	return err == nil && strconv.FormatFloat(f, 'g', -1, 64) == desired
}

// cubPrintedNumber reports whether a live text is how %v prints a number
// the object holds: an int64's digits, or a float64's %v. Any other
// spelling of a number ("1.10", "1.0", "5e-01") is a string, and is
// compared as its text.
func cubPrintedNumber(s string) bool {
	if !isJSONNumber(s) {
		return false
	}
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return strconv.FormatInt(n, 10) == s
	}
	f, err := strconv.ParseFloat(s, 64)
	return err == nil && strconv.FormatFloat(f, 'g', -1, 64) == s
}

// isJSONNumber reports whether s is spelt as a JSON number (which is how
// Go's %v prints a float64 too: 1e+06, 1.5, -2): an optional minus,
// digits without a leading zero, an optional fraction and exponent. "007",
// "+1", "0x10" and ".5" are not numbers cub-scout printed.
func isJSONNumber(s string) bool {
	s = strings.TrimPrefix(s, "-")
	digits := func(i int) int {
		j := i
		for j < len(s) && s[j] >= '0' && s[j] <= '9' {
			j++
		}
		return j
	}
	i := digits(0)
	if i == 0 || s[0] == '0' && i > 1 {
		return false
	}
	if i < len(s) && s[i] == '.' {
		j := digits(i + 1)
		if j == i+1 {
			return false
		}
		i = j
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		j := digits(i)
		if j == i {
			return false
		}
		i = j
	}
	return i == len(s)
}
