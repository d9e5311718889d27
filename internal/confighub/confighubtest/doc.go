// Package confighubtest is a stateful stand-in for ConfigHub's REST API on
// loopback, for backflow's tests, demo and end-to-end runs: Spaces, Units
// with their configuration data and revisions, data hashes served as
// ETags, uploads conditional on If-Match (409 when the data changed), dry
// runs that report their diff, lists paged with ConfigHub-Continue, bearer
// tokens, and faults injected on demand (error statuses, requests that hang
// until the client gives up). What ConfigHub's worker does (applying a
// Unit's head revision) is Apply from Go, or ApplyHandler over HTTP: the
// stand-in's own route, served outside the API.
//
// It conforms to the operations backflow uses of ConfigHub's published
// description (confighub/sdk core/openapi/openapi.yaml at commit
// 1c5296a088deedfb9fc480e08e7477aa25393787); a test validates every answer
// body against the schemas extracted into testdata/openapi. It speaks JSON
// and YAML only: it must not know backflow's product packages, its client
// of ConfigHub included (that client's tests use it over real HTTP).
package confighubtest
