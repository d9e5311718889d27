// Package github is the forge adapter for GitHub, GitHub Enterprise and the
// local hub (one code path, another base URL): a GitHub App authenticated
// with ghinstallation, REST calls through go-github v62, the GraphQL
// auto-merge mutation, and commits either pushed with go-git or made through
// the Git database API (which GitHub signs for Apps).
//
// Every request passes one per-installation gate that honours rate limits
// (Retry-After, X-RateLimit-Reset, 403 and 429 alike) and sends nothing during
// an embargo, keeps content-creating requests under 80 a minute, retries
// idempotent requests on 5xx and transport failures with jittered backoff,
// re-checks state before retrying a create, and answers repeated reads with
// conditional requests (ETag). Time comes from an injected clock.
//
// It translates to and from the forge package's types and must not import
// any other backflow package. Tokens and keys never reach logs or errors.
package github
