package lifecycle

import (
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/backflow-dev/backflow/internal/forge"
)

// The marker is the bot's state, kept where anyone with write access can
// edit it (a pull request body). It is authenticated: its MAC is an
// HMAC-SHA256 over the marker's content, the repository and the pull
// request number, under a key derived with HKDF-SHA256 from the commit key,
// itself derived from the App's private key. The private key rather than the
// webhook secret: every process acting as the App holds it (run --once has
// no webhook secret), and nobody else does. The key never leaves the
// process and is never logged.

// ErrMarkerForged says a pull request body carries a marker that is not
// authentic: edited, copied from another pull request or repository, or
// written by someone else.
var ErrMarkerForged = errors.New("the backflow marker is not authentic (edited, copied or forged)")

// ErrMarkerReplayed says a pull request body carries an authentic marker of
// its own that an older state of the bot wrote, pasted back: one from
// before the bot closed the pull request itself (its ledger check run says
// so), or one that does not record the head that was merged.
var ErrMarkerReplayed = errors.New("the backflow marker is an older one of this pull request, pasted back (replayed)")

// markerKey derives the marker key from the commit key.
func markerKey(commitKey []byte) []byte {
	k, err := hkdf.Key(sha256.New, commitKey, nil, "backflow marker key v1", 32)
	if err != nil {
		panic(err) // 32 bytes of SHA-256 output cannot be too long
	}
	return k
}

// markerMAC is the MAC of m (its MAC field left out) for pull request
// number of repo ("owner/name"); number 0 is a pull request not yet opened.
func markerMAC(commitKey []byte, repo string, number int, m *Marker) string {
	c := *m
	c.MAC = ""
	data, _ := json.Marshal(&c) // plain data: encoding cannot fail
	h := hmac.New(sha256.New, markerKey(commitKey))
	fmt.Fprintf(h, "backflow/marker/v1\x00%s\x00%d\x00", strings.ToLower(repo), number)
	h.Write(data)
	return hex.EncodeToString(h.Sum(nil))
}

// seal sets m's MAC for pull request number of repo ("owner/name"), 0
// before it is opened, under the commit key, and returns m.
func seal(m *Marker, commitKey []byte, repo string, number int) *Marker {
	m.MAC = markerMAC(commitKey, repo, number, m)
	return m
}

func authentic(key []byte, repo string, m *Marker, number int) bool {
	return len(key) > 0 && m.MAC != "" && hmac.Equal([]byte(m.MAC), []byte(markerMAC(key, repo, number, m)))
}

// Sealed is seal of a copy of m.
func (m *Marker) Sealed(commitKey []byte, repo string, number int) *Marker {
	c := *m
	return seal(&c, commitKey, repo, number)
}

// PullMarker returns the marker of pr: the one ending its body, when it is
// authentic for pr. A marker sealed before the pull request had a number
// (the process stopped, or another merged it, between opening and sealing
// it) counts only on the App's pull request whose head is the marker's
// last commit: the same proposal at the same head. It returns nil without a marker, and
// ErrMarkerForged when the last marker is not authentic; a marker quoted
// earlier in the body (a receipt's intent) is never read.
func (in *Input) PullMarker(pr forge.PullRequest) (*Marker, error) {
	m, err := pullMarker(in.CommitKey, in.Repo, pr)
	if err == nil && m != nil {
		in.withHolds(pr, m)
	}
	return m, err
}

func pullMarker(key []byte, repo string, pr forge.PullRequest) (*Marker, error) {
	all := markerRE.FindAllStringSubmatch(pr.Body, -1)
	if len(all) == 0 {
		return nil, nil
	}
	m, ok := decodeMarker(all[len(all)-1][1])
	switch {
	case !ok:
		return nil, ErrMarkerForged
	case authentic(key, repo, m, pr.Number):
		return m, nil
	case pr.Mine && m.Branch == pr.HeadRef && m.OwnsHead(pr.HeadSHA) && authentic(key, repo, m, 0):
		return m, nil
	}
	return nil, ErrMarkerForged
}

// pullMarker is PullMarker for callers that only act on an authentic one.
func (in *Input) pullMarker(pr forge.PullRequest) (*Marker, bool) {
	m, ok := authenticMarker(in.CommitKey, in.Repo, pr)
	if ok {
		in.withHolds(pr, m)
	}
	return m, ok
}

func authenticMarker(key []byte, repo string, pr forge.PullRequest) (*Marker, bool) {
	m, err := pullMarker(key, repo, pr)
	return m, err == nil && m != nil
}

// FromHeadCommit rebuilds what a person's close needs of a closed,
// unmerged pull request whose marker is refused: the proposal's
// fingerprint, from its head commit when the commit carries the bot's keyed
// token (commit is that head commit). Editing a marker then cannot make the
// bot forget that a person closed the proposal.
func FromHeadCommit(commitKey []byte, pr forge.PullRequest, commit forge.Commit) (*Marker, bool) {
	if pr.State == forge.StateOpen || pr.Merged || commit.SHA != pr.HeadSHA || !ours(commitKey, commit, pr.HeadRef) {
		return nil, false
	}
	return &Marker{
		Version:     markerVersion,
		Branch:      pr.HeadRef,
		Fingerprint: trailer(commit.Message, trailerFingerprint),
		Commits:     []string{commit.SHA},
	}, true
}
