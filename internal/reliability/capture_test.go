package reliability

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"log/slog"
	"sync"
)

// The capture holds everything the suite's code under test said: every log
// line (hub, adapters, bots, servers), every cycle report and error, pull
// request bodies and comments, and metrics scrapes. The canary case looks
// in it for the secrets registered while the suite ran.
var capture struct {
	mu       sync.Mutex
	buf      bytes.Buffer
	canaries map[string]string // value -> what it is
}

// maxCapture bounds the capture; beyond it the oldest half is dropped, and
// the canary case reports how much it scanned.
const maxCapture = 64 << 20

type captureWriter struct{}

func (captureWriter) Write(p []byte) (int, error) {
	capture.mu.Lock()
	defer capture.mu.Unlock()
	if capture.buf.Len()+len(p) > maxCapture {
		rest := capture.buf.Bytes()[capture.buf.Len()/2:]
		capture.buf = *bytes.NewBuffer(append([]byte(nil), rest...))
	}
	return capture.buf.Write(p)
}

// captureLogger logs JSON lines at debug level into the capture.
func captureLogger() *slog.Logger {
	return slog.New(slog.NewJSONHandler(captureWriter{}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// captureText adds a text (a report, an error, a body) to the capture.
func captureText(s string) {
	_, _ = captureWriter{}.Write([]byte(s + "\n"))
}

// addCanary registers a secret; it is searched raw and base64-encoded.
func addCanary(what, value string) {
	if len(value) < 8 {
		return // too short to search for without false hits
	}
	capture.mu.Lock()
	defer capture.mu.Unlock()
	if capture.canaries == nil {
		capture.canaries = map[string]string{}
	}
	capture.canaries[value] = what
}

// canaryForms are the ways a secret could appear: raw, and base64 in its
// standard and URL alphabets, padded or not.
func canaryForms(v string) []string {
	b := []byte(v)
	return []string{v, base64.StdEncoding.EncodeToString(b), base64.RawStdEncoding.EncodeToString(b),
		base64.URLEncoding.EncodeToString(b), base64.RawURLEncoding.EncodeToString(b)}
}

// scanCapture counts the occurrences of every registered canary form in
// the capture and in extra, by what the canary is.
func scanCapture(extra ...[]byte) (found map[string]int, canaries, scanned int) {
	capture.mu.Lock()
	defer capture.mu.Unlock()
	hay := append([][]byte{capture.buf.Bytes()}, extra...)
	for _, h := range hay {
		scanned += len(h)
	}
	return countCanaries(hay, capture.canaries), len(capture.canaries), scanned
}

// countCanaries counts every form of every canary in hay, by what it is.
func countCanaries(hay [][]byte, canaries map[string]string) map[string]int {
	found := map[string]int{}
	for v, what := range canaries {
		for _, form := range canaryForms(v) {
			for _, h := range hay {
				if n := bytes.Count(h, []byte(form)); n > 0 {
					found[what] += n
				}
			}
		}
	}
	return found
}

// randomHex returns n random bytes in hex, for canaries that differ per run.
func randomHex(t interface{ Fatal(...any) }, n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}
