package policy

import (
	"strconv"
	"strings"
)

// objectSegments is the number of `|`-separated segments of an object key:
// apiVersion|kind|namespace|name (the namespace is empty for cluster-scoped
// objects).
const objectSegments = 4

// globError says why p is not a usable glob, or returns "".
func globError(p string) string {
	switch {
	case p == "":
		return "must not be empty"
	case strings.Contains(p, "**"):
		return "`**` is not a glob here: `*` matches any run of characters within one segment"
	case strings.TrimSpace(p) != p:
		return "must not begin or end with white space"
	}
	return ""
}

// objectPatternError says why p is not a usable object pattern, or returns "".
func objectPatternError(p string) string {
	if msg := globError(p); msg != "" {
		return msg
	}
	if n := len(strings.Split(p, "|")); n != objectSegments {
		return "must be an object key apiVersion|kind|namespace|name (4 segments separated by |), got " + strconv.Itoa(n) + " segment(s)"
	}
	return ""
}

// matchKey reports whether name matches the pattern segment by segment: both
// are split at `|`, must have as many segments, and each pattern segment is a
// glob for its segment, so a `*` never crosses a `|`.
func matchKey(pattern, name string) bool {
	if !strings.Contains(pattern, "*") {
		return pattern == name
	}
	ps, ns := strings.Split(pattern, "|"), strings.Split(name, "|")
	if len(ps) != len(ns) {
		return false
	}
	for i := range ps {
		if !glob(ps[i], ns[i]) {
			return false
		}
	}
	return true
}

// glob reports whether name matches pattern, where `*` matches any run of
// characters (possibly none) and every other character itself. It runs in
// O(len(pattern)*len(name)) at worst, with no recursion.
func glob(pattern, name string) bool {
	px, nx := 0, 0
	nextPx, nextNx := 0, 0
	for px < len(pattern) || nx < len(name) {
		if px < len(pattern) {
			c := pattern[px]
			if c == '*' {
				// Try matching nothing first; on mismatch, come back and let
				// the star swallow one more character of name.
				nextPx, nextNx = px, nx+1
				px++
				continue
			}
			if nx < len(name) && name[nx] == c {
				px++
				nx++
				continue
			}
		}
		if 0 < nextNx && nextNx <= len(name) {
			px, nx = nextPx, nextNx
			continue
		}
		return false
	}
	return true
}
