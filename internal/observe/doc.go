// Package observe turns what observers saw in live clusters into backflow's
// field-level observation model (an ObjectStateObserved document per object)
// and into triggers to look at an object again. It reads backflow's own
// documents, cub-scout's trace-diff and watch outputs, files, directories,
// polled URLs and live Kubernetes objects (watched with client-go, changes
// read from managedFields), and lowers every claimed attribution to the trust
// ceiling of the source it came from. Kubernetes audit events (a log file or
// the audit webhook) attribute each changed field to the authenticated user
// who set it.
//
// It decides nothing: it must not know about policies, repository
// configuration, values files, GitHub or git.
package observe
