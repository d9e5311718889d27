// Package observe is backflow's field-level observation model (an
// ObjectStateObserved document per object, and triggers to look at an
// object again) and the pure readers that build it from bytes: backflow's
// own documents, cub-scout's trace-diff and watch outputs, Kubernetes audit
// events, admission reviews and an object's managedFields. It lowers every
// claimed attribution to the trust ceiling of the source it came from, and
// joins audit events and watch-confirmed admission records to observations
// so that each changed field is attributed to the authenticated user who
// set it.
//
// The readers and the join are pure functions of their inputs. Two types
// are not: AdmissionLog is a store, safe for concurrent use (it holds a mutex),
// that reads its clock (Now, time.Now when unset) to expire the admission
// records the watch has not confirmed within its TTL, refuses the records
// that do not fit its byte budget and drops the oldest confirmed ones to
// make room, and calls back (OnConfirm, OnRefuse) on what it settles; the
// sources and the webhook share one for the process's life, and tests give
// it a clock. TransitionLog is the other store: it keeps, for a window read
// from its clock and within a count and a byte budget, the person's changes
// a watch saw, so that a GitOps controller's revert before the next read
// does not erase them.
//
// It decides nothing and does no I/O: it must not know about policies,
// repository configuration, GitHub or git, and must not import client-go,
// net/http or the file system. The sources that fetch what it reads (the
// Kubernetes watch, audit-log tailing, the audit and admission webhooks,
// HTTP polling, files) live in observe/source.
package observe
