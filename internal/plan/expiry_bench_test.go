package plan_test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/backflow-dev/backflow/internal/plan"
	"github.com/backflow-dev/backflow/internal/repoconfig"
)

// BenchmarkExpiries is what reading the default branch's receipts for
// expiries adds to a plan with nothing observed: receipts receipts under
// receipts.dir, one in ten temporary (in force), the rest permanent.
func BenchmarkExpiries(b *testing.B) {
	dir := filepath.Join("testdata", "scenarios", "break-glass-expired", "repo")
	got, err := plan.ReadSnapshot(
		func(p string, limit int64) ([]byte, error) { return repoconfig.ReadRepoFile(dir, p, limit) },
		plan.ReadOptions{List: func(d string) ([]string, error) { return repoconfig.ListRepoDir(dir, d) }},
	)
	if err != nil {
		b.Fatal(err)
	}
	temporary, err := os.ReadFile(
		filepath.Join(dir, ".backflow/receipts/prod-us-east/redis/redis_StatefulSet.apps.v1_redis-replicas.yaml"),
	)
	if err != nil {
		b.Fatal(err)
	}
	// In force at the plan's time, so each one is parsed and decided.
	temporary = []byte(
		regexp.MustCompile(`expiresAt: "[^"]*"`).ReplaceAllString(string(temporary), `expiresAt: "2026-06-18T20:00:00Z"`),
	)
	permanent := regexp.MustCompile(`(?s)  expiry:\n.*?\n  roundTrip:`).ReplaceAll(temporary, []byte("  roundTrip:"))
	now, _ := time.Parse(time.RFC3339, scenarioNow)
	for _, n := range []int{100, 1000} {
		snap := got.Snapshot
		snap.Receipts = map[string][]byte{}
		for i := range n {
			data := permanent
			if i%10 == 0 {
				data = temporary
			}
			snap.Receipts[fmt.Sprintf(".backflow/receipts/prod-us-east/redis/r%04d.yaml", i)] = data
		}
		b.Run(fmt.Sprintf("receipts=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				res := plan.Plan(nil, nil, snap, now)
				if len(res.Expiries) != n/10 {
					b.Fatalf("%d expiries, want %d", len(res.Expiries), n/10)
				}
			}
		})
		b.Run(fmt.Sprintf("receipts=%d/none", n), func(b *testing.B) {
			none := snap
			none.Receipts = nil
			b.ReportAllocs()
			for b.Loop() {
				plan.Plan(nil, nil, none, now)
			}
		})
	}
}
