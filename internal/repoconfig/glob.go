package repoconfig

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/backflow-dev/backflow/internal/observe"
	"github.com/backflow-dev/backflow/internal/policy"
	"github.com/backflow-dev/backflow/internal/yamlnode"
)

// Object-key globs are the policy's (policy.MatchKey): a key is split at `|`
// into apiVersion|Kind|namespace|name, and in each pattern segment `*`
// matches any run of characters within that segment, never a `|`.

// checkObjectPattern says why p cannot be an object-key glob.
func checkObjectPattern(p string) error {
	if msg := policy.ObjectPatternError(p); msg != "" {
		return errors.New(msg)
	}
	return nil
}

// objectsOverlap reports whether some object key matches both patterns.
// It is exact, not an approximation: keys have four independent segments,
// so the patterns overlap exactly when every pair of segments does, and two
// `*`-globs share a string exactly when globsIntersect says so.
func objectsOverlap(p, q string) bool {
	pk, perr := observe.ParseObjectPattern(p)
	qk, qerr := observe.ParseObjectPattern(q)
	return perr == nil && qerr == nil && segmentsOverlap(pk.Segments(), qk.Segments())
}

// segmentsOverlap is objectsOverlap on keys already split at `|`.
func segmentsOverlap(ps, qs []string) bool {
	if len(ps) != len(qs) {
		return false
	}
	for i := range ps {
		if !globsIntersect(ps[i], qs[i]) {
			return false
		}
	}
	return true
}

// globsIntersect decides whether some string matches both `*`-globs, by
// dynamic programming over positions (i in a, j in b): a star may match
// nothing, or absorb the other pattern's next character (or its star's
// expansion). Globs without stars, and globs whose fixed prefixes or
// suffixes already disagree, are decided without the table.
func globsIntersect(a, b string) bool {
	aStar, bStar := strings.IndexByte(a, '*'), strings.IndexByte(b, '*')
	switch {
	case aStar < 0 && bStar < 0:
		return a == b
	case aStar < 0:
		return policy.Glob(b, a)
	case bStar < 0:
		return policy.Glob(a, b)
	}
	if n := min(aStar, bStar); a[:n] != b[:n] {
		return false
	}
	aEnd, bEnd := len(a)-1-strings.LastIndexByte(a, '*'), len(b)-1-strings.LastIndexByte(b, '*')
	if n := min(aEnd, bEnd); a[len(a)-n:] != b[len(b)-n:] {
		return false
	}
	// seen[i][j]: 0 not visited, 1 in progress or false, 2 true.
	w := len(b) + 1
	seen := make([]byte, (len(a)+1)*w)
	var f func(i, j int) bool
	f = func(i, j int) bool {
		if i == len(a) && j == len(b) {
			return true
		}
		switch seen[i*w+j] {
		case 1:
			return false // a cycle adds no match
		case 2:
			return true
		}
		seen[i*w+j] = 1
		var r bool
		switch {
		case i < len(a) && a[i] == '*':
			r = f(i+1, j) || (j < len(b) && f(i, j+1))
		case j < len(b) && b[j] == '*':
			r = f(i, j+1) || (i < len(a) && f(i+1, j))
		case i < len(a) && j < len(b):
			r = a[i] == b[j] && f(i+1, j+1)
		}
		if r {
			seen[i*w+j] = 2
		}
		return r
	}
	return f(0, 0)
}

// FieldPattern is a compiled ignoreFields glob over Kubernetes field paths
// (Helm's --set syntax): `*` is one whole segment (a key or a list index),
// `**` any number of segments (none included), `[*]` any list index, and a
// `*` inside a key matches any run of characters of that key. `\` makes the
// next character literal.
type FieldPattern struct {
	raw  string
	segs []fieldSeg
}

type fieldSeg struct {
	any      bool     // `*`: one segment of any kind
	anyMany  bool     // `**`: zero or more segments
	index    bool     // a list index segment
	anyIndex bool     // `[*]`
	n        int      // the index, when index && !anyIndex
	parts    []string // a key, split at its unescaped stars
}

// String returns the pattern as written.
func (p FieldPattern) String() string { return p.raw }

// CompileFieldPattern reads an ignoreFields glob.
func CompileFieldPattern(s string) (FieldPattern, error) {
	p := FieldPattern{raw: s}
	if s == "" {
		return p, fmt.Errorf("empty pattern")
	}
	var parts []string
	var cur strings.Builder
	hasKey, escaped := false, false
	flush := func() error {
		if !hasKey {
			return nil
		}
		parts = append(parts, cur.String())
		seg := fieldSeg{parts: parts}
		switch {
		case len(parts) == 2 && parts[0] == "" && parts[1] == "" && !escaped:
			seg = fieldSeg{any: true}
		case len(parts) == 3 && parts[0] == "" && parts[1] == "" && parts[2] == "" && !escaped:
			seg = fieldSeg{anyMany: true}
		case len(parts) > 2 && containsEmptyMiddle(parts):
			return fmt.Errorf("pattern %q: `**` must be a whole segment", s)
		}
		p.segs = append(p.segs, seg)
		parts, hasKey, escaped = nil, false, false
		cur.Reset()
		return nil
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\\':
			if i+1 == len(s) {
				return p, fmt.Errorf("pattern %q: trailing backslash", s)
			}
			i++
			cur.WriteByte(s[i])
			hasKey, escaped = true, true
		case c == '*':
			parts = append(parts, cur.String())
			cur.Reset()
			hasKey = true
		case c == '.':
			if !hasKey && (i == 0 || s[i-1] != ']') {
				return p, fmt.Errorf("pattern %q: empty segment", s)
			}
			if err := flush(); err != nil {
				return p, err
			}
			if i+1 == len(s) {
				return p, fmt.Errorf("pattern %q: empty last segment", s)
			}
		case c == '[':
			if err := flush(); err != nil {
				return p, err
			}
			end := strings.IndexByte(s[i:], ']')
			if end < 0 {
				return p, fmt.Errorf("pattern %q: unclosed [", s)
			}
			inner := s[i+1 : i+end]
			if inner == "*" {
				p.segs = append(p.segs, fieldSeg{index: true, anyIndex: true})
			} else {
				n, err := strconv.Atoi(inner)
				if err != nil || n < 0 || strings.HasPrefix(inner, "+") {
					return p, fmt.Errorf("pattern %q: a list index is digits or *", s)
				}
				p.segs = append(p.segs, fieldSeg{index: true, n: n})
			}
			i += end
			if i+1 < len(s) && s[i+1] != '.' && s[i+1] != '[' {
				return p, fmt.Errorf("pattern %q: want . or [ after ]", s)
			}
		case c == ']':
			return p, fmt.Errorf("pattern %q: ] without [", s)
		default:
			cur.WriteByte(c)
			hasKey = true
		}
	}
	if err := flush(); err != nil {
		return p, err
	}
	return p, nil
}

func containsEmptyMiddle(parts []string) bool {
	for _, s := range parts[1 : len(parts)-1] {
		if s == "" {
			return true
		}
	}
	return false
}

// Match reports whether the field path matches. A path that does not parse
// matches nothing.
func (p FieldPattern) Match(path string) bool {
	segs, err := yamlnode.ParsePath(path)
	if err != nil {
		return false
	}
	return matchSegs(p.segs, segs)
}

// matchSegs matches a path against the pattern's segments with the
// project's one wildcard matcher: `**` is its star, every other segment
// matches one path segment. Linear in practice, never worse than
// len(pat)*len(path): several `**` on a long path cannot make it blow up.
func matchSegs(pat []fieldSeg, path []yamlnode.Segment) bool {
	return policy.GlobSeq(
		len(pat),
		len(path),
		func(p int) bool { return pat[p].anyMany },
		func(p, n int) bool { return segMatches(pat[p], path[n]) },
	)
}

func segMatches(s fieldSeg, x yamlnode.Segment) bool {
	switch {
	case s.any:
		return true
	case s.index:
		return x.IsIndex && (s.anyIndex || x.Index == s.n)
	}
	return !x.IsIndex && matchParts(s.parts, x.Key)
}

// matchParts matches a key against literal parts separated by stars.
func matchParts(parts []string, key string) bool {
	if len(parts) == 1 {
		return parts[0] == key
	}
	if !strings.HasPrefix(key, parts[0]) {
		return false
	}
	key = key[len(parts[0]):]
	last := parts[len(parts)-1]
	for _, mid := range parts[1 : len(parts)-1] {
		i := strings.Index(key, mid)
		if i < 0 {
			return false
		}
		key = key[i+len(mid):]
	}
	return strings.HasSuffix(key, last)
}

// ObjectsOverlap reports whether some object key matches both object-key
// globs p and q (apiVersion|Kind|namespace|name): exactly, segment by
// segment.
func ObjectsOverlap(p, q string) bool { return objectsOverlap(p, q) }
