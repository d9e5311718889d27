package values

import (
	"math"
	"testing"
)

// TestCertainTokensParseBack: every token the render takes without parsing
// (booleans, canonical decimal integers) parses back as its value with both
// readers in every layout, and a token that merely looks close (a sign, a
// leading zero, YAML 1.1's yes, a float, an integer past 2^53) is parsed.
func TestCertainTokensParseBack(t *testing.T) {
	ctxs := []renderCtx{{}, {parentIndent: 4}, {flow: true}, {flow: true, parentIndent: 2}}
	cases := []struct {
		inline  string
		want    any
		certain bool
	}{
		{"true", true, true},
		{"false", false, true},
		{"0", int64(0), true},
		{"7", 7, true},
		{"-7", int64(-7), true},
		{"9094", int64(9094), true},
		{"9007199254740991", int64(1<<53 - 1), true},
		{"-9007199254740991", int64(-(1<<53 - 1)), true},
		{"9007199254740993", int64(1<<53 + 1), false},
		{"9223372036854775807", int64(math.MaxInt64), false},
		{"+7", int64(7), false},
		{"07", int64(7), false},
		{"1_000", int64(1000), false},
		{"yes", true, false},
		{"True", true, false},
		{"4", "4", false},
		{"4.0", 4.0, false},
	}
	for _, c := range cases {
		tok := token{inline: c.inline}
		if got := certain(tok, c.want); got != c.certain {
			t.Errorf("certain(%q, %#v) = %v, want %v", c.inline, c.want, got, c.certain)
		}
		if !c.certain {
			continue
		}
		for _, ctx := range ctxs {
			if !parsesBack(tok, c.want, ctx) {
				t.Errorf("%q taken as %#v without parsing, but %+v does not read it back so", c.inline, c.want, ctx)
			}
		}
	}
	if certain(token{inline: "|", body: "\n  7"}, int64(7)) {
		t.Error("a block scalar is never certain")
	}
}
