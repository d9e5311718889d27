package policy

import (
	"strings"
	"testing"
	"time"
)

const breakGlass = `apiVersion: backflow.dev/v1alpha1
kind: ReverseReconcilePolicy
spec:
  default: deny
  rules:
    - role: platform-sre
      mayAccept:
        - valuePath: replica.replicaCount
          field: spec.replicas
          objects: ["apps/v1|StatefulSet|redis|redis-replicas"]
          environments: [prod-us-east]
          acceptFor: ACCEPT
`

func TestAcceptFor(t *testing.T) {
	for _, tc := range []struct {
		why, in string
		want    time.Duration
		err     string
	}{
		{"hours, as Go writes them", "8h", 8 * time.Hour, ""},
		{"hours and minutes", "2h30m", 150 * time.Minute, ""},
		{"days, which Go's syntax lacks", "3d", 72 * time.Hour, ""},
		{"days and hours", "1d12h", 36 * time.Hour, ""},
		{"a plain number has no unit", "8", 0, `spec.rules[0].mayAccept[0].acceptFor: "8" is not a duration`},
		{"units smallest first are refused", "30m2h", 0, "is not a duration"},
		{"fractions are refused", "1.5h", 0, "is not a duration"},
		{"zero accepts nothing", "0h", 0, "must be longer than zero"},
		{"beyond a year is permanent, not temporary", "400d", 0, "longer than the longest acceptance"},
	} {
		t.Run(tc.why, func(t *testing.T) {
			p, err := Parse("pol.yaml", []byte(strings.Replace(breakGlass, "ACCEPT", tc.in, 1)))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) ||
					!strings.HasPrefix(err.Error(), "pol.yaml: ") {
					t.Fatalf("err = %v, want one naming pol.yaml and %q", err, tc.err)
				}
				if p.Valid() {
					t.Fatal("a policy with a bad acceptFor must authorize nothing")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if a := p.Rules[0].MayAccept[0]; a.AcceptFor != tc.want || a.AcceptForText != tc.in {
				t.Fatalf("acceptFor = %v (%q), want %v", a.AcceptFor, a.AcceptForText, tc.want)
			}
		})
	}
}

func TestIntentDuration(t *testing.T) {
	for _, tc := range []struct {
		why, intent string
		want        time.Duration
		phrase      string
	}{
		{"until, at the end", "incident-fix: scale replicas until 2h", 2 * time.Hour, "until 2h"},
		{"for, followed by punctuation", "scale up for 90m, then review", 90 * time.Minute, "for 90m"},
		{"capitals and days", "Hold FOR 1d12h.", 36 * time.Hour, "FOR 1d12h"},
		{"in parentheses", "scale (for 2h30m)", 150 * time.Minute, "for 2h30m"},
		{"no ask", "incident-fix: scale replicas to absorb a load spike", 0, ""},
		{"words are not a duration", "scale for 3 hours", 0, ""},
		{"a word merely ending in for", "therefor 2h", 0, ""},
		{"a duration glued to text", "until 2hours", 0, ""},
		{"an unparseable ask is skipped for the next", "for 0h until 4h", 4 * time.Hour, "until 4h"},
	} {
		t.Run(tc.why, func(t *testing.T) {
			d, phrase, ok := IntentDuration(tc.intent)
			if ok != (tc.want != 0) || d != tc.want || phrase != tc.phrase {
				t.Fatalf("IntentDuration(%q) = %v %q %v, want %v %q", tc.intent, d, phrase, ok, tc.want, tc.phrase)
			}
		})
	}
}

func TestTermOf(t *testing.T) {
	p, err := Parse("pol.yaml", []byte(strings.Replace(breakGlass, "ACCEPT", "8h", 1)))
	if err != nil {
		t.Fatal(err)
	}
	m := []*Match{{Role: "platform-sre", Rule: 0, Accept: 0}}
	for _, tc := range []struct {
		why, intent string
		want        Term
	}{
		{"the entry's bound", "scale", Term{For: 8 * time.Hour, Entry: "spec.rules[0].mayAccept[0]", AcceptFor: "8h"}},
		{"an intent asking less", "scale until 2h",
			Term{For: 2 * time.Hour, Entry: "spec.rules[0].mayAccept[0]", AcceptFor: "8h", Asked: "until 2h"}},
		{"an intent asking more is bounded to the entry", "scale for 3d",
			Term{For: 8 * time.Hour, Entry: "spec.rules[0].mayAccept[0]", AcceptFor: "8h", Asked: "for 3d", Bounded: true}},
	} {
		t.Run(tc.why, func(t *testing.T) {
			got, ok := p.TermOf(m, tc.intent)
			if !ok || got != tc.want {
				t.Fatalf("TermOf = %+v %v, want %+v", got, ok, tc.want)
			}
		})
	}
	seed, err := Load(seedPolicy)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := seed.TermOf(m, "scale replicas"); ok {
		t.Error("the seed's entry sets no acceptFor: its acceptances are permanent")
	}
	if got, ok := seed.TermOf(m, "scale until 2h"); !ok || got.For != 2*time.Hour || got.AcceptFor != "" {
		t.Errorf("an ask under a permanent entry is honoured: %+v %v", got, ok)
	}
}
