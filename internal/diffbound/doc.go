// Package diffbound decides whether a pull request's whole diff stays
// within what its receipts claim: every changed file is a receipt under the
// receipts folder or a values file a receipt names, every changed value path
// of those files is claimed by a receipt with that new value, and every
// receipt verifies against the base branch's policy. A receipt names only
// its own unit's values files, in its own environment, as the base branch's
// repo config lists them, at the value path the unit's mapping writes the
// field at (plan.MapField); a file other environments' units read too only
// with each reading environment's authority.
//
// It is pure: the caller reads the base branch's config and policy and the
// changed files' bytes (from GitHub, or a local checkout) and hands them in.
// It must not know GitHub, git, HTTP or the clock.
package diffbound
