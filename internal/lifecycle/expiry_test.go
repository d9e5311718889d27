package lifecycle

import (
	"github.com/backflow-dev/backflow/internal/forge"
	"maps"
	"regexp"
	"strings"
	"testing"
	"time"
)

// breakGlass edits the default branch's files as the scenario's break
// glass left them: the entry's acceptFor, alice's accepted 3 -> 4 merged
// with its receipt, the restoring write-back merged, and a person's value
// (Values) written over the accepted one.
func (s scenario) breakGlass(t *testing.T, f map[string]string) {
	t.Helper()
	if s.AcceptFor != "" {
		f[policyPath] = strings.Replace(
			f[policyPath],
			"          autoMerge: true\n",
			"          autoMerge: true\n          acceptFor: "+s.AcceptFor+"\n",
			1,
		)
	}
	if s.Accepted == "" {
		return
	}
	merge := func(in *Input) {
		for _, wb := range in.Result.WriteBacks {
			for _, file := range append(wb.Files, wb.Receipts...) {
				f[file.Path] = string(file.Data)
			}
		}
	}
	at := duration(t, s.Accepted)
	policy := f[policyPath]
	keep := func(files map[string]string) { files[policyPath] = policy }
	// Planned as the cycle after alice's change planned it then.
	merge(inputAt(t, keep, t0.Add(at+5*time.Minute), replicas(4, "kubectl", at)))
	if s.Restored {
		accepted := maps.Clone(f)
		merge(inputAt(t, func(files map[string]string) { maps.Copy(files, accepted) }, t0.Add(5*time.Minute)))
	}
	if s.Values != "" {
		f[valuesEast] = regexp.MustCompile(`replicaCount: .*`).
			ReplaceAllString(f[valuesEast], "replicaCount: "+s.Values+" # bob raised it for the launch")
	}
}

// restoring is the plan of the cycle that found the scenario's
// acceptance expired: its one write-back restores it.
func (s scenario) restoring(t *testing.T) *Input {
	t.Helper()
	past := s
	past.Restored, past.Values = false, ""
	return inputAt(t, past.files(t), t0.Add(5*time.Minute))
}

// files edits the test repository's files as the scenario says.
func (s scenario) files(t *testing.T) func(map[string]string) {
	return func(f map[string]string) {
		s.mutate(f)
		s.breakGlass(t, f)
		if s.PermanentNow {
			f[policyPath] = strings.Replace(f[policyPath], "          acceptFor: "+s.AcceptFor+"\n", "", 1)
		}
	}
}

// TestBreakGlassPullRequestSaysExpiry: the acceptance's pull request says
// when it ends, and the restoring one what it restores, where a reviewer
// reads them.
func TestBreakGlassPullRequestSaysExpiry(t *testing.T) {
	s := scenario{
		AcceptFor:    "8h",
		Intent:       "incident-fix: scale replicas until 2h",
		Observations: []scenarioObservation{{Live: 4, Manager: "kubectl"}},
	}
	in := s.input(t)
	if len(in.Result.WriteBacks) != 1 {
		t.Fatalf("write-backs: %+v %v", in.Result.WriteBacks, in.Result.Errors)
	}
	body := in.propose(&in.Result.WriteBacks[0]).Body(&Marker{})
	for _, want := range []string{
		"temporary: accepted until **2026-06-18T14:05:00Z** by <code>spec.rules[0].mayAccept[0]</code> (acceptFor " +
			"<code>8h</code>); the intent asked <code>until 2h</code>",
		"backflow accepts an authorized live change",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("the body does not say %q:\n%s", want, body)
		}
	}
	r := scenario{AcceptFor: "8h", Accepted: "-8h10m"}.restoring(t)
	if len(r.Result.WriteBacks) != 1 {
		t.Fatalf("restoring write-backs: %+v %v", r.Result.WriteBacks, r.Result.Errors)
	}
	body = r.propose(&r.Result.WriteBacks[0]).Body(&Marker{})
	for _, want := range []string{"backflow restores desired state in **prod-us-east**", "expiry: restores the value " +
		"desired before the temporary acceptance"} {
		if !strings.Contains(body, want) {
			t.Errorf("the restoring body does not say %q:\n%s", want, body)
		}
	}
}

// TestVoidExpirySaidOnce: a void expiry is said on the acceptance's pull
// request once; the note its comment leaves in the marker keeps the next
// cycle quiet.
func TestVoidExpirySaidOnce(t *testing.T) {
	s := scenario{
		AcceptFor:    "8h",
		Accepted:     "-8h10m",
		Values:       "5",
		Observations: []scenarioObservation{{Live: 5, NoField: true, At: "4m"}},
	}
	in := s.input(t)
	pr := scenarioPull{Number: 1, Proposes: 4, Head: "c1", State: "merged", MergedAt: "-8h", Proven: true}.pull(t, s)
	got := in.Expiries([]forge.PullRequest{pr})
	if len(got) != 1 || len(got[0]) != 1 || got[0][0].Kind != Comment {
		t.Fatalf("first cycle: %v", got)
	}
	e := got[0][0]
	pr = edit(t, pr, func(m *Marker) { m.Notes = append(m.Notes, e.Note) })
	if again := in.Expiries([]forge.PullRequest{pr}); len(again) != 0 {
		t.Fatalf("said twice: %v", again)
	}
	// Another pull request of the unit that proposed something else is
	// not the acceptance's.
	other := scenarioPull{Number: 3, Proposes: 6, Head: "c3", State: "merged", MergedAt: "-1h", Proven: true}.pull(t, s)
	if got := in.Expiries([]forge.PullRequest{other}); len(got) != 0 {
		t.Fatalf("said on a pull request that did not carry the acceptance: %v", got)
	}
}

// TestVoidedExpiries reads the expiries said void from the notes of this
// App's merged pull requests alone, each for a receipt its marker names.
func TestVoidedExpiries(t *testing.T) {
	s := scenario{AcceptFor: "8h", Accepted: "-8h10m", Values: "5"}
	const path = ".backflow/receipts/prod-us-east/redis/redis_StatefulSet.apps.v1_redis-replicas.yaml"
	const at = "2026-06-18T11:55:00Z"
	said := func(p scenarioPull, note string) forge.PullRequest {
		p.Notes = []string{note}
		return p.pull(t, s)
	}
	merged := scenarioPull{Number: 1, Proposes: 4, Head: "c1", State: "merged", MergedAt: "-8h"}
	open := scenarioPull{Number: 2, Proposes: 4, Head: "c2"}
	// A note written into a marker by anyone but the App does not verify.
	forged := merged.pull(t, s)
	m, ok := ParseMarker(forged.Body)
	if !ok {
		t.Fatal("no marker")
	}
	m.Notes = append(m.Notes, voidNote(path, at))
	forged.Body = replaceMarker(forged.Body, seal(m, []byte("another key"), testRepo, forged.Number))
	for _, tc := range []struct {
		why  string
		pr   forge.PullRequest
		want map[string]string
	}{
		{"the note of the merged pull request that carried the acceptance", said(merged, voidNote(path, at)),
			map[string]string{path: at}},
		{"an open pull request carried no acceptance", said(open, voidNote(path, at)), map[string]string{}},
		{"a receipt its marker does not name is not its to void", said(merged, voidNote(".backflow/other.yaml", at)),
			map[string]string{}},
		{"another note", said(merged, "human-commit:abc"), map[string]string{}},
		{"a marker that does not verify says nothing", forged, map[string]string{}},
	} {
		if got := VoidedExpiries(commitKey, testRepo, "main", []forge.PullRequest{tc.pr}); !maps.Equal(got, tc.want) {
			t.Errorf("why: %s: got %v, want %v", tc.why, got, tc.want)
		}
	}
}
