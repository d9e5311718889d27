// Package values reads and edits Helm values files: value paths in Helm's
// --set syntax, values typed as Helm reads them, and byte-minimal edits that
// leave comments and formatting untouched. It must not know about policies,
// receipts, observations, GitHub or git.
package values
