package policy

import (
	"errors"
	"strconv"
	"strings"

	"github.com/backflow-dev/backflow/internal/observe"
)

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
	var shape *observe.ObjectKeyShapeError
	if _, err := observe.ParseObjectPattern(p); errors.As(err, &shape) {
		return "must be an object key apiVersion|kind|namespace|name (4 segments separated by |), got " +
			strconv.Itoa(shape.Segments) + " segment(s)"
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
// characters (possibly none) and every other character itself (GlobSeq
// over bytes).
func Glob(pattern, name string) bool {
	return GlobSeq(
		len(pattern),
		len(name),
		func(p int) bool { return pattern[p] == '*' },
		func(p, n int) bool { return pattern[p] == name[n] },
	)
}

// GlobSeq is the project's one wildcard matcher, over any sequences: a
// pattern of np elements, each a star (star(p): any run of the name's
// elements, possibly none) or one that matches exactly one name element
// (match(p, n)), against a name of nn elements. It backtracks only to the
// last star, so it is linear in practice and never worse than np*nn steps,
// with no recursion: hostile names and patterns cannot make it blow up.
// Object-key segments, environments and ignoreFields' `**` all use it.
func GlobSeq(np, nn int, star func(p int) bool, match func(p, n int) bool) bool {
	px, nx, starPx, starNx := 0, 0, -1, 0
	for nx < nn {
		switch {
		case px < np && star(px):
			starPx, starNx = px, nx
			px++
		case px < np && match(px, nx):
			px++
			nx++
		case starPx >= 0:
			starNx++
			px, nx = starPx+1, starNx
		default:
			return false
		}
	}
	for px < np && star(px) {
		px++
	}
	return px == np
}
