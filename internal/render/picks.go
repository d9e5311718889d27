package render

import (
	"encoding/base64"
	"maps"
	"reflect"
	"slices"
	"strings"
	"text/template"
	"time"

	"github.com/Masterminds/sprig/v3"
)

// run names one of the two runs of a rendering. Helm's functions whose
// outcome is random or the clock's (randInt, randAlphaNum, uuidv4, now,
// ...) are replaced by fixed outcomes, a different one in each run, so
// that a field drawn from them renders the same in every cycle and
// differently between the two runs: two runs of the same values differ
// exactly where the output depends on chance, and they differ the same way
// every time, so the refusal of a nondeterministic chart does not itself
// come and go with the draw (a randInt 0 2 drawn twice agrees half the
// time). keys and values list a mapping in Go's random order: here in
// ascending key order in the first run, descending in the second. The
// cryptographic generators (genPrivateKey, genCA, htpasswd, encryptAES,
// ...) and ago (the clock's) are Helm's own: they differ between any two
// runs.
//
// Every one of these notes that it was called: a first run that called
// none renders the same in any run, so the second is not needed.
type run int

const (
	firstRun run = iota
	secondRun
)

// The clocks of the two runs differ in every component a date format shows.
var runClock = [2]time.Time{
	time.Date(2001, 2, 3, 4, 5, 6, 7, time.UTC),
	time.Date(2012, 11, 10, 9, 8, 7, 654321098, time.UTC),
}

// drawing are Helm's (sprig's) functions whose outcome is chance or the
// clock that run keeps as they are, only noting that they were called.
var drawing = []string{"ago", "bcrypt", "htpasswd", "encryptAES", "genPrivateKey", "genCA", "genCAWithKey",
	"genSelfSignedCert", "genSelfSignedCertWithKey", "genSignedCert", "genSignedCertWithKey"}

// funcs are the replacements of the random and clock functions for run r;
// *drew is set when one is called.
func (r run) funcs(drew *bool) template.FuncMap {
	out := r.picks()
	sprigs := sprig.TxtFuncMap()
	for _, name := range drawing {
		out[name] = sprigs[name]
	}
	for name, fn := range out {
		out[name] = noting(fn, drew)
	}
	return out
}

// noting wraps fn so that calling it sets *drew.
func noting(fn any, drew *bool) any {
	v := reflect.ValueOf(fn)
	return reflect.MakeFunc(v.Type(), func(args []reflect.Value) []reflect.Value {
		*drew = true
		if v.Type().IsVariadic() {
			return v.CallSlice(args)
		}
		return v.Call(args)
	}).Interface()
}

// picks are run r's fixed outcomes of the random, clock and map-order
// functions.
func (r run) picks() template.FuncMap {
	second := r == secondRun
	ordered := func(m map[string]any) []string {
		ks := slices.Sorted(maps.Keys(m))
		if second {
			slices.Reverse(ks)
		}
		return ks
	}
	repeat := func(first, last string) func(n int) string {
		return func(n int) string {
			if second {
				return strings.Repeat(last, max(n, 0))
			}
			return strings.Repeat(first, max(n, 0))
		}
	}
	return template.FuncMap{
		"randInt": func(lo, hi int) int {
			if second && hi-lo >= 2 {
				return hi - 1
			}
			return lo
		},
		"randAlphaNum": repeat("a", "9"),
		"randAlpha":    repeat("a", "z"),
		"randNumeric":  repeat("0", "9"),
		"randAscii":    repeat("!", "~"),
		"randBytes": func(n int) (string, error) {
			b := make([]byte, max(n, 0))
			if second {
				for i := range b {
					b[i] = 0xff
				}
			}
			return base64.StdEncoding.EncodeToString(b), nil
		},
		"uuidv4": func() string {
			if second {
				return "ffffffff-ffff-4fff-bfff-ffffffffffff"
			}
			return "00000000-0000-4000-8000-000000000000"
		},
		"shuffle": func(s string) string {
			if !second {
				return s
			}
			rs := []rune(s)
			for i, j := 0, len(rs)-1; i < j; i, j = i+1, j-1 {
				rs[i], rs[j] = rs[j], rs[i]
			}
			return string(rs)
		},
		"now": func() time.Time { return runClock[r] },
		"keys": func(dicts ...map[string]any) []string {
			out := []string{}
			for _, d := range dicts {
				out = append(out, ordered(d)...)
			}
			return out
		},
		"values": func(dict map[string]any) []any {
			out := []any{}
			for _, k := range ordered(dict) {
				out = append(out, dict[k])
			}
			return out
		},
	}
}
