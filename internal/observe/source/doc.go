// Package source holds the observation sources that do I/O and hand what
// they read to observe's pure readers: live Kubernetes objects watched with
// client-go (changes read from managedFields), the audit log tailed from a
// file, the audit webhook, the validating admission webhook, observation
// documents polled over HTTP, and files and directories.
//
// It fetches and decides nothing else: it must not know about policies,
// repository configuration, values files, GitHub or git.
package source
