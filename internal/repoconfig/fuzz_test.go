package repoconfig

import (
	"errors"
	"os"
	"strings"
	"testing"
)

// FuzzParseRepoConfig feeds arbitrary bytes to the config parser: it must
// not panic, must either return a config or an error (never both, never
// neither), every error line must name the file, and an accepted config must
// have its defaults applied and answer queries without panicking.
func FuzzParseRepoConfig(f *testing.F) {
	example, err := os.ReadFile(examplePath)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(example)
	f.Add([]byte(base))
	f.Add([]byte(aliasBomb()))
	f.Add([]byte(base + "ignoreFields: [\"spec.containers[*].image\", \"status.**\"]\n"))
	f.Add([]byte("version: 1\npolicy: p.yaml\nunits:\n  - &u {name: a, environment: e}\n  - *u\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Parse(Path, data)
		if (c == nil) == (err == nil) {
			t.Fatalf("config %v and error %v", c, err)
		}
		if err != nil {
			if !errors.Is(err, ErrInvalid) && !errors.Is(err, ErrUnreadable) {
				t.Errorf("error %v is neither invalid nor unreadable", err)
			}
			for _, line := range strings.Split(err.Error(), "\n") {
				if !strings.HasPrefix(line, Path) && !errors.Is(err, ErrUnreadable) {
					t.Errorf("error line %q does not name the file", line)
				}
			}
			return
		}
		if c.PullRequests.BranchPrefix == "" || c.Receipts.Dir == "" || c.Mode == "" || c.FollowUp.GracePeriod.Duration <= 0 && c.FollowUp.GracePeriod.Duration != 0 {
			t.Errorf("defaults not applied: %+v", c)
		}
		for i := range c.Units {
			u := &c.Units[i]
			if c.Writable(u.ValuesFiles[len(u.ValuesFiles)-1]) != nil {
				t.Errorf("a valid config names an unwritable values file %s", u.ValuesFiles[len(u.ValuesFiles)-1])
			}
			for _, o := range u.Objects {
				_, _ = c.UnitFor(u.Environment, o)
			}
		}
		_ = c.RolesFor("alice", []string{"sre"})
		_ = c.IgnoresField("spec.replicas")
	})
}
