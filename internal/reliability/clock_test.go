package reliability

import (
	"testing"
	"time"

	"github.com/backflow-dev/backflow/internal/app"
	"github.com/backflow-dev/backflow/internal/bot"
	"github.com/backflow-dev/backflow/internal/forge"
	ghforge "github.com/backflow-dev/backflow/internal/forge/github"
)

// failedCycle runs one cycle and reports whether it failed, as a whole or
// for a repository.
func (e *hubEnv) failedCycle(b *bot.Bot) (bool, string) {
	e.t.Helper()
	rep, err := b.Cycle(e.ctx)
	if err != nil {
		captureText(err.Error())
		return true, err.Error()
	}
	captureText(rep.Text())
	return rep.Failed(), rep.Text()
}

// Case 14: the installation token expires in the middle of a cycle (the
// forge's clock jumps past its hour between two effects), and the forge's
// clock is minutes ahead of or behind backflow's: the adapter gets a new
// token or corrects its JWT's times and the cycle goes on. No cycle fails.
func TestCase14TokenExpiryAndClockSkew(t *testing.T) {
	files := gitopsFiles(t)
	reviewOnly(files)
	e := newHubEnv(t, files)
	failed, cycles := 0, 0
	wall := time.Now().UTC()
	skews := []time.Duration{4 * time.Minute, -4 * time.Minute}
	if *fullRun {
		skews = append(skews, 9*time.Minute, -9*time.Minute, 55*time.Minute)
	}
	for i, skew := range skews {
		// backflow reads the wall clock; the forge's runs skew apart.
		e.clock.Set(wall.Add(skew))
		a := e.adapter(func(c *ghforge.Config) { c.Clock = ghforge.SystemClock{} })
		src := &staticSource{}
		src.set(replicas(usEastNode, 10+i, e.clock.Now()))
		cycles++
		if bad, text := e.failedCycle(e.newBot(a, src, forge.CommitAPI)); bad {
			failed++
			t.Errorf("with the forge %s off: the cycle failed:\n%s", skew, text)
		}
	}
	// The token expires between the commit and the pull request.
	e.clock.Set(wall)
	a := e.adapter(nil)
	src := &staticSource{}
	src.set(replicas(euWestNode, 7, e.clock.Now()))
	fx := &effects{Forge: a, allowed: -1, before: func(n int, name string) {
		if name == "CreatePullRequest" {
			e.clock.Advance(61 * time.Minute)
		}
	}}
	b, err := bot.New(bot.Options{Forge: forge.Steps{Forge: fx}, Sources: []bot.Source{src}, Now: e.clock.Now, Logger: e.log, CommitMethod: forge.CommitGit,
		CommitKey: []byte("reliability commit key"), Renderer: app.Renderer})
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		cycles++
		if bad, text := e.failedCycle(b); bad {
			failed++
			t.Errorf("with the token expiring mid-cycle: the cycle failed:\n%s", text)
		}
	}
	prs := e.pulls(a, e.repo)
	if len(prs) != 2 {
		t.Errorf("%d pull requests, want one per environment", len(prs))
	}
	report(t, "14", "token-expiry-and-skew", "failed_cycles", failed, "cycles", cycles, "max_skew", skews[len(skews)-1].String())
}
