package lifecycle

import (
	"errors"
	"strings"
	"testing"

	"github.com/backflow-dev/backflow/internal/forge"
)

func TestPullMarker(t *testing.T) {
	in := &Input{CommitKey: commitKey, Repo: testRepo}
	marker := func() *Marker {
		return &Marker{Version: markerVersion, Branch: branchEast, Fingerprint: "sha256:ab", Commits: []string{"c1"}}
	}
	pull := func(body string) forge.PullRequest {
		return forge.PullRequest{Number: 7, Body: body, Mine: true, State: forge.StateOpen, HeadRef: branchEast, HeadSHA: "c1"}
	}
	sealed := func(number int, repo string, edit func(*Marker)) string {
		m := seal(marker(), commitKey, repo, number)
		if edit != nil {
			edit(m)
		}
		return "text\n\n" + m.Encode() + "\n"
	}
	for _, tc := range []struct {
		why  string
		pr   forge.PullRequest
		want error
		ok   bool
	}{
		{"sealed for this pull request", pull(sealed(7, testRepo, nil)), nil, true},
		{"no marker at all", pull("text"), nil, false},
		{"edited after sealing", pull(sealed(7, testRepo, func(m *Marker) { m.Closed = ClosedSuperseded })), ErrMarkerForged, false},
		{"copied from another pull request", pull(sealed(8, testRepo, nil)), ErrMarkerForged, false},
		{"copied from another repository", pull(sealed(7, "acme/other", nil)), ErrMarkerForged, false},
		{"written by someone else", pull(strings.Replace(sealed(7, testRepo, nil), `"mac":"`, `"mac":"00`, 1)), ErrMarkerForged, false},
		{"an authentic marker quoted before a forged one", pull(sealed(7, testRepo, nil) + sealed(8, testRepo, nil)), ErrMarkerForged, false},
		{"sealed before opening, on its own open head", pull(sealed(0, testRepo, nil)), nil, true},
		{"sealed before opening, on another head", func() forge.PullRequest { p := pull(sealed(0, testRepo, nil)); p.HeadSHA = "c9"; return p }(), ErrMarkerForged, false},
		{"sealed before opening, merged at that head", func() forge.PullRequest {
			p := pull(sealed(0, testRepo, nil))
			p.State, p.Merged = forge.StateClosed, true
			return p
		}(), nil, true},
		{"sealed before opening, on someone else's pull request", func() forge.PullRequest { p := pull(sealed(0, testRepo, nil)); p.Mine = false; return p }(), ErrMarkerForged, false},
	} {
		m, err := in.PullMarker(tc.pr)
		if !errors.Is(err, tc.want) || (m != nil) != tc.ok {
			t.Errorf("%s: marker %v, err %v; want ok %v, err %v", tc.why, m != nil, err, tc.ok, tc.want)
		}
	}
}

// A forged marker reaches the cycle's errors as ErrMarkerForged, not as a
// message, so logs and metrics can tell it from any other problem.
func TestIndexKeepsTheForgedSentinel(t *testing.T) {
	in := &Input{CommitKey: commitKey, Repo: testRepo, DefaultBranch: "main"}
	m := seal(&Marker{Version: markerVersion, Branch: branchEast, Fingerprint: "sha256:ab", Commits: []string{"c1"}}, commitKey, testRepo, 8)
	pr := forge.PullRequest{Number: 7, Body: "text\n\n" + m.Encode() + "\n", Mine: true, State: forge.StateOpen,
		HeadRef: branchEast, HeadSHA: "c1", BaseRef: "main"}
	units, problems := in.Index([]forge.PullRequest{pr})
	if len(problems) != 1 || !errors.Is(problems[0], ErrMarkerForged) || !strings.Contains(problems[0].Error(), "#7: ") {
		t.Fatalf("problems %v, want one naming #7 and wrapping ErrMarkerForged", problems)
	}
	if len(units) != 0 {
		t.Errorf("a pull request with a forged marker was indexed: %+v", units)
	}
}
