// Package helmvalues is Helm's semantics of a values tree, written once:
// how Helm layers several values files (Layer), what a null in them means
// once Helm has coalesced them (Merge: a null deletes its key), and which Go
// types Helm's reader gives their numbers (Typed: float64, as through JSON),
// and the same numbers as their text writes them, for what is written back
// or compared with a Kubernetes object (Plain: an integer an int64).
// The planner, the follow-up, the render witness and the sealed marker's
// fingerprint all read values through it, so that they cannot drift apart.
//
// It is a leaf of pure functions on trees of map[string]any, []any and
// scalars: it must not import anything of the project, nor Helm (its tests
// hold it to the Helm SDK's own merging and coalescing), nor do I/O.
package helmvalues
