// Package app is backflow's wiring: it reads the bot config and the secrets
// it names (the App's key, the commit key derived from it, webhook and
// audit credentials), builds the observation sources the config lists, keeps
// the observations pushed to backflow serve, reads a checkout's snapshot for
// backflow plan, reads a pull request's whole diff from a git checkout for
// backflow verify --repo, renders a checkout's charts against the policy for
// backflow config validate, reads the values files backflow map is given,
// replaces a file atomically for values set --in-place, and
// puts the GitHub adapter, the bot and the server together for backflow run
// --once and backflow serve (the Cycler the server drives).
//
// It is the one package that knows the concrete adapters
// (internal/forge/github) and the sources' I/O together; it must not decide
// anything itself: what to plan is the planner's, what to do about pull
// requests the bot's, and flags, output formats and exit codes are the
// command's.
package app
