// Package hubstore is the desired store of units whose desired state is a
// ConfigHub Unit, behind the planner's desired-state port: it reads each
// Unit into the snapshot (its data, hash and head revision), previews a
// planned revision with ConfigHub's own dry run for the pull request that
// carries the receipt, writes the revision once that pull request merges
// (conditional on the hash it was planned against, and only when the dry
// run changes exactly the accepted fields), and proves the receipt once
// the revision is applied and the live object holds the new value.
//
// It knows the planner's and the receipts' types and speaks to ConfigHub
// through internal/confighub; it must not know GitHub, git, a cluster
// client or the stand-in.
package hubstore
