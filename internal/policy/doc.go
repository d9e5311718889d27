// Package policy loads, validates and evaluates a ReverseReconcilePolicy: the
// default-deny authority that says which role may accept which value path, on
// which objects, in which environments, within which value bounds. Loading is
// strict (unknown keys and malformed entries are errors that name the file and
// the place); evaluation is a pure function of the policy and a request, shared
// by the receipt verifier and the planner so that both decide alike. It must
// not know about GitHub, git, Kubernetes clients or receipts.
package policy
