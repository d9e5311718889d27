// Package forgetest holds what tests of forge.Forge users and
// implementations share: the contract every implementation passes
// (RunContract, run against the GitHub adapter on the local hub), Recorder,
// which passes calls to another forge and records the writes a caller made
// as short strings ("acme/gitops#12:label:env:prod") with scripted
// failures, and ReadFiles for test repositories.
//
// It holds no model of GitHub: the local hub (internal/localhub) is the one
// simulator, so there is no second copy of GitHub's rules to disagree with
// it. It must not know the bot or any product package.
package forgetest
