package reliability

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"

	"github.com/backflow-dev/backflow/internal/app"
	"github.com/backflow-dev/backflow/internal/bot"
	"github.com/backflow-dev/backflow/internal/botconfig"
	"github.com/backflow-dev/backflow/internal/forge"
	"github.com/backflow-dev/backflow/internal/hold"
	"github.com/backflow-dev/backflow/internal/observe"
	"github.com/backflow-dev/backflow/internal/observe/source"
)

// BenchmarkHoldLatency is the time from a person's live change to its hold
// placed, with 1,000 watched objects, through the path serve takes: the
// kube watch (client-go's fake dynamic client) delivers alice's scale of
// redis-replicas, attributed by the audit log, and a cycle of the bot on
// the local hub decides the hold and places it through the kube hold port
// (app's, over the watch). Each iteration is a new proposal (3 -> 4, 5,
// ...); the person's write replaces the object, the previous hold with
// it. The hold is placed when the API server receives its patch; the
// median and p99 over the iterations are reported.
func BenchmarkHoldLatency(b *testing.B) {
	const watched = 1000
	files := holdFiles(b)
	reviewOnly(files)
	e := newHubEnv(b, files)
	const uid = "7b1f6c1e-0d1a-4a43-9a1e-4d7f1c2b9a01"
	objs := []runtime.Object{liveSts(b, "redis-replicas", uid, "204", 3, "")}
	for i := range watched - 1 {
		objs = append(objs, liveSts(b, fmt.Sprintf("redis-bench-%04d", i), fmt.Sprintf("u-bench-%d", i), "100", 3, ""))
	}
	cluster := newWatchedCluster(b, objs...)
	cluster.changed = make(chan observe.ObjectKey, 4*watched) // the first list tells of every object
	var placed atomic.Int64
	cluster.client.PrependReactor("patch", "statefulsets", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if p, ok := a.(k8stesting.PatchAction); ok && bytes.Contains(p.GetPatch(), []byte(`"`+hold.Annotation+`"`)) &&
			bytes.Contains(p.GetPatch(), []byte(`"`+hold.Disabled+`"`)) {
			placed.Store(time.Now().UnixNano())
		}
		return false, nil, nil // the tracker applies it
	})
	watch := cluster.watch(nil, e.clock.Now)
	audit := &source.AuditLog{}
	watch.Audit = audit
	holds := (&app.Wiring{Config: &botconfig.Config{Hold: botconfig.HoldConfig{Enabled: true}}}).HoldPort([]bot.Source{watch})
	if holds == nil {
		b.Fatal("no hold port over the kube watch")
	}
	bt, err := bot.New(bot.Options{Forge: e.adapter(nil), Sources: []bot.Source{watch}, Now: e.clock.Now, Logger: e.log,
		BotUserID: 4242, CommitMethod: forge.CommitGit, CommitKey: []byte("reliability commit key"),
		Renderer: app.Renderer, Holds: holds})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	if res := watch.Read(ctx); len(res.Errors) > 0 || len(res.Observations) != watched {
		b.Fatalf("the first list: %d observations, errors %v", len(res.Observations), res.Errors)
	}
	drain := func() {
		for {
			select {
			case <-cluster.changed:
			default:
				return
			}
		}
	}
	drain()
	rv := 204
	var lat []time.Duration
	b.ResetTimer()
	for i := range b.N {
		b.StopTimer()
		e.clock.Advance(time.Minute)
		at := e.clock.Now()
		rv++
		sts := liveSts(b, "redis-replicas", uid, strconv.Itoa(rv), int64(4+i), at.UTC().Format(time.RFC3339))
		audit.Add(scaleEvent(b, "alice-"+strconv.Itoa(rv), "alice", 4+i, at))
		drain()
		b.StartTimer()
		start := time.Now()
		if _, err := cluster.client.Resource(stsGVR).Namespace("redis").Update(ctx, sts, metav1.UpdateOptions{}); err != nil {
			b.Fatal(err)
		}
		for k := range cluster.changed {
			if k.Name == "redis-replicas" {
				break
			}
		}
		rep, err := bt.Cycle(ctx)
		b.StopTimer()
		if at := time.Unix(0, placed.Load()); err != nil || at.Before(start) {
			b.Fatalf("iteration %d: no hold placed (%v):\n%s", i, err, rep.Text())
		} else {
			lat = append(lat, at.Sub(start))
		}
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "median-ms")
	b.ReportMetric(float64(lat[(len(lat)*99+99)/100-1].Microseconds())/1000, "p99-ms") // nearest rank
	b.ReportMetric(watched, "watched-objects")
}
