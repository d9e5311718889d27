package plan

import "github.com/backflow-dev/backflow/internal/receipt"

// Store is the desired store a write-back goes to, as the planner and the
// lifecycle see it: how it names what it proposes, so that the receipts
// say where the accepted value is written. Reading the desired documents
// at a revision and carrying a proposal out are the caller's: the
// repository through the bot's forge port, a revision store (a ConfigHub
// Unit) through ReadOptions.Revisions, whose Head names the store's
// method and revisions, and the bot's Revisions port. A new revision store
// is a new reader and writer behind those ports; neither the planner nor
// the lifecycle's rules change with it.
type Store interface {
	// Method is writeBack.method of the receipts of the store's proposals.
	Method() string
	// NewRevision is writeBack.newRevision of a proposed receipt whose
	// write-back goes to branch, before the proposal is accepted.
	NewRevision(branch string) string
	// Applied is writeBack.newRevision once the proposal was accepted as
	// the default branch's merge commit.
	Applied(mergeCommit string) string
}

// PullRequests is the store of Helm values files in the repository,
// proposed as one pull request per unit: the receipt names the branch
// until the merge, then the merge commit. A Snapshot without a Store
// writes back through it.
type PullRequests struct{}

// Method is receipt.MethodPullRequest.
func (PullRequests) Method() string { return receipt.MethodPullRequest }

// NewRevision is the branch: a commit cannot name its own SHA.
func (PullRequests) NewRevision(branch string) string { return branch }

// Applied is the merge commit.
func (PullRequests) Applied(mergeCommit string) string { return mergeCommit }

// StoreOf is the snapshot's store, PullRequests when it names none.
func (s Snapshot) StoreOf() Store {
	if s.Store == nil {
		return PullRequests{}
	}
	return s.Store
}
