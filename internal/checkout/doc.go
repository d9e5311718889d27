// Package checkout reads a GitOps repository from disk or from git the way
// backflow will: a checkout's plan (PlanCheckout, which reads the
// checkout's snapshot and plans the observation files given against it), the
// check of its repo config, policy and values files (Check) and of its
// units' charts against the policy (CheckCharts), the values files backflow
// map is given (ReadValuesFiles), and a pull request's whole diff between
// two commits (ReadDiff).
//
// It reads and hands over; it must not decide: what a change means is the
// planner's and the policy's, what to do about a pull request the lifecycle's
// and the bot's. It must not know GitHub, the bot, the server or the bot
// config: its callers are the commands, which print what it read.
package checkout
