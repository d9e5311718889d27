// Package botconfig is the bot's own configuration, not a repository's: the
// bot config (how the App authenticates, which repositories it works on, how
// it commits, where observations come from) and the serve config beside it,
// each decoded strictly and validated, the secrets and keys they name, and
// the JSON Schema that backflow config schema prints for them.
//
// It describes; it builds nothing: it must not know the adapters the config
// names (the GitHub adapter, the observation sources, the chart fetcher, the
// bot), which internal/app wires from it, and it must not reach a cluster,
// GitHub or git.
package botconfig
