package receipt

import (
	"slices"
	"strings"
	"testing"
)

// TestVerifyExpiry holds receipts to the break-glass rules: an entry's
// acceptFor (and an intent's shorter ask) bounds expiresAt after the
// write-back; a receipt restoring an expired acceptance names it.
func TestVerifyExpiry(t *testing.T) {
	seed := readFile(t, seedReceiptPath)
	glass := loadPolicy(t, "testdata/break-glass-policy.yaml")
	expiry := func(at, extra string) string {
		section := "  expiry:\n    expiresAt: \"" + at + "\"\n    setBy: spec.rules[0].mayAccept[0]\n    acceptFor: 8h\n"
		return edit(t, seed, "  roundTrip:\n", section+extra+"  roundTrip:\n")
	}
	asks := func(doc, ask string) string {
		const intent = `"incident-fix: scale replicas to absorb a load spike`
		return strings.ReplaceAll(doc, intent+`"`, intent+" "+ask+`"`)
	}
	const expiredReceipt = ".backflow/receipts/prod-us-east/redis/redis_StatefulSet.apps.v1_redis-replicas.yaml"
	revert := edit(t, seed, `    at: "2026-06-18T12:00:00Z"`+"\n", `    at: "2026-06-18T20:00:05Z"
    expired:
      receipt: `+expiredReceipt+`
      name: redis-prod-us-east-replica-incident
      expiresAt: "2026-06-18T20:00:05Z"
      setBy: spec.rules[0].mayAccept[0]
`, `when: "2026-06-18T12:00:05Z"`, `when: "2026-06-18T20:00:05Z"`)
	full := expiry("2026-06-18T20:00:05Z", "")
	for _, tc := range []struct {
		why  string
		doc  string
		want []string
	}{
		{"the entry's full term", full, nil},
		{"an earlier expiry is within the bound", expiry("2026-06-18T14:00:05Z", ""), nil},
		{"an entry with acceptFor needs an expiry", seed, []string{"expiry"}},
		{"beyond the entry's term", expiry("2026-06-18T20:00:06Z", ""), []string{"expiry.expiresAt"}},
		{"not after the write-back", expiry("2026-06-18T12:00:05Z", ""), []string{"expiry.expiresAt"}},
		{"not a time", expiry("tomorrow", ""), []string{"expiry.expiresAt"}},
		{"another entry", strings.Replace(full, "setBy: spec.rules[0]", "setBy: spec.rules[1]", 1),
			[]string{"expiry.setBy"}},
		{"the intent's ask bounds it",
			asks(expiry("2026-06-18T14:00:05Z", "    requested: until 2h\n"), "until 2h"), nil},
		{"beyond the intent's ask",
			asks(expiry("2026-06-18T14:00:06Z", "    requested: until 2h\n"), "until 2h"), []string{"expiry.expiresAt"}},
		{"the ask unrecorded", asks(expiry("2026-06-18T14:00:05Z", ""), "until 2h"), []string{"expiry.requested"}},
		{"an ask beyond the entry is bounded to it",
			asks(expiry("2026-06-18T20:00:05Z", "    requested: for 3d\n    bounded: true\n"), "for 3d"), nil},
		{"an ask beyond the entry, not said to be bounded",
			asks(expiry("2026-06-18T20:00:05Z", "    requested: for 3d\n"), "for 3d"), []string{"expiry.requested"}},
		{"a restoring receipt", revert, nil},
		{"a restoring receipt made before the expiry",
			edit(t, revert, `when: "2026-06-18T20:00:05Z"`, `when: "2026-06-18T20:00:04Z"`),
			[]string{"trigger.expired.expiresAt"}},
		{"a restoring receipt naming no receipt",
			edit(t, revert, "      receipt: "+expiredReceipt+"\n", ""), []string{"trigger.expired.receipt"}},
	} {
		t.Run(tc.why, func(t *testing.T) {
			got := paths(verifyText(t, tc.doc, glass, seedPolicyRef))
			if !slices.Equal(got, tc.want) {
				t.Fatalf("violations at %v, want %v: %v", got, tc.want, verifyText(t, tc.doc, glass, seedPolicyRef))
			}
		})
	}
	// Under the seed's policy, whose entry sets no acceptFor, the seed's
	// receipt verifies as it always has, and an expiry is within the
	// entry's bound (for good) when an authorizing entry sets it, it ends
	// after the write-back and it claims no acceptFor.
	seedPol := loadPolicy(t, seedPolicyPath)
	permanent := func(at, setBy string) string {
		return edit(t, seed, "  roundTrip:\n", "  expiry:\n    expiresAt: \""+at+"\"\n    setBy: "+setBy+"\n  roundTrip:\n")
	}
	for _, tc := range []struct {
		why  string
		doc  string
		want []string
	}{
		{"the seed's receipt", seed, nil},
		{"an expiry under a permanent entry", permanent("2026-06-18T20:00:05Z", "spec.rules[0].mayAccept[0]"), nil},
		{"set by no authorizing entry", permanent("2026-06-18T20:00:05Z", "spec.rules[1].mayAccept[0]"),
			[]string{"expiry.setBy"}},
		{"not after the write-back", permanent("2026-06-18T12:00:05Z", "spec.rules[0].mayAccept[0]"),
			[]string{"expiry.expiresAt"}},
		{"claiming an acceptFor the entry does not set", full, []string{"expiry.acceptFor"}},
	} {
		t.Run("seed policy: "+tc.why, func(t *testing.T) {
			if got := paths(verifyText(t, tc.doc, seedPol, seedPolicyRef)); !slices.Equal(got, tc.want) {
				t.Fatalf("violations at %v, want %v", got, tc.want)
			}
		})
	}
}

func TestTableShowsExpiry(t *testing.T) {
	seed := readFile(t, seedReceiptPath)
	doc := edit(
		t,
		seed,
		"  roundTrip:\n",
		"  expiry:\n    expiresAt: \"2026-06-18T20:00:05Z\"\n    setBy: spec.rules[0].mayAccept[0]\n  roundTrip:\n",
	)
	r, _, err := Parse("r.yaml", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	want := "| `redis-prod-us-east-replica-incident` | bitnami/redis@25.5.3 | prod-us-east | `replica.replicaCount: 3 " +
		"-> 4` (until 2026-06-18T20:00:05Z) | allow | yes | closed | design-example |\n"
	if got := TableRow(r); got != want {
		t.Fatalf("row\n%s\nwant\n%s", got, want)
	}
}

// TestVerifyCarried holds a receipt's carried acceptances to their rules:
// each names its receipt, role and entry, expires at a time, and has
// fields the receipt does not change again (those are superseded).
func TestVerifyCarried(t *testing.T) {
	seed := readFile(t, seedReceiptPath)
	seedPol := loadPolicy(t, seedPolicyPath)
	carried := func(field, at, setBy string) string {
		return edit(t, seed, "  roundTrip:\n", `  carried:
    - name: redis-prod-us-east-replica-image
      actor: alice
      role: platform-sre
      intent: 'incident-fix: pin the image until 8h'
      expiry:
        expiresAt: "`+at+`"
        setBy: `+setBy+`
      changedFields:
        - object: "apps/v1|StatefulSet|redis|redis-replicas"
          field: `+field+`
          valuePath: replica.image.tag
          from: "7.2"
          to: "7.2.4"
  roundTrip:
`)
	}
	const image = "spec.template.spec.containers[0].image"
	for _, tc := range []struct {
		why  string
		doc  string
		want []string
	}{
		{"another field's acceptance, carried", carried(image, "2026-06-18T20:00:05Z", "spec.rules[0].mayAccept[0]"), nil},
		{"the field this receipt changes again is superseded, not carried",
			carried("spec.replicas", "2026-06-18T20:00:05Z", "spec.rules[0].mayAccept[0]"),
			[]string{"carried[0].changedFields[0]"}},
		{"no entry named", carried(image, "2026-06-18T20:00:05Z", `""`), []string{"carried[0].expiry.setBy"}},
		{"not a time", carried(image, "tomorrow", "spec.rules[0].mayAccept[0]"), []string{"carried[0].expiry.expiresAt"}},
	} {
		t.Run(tc.why, func(t *testing.T) {
			if got := paths(verifyText(t, tc.doc, seedPol, seedPolicyRef)); !slices.Equal(got, tc.want) {
				t.Fatalf("violations at %v, want %v", got, tc.want)
			}
		})
	}
	// Written and read back whole: the acceptance is still there to restore.
	r, _, err := Parse("r.yaml", []byte(carried(image, "2026-06-18T20:00:05Z", "spec.rules[0].mayAccept[0]")))
	if err != nil {
		t.Fatal(err)
	}
	data, err := Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	back, _, err := Parse("r.yaml", data)
	if err != nil || len(back.Spec.Carried) != 1 || back.Spec.Carried[0].Expiry.ExpiresAt != "2026-06-18T20:00:05Z" ||
		len(back.Spec.Carried[0].ChangedFields) != 1 || back.Spec.Carried[0].ChangedFields[0].Field != image {
		t.Fatalf("read back %+v (%v) from\n%s", back, err, data)
	}
	if row := TableRow(back); !strings.Contains(row, "(carries: `redis-prod-us-east-replica-image` until 2026-06-18T20:00:05Z)") {
		t.Errorf("the table does not say the carried acceptance: %s", row)
	}
}
