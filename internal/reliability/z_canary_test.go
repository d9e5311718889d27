package reliability

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/backflow-dev/backflow/internal/app"
	"github.com/backflow-dev/backflow/internal/confighub/confighubtest"
	"github.com/backflow-dev/backflow/internal/localhub"
)

// Case 15: the App's private key, the installation tokens, the webhook
// secret and the ConfigHub token, raw and base64-encoded, appear nowhere
// in what backflow said
// during the whole suite: logs of every component, cycle reports and
// errors, pull request bodies and comments, and /metrics scrapes. This case
// runs last (its file sorts last) and runs a scenario of its own first, so
// that it has something to scan when run alone: signed and forged
// webhooks, a cycle that opens a pull request, a failing forge, a round
// trip through ConfigHub, and a scrape of the metrics.
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
	refusal := confighubCanaries(t)
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
	if !canaryRegistered("confighub token") || !canaryRegistered("refused confighub token") || !refusal {
		t.Errorf("the ConfigHub tokens were not planted (refused token reported: %v)", refusal)
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

// confighubCanaries is case 15's ConfigHub scenario: the bot config's
// token, read from its file, carries a round trip through the stand-in
// (the Unit read, previewed in the pull request, a 503 reported, the
// revision written, the store logged as the bot logs a value), and a
// token ConfigHub refuses is reported by a restarted bot. It reports
// whether the refusal reached the cycle's report.
func confighubCanaries(t *testing.T) bool {
	t.Helper()
	r := newHubRound(t, confighubtest.Options{}, 5*time.Second, nil)
	r.proposeAndMerge()
	r.ch.Fail(confighubtest.OpUploadUnitData, 503, 2)
	r.cycle(r.b)
	r.cycle(r.b)
	if r.revisions() != 2 {
		t.Errorf("the ConfigHub scenario wrote %d revisions, want the revision after the first", r.revisions()-1)
	}
	if hr, ok := r.revs.(app.HubRevisions); ok {
		r.log.Info("confighub store", "client", hr.Store.Client, "store", hr.Store)
	}
	refused := "confighub-refused-canary-" + randomHex(t, 12)
	addCanary("refused confighub token", refused)
	r.revs = hubRevisions(t, r.url, refused, 5*time.Second)
	r.restart()
	r.clock.Advance(time.Minute)
	r.watch.set(replicas(usEastNode, 5, r.clock.Now()))
	rep := r.cycle(r.b)
	return strings.Contains(errorsOf(rep), "the token was refused")
}

// canaryRegistered reports whether a canary of what is registered.
func canaryRegistered(what string) bool {
	capture.mu.Lock()
	defer capture.mu.Unlock()
	for _, w := range capture.canaries {
		if w == what {
			return true
		}
	}
	return false
}
