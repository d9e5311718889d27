// Package server runs backflow as a long-lived process: it decides when a
// reconcile cycle runs (on a cron schedule with jitter, on signed GitHub
// webhooks, on pushed observations), makes sure that one repository never has
// two cycles at once, and exposes health, readiness and Prometheus metrics.
//
// It must not know what a cycle does: policies, repository configuration,
// values files, observations' meaning and GitHub's API are behind the small
// interfaces it declares (Cycler, ObservationSink). It knows only the wire
// shapes of the webhook events it routes.
package server
