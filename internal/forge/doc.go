// Package forge is the write-back port: the operations backflow performs on a
// Git hosting service (reading files at a commit, branches, commits, pull
// requests, comments, labels, reviewers, check runs, merges and issues), in
// backflow's own types and with its own error vocabulary.
//
// It must not know GitHub's client library or wire format: adapters
// (internal/forge/github) translate, and the consumers (the reconcile cycle)
// declare the subset they use. Steps composes, once, the operations a
// consumer makes as one out of the fine calls (open a pull request and seal
// its body; reviewers and labels; a comment made once; a tracking issue
// opened or edited), so an adapter and every wrapper of one (a recorder, a
// crash injector) offer them over their own fine calls. Values here are plain data, so a test can
// record and script calls (internal/forge/forgetest's Recorder) in front
// of the local hub, the one GitHub simulator.
package forge
