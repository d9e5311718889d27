package values

import (
	"encoding/json"
	"math"
	"testing"
)

func TestParseScalar(t *testing.T) {
	cases := []struct {
		in   string
		want any
		why  string
	}{
		{"4", int64(4), "digits are an int"},
		{"-12", int64(-12), "a sign is part of an int"},
		{"4.5", 4.5, "a decimal point makes a float"},
		{"1e3", 1000.0, "an exponent makes a float"},
		{"0o17", int64(15), "core-schema octal"},
		{"0x1F", int64(31), "core-schema hex"},
		{"true", true, "core bool"},
		{"False", false, "core bool, capitalised"},
		{"yes", "yes", "YAML 1.1 bools are strings in 1.2"},
		{"0755", int64(755), "a leading zero is still decimal in 1.2"},
		{"null", nil, "null"},
		{"~", nil, "tilde is null"},
		{"", "", "an empty argument is an empty string"},
		{`"4"`, "4", "double quotes make a string"},
		{`'yes'`, "yes", "single quotes make a string"},
		{`"a\tb"`, "a\tb", "double-quoted escapes are read"},
		{"redis:7.2", "redis:7.2", "anything else is a string"},
		{"99999999999999999999", 1e20, "an int beyond int64 is a float"},
	}
	for _, c := range cases {
		got, err := ParseScalar(c.in)
		if err != nil {
			t.Errorf("%q (%s): %v", c.in, c.why, err)
			continue
		}
		if !Equal(got, c.want) || (got == nil) != (c.want == nil) {
			t.Errorf("%q (%s): got %#v, want %#v", c.in, c.why, got, c.want)
		}
		if _, isStr := c.want.(string); isStr {
			if _, ok := got.(string); !ok {
				t.Errorf("%q (%s): got %T, want string", c.in, c.why, got)
			}
		}
	}
	if v, _ := ParseScalar(".nan"); !math.IsNaN(v.(float64)) {
		t.Errorf(".nan: got %v", v)
	}
	broken := []struct{ in, why string }{
		{`"unterminated\"`, "the last quote is escaped"},
		{`'a'b'`, "text after the closing quote is not one quoted scalar"},
		{`"a"b"`, "text after the closing quote is not one quoted scalar"},
		{`"a" #"`, "a comment after the closing quote would drop the rest"},
		{`'a' 'b'`, "two quoted scalars are not one"},
		{"\"a\"\n\"b\"", "a second line after the closing quote"},
	}
	for _, c := range broken {
		if v, err := ParseScalar(c.in); err == nil {
			t.Errorf("%q (%s): got %#v, want an error", c.in, c.why, v)
		}
	}
}

func TestEqual(t *testing.T) {
	cases := []struct {
		a, b any
		want bool
		why  string
	}{
		{4, 4.0, true, "numbers compare by value"},
		{int64(4), json.Number("4"), true, "every decoder's number type"},
		{4, "4", false, "a string never equals a number"},
		{"4", 4, false, "symmetric"},
		{nil, nil, true, "null equals null"},
		{nil, "", false, "null is not the empty string"},
		{true, "true", false, "a bool is not a string"},
		{map[string]any{"a": 1}, map[string]any{"a": 1.0}, true, "maps deeply, numbers by value"},
		{[]any{1, "x"}, []any{1, "x"}, true, "lists element by element"},
		{[]any{1}, []any{1, 2}, false, "lists of different length"},
		{int64(1 << 60), int64(1<<60 + 1), false, "large integers compare exactly"},
	}
	for _, c := range cases {
		if got := Equal(c.a, c.b); got != c.want {
			t.Errorf("Equal(%#v, %#v) = %v, want %v (%s)", c.a, c.b, got, c.want, c.why)
		}
	}
}

func TestConvertLike(t *testing.T) {
	cases := []struct {
		s    string
		like any
		want any
		why  string
	}{
		{"4", 3, int64(4), "an int in the values file makes the live text an int"},
		{"4", "3", "4", "a string in the values file keeps the live text a string"},
		{"true", false, true, "a bool stays a bool"},
		{"abc", 3, "abc", "text that is not a number stays text"},
		{"4", nil, int64(4), "no value there: read as --value"},
	}
	for _, c := range cases {
		if got := ConvertLike(c.s, c.like); !Equal(got, c.want) {
			t.Errorf("ConvertLike(%q, %#v) = %#v, want %#v (%s)", c.s, c.like, got, c.want, c.why)
		}
	}
}

func TestFormat(t *testing.T) {
	cases := map[any]string{
		4:          "4",
		4.5:        "4.5",
		"redis":    "redis",
		"4":        `"4"`,
		"yes":      "yes",
		"":         `""`,
		true:       "true",
		nil:        "null",
		"a: b":     `"a: b"`,
		float64(3): "3",
	}
	for in, want := range cases {
		if got := Format(in); got != want {
			t.Errorf("Format(%#v) = %q, want %q", in, got, want)
		}
	}
}
