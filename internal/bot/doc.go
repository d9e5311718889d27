// Package bot is backflow's reconcile cycle: for every repository the App
// may act on, it reads the default branch at one commit (the repo config,
// the policy and the values files), plans with the observations of every
// configured source, and turns the plan into effects on the forge: one
// attributed branch, commit and pull request per unit, updated, closed,
// merged and cleaned up by the lifecycle rules, with a receipt check on the
// head and auto-merge for pre-authorized changes.
//
// It is stateless between cycles: everything it needs to resume lives on the
// forge (branches, pull request bodies carrying a hidden marker, labels), so
// a crash at any point converges on the next cycle. Every decision is made
// before any effect (evaluate, then act), and every effect goes through the
// Forge interface declared here; the package must not know a concrete
// adapter, HTTP, git or GitHub's wire format. Time comes from an injected
// clock.
package bot
