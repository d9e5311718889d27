// Package values reads and edits Helm values files: values at value paths
// (Helm's --set syntax, whose one spelling yamlnode owns), typed as Helm
// reads them, and byte-minimal edits that leave comments and formatting
// untouched, each verified by reading the file back before anything is
// returned. It also owns how a value is written and compared (Format,
// Equal, AsNumber, ParseScalar), so that the policy, the receipt and the
// planner agree on what a value is.
//
// It must not know about policies, receipts, observations, repository
// configuration, GitHub or git, and does no I/O: callers pass bytes in and
// write the bytes it returns.
package values
