// Package lifecycle decides what the reconcile cycle does to a repository's
// write-back pull requests, before anything is done: from the planner's
// result (its decisions and write-backs, the observations it decided from
// and every unit's desired values), the default branch's head and the pull
// requests' states (with the marker each carries), it returns for each
// write-back branch the whole chain of effects (open or update, with the
// base and the head they compare-and-swap on; the receipt check; the
// reviewers and labels; auto-merge armed, or a merge over REST pinned to
// the head; close as superseded or converged, with the App's ledger; a
// comment once; the cleanup; the follow-up's proof, revert or wait; the
// drift issue), each with its reason (Chain, FollowUps, Drift).
//
// What the forge can only tell while a chain is carried out (a branch left
// by a crash, another process's pull request, whether a pull request is
// mergeable now) is decided here too, as data the effect carries: the
// Proposal says what to do with an existing branch (Recover) and whether
// another process proposed it first (ProposedElsewhere), an auto-merge
// effect when to merge over REST (Mergeable) and what follows a merge
// (AfterMerge). The executor (internal/bot) reads the forge and follows
// them; it never asks the lifecycle again.
//
// A proven follow-up publishes the merged receipts in their proven form
// (Evidence.Proven): the receipts are read as the default branch holds
// them when the effect is carried out, then given status proven, the merge
// commit and the store's revision, verified against the default branch's
// policy and marshalled. The planner's result does not carry them: the
// planner reads the values files a write-back edits, not the receipts of
// merged pull requests, so carrying them would read every waiting pull
// request's receipts each time the default branch moves, where now they
// are read once, by the one cycle that proves the fix; and what is
// verified is the proven document, which no one verified before. Where
// the receipts are proven is decided here too (Evidence.Store): a merged
// revision of a revision store is proven through that store, which checks
// the revision written for each receipt was applied (Evidence.Published).
//
// Temporary acceptances (break glass) need nothing of their own here but
// what they say: the planner makes a due expiry's restoring write-back,
// which Chain opens and FollowUps proves like any other, and Expiries says
// once, on the pull request that carried it, that a void expiry restores
// nothing; the bodies, reasons and the drift issue say when each ends.
//
// A write-back into a revision store (a ConfigHub Unit) is proposed the
// same way (the pull request carries the receipt and the store's preview);
// its merge is followed by a Revise effect that writes the revision,
// conditional on what the marker records it was planned on, while the plan
// still proposes what merged, and by a Replan when it no longer does
// (revision.go). The rules are the same for every such store, and what
// they say of one is its own words (plan.Words), so a new store changes
// nothing here.
//
// It also owns what the decisions read and write: the marker (the sealed,
// hidden record of a write-back in its pull request's body; "marker" means
// nothing else here), the fingerprint and the keyed commit token, and the
// pull request's title, body and commit message.
//
// It is pure: it must not know the forge's clients (go-github, go-git,
// net/http), Kubernetes clients, the clock or the file system; it uses the
// forge port's types only as data.
package lifecycle
