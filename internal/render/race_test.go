//go:build race

package render

// raceEnabled says the tests run under the race detector, where the
// map search over the redis chart (about 190 renderings) takes minutes:
// make render runs it without.
const raceEnabled = true
