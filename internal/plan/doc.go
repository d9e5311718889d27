// Package plan is backflow's decision stage: from what observers saw in the
// live clusters, what the repository says at one commit of its default
// branch (the repo config, the policy, the values files) and the time, it
// decides for every observed object whether its live change is accepted back
// (allow, with the edits and a receipt), refused (deny, with every reason),
// nothing to do (noop), based on a desired state that has moved since (stale)
// or outside every unit (unmapped).
//
// It is a pure function: it must not read files, touch the network, git or
// GitHub, or read the clock. Everything it needs is passed in; everything it
// decides is returned, including the new bytes of the files a write-back
// commits. It may decide objects and build units' write-backs on several
// goroutines (Options.Workers), and take Helm's readings and verified edits
// from a values.Readings the caller keeps (Options.Readings); the result is
// the same either way. The result also carries what it decided from, as
// data for the lifecycle: each object's observations in its environment
// (Observed) and every unit's merged desired values (Desired), so nothing
// after the plan maps clusters or reads values files again.
//
// Objects travel through the result as observe.ObjectKey (decisions,
// changes, write-backs, expiries, observed objects): text is read into a key
// where it enters (a receipt on the default branch, once, as the receipts
// are read) and printed where it leaves (the reports, the receipts, the
// policy's request, the indices of rendered objects, which are keyed by
// text).
package plan
