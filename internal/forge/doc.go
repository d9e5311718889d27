// Package forge is the write-back port: the operations backflow performs on a
// Git hosting service (reading files at a commit, branches, commits, pull
// requests, comments, labels, reviewers, check runs, merges and issues), in
// backflow's own types and with its own error vocabulary.
//
// It must not know GitHub's client library or wire format: adapters
// (internal/forge/github) translate, and the consumers (the reconcile cycle)
// declare the subset they use. Steps composes, once, the operations a
// consumer makes as one out of the fine calls (a branch read with its
// commits; a change proposed: its commit compare-and-swapped on the
// branch's expected head, its check, its pull request opened and sealed or
// updated; a pull request annotated or closed; its merge set; a check
// posted unless it is there; a tracking issue opened or edited), so an
// adapter and every wrapper of one (a recorder, a crash injector) offer
// them over their own fine calls. Values here are plain data, so a test can
// record and script calls (internal/forge/forgetest's Recorder) in front
// of the local hub, the one GitHub simulator.
package forge
