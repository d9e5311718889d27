// Package demo is `backflow demo`: the whole round trip on one machine, with
// no GitHub account and no network but loopback. It starts the local hub in
// process with a sample GitOps repository embedded in the binary, simulates
// the live clusters (people changing objects by hand, the GitOps
// controller's forward apply, an observer reporting what differs), and runs
// real reconcile cycles through the bot and the GitHub adapter over real
// HTTP and git, narrating each step. RunConfigHub runs the same incident
// with the desired state in a ConfigHub Unit held by the ConfigHub
// stand-in on loopback, which plays ConfigHub's worker by applying the
// written revision to the simulated cluster.
//
// It wires the product's packages together and adds only the simulation; it
// must not reimplement any decision the bot, the planner or the verifier
// makes.
package demo
