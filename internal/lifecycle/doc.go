// Package lifecycle decides what the reconcile cycle does to a repository's
// write-back pull requests, before anything is done: from the planner's
// result, the default branch's snapshot, the observations and the pull
// requests' states (with the marker each carries), it returns the effects
// (open, update, keep, close as superseded or converged, comment once, the
// receipt check, auto-merge, cleanup, the follow-up's proof or revert, the
// drift issue), each with its reason. Where a decision needs state only the
// forge can tell mid-way (a branch left by a crash, another process's pull
// request, whether a pull request is mergeable now), it offers the pure
// decision the executor calls after reading that state.
//
// It also owns what the decisions read and write: the hidden marker in a
// pull request's body, the fingerprint and the keyed commit token, and the
// pull request's title, body and commit message.
//
// It is pure: it must not know the forge's clients (go-github, go-git,
// net/http), Kubernetes clients, the clock or the file system; it uses the
// forge port's types only as data. internal/bot applies its effects.
package lifecycle
