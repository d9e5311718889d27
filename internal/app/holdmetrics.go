package app

import (
	"time"

	"github.com/backflow-dev/backflow/internal/bot"
	"github.com/backflow-dev/backflow/internal/server"
)

// revertMemory is how long a revert already counted is remembered: a
// revert's observation is read again each cycle for as long as the
// sources keep it, and it is counted once.
const revertMemory = 24 * time.Hour

// recordHolds sets the repository's holds in place, as its cycle found and
// left them (when it read them), and records the at-risk windows the cycle closed and the
// releases it made. A revert seen again in a later cycle is not recorded
// again.
func (c *Cycler) recordHolds(rr *bot.RepoReport, at time.Time) {
	h := rr.Holds
	if h.Read {
		c.metrics.HoldsInPlace(rr.Repo, h.InPlace)
	}
	for _, d := range h.Held {
		c.metrics.HoldAtRisk(server.AtRiskHeld, d)
	}
	for _, r := range h.Released {
		c.metrics.HoldReleased(r)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.reverts == nil {
		c.reverts = map[string]time.Time{}
	}
	for k, seen := range c.reverts {
		if at.Sub(seen) > revertMemory {
			delete(c.reverts, k)
		}
	}
	for _, r := range h.Reverts {
		if _, counted := c.reverts[r.Key]; counted {
			continue
		}
		c.reverts[r.Key] = at
		c.metrics.HoldAtRisk(server.AtRiskReverted, r.Window)
	}
}
