package bot

import "github.com/backflow-dev/backflow/internal/lifecycle"

// Names the lifecycle owns, under which callers of the bot know them.
const (
	// CheckName is the check run that carries the receipt verification.
	CheckName = lifecycle.CheckName
	// ProvenCheckName is the check run on the merge commit that carries the
	// proven receipt.
	ProvenCheckName = lifecycle.ProvenCheckName
	// LabelPreAuthorized marks a write-back that merges without review.
	LabelPreAuthorized = lifecycle.LabelPreAuthorized
	// LabelPersonCommit marks a write-back pull request that carries a
	// commit backflow did not make.
	LabelPersonCommit = lifecycle.LabelPersonCommit
	// LabelDrift marks the tracking issue of unauthorized drift.
	LabelDrift = lifecycle.LabelDrift
)

// Marker is the bot's memory of one write-back in its pull request's body.
type Marker = lifecycle.Marker

// MarkerChange is one accepted field of a write-back.
type MarkerChange = lifecycle.MarkerChange

// ParseMarker finds and decodes the marker in a pull request body.
func ParseMarker(body string) (*Marker, bool) { return lifecycle.ParseMarker(body) }

// ProvenReceipts returns the receipts, as YAML, that a follow-up comment
// or proven check run carries, in order.
func ProvenReceipts(body string) []string { return lifecycle.ProvenReceipts(body) }
