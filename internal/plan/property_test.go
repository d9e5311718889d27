package plan

import (
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/backflow-dev/backflow/internal/helmvalues"
	"github.com/backflow-dev/backflow/internal/observe"
	"github.com/backflow-dev/backflow/internal/values"
)

// TestEveryAllowVerifies plans random observations (objects, fields, typed
// and textual values, actors, attributions, clusters, modes) and checks the
// planner's promises on every result: each allow has a receipt that passes
// the verifier and sits in its unit's write-back, with every change
// authorized; each deny says why; each write-back's files still parse and
// hold the allowed values.
func TestEveryAllowVerifies(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	objects := []string{"redis-replicas", "redis-master", "redis-sentinel"}
	clusters := []string{"use-1", "use-2", "euw-1", "unknown-1"}
	actors := []string{"alice", "alice", "alice", "dora", "bob", ""}
	paths := []string{"spec.replicas", "spec.template.metadata.labels.version", "spec.minReadySeconds"}
	modes := []string{"", "", "mode: observe-only\n", "paused: true\n", "requireClusterAgreement: true\n"}
	value := func() (any, bool) {
		switch rng.IntN(5) {
		case 0:
			return strconv.Itoa(rng.IntN(13)), true // cub-scout text
		case 1:
			return "7." + strconv.Itoa(rng.IntN(5)), false
		case 2:
			return float64(rng.IntN(13)), false
		default:
			return rng.IntN(13), false
		}
	}
	allows := 0
	for i := range 300 {
		snap := snapshot(t, testConfig+modes[rng.IntN(len(modes))])
		var obs []observe.Observation
		for range 1 + rng.IntN(6) {
			o := byAlice(clusters[rng.IntN(len(clusters))], objects[rng.IntN(len(objects))], t0.Add(time.Duration(rng.IntN(3))*time.Minute))
			o.Change.Actor = actors[rng.IntN(len(actors))]
			o.Change.Attribution = observe.AttributionAuditLog
			if rng.IntN(3) == 0 {
				o.Change.Attribution = observe.Attributions[rng.IntN(len(observe.Attributions))]
			}
			for _, p := range paths {
				if rng.IntN(2) == 0 {
					continue
				}
				live, textual := value()
				desired, _ := value()
				if textual {
					desired = strconv.Itoa(rng.IntN(5))
				}
				o.Fields = append(o.Fields, observe.Field{Path: p, Live: live, Desired: desired, HasDesired: rng.IntN(3) == 0, Textual: textual})
			}
			obs = append(obs, o)
		}
		res := Plan(obs, nil, snap, testNow)
		checkAllows(t, res, snap)
		for _, d := range res.Decisions {
			switch d.Outcome {
			case Allow:
				allows++
				for _, c := range d.Changes {
					if !c.Authorized {
						t.Errorf("case %d: %s allowed with unauthorized %s", i, d.Object, c.Field)
					}
				}
			case Deny, Stale, Unmapped:
				if len(d.Reasons) == 0 {
					t.Errorf("case %d: %s %s without a reason", i, d.Object, d.Outcome)
				}
			}
		}
		for _, wb := range res.WriteBacks {
			for _, f := range wb.Files {
				vf, err := values.Parse(f.Data, values.Options{})
				if err != nil {
					t.Errorf("case %d: %s does not parse after the write-back: %v", i, f.Path, err)
					continue
				}
				for _, d := range res.Decisions {
					if d.WriteBack != wb.Branch {
						continue
					}
					for _, c := range d.Changes {
						if c.ValuesFile != f.Path {
							continue
						}
						if got, err := vf.Get(c.ValuePath); err != nil || !values.Equal(helmvalues.Plain(got), c.To) {
							t.Errorf("case %d: %s holds %v at %s, want %v", i, f.Path, got, c.ValuePath, c.To)
						}
					}
				}
			}
		}
	}
	t.Logf("%d allows in 300 random plans", allows)
	if allows < 20 {
		t.Errorf("only %d allows in 300 random plans: the generator no longer exercises allows", allows)
	}
}
