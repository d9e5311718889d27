// Package reliability holds backflow's reliability and security suite: the
// promises that faults, races and hostile input change nothing they should
// not, each case proven against the real packages (the server, the reconcile
// cycle, the GitHub adapter over real HTTP and git against the local hub) and
// reported as a figure.
//
// The package has no code of its own outside its tests; it imports the
// others and must not be imported. "go test" runs the short form; the full
// form (larger counts, both commit methods) runs with -args -full, and
// -figures FILE (or BACKFLOW_FIGURES) writes the table of figures as
// Markdown.
package reliability
