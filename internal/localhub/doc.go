// Package localhub is a stateful, GitHub-compatible server on loopback: the
// REST endpoints, the GraphQL auto-merge mutation, git over smart HTTP and
// signed webhooks that a GitHub App needs, so the bot, its tests and its demo
// run without GitHub.
//
// Clients talk to it over real HTTP exactly as they talk to GitHub (go-github,
// ghinstallation and go-git, unchanged). Git objects and refs live in real bare
// repositories driven by the git command line, so pushes and the REST API see
// the same refs. The server speaks JSON only: it must not know backflow's
// product packages, nor import go-github (its tests do, as clients). A
// caller that needs another service beside it (the command line's ConfigHub
// stand-in) mounts that service's handlers (Options.Mounts) without the
// hub knowing what they serve.
package localhub
