package plan

import (
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	yaml "go.yaml.in/yaml/v3"

	"github.com/backflow-dev/backflow/internal/cputime"
	"github.com/backflow-dev/backflow/internal/observe"
	"github.com/backflow-dev/backflow/internal/policy"
	"github.com/backflow-dev/backflow/internal/repoconfig"
	"github.com/backflow-dev/backflow/internal/values"
)

// benchFields is the number of fields observed on each unit's object: at
// 1,000 units, 10,000 observed fields in all.
const benchFields = 10

// benchSnapshot is a repository of benchUnits units in one environment,
// each with its own values file, and a policy whose entries map benchFields
// fields on every unit's Deployment through object globs.
func benchSnapshot(b *testing.B, benchUnits int) Snapshot {
	b.Helper()
	var cfg, pol strings.Builder
	cfg.WriteString("version: 1\npolicy: .github/policy.yaml\nenvironments:\n  prod:\n    clusters: [prod-1]\nunits:\n")
	files := map[string][]byte{}
	for i := range benchUnits {
		name := fmt.Sprintf("app-%04d", i)
		path := "envs/prod/" + name + "/values.yaml"
		fmt.Fprintf(&cfg, "  - name: %s\n    environment: prod\n    valuesFiles: [%s]\n    objects: [\"apps/v1|Deployment|%s|*\"]\n", name, path, name)
		var v strings.Builder
		fmt.Fprintf(&v, "# %s values\nimage:\n  repository: example/%s\n  tag: \"1.0\"\nsettings:\n", name, name)
		for f := range benchFields {
			fmt.Fprintf(&v, "  f%d: 1 # tuned by hand\n", f)
		}
		files[path] = []byte(v.String())
	}
	cfg.WriteString("roles:\n  platform-sre:\n    groups: [sre]\n")
	pol.WriteString("apiVersion: backflow.dev/v1alpha1\nkind: ReverseReconcilePolicy\nmetadata:\n  name: bench\nspec:\n  default: deny\n  rules:\n    - role: platform-sre\n      mayAccept:\n")
	for f := range benchFields {
		fmt.Fprintf(&pol, "        - valuePath: settings.f%d\n          field: spec.f%d\n          objects: [\"apps/v1|Deployment|*|web\"]\n          environments: [\"prod\"]\n          maximum: 100\n", f, f)
	}
	c, err := repoconfig.Parse(repoconfig.Path, []byte(cfg.String()))
	if err != nil {
		b.Fatal(err)
	}
	p, err := policy.Parse(".github/policy.yaml", []byte(pol.String()))
	if err != nil {
		b.Fatal(err)
	}
	return Snapshot{Config: c, Policy: p, PolicyPath: ".github/policy.yaml", Files: files}
}

// benchObservations observes every unit's web Deployment with benchFields
// fields: seven changed and three equal to desired; one unit in five was
// changed by someone without a role, so it is denied.
func benchObservations(benchUnits int) []observe.Observation {
	at := time.Date(2026, 6, 18, 12, 0, 0, 0, time.UTC)
	obs := make([]observe.Observation, 0, benchUnits)
	for i := range benchUnits {
		actor, groups := "alice", []string{"sre"}
		if i%5 == 0 {
			actor, groups = "bob", nil
		}
		o := observe.Observation{
			Source: observe.SourceKubernetes, Cluster: "prod-1", ObservedAt: at,
			Object: observe.ObjectKey{APIVersion: "apps/v1", Kind: "Deployment", Namespace: fmt.Sprintf("app-%04d", i), Name: "web"},
			Change: observe.Change{Actor: actor, Groups: groups, Attribution: observe.AttributionAuditLog},
		}
		for f := range benchFields {
			live := 2
			if f >= 7 {
				live = 1
			}
			o.Fields = append(o.Fields, observe.Field{Path: fmt.Sprintf("spec.f%d", f), Live: live, Desired: 1, HasDesired: true})
		}
		obs = append(obs, o)
	}
	return obs
}

// BenchmarkPlan plans 100, 1,000 and 5,000 units with benchFields observed
// fields each (10,000 at 1,000 units): four in five units are allowed (each
// with its edit, read-back and verified receipt), the rest denied. Each
// size is measured two ways:
//
//   - cold: every plan gets a fresh values.Readings, as a one-off
//     `backflow plan` does: every values file is read, edited and verified
//     from nothing.
//   - steady: one values.Readings, bounded as the bot's is, is kept across
//     plans and the inputs do not change between them, as in `backflow
//     serve` while a drift waits for its pull request: each tick plans the
//     same snapshot and the same observations again, and what the Readings
//     remembers from the tick before (Helm's readings of the files, the
//     verified edits) is not made again. Everything else is.
//
// The target at 1,000 units is under 100 ms and 50 MB a plan, and time and
// bytes grow linearly with the units.
func BenchmarkPlan(b *testing.B) {
	for _, n := range []int{100, 1000, 5000} {
		for _, mode := range []string{"cold", "steady"} {
			b.Run(fmt.Sprintf("units=%d/%s", n, mode), func(b *testing.B) {
				snap := benchSnapshot(b, n)
				obs := benchObservations(n)
				now := time.Date(2026, 6, 18, 12, 5, 0, 0, time.UTC)
				opts := func() Options { return Options{} }
				if mode == "steady" {
					// The bot's budget (bot.PlanReadingsBudget).
					kept := values.NewBoundedReadings(64 << 20)
					opts = func() Options { return Options{Readings: kept} }
				}
				res := PlanWith(obs, nil, snap, now, opts())
				allows := 0
				for _, d := range res.Decisions {
					if d.Outcome == Allow {
						allows++
					}
				}
				if allows != n*4/5 || len(res.WriteBacks) != allows || len(res.Errors) != 0 {
					b.Fatalf("%d allows, %d write-backs, errors %q", allows, len(res.WriteBacks), res.Errors)
				}
				b.ReportAllocs()
				defer cputime.Report(b, cputime.Now(b))
				for b.Loop() {
					PlanWith(obs, nil, snap, now, opts())
				}
			})
		}
	}
}

// BenchmarkProofFloor is the least a cold plan of BenchmarkPlan's fleet
// must do for its edits, and nothing else: for each allowed unit, the four
// readings that prove its edit (yaml.v3 and Helm's reader, of the file and
// of the edited file, as the editor makes them: values.HelmUnmarshal and
// yaml.v3's Unmarshal into a node), on as many goroutines as the planner
// uses. No deciding, locating, splicing, comparing or receipts. A cold
// plan cannot cost less than this while every edit is verified by both
// readers, so its figures bound what the planner's own work can reach.
func BenchmarkProofFloor(b *testing.B) {
	for _, n := range []int{100, 1000, 5000} {
		b.Run(fmt.Sprintf("units=%d", n), func(b *testing.B) {
			snap := benchSnapshot(b, n)
			res := Plan(benchObservations(n), nil, snap, time.Date(2026, 6, 18, 12, 5, 0, 0, time.UTC))
			var docs [][]byte
			for _, wb := range res.WriteBacks {
				for _, f := range wb.Files {
					docs = append(docs, snap.Files[f.Path], f.Data)
				}
			}
			if len(docs) != 2*n*4/5 {
				b.Fatalf("%d files to read, want %d", len(docs), 2*n*4/5)
			}
			workers := runtime.GOMAXPROCS(0)
			b.ReportAllocs()
			defer cputime.Report(b, cputime.Now(b))
			for b.Loop() {
				var wg sync.WaitGroup
				next := make(chan []byte)
				for range workers {
					wg.Go(func() {
						for doc := range next {
							var node yaml.Node
							if err := yaml.Unmarshal(doc, &node); err != nil {
								b.Error(err)
							}
							if _, err := values.HelmUnmarshal(doc); err != nil {
								b.Error(err)
							}
						}
					})
				}
				for _, doc := range docs {
					next <- doc
				}
				close(next)
				wg.Wait()
			}
		})
	}
}
