package lifecycle

import "github.com/backflow-dev/backflow/internal/observe"

// trustedToDecide reports whether an observation believed at trust may
// close the open pull request's change c as converged, or re-plan it: only
// one trusted at least as far as the attribution c's receipt was accepted
// on (ProofTrust), as a proof needs (reobserve). A lower-trust observation
// never closes or replaces what a higher-trust one established; a source
// may say what it likes, but a pull request opened on the audit log's word
// is not withdrawn or rewritten on an asserted one.
func trustedToDecide(c MarkerChange, trust observe.Attribution) bool {
	return trust.Rank() >= c.proofTrust().Rank()
}
