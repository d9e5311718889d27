// Package cliroot is the root of backflow's command line, shared by the two
// binaries: the front (cmd/backflow), which runs the values commands and
// version in its own process, and the core (cmd/backflow-core, package
// internal/cli), which runs every command. Both build their root here, so
// the global flags (--log-level, --log-format, --version), the exit codes
// and their messages, the held stdout and the version command are the same
// code in both; the values commands (package valuescmd) build on the same
// exit codes and both binaries add them, so a command line answers the
// same whichever binary runs it.
//
// It must link nothing heavier than the values editor: Go runs every linked
// package's initialisation before main, and the front's one-edit process
// must not pay for Helm, client-go or the metrics (internal/archtest and
// cmd/backflow's tests hold it to that).
package cliroot
