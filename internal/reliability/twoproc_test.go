package reliability

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/backflow-dev/backflow/internal/forge"
)

// Case 13: two backflow processes (one pushing with git, one committing
// through the API) cycle the same repositories at the same time, with
// auto-merge: exactly one branch and one pull request per unit. Branch
// creation is a compare-and-swap on the ref, and a process looks again
// before writing a plan whose default branch the other has moved.
func TestCase13TwoProcesses(t *testing.T) {
	e := newHubEnv(t, nil)
	var repos []forge.Repo
	for i := range count(2, 4) {
		repos = append(repos, e.createRepo(fmt.Sprintf("twin-%d", i), gitopsFiles(t)))
	}
	dups, orphans := 0, 0
	rounds := count(2, 4)
	for _, repo := range repos {
		var wg sync.WaitGroup
		for p := range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				method := forge.CommitGit
				if p == 1 {
					method = forge.CommitAPI
				}
				b := e.process(repo, twoUnits(e), method, &effects{allowed: -1})
				for range rounds {
					rep, err := b.Cycle(context.Background())
					if err != nil {
						t.Errorf("process %d: %v", p, err)
						return
					}
					captureText(rep.Text())
				}
			}()
		}
		wg.Wait()
		// A later cycle of one process settles what the race left open.
		fx := &effects{allowed: -1}
		e.converge(e.process(repo, twoUnits(e), forge.CommitGit, fx), fx, 3)
		d, o := e.unitState(repo, []string{branchEU, branchEast}, true)
		dups, orphans = dups+d, orphans+o
	}
	report(t, "13", "two-processes", "duplicates", dups, "orphans", orphans, "repositories", len(repos), "concurrent_cycles", 2*rounds*len(repos))
}
