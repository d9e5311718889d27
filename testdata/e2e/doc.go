// Package e2e is backflow's live end-to-end test: a real kube-apiserver and
// etcd on loopback (token authentication, RBAC, audit log), the backflow
// binary's localhub and serve commands as processes, and the round trip of
// the seed's incident run against them: the GitOps forward apply (the
// sample chart rendered with the Helm SDK and server-side applied with
// force), a person's live change through the scale subresource, the
// attributed and auto-merged write-back, the forward apply that no longer
// reverts it, and the proven receipt that backflow verify accepts; and the
// same round trip with the desired state in a ConfigHub Unit, held by the
// ConfigHub stand-in backflow localhub serves beside the hub, the test
// applying its revisions as ConfigHub's worker.
//
// It is its own module so the project's go.mod does not carry Helm; run it
// with make e2e, which builds what it needs first (see run.sh).
package e2e
