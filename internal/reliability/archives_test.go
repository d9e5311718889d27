package reliability

import (
	"fmt"
	"maps"
	"runtime"
	"runtime/metrics"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/backflow-dev/backflow/internal/app"
	"github.com/backflow-dev/backflow/internal/plan"
)

// peakHeap runs f and returns how far the heap's objects grew above where
// they were when it started, sampled every millisecond while f runs.
func peakHeap(f func()) uint64 {
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	read := func() uint64 {
		metrics.Read(sample)
		return sample[0].Value.Uint64()
	}
	runtime.GC()
	base := read()
	peak := base
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				peak = max(peak, read())
			}
		}
	}()
	f()
	close(stop)
	wg.Wait()
	peak = max(peak, read())
	return peak - base
}

// Case 29: dependency archives in a chart in the repository that unpack to
// far more than the chart bound (five of them, 20 MiB each in the short
// form and 99 MB each, as found, in the full form; and one inside another,
// unpacking to 80 MiB or 99 MB) are refused by the render witness: the
// decision is denied with an error naming the chart, the archive and the
// bound, no pull request is opened, and the heap grows by a small part of
// what the archives unpack to. The same chart without them is witnessed
// and allowed (the control).
func TestCase29ArchivesBoundedUncompressed(t *testing.T) {
	each := count(20<<20, 99_000_000)
	zeros := strings.Repeat("\x00", each)
	// A dependency with no template: all it holds is its bytes.
	sub := func(name string, extra map[string]string) map[string]string {
		files := map[string]string{"Chart.yaml": "apiVersion: v2\nname: " + name + "\nversion: 1.0.0\n"}
		maps.Copy(files, extra)
		return files
	}
	five := map[string]string{}
	compressed := 0
	for _, n := range []string{"a", "b", "c", "d", "e"} {
		five["charts/"+n+"-1.0.0.tgz"] = tgz(t, n, sub(n, map[string]string{"files/zeros": zeros}))
		compressed = max(compressed, len(five["charts/"+n+"-1.0.0.tgz"]))
	}
	nested := map[string]string{"charts/outer-1.0.0.tgz": tgz(t, "outer", sub("outer", map[string]string{
		"charts/inner-1.0.0.tgz": tgz(t, "inner", sub("inner", map[string]string{"files/zeros": strings.Repeat("\x00", max(each, 80<<20))})),
	}))}
	refused, named := 0, 0
	var peak uint64
	for _, tc := range []struct {
		name, archive string
		extra         map[string]string
	}{
		{"five archives", "charts/d-1.0.0.tgz", five},
		{"an archive in an archive", "charts/outer-1.0.0.tgz: charts/inner-1.0.0.tgz", nested},
	} {
		if each > 20<<20 {
			tc.archive = strings.Replace(tc.archive, "charts/d-1.0.0.tgz", "charts/a-1.0.0.tgz", 1)
		}
		files := gitopsFiles(t)
		reviewOnly(files)
		withUnitChart(t, files, "{name: redis, path: charts/redis}", "charts/redis", redisChart("redis", tc.extra))
		e := newHubEnv(t, files)
		var outcome, reasons string
		var prs int
		grew := peakHeap(func() { outcome, reasons, prs = renderDecision(e, app.Renderer) })
		peak = max(peak, grew)
		t.Logf("%s: %s, heap grew %d bytes: %s", tc.name, outcome, grew, reasons)
		if outcome != string(plan.Deny) || prs != 0 {
			t.Errorf("%s: outcome %q, %d pull requests: want a deny and none", tc.name, outcome, prs)
			continue
		}
		refused++
		want := fmt.Sprintf("chart charts/redis: %s: over the chart bound: more than %d bytes", tc.archive, 64<<20)
		if strings.Contains(reasons, want) {
			named++
		} else {
			t.Errorf("%s: the reasons do not say %q:\n%s", tc.name, want, reasons)
		}
		// Refused while measuring: a small part of what the archives
		// unpack to (100 MiB to 495 MB) is ever held.
		if grew > 48<<20 {
			t.Errorf("%s: the heap grew by %d bytes", tc.name, grew)
		}
	}
	files := gitopsFiles(t)
	reviewOnly(files)
	withUnitChart(t, files, "{name: redis, path: charts/redis}", "charts/redis", redisChart("redis", nil))
	control, reasons, _ := renderDecision(newHubEnv(t, files), app.Renderer)
	if control != string(plan.Allow) {
		t.Errorf("the chart without the archives: %q: %s", control, reasons)
	}
	report(t, "29", "archives-bounded-uncompressed", "charts_refused", fmt.Sprintf("%d/2", refused), "errors_naming_archive_and_bound", fmt.Sprintf("%d/2", named),
		"unpacked_bytes_per_archive", each, "largest_archive_bytes", compressed, "peak_heap_growth_bytes", peak, "control_allowed", control == string(plan.Allow))
}
