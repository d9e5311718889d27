// Package bot is backflow's reconcile cycle and the executor of the
// lifecycle's effects: for every repository the App may act on, it reads
// the default branch at one commit (the repo config, the policy and the
// values files), plans with the observations of every configured source,
// asks internal/lifecycle for each write-back branch's whole chain of
// effects before doing any of it, and then carries the chains out in
// order through the executor's port (Writer, in execute.go: three reads
// and one operation per thing an effect does, each composed once of the
// forge's fine calls in forge.Steps: a proposal is its commit, its check
// and its pull request opened or updated; a close is the marker's reason,
// the comment, the ledger check and the close; a merge is auto-merge armed
// or disarmed, or a merge now): one attributed branch, commit and pull
// request per unit, updated, closed, merged and cleaned up, with a receipt
// check on the head and auto-merge for pre-authorized changes.
//
// What a pull request's fate rests on lives on the forge (branches, pull
// request bodies carrying the sealed marker, labels, the App's check
// runs), so a crash at any point converges on the next cycle. The bot does
// keep, for its life, what only saves requests and work: each
// repository's head, pull requests and drift issues (the StateCache, told
// of changes by webhooks and revalidated by the repository's latest
// event), the files read at the last default-branch head, the objects
// each repository's units claim, and the planner's values readings.
// Losing any of it costs requests, never a decision.
//
// The executor decides nothing: what the forge may answer mid-way (the
// default branch moved, a branch left by a crash, another process's pull
// request, auto-merge that cannot be armed) is answered from the effect's
// own data, as the lifecycle decided it. It stops a chain at the first
// effect that fails, and the next cycle decides again. A dry run is
// decided in one place, where effects are applied: every chain is
// reported, auto-merge included, none applied. Errors stay errors
// (Report's Errors), so the forge's sentinels reach the caller. The render
// witness comes in through Options (internal/app wires the Helm SDK's),
// reading charts through the bot's files; without one, a unit that names a
// chart path is failed closed. So do the revision stores (Revisions;
// internal/app wires internal/hubstore for ConfigHub Units), without which
// a unit whose desired state is in one is failed closed. The package must not know a concrete
// adapter, the Helm SDK, a Kubernetes client, HTTP, git or GitHub's wire
// format: internal/archtest checks that it links none of them, net/http
// only through the YAML library (kyaml) the values editor uses, whose
// loader it never calls. Time comes from an injected clock.
package bot
