// Package app is backflow's wiring: from the bot config (internal/botconfig)
// it builds the observation sources the config lists and the audit and
// admission stores they share (Wiring), keeps the observations pushed to
// backflow serve (PushStore), and puts the GitHub adapter, the render
// witness, the bot and the server together for backflow run --once and
// backflow serve (the Cycler the server drives, its metrics and the leader
// election).
//
// It is the one package that knows the concrete adapters
// (internal/forge/github) and the sources' I/O together; it must not decide
// anything itself: what to plan is the planner's, what to do about pull
// requests the lifecycle's and the bot's, reading a checkout is
// internal/checkout's, and flags, output formats and exit codes are the
// command's.
package app
