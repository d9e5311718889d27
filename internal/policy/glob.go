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

// ObjectPatternError says why p is not a usable object-key pattern
// (apiVersion|kind|namespace|name, each segment a glob), or returns "".
func ObjectPatternError(p string) string {
	if msg := globError(p); msg != "" {
		return msg
	}
	if n := len(strings.Split(p, "|")); n != objectSegments {
		return "must be an object key apiVersion|kind|namespace|name (4 segments separated by |), got " + strconv.Itoa(n) + " segment(s)"
	}
	return ""
}

// MatchKey reports whether name matches the pattern segment by segment: both
// are split at `|`, must have as many segments, and each pattern segment is a
// glob for its segment, so a `*` never crosses a `|`. Environments are keys of
// one segment. It does not allocate: the planner asks it for every observed
// object.
func MatchKey(pattern, name string) bool {
	for {
		ps, prest, pmore := strings.Cut(pattern, "|")
		ns, nrest, nmore := strings.Cut(name, "|")
		if pmore != nmore || !Glob(ps, ns) {
			return false
		}
		if !pmore {
			return true
		}
		pattern, name = prest, nrest
	}
}

// Glob reports whether name matches pattern, where `*` matches any run of
// characters (possibly none) and every other character itself. It backtracks
// only to the last star, so it is linear in practice and never worse than
// len(pattern)*len(name), with no recursion.
func Glob(pattern, name string) bool {
	px, nx, starPx, starNx := 0, 0, -1, 0
	for nx < len(name) {
		switch {
		case px < len(pattern) && pattern[px] == '*':
			starPx, starNx = px, nx
			px++
		case px < len(pattern) && pattern[px] == name[nx]:
			px++
			nx++
		case starPx >= 0:
			starNx++
			px, nx = starPx+1, starNx
		default:
			return false
		}
	}
	for px < len(pattern) && pattern[px] == '*' {
		px++
	}
	return px == len(pattern)
}
