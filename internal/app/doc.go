// Package app is backflow's wiring, for backflow run --once and backflow
// serve. From the bot config (internal/botconfig) it builds:
//
//   - the observation sources the config lists and the audit and admission
//     stores they share (Wiring, Sources, AuditLog, AdmissionLog), and the
//     store of observations pushed to backflow serve (PushStore);
//   - the bot's ports over concrete adapters: the GitHub adapter, counting
//     its requests and GitHub's remaining rate limit in the metrics; the
//     render witness and the remote-chart fetcher (Renderer, RendererWith);
//     the hold port over the kube sources that watch a cluster themselves,
//     when hold.enabled turns holding on (HoldPort); and the ConfigHub store
//     of the confighub section behind the bot's Revisions port, its token
//     read here and never shown (Revisions, HubRevisions);
//   - the live side of serve: a watched object that changes and a new
//     event on the POST /audit webhook ask for a cycle of the repositories
//     concerned at once, and the admission webhook gets its own TLS port,
//     bound before the server starts so that a taken port fails the start;
//   - the Cycler the server drives, with the process's metrics (NewMetrics),
//     among them the gauge of temporary acceptances by expiry state summed
//     over every repository; a GitHub webhook event drops what it changed
//     of the bot's state cache; and the leader election of a replica of
//     serve.
//
// It is the one package that knows the concrete adapters
// (internal/forge/github, internal/hubstore) and the sources' I/O together;
// it must not decide anything itself: what to plan is the planner's, what
// to do about pull requests the lifecycle's and the bot's, reading a
// checkout is internal/checkout's, and flags, output formats and exit codes
// are the command's.
package app
