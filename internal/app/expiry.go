package app

import (
	"github.com/backflow-dev/backflow/internal/bot"
	"github.com/backflow-dev/backflow/internal/plan"
)

// temporaryStates are the states of a temporary acceptance the gauge
// counts, each set (to zero at first) so a dashboard sees every one.
var temporaryStates = []string{
	string(plan.InForce),
	string(plan.Due),
	string(plan.Waiting),
	string(plan.Void),
	string(plan.Refused),
	string(plan.Superseded),
}

// recordTemporary keeps the repository's temporary acceptances by state
// as its cycle found them, and sets the gauge to the sum over every
// repository: a repository cycled alone does not hide the others'. A
// skipped repository (paused, unreadable) keeps what it last had.
func (c *Cycler) recordTemporary(rr *bot.RepoReport) {
	if rr.Skipped != "" {
		return
	}
	counts := map[string]int{}
	for _, x := range rr.Expiries {
		counts[x.State]++
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.temporary == nil {
		c.temporary = map[string]map[string]int{}
	}
	c.temporary[rr.Repo] = counts
	for _, s := range temporaryStates {
		n := 0
		for _, per := range c.temporary {
			n += per[s]
		}
		c.metrics.TemporaryAcceptances(s, n)
	}
}
