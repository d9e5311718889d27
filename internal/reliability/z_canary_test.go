package reliability

import (
	"net/http"
	"testing"

	"github.com/backflow-dev/backflow/internal/localhub"
)

// Case 15: the App's private key, the installation tokens and the webhook
// secret, raw and base64-encoded, appear nowhere in what backflow said
// during the whole suite: logs of every component, cycle reports and
// errors, pull request bodies and comments, and /metrics scrapes. This case
// runs last (its file sorts last) and runs a scenario of its own first, so
// that it has something to scan when run alone: signed and forged
// webhooks, a cycle that opens a pull request, a failing forge, and a
// scrape of the metrics.
func TestCase15CanarySecrets(t *testing.T) {
	s := newServerEnv(t, nil)
	s.src.set(replicas(usEastNode, 4, s.clock.Now()))
	for i, bad := range badSignatures {
		h := s.signed("canary-bad-" + string(rune('a'+i)))
		h.header = bad.header(s.secret.Reveal(), h.body)
		s.send(h)
	}
	if status := s.send(s.signed("canary-good")); status != http.StatusAccepted {
		t.Fatalf("status %d, want 202", status)
	}
	s.waitDelivery("canary-good")
	// Failures put errors into logs and reports: a forge that refuses.
	s.hub.Faults().Add(localhub.Fault{Kind: localhub.FaultStatus, Status: 500})
	s.send(s.signed("canary-failing"))
	s.waitDelivery("canary-failing")
	s.hub.Faults().Clear()
	s.capturePulls()
	metrics := s.metrics()
	if len(s.pulls(s.adapter, s.repo)) == 0 {
		t.Error("the scenario opened no pull request: nothing was scanned in one")
	}
	found, canaries, scanned := scanCapture([]byte(metrics))
	occurrences := 0
	for what, n := range found {
		occurrences += n
		t.Errorf("%s found %d times", what, n)
	}
	if canaries < 4 {
		t.Errorf("only %d canaries registered", canaries)
	}
	report(t, "15", "canary-secrets", "occurrences", occurrences, "canaries", canaries, "bytes_scanned", scanned)
}

// The scanner finds a secret planted raw or in any base64 form, so that
// case 15's zero means absence, not blindness.
func TestCanaryScannerFindsPlanted(t *testing.T) {
	secret := "whsec-planted-" + randomHex(t, 8)
	canaries := map[string]string{secret: "planted"}
	for _, form := range canaryForms(secret) {
		hay := [][]byte{[]byte(`{"level":"INFO","msg":"x","value":"` + form + `"}`)}
		if n := countCanaries(hay, canaries)["planted"]; n == 0 {
			t.Errorf("the form %q was not found", form)
		}
	}
	if n := countCanaries([][]byte{[]byte("nothing here")}, canaries)["planted"]; n != 0 {
		t.Errorf("found %d in a clean text", n)
	}
}
