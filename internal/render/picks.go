package render

import (
	"encoding/base64"
	"strings"
	"text/template"
	"time"
)

// run names one of the two runs of a rendering. Helm's functions whose
// outcome is random or the clock's (randInt, randAlphaNum, uuidv4, now,
// ...) are replaced by fixed outcomes, a different one in each run, so
// that a field drawn from them renders the same in every cycle and
// differently between the two runs: two runs of the same values differ
// exactly where the output depends on chance, and they differ the same way
// every time, so the refusal of a nondeterministic chart does not itself
// come and go with the draw (a randInt 0 2 drawn twice agrees half the
// time). The cryptographic generators (genPrivateKey, genCA, htpasswd,
// encryptAES, ...) are left alone: they differ between any two runs.
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

// funcs are the replacements of the random and clock functions for run r.
func (r run) funcs() template.FuncMap {
	second := r == secondRun
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
	}
}
