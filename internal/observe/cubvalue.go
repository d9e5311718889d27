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
// outside a map of strings, two renderings of the same number. The
// placeholder is never one value: it stands for several.
func cubSameValue(desired, live string, under scalarMap) bool {
	if cubNothing(desired) || cubNothing(live) {
		return false
	}
	return desired == live || under != inStringMap && cubSameNumber(desired, live)
}

// cubSameNumber reports whether two of cub-scout's texts are renderings of
// the same number: 1.073741824e+09 (a float64 printed with %v) and
// 1073741824 (an int64's digits, or a quantity's string) are one value,
// compared exactly as integers when both are, else as float64, the
// precision cub-scout decoded the desired number with.
func cubSameNumber(a, b string) bool {
	if !isJSONNumber(a) || !isJSONNumber(b) {
		return false
	}
	ia, errA := strconv.ParseInt(a, 10, 64)
	ib, errB := strconv.ParseInt(b, 10, 64)
	if errA == nil && errB == nil {
		return ia == ib
	}
	fa, errA := strconv.ParseFloat(a, 64)
	fb, errB := strconv.ParseFloat(b, 64)
	return errA == nil && errB == nil && fa == fb
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
