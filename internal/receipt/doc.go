// Package receipt models a ReverseReconcileReceipt, the machine-checkable
// record of one reverse reconcile: it parses receipts (reporting unknown keys
// as warnings, since other tools may write more), marshals them in the seed's
// key order, verifies every property the seed's verifier checks plus
// backflow's own, and writes the Markdown rollup table. Authorization is
// decided by the policy package's matcher, so receipts and the planner agree.
// It must not know about GitHub or git.
package receipt
