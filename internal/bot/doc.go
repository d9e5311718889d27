// Package bot is backflow's reconcile cycle and the executor of the
// lifecycle's effects: for every repository the App may act on, it reads
// the default branch at one commit (the repo config, the policy and the
// values files), plans with the observations of every configured source,
// asks internal/lifecycle what to do with each write-back branch and its
// pull requests, and applies those effects in order through the Forge
// port: one attributed branch, commit and pull request per unit, updated,
// closed, merged and cleaned up, with a receipt check on the head and
// auto-merge for pre-authorized changes.
//
// It is stateless between cycles: everything it needs to resume lives on the
// forge (branches, pull request bodies carrying a hidden marker, labels), so
// a crash at any point converges on the next cycle. Decisions are the
// lifecycle's; where one needs state only the forge can tell mid-way (the
// default branch moved, a branch left by a crash, another process's pull
// request), the bot reads it, asks the lifecycle, then acts. A dry run is
// decided in one place, where effects are applied: every effect is
// reported, none applied. Errors stay errors (Report's Errors), so the
// forge's sentinels reach the caller. The render witness comes in through
// Options (internal/app wires the Helm SDK's), reading charts through the
// bot's files; without one, a unit that names a chart path is failed
// closed. The package must not know a concrete adapter, the Helm SDK, a
// Kubernetes client, HTTP, git or GitHub's wire format: internal/archtest
// checks that it links none of them, net/http only through the YAML
// library (kyaml) the values editor uses, whose loader it never calls.
// Time comes from an injected clock.
package bot
