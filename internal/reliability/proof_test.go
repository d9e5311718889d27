package reliability

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/backflow-dev/backflow/internal/app"
	"github.com/backflow-dev/backflow/internal/bot"
	"github.com/backflow-dev/backflow/internal/forge"
	"github.com/backflow-dev/backflow/internal/lifecycle"
	"github.com/backflow-dev/backflow/internal/observe"
)

// Case 24: a proof needs the receipt's trust. A change accepted on
// audit-log attribution (the kubernetes watch) merges; after the grace
// period, a file source trusted at asserted says the live value is the
// accepted one, and then that it is another: neither proves nor reverts
// the merged write-back, and the follow-up says why. The watch's own
// observation then proves it.
func TestCase24ProofNeedsTheReceiptsTrust(t *testing.T) {
	e := newHubEnv(t, gitopsFiles(t))
	a := e.adapter(nil)
	watch := &staticSource{}
	dir := t.TempDir()
	doc := filepath.Join(dir, "observed.yaml")
	file := &app.PathSource{Cluster: usEastNode, Path: doc, Ceiling: observe.AttributionAsserted}
	b, err := bot.New(bot.Options{Forge: a, Sources: []bot.Source{watch, file}, Now: e.clock.Now, Logger: e.log, BotUserID: 4242,
		CommitMethod: forge.CommitGit, CommitKey: []byte("reliability commit key"), Renderer: app.Renderer})
	if err != nil {
		t.Fatal(err)
	}
	writeDoc := func(live int) {
		t.Helper()
		// The document claims the audit log; its source is believed no
		// higher than asserted, and so is what it says is live.
		d := strings.Replace(claimDoc(e.clock.Now(), "alice", "[sre]", ""), "live: 5", fmt.Sprintf("live: %d", live), 1)
		if err := os.WriteFile(doc, []byte(d), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	writeDoc(3) // at desired: no change from the file yet
	watch.set(replicas(usEastNode, 4, e.clock.Now()))
	e.cycle(b)
	prs := e.pulls(a, e.repo)
	if len(prs) != 1 || !prs[0].Merged {
		t.Fatalf("the audit-logged change was not merged: %+v", prs)
	}
	results := func() (proven, reverted int) {
		for _, pr := range e.pulls(a, e.repo) {
			if slices.Contains(pr.Labels, lifecycle.LabelProven) {
				proven++
			}
			if slices.Contains(pr.Labels, lifecycle.LabelReverted) {
				reverted++
			}
		}
		return proven, reverted
	}
	// Past the grace period, only the asserted file observes the object.
	lowProofs, lowReverts, waitsNamingTrust := 0, 0, 0
	watch.set()
	for _, live := range []int{4, 3} {
		e.clock.Advance(15 * time.Minute)
		writeDoc(live)
		rep := e.cycle(b)
		p, r := results()
		lowProofs, lowReverts = lowProofs+p, lowReverts+r
		for _, rr := range rep.Repos {
			for _, act := range rr.Actions {
				if strings.Contains(act.Detail, "only by sources trusted below audit-log") {
					waitsNamingTrust++
				}
			}
		}
	}
	if lowProofs+lowReverts > 0 {
		t.Errorf("an asserted source decided the follow-up of an audit-log receipt: %d proven, %d reverted", lowProofs, lowReverts)
	}
	if waitsNamingTrust != 2 {
		t.Errorf("the follow-up said %d times that it waits for the receipt's trust, want 2", waitsNamingTrust)
	}
	// The watch, trusted at audit-log, proves it.
	e.clock.Advance(time.Minute)
	writeDoc(3)
	watch.set(replicas(usEastNode, 4, e.clock.Now()))
	e.cycle(b)
	proven, _ := results()
	if proven != 1 {
		t.Errorf("the watch's observation proved %d write-backs, want 1", proven)
	}
	report(t, "24", "proof-needs-the-receipts-trust", "proofs_from_lower_trust", lowProofs, "reverts_from_lower_trust", lowReverts,
		"waits_naming_the_trust", waitsNamingTrust, "proofs_at_the_receipts_trust", proven)
}
