package render

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// hostileChart is a chart of one template (and values, when given).
func hostileChart(t testing.TB, template, values string) *Chart {
	t.Helper()
	files := map[string][]byte{
		"Chart.yaml":          []byte("apiVersion: v2\nname: hostile\nversion: 0.1.0\n"),
		"templates/main.yaml": []byte(template),
	}
	if values != "" {
		files["values.yaml"] = []byte(values)
	}
	c, err := LoadFiles("chart hostile", files)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// The inputs of the findings 5 and 6, as small as they were.
const (
	nestedRanges   = "{{ range until 3000 }}{{ range until 3000 }}{{ range until 3000 }}{{ end }}{{ end }}{{ end }}\n"
	manyConfigMaps = "{{ range $i := until 100000 }}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c{{ $i }}\n{{ end }}\n"
	hugeList       = "{{ $x := until 100000000000 }}\n"
	tplRecursion   = "a: {{ tpl .Values.t . }}\n"
	tplValues      = "t: '{{ tpl .Values.t . }}{{ tpl .Values.t . }}'\n"
	// aliases renders 60 KB that decode, through 25 YAML aliases, to 1.5 MB.
	aliases = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\nx:\n  a: &a {{ repeat 60000 \"x\" }}\n  b: [" +
		"*a,*a,*a,*a,*a,*a,*a,*a,*a,*a,*a,*a,*a,*a,*a,*a,*a,*a,*a,*a,*a,*a,*a,*a,*a]\n"
)

func TestRenderBounds(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name, why        string
		template, values string
		bounds           Bounds
		// want is a substring of the error, which must wrap ErrBound.
		want string
	}{
		{"deadline", "Helm's engine never checks its context: the child is killed at the deadline",
			nestedRanges, "", Bounds{Timeout: 2 * time.Second}, "rendering stopped at its deadline of 2s"},
		{"objects", "100,000 ConfigMaps from a 122-byte template stop at the object bound, not at 700 MB",
			manyConfigMaps, "", Bounds{}, "more than 10000 documents (object bound)"},
		{"output bytes", "the rendered bytes are bounded before they are split and decoded",
			"{{ range until 40000 }}# a comment line of forty bytes.........\n{{ end }}", "", Bounds{MaxOutputBytes: 1 << 20}, "more than 1 MiB"},
		{"aliases", "YAML aliases make the decoded objects larger than the rendered bytes: the reply is bounded too",
			aliases, "", Bounds{MaxOutputBytes: 64 << 10}, "take more than 1179648 bytes as JSON (output bound)"},
		{"memory", "a list of 10^11 integers fails an allocation in the child, which dies alone",
			hugeList, "", Bounds{MaxMemory: 256 << 20}, "passed its memory budget of 256 MiB"},
		{"tpl recursion", "tpl that renders itself twice per level grows until the memory budget (or the deadline) stops it",
			tplRecursion, tplValues, Bounds{MaxMemory: 256 << 20, Timeout: 20 * time.Second}, "rendering stopped"},
	}
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			c := hostileChart(t, tt.template, tt.values)
			start := time.Now()
			_, err := c.Render(ctx, Options{Release: "r", Namespace: "ns", Bounds: tt.bounds}, nil)
			took := time.Since(start)
			if !errors.Is(err, ErrBound) || !strings.Contains(err.Error(), tt.want) || !strings.HasPrefix(err.Error(), "chart hostile: ") {
				t.Fatalf("%s: err %v, want one wrapping ErrBound, naming the chart, containing %q", tt.why, err, tt.want)
			}
			if limit := tt.bounds.orDefaults().Timeout + 5*time.Second; took > limit {
				t.Errorf("%s: stopped after %s, more than the deadline and its slack (%s)", tt.why, took, limit)
			}
			t.Logf("%s: %v after %s", tt.name, err, took.Round(time.Millisecond))
		})
	}
	// why: a killed or dead child is replaced, so the next rendering of a
	// good chart succeeds.
	c := hostileChart(t, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  count: \"{{ .Values.count }}\"\n", "count: 1\n")
	r, err := c.Render(ctx, Options{Release: "r", Namespace: "ns"}, nil)
	if err != nil || r.Objects["v1|ConfigMap|ns|a"]["data"].(map[string]any)["count"] != "1" {
		t.Fatalf("after the hostile charts: %v, %+v", err, r)
	}
}

func TestRenderRefusesNondeterministic(t *testing.T) {
	// why: a randInt in a rendered field gave 2 allows and 6 denies in 8
	// runs; the chart is refused, naming the field, the same way every run.
	c := hostileChart(t, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  count: \"{{ add .Values.count (randInt 0 2) }}\"\n  fixed: \"{{ randInt 5 6 }}\"\n", "count: 1\n")
	const want = "chart hostile: nondeterministic chart: two renderings of the same values differ (random or clock functions), so no decision can rest on them: v1|ConfigMap|ns|a data.count"
	for i := range 8 {
		_, err := c.Render(context.Background(), Options{Release: "r", Namespace: "ns"}, nil)
		if !errors.Is(err, ErrNondeterministic) || err.Error() != want {
			t.Fatalf("run %d: err %v, want %q", i, err, want)
		}
	}
	// why: random functions whose outcome is fixed (a range of one value),
	// or that reach no object of the manifest (a hook), are no reason to
	// refuse a chart.
	c = hostileChart(t, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  fixed: \"{{ randInt 5 6 }}\"\n---\n"+
		"apiVersion: v1\nkind: Pod\nmetadata:\n  name: test-{{ randAlphaNum 5 | lower }}\n  annotations:\n    helm.sh/hook: test\n", "")
	if _, err := c.Render(context.Background(), Options{Release: "r", Namespace: "ns"}, nil); err != nil {
		t.Fatal(err)
	}
}

func TestRenderOutsideAServingChild(t *testing.T) {
	// why: a process started as a render child whose main does not serve
	// must not start children of its own (each would run the binary again).
	t.Setenv(childEnv, "1")
	_, err := hostileChart(t, "", "").Render(context.Background(), Options{}, nil)
	if err == nil || !strings.Contains(err.Error(), "does not serve renderings") {
		t.Fatalf("err %v", err)
	}
}

func TestChildrenAreKeptForABatch(t *testing.T) {
	c := hostileChart(t, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  count: \"{{ .Values.count }}\"\n", "count: 1\n")
	render := func(ctx context.Context, count int) error {
		r, err := c.Render(ctx, Options{Release: "r", Namespace: "ns"}, []map[string]any{{"count": count}})
		if err == nil && r.Objects["v1|ConfigMap|ns|a"]["data"].(map[string]any)["count"] != fmt.Sprint(count) {
			err = fmt.Errorf("rendered %v for %d", r.Objects, count)
		}
		return err
	}
	// why: a batch of renderings pays one child's start, not one each.
	children.drain()
	before := children.started.Load()
	for i := range 5 {
		if err := render(context.Background(), i); err != nil {
			t.Fatal(err)
		}
	}
	if n := children.started.Load() - before; n != 1 {
		t.Errorf("5 renderings in a row started %d children, want 1", n)
	}
	// why: renderings at once each take a child of their own, and none
	// sees another's values.
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for i := range 8 {
		wg.Go(func() { errs <- render(context.Background(), 100+i) })
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	// why: the caller's context ends a rendering as the deadline does,
	// and the child with it.
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if _, err := hostileChart(t, nestedRanges, "").Render(ctx, Options{}, nil); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("a rendering past its context's end: %v", err)
	}
	if err := render(context.Background(), 7); err != nil {
		t.Fatal(err)
	}
	// why: a child the system killed while idle (its memory, an operator)
	// is not handed the next rendering.
	children.mu.Lock()
	var idle []*child
	for _, list := range children.idle {
		idle = append(idle, list...)
	}
	children.mu.Unlock()
	for _, ch := range idle {
		_ = ch.cmd.Process.Kill()
		<-ch.exited
	}
	if err := render(context.Background(), 8); err != nil || len(idle) == 0 {
		t.Fatalf("after %d idle children were killed: %v", len(idle), err)
	}
}

// TestMemoryDeath reads a child's dying words as the Go runtime writes
// them (runtime/malloc.go, mem_linux.go, os_linux.go, runtime/cgo's
// gcc_libinit.c, stack.go) under its address space limit: each is its
// memory bound, with how it was passed; other deaths are not.
func TestMemoryDeath(t *testing.T) {
	b := Bounds{MaxMemory: 512 << 20}
	for _, tc := range []struct{ stderr, how string }{
		{"fatal error: runtime: out of memory\n", "an allocation failed"},
		{"runtime: out of memory: cannot allocate 4194304-byte block (67108864 in use)\n", "an allocation failed"},
		{"runtime: mmap(0xc000000000, 67108864) failed with errno=12\nfatal error: runtime: cannot allocate memory\n",
			"an allocation failed"},
		{"==1234==ERROR: ThreadSanitizer failed to allocate 0x4000 (16384) bytes\n", "an allocation failed"},
		{"runtime/cgo: pthread_create failed: Resource temporarily unavailable\nSIGABRT: abort\n",
			"no thread could be started within its address space"},
		{"runtime: failed to create new OS thread (have 7 already; errno=11)\n" +
			"runtime: may need to increase max user processes (ulimit -u)\nfatal error: newosproc\n",
			"no thread could be started within its address space"},
		{"runtime: goroutine stack exceeds 1000000000-byte limit\nfatal error: stack overflow\n",
			"the template recursion overflowed its stack"},
	} {
		err := memoryDeath(b, tc.stderr)
		if !errors.Is(err, ErrBound) || !strings.Contains(err.Error(), "memory budget of 512 MiB ("+tc.how+")") {
			t.Errorf("%q: %v, want the memory bound passed because %s", tc.stderr, err, tc.how)
		}
	}
	for _, other := range []string{"", "panic: template: main.yaml:1: unexpected EOF\n", "signal: killed\n"} {
		if err := memoryDeath(b, other); err != nil {
			t.Errorf("%q: %v, want no memory bound", other, err)
		}
	}
}
