package repoconfig

import (
	"fmt"
	"strings"
	"testing"
)

// BenchmarkFieldPatternManyStars matches ignoreFields patterns with several
// `**` against paths of growing length that they do not match (the worst
// case for backtracking): the time grows linearly in the path's length.
func BenchmarkFieldPatternManyStars(b *testing.B) {
	for _, stars := range []int{2, 10} {
		p, err := CompileFieldPattern(strings.Repeat("**.a.", stars) + "z")
		if err != nil {
			b.Fatal(err)
		}
		for _, n := range []int{40, 400, 4000} {
			path := strings.TrimSuffix(strings.Repeat("a.", n), ".")
			b.Run(fmt.Sprintf("stars=%d/segments=%d", stars, n), func(b *testing.B) {
				for range b.N {
					if p.Match(path) {
						b.Fatal("matched")
					}
				}
			})
		}
	}
}

func TestFieldPatternManyStarsMatches(t *testing.T) {
	// why: the linear matcher must still say yes where a path matches, and
	// no where it does not, with several `**`.
	p, err := CompileFieldPattern("**.a.**.b.**.c")
	if err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]bool{
		"a.b.c": true, "x.a.y.b.z.c": true, "a.a.b.b.c.c": true, "a.c.b": false, "c.b.a": false, "a.b.c.d": false,
	} {
		if got := p.Match(path); got != want {
			t.Errorf("%s: %v, want %v", path, got, want)
		}
	}
}
