package values

import "testing"

// TestBlockScalarKeepsStyle: a literal or folded scalar edited to a value
// its style can hold keeps the style and its chomping indicator, so only
// the content lines change (the header too only when the final line
// breaks change); the shapes are the corpus's (descriptions, scripts,
// config snippets under a key, in a mapping and in a list item).
func TestBlockScalarKeepsStyle(t *testing.T) {
	for _, tc := range []struct {
		why, in, path string
		v             any
		want          string
	}{
		{"folded, clip, to one line with its final break", "a:\n  desc: >\n    one long\n    folded line\nb: 1\n", "a.desc", "short\n",
			"a:\n  desc: >\n    short\nb: 1\n"},
		{"folded, strip, to one line", "a:\n  desc: >-\n    one long\n    folded line\nb: 1\n", "a.desc", "short",
			"a:\n  desc: >-\n    short\nb: 1\n"},
		{"folded, keep, to one line with two final breaks", "a:\n  desc: >+\n    one\n\nb: 1\n", "a.desc", "two\n\n",
			"a:\n  desc: >+\n    two\n\nb: 1\n"},
		{"folded in a list item", "items:\n  - note: >\n      was here\n    id: 1\n", "items[0].note", "is here\n",
			"items:\n  - note: >\n      is here\n    id: 1\n"},
		{"folded to a value with an inner line break becomes literal: folding would read it as a space", "a: >\n  x\n", "a", "x\ny\n",
			"a: |\n  x\n  y\n"},
		{"literal, clip, several lines", "a:\n  script: |\n    echo 1\n    echo 2\nb: 1\n", "a.script", "echo 3\necho 4\n",
			"a:\n  script: |\n    echo 3\n    echo 4\nb: 1\n"},
		{"literal, strip, one line", "a:\n  script: |-\n    echo 1\nb: 1\n", "a.script", "echo 2",
			"a:\n  script: |-\n    echo 2\nb: 1\n"},
	} {
		out, _, err := Set([]byte(tc.in), []Edit{{Path: tc.path, Value: tc.v}}, Options{})
		if err != nil {
			t.Errorf("%s: %v", tc.why, err)
			continue
		}
		if string(out) != tc.want {
			t.Errorf("%s:\ngot\n%s\nwant\n%s", tc.why, out, tc.want)
		}
	}
}
