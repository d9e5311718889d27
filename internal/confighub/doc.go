// Package confighub is backflow's client of ConfigHub's REST API, where a
// unit's desired state may live instead of the repository: it finds a
// Space and a Unit by slug, reads the Unit (its head revision and data
// hash), downloads its configuration data, uploads new data as a revision
// conditional on the hash it read (with a dry run that shows the diff
// first), and lists the Unit's revisions.
//
// It speaks the API as ConfigHub publishes it (core/openapi/openapi.yaml of
// confighub/sdk at commit 1c5296a088deedfb9fc480e08e7477aa25393787), and
// only the operations named in the README. Every error names the Space and
// the Unit and wraps one of the sentinel errors, so a caller decides by
// errors.Is whether to retry; the bearer token is never part of an error,
// a log line or a printed value. It must not know the planner, the policy,
// the receipts or GitHub.
package confighub
