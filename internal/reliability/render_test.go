package reliability

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/backflow-dev/backflow/internal/app"
	"github.com/backflow-dev/backflow/internal/bot"
	"github.com/backflow-dev/backflow/internal/forge"
	"github.com/backflow-dev/backflow/internal/forge/forgetest"
	"github.com/backflow-dev/backflow/internal/render"
)

// asCLI makes the test binary the backflow command line (cmd/backflow-core's
// main: render children served first, then the commands), so that the
// render cases run `backflow plan` as a process of its own.
const asCLI = "BACKFLOW_RELIABILITY_CLI"

// peakRSSFile names the file a CLI process writes its own peak RSS to
// (VmHWM): the rusage of its exit counts the render children it waited for.
const peakRSSFile = "BACKFLOW_RELIABILITY_PEAK_RSS"

// writePeakRSS writes this process's peak RSS in bytes where peakRSSFile says.
func writePeakRSS() {
	path := os.Getenv(peakRSSFile)
	status, err := os.ReadFile("/proc/self/status")
	if path == "" || err != nil {
		return
	}
	for line := range strings.Lines(string(status)) {
		if kb, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(kb), " kB"), 10, 64)
			_ = os.WriteFile(path, []byte(strconv.FormatInt(n<<10, 10)), 0o644)
		}
	}
}

// The hostile templates of the findings 5, 6 and 8.
const (
	nestedRanges   = "{{ range until 3000 }}{{ range until 3000 }}{{ range until 3000 }}{{ end }}{{ end }}{{ end }}\n"
	manyConfigMaps = "{{ range $i := until 100000 }}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c{{ $i }}\n{{ end }}\n"
	hugeList       = "{{ $x := until 100000000000 }}\n"
	tplRecursion   = "# {{ tpl .Values.t . }}\n"
	// tplValue is the chart's value t, which renders itself twice.
	tplValue = "t: '{{ tpl .Values.t . }}{{ tpl .Values.t . }}'\n"
)

// planNow is when `backflow plan` plans testdata/render/observation.yaml,
// alice's audit-logged scale of the replicas to 4 in prod-us-east: five
// minutes after it was observed.
const planNow = "2026-06-18T12:05:00Z"

// chartFiles are the test GitOps repository with the prod-us-east unit's
// chart at charts/hostile: the replicas StatefulSet (spec.replicas rendered
// as replicas says, from replica.replicaCount) and the hostile template.
func chartFiles(t testing.TB, replicas, hostile string) map[string]string {
	t.Helper()
	files := gitopsFiles(t)
	files[configPath] = strings.Replace(files[configPath], "chart: {name: bitnami/redis, version: 25.5.3}",
		"chart: {name: hostile, version: 0.1.0, path: charts/hostile}", 1)
	files["charts/hostile/Chart.yaml"] = "apiVersion: v2\nname: hostile\nversion: 0.1.0\n"
	files["charts/hostile/values.yaml"] = tplValue
	files["charts/hostile/templates/replicas.yaml"] = "apiVersion: apps/v1\nkind: StatefulSet\nmetadata:\n  name: redis-replicas\nspec:\n  replicas: " + replicas + "\n"
	if hostile != "" {
		files["charts/hostile/templates/hostile.yaml"] = hostile
	}
	return files
}

const plainReplicas = "{{ .Values.replica.replicaCount }}"

// planRun is one `backflow plan` process's outcome.
type planRun struct {
	took    time.Duration
	exit    int
	peakRSS int64
	// treeRSS is the largest peak RSS among the process and the children
	// it waited for (its render children).
	treeRSS   int64
	outcome   string
	reasons   []string
	timedOut  bool
	stderrMsg string
}

// backflowPlan runs `backflow plan` on a checkout of files as a process of
// its own, killed after limit.
func backflowPlan(t *testing.T, files map[string]string, limit time.Duration) planRun {
	t.Helper()
	dir := t.TempDir()
	repo, obs := filepath.Join(dir, "repo"), filepath.Join(dir, "observations.yaml")
	forgetest.WriteFiles(t, repo, files)
	observation, err := os.ReadFile(filepath.Join("testdata", "render", "observation.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(obs, observation, 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "plan", "--repo", repo, "--observations", obs, "--now", planNow, "--format", "json")
	rss := filepath.Join(dir, "peak-rss")
	cmd.Env = append(os.Environ(), asCLI+"=1", peakRSSFile+"="+rss)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err = cmd.Run()
	r := planRun{took: time.Since(start), exit: cmd.ProcessState.ExitCode(), timedOut: ctx.Err() != nil, stderrMsg: stderr.String()}
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		r.treeRSS = ru.Maxrss << 10
	}
	if data, err := os.ReadFile(rss); err == nil {
		r.peakRSS, _ = strconv.ParseInt(string(data), 10, 64)
	}
	if r.timedOut {
		return r
	}
	var out struct {
		Decisions []struct {
			Object  string   `json:"object"`
			Outcome string   `json:"outcome"`
			Reasons []string `json:"reasons"`
		} `json:"decisions"`
	}
	if jerr := json.Unmarshal([]byte(stdout.String()), &out); jerr != nil || len(out.Decisions) != 1 {
		t.Errorf("backflow plan: %v, %v: %d decisions in %q; stderr %s", err, jerr, len(out.Decisions), stdout.String(), stderr.String())
		return r
	}
	r.outcome, r.reasons = out.Decisions[0].Outcome, out.Decisions[0].Reasons
	return r
}

// deniedFor says a run denied naming the chart and a reason containing want.
func (r planRun) deniedFor(want string) bool {
	if r.outcome != "deny" {
		return false
	}
	for _, reason := range r.reasons {
		if strings.Contains(reason, "chart hostile") && strings.Contains(reason, want) {
			return true
		}
	}
	return false
}

// Case 31: a template of three nested `range until 3000` (2.7*10^10
// iterations). Helm's engine never checks its context, so the deadline was
// not enforced: `backflow plan` still rendered at 60 s and a serve cycle hung.
// Now the child rendering it is killed at the deadline: the decision is
// denied naming the chart and the deadline, within the deadline and a small
// slack, and the next serve cycle renders (and denies) again.
func TestCase31RenderDeadlineEnforced(t *testing.T) {
	const slack = 10 * time.Second
	files := chartFiles(t, plainReplicas, nestedRanges)
	// serve's cycles: the bot with a render deadline of 2 s, cycled twice.
	deadline := 2 * time.Second
	e := newHubEnv(t, nil)
	repo := e.createRepo("render-deadline", files)
	src := &staticSource{}
	src.set(replicas(usEastNode, 4, e.clock.Now()))
	b, err := bot.New(bot.Options{Forge: e.adapter(nil), Sources: []bot.Source{src}, Now: e.clock.Now, Logger: e.log, BotUserID: 4242,
		CommitMethod: forge.CommitGit, CommitKey: []byte("reliability commit key"), Repositories: []string{repo.FullName()},
		Renderer: app.RendererWith(nil, render.Bounds{Timeout: deadline})})
	if err != nil {
		t.Fatal(err)
	}
	var slowest time.Duration
	cycles, denied := 0, 0
	for range 2 {
		done := make(chan *bot.Report, 1)
		start := time.Now()
		go func() { done <- e.cycle(b) }()
		select {
		case rep := <-done:
			slowest = max(slowest, time.Since(start))
			cycles++
			for _, rr := range rep.Repos {
				for _, d := range rr.Decisions {
					if d.Outcome == "deny" && strings.Contains(strings.Join(d.Reasons, " "), "chart hostile: rendering stopped at its deadline of 2s") {
						denied++
					}
				}
			}
		case <-time.After(deadline + slack):
			t.Fatalf("a serve cycle is still rendering %s after it started, past the render deadline of %s", deadline+slack, deadline)
		}
	}
	if cycles != 2 || denied != 2 || slowest > deadline+slack {
		t.Errorf("cycles %d, denials naming the deadline %d, slowest cycle %s: want 2, 2, under %s", cycles, denied, slowest, deadline+slack)
	}
	kv := []any{"cycle_deadline_s", deadline.Seconds(), "slowest_cycle_s", round(slowest.Seconds()), "cycles_completed", cycles, "denials_naming_the_deadline", denied}
	if *fullRun {
		// backflow plan, as the issue ran it: the documented 30 s.
		run := backflowPlan(t, files, render.DefaultTimeout+slack)
		// The render timeout stops it: the parent's deadline, or the CPU
		// limit the child carries as a backstop, whichever comes first.
		byTimeout := run.deniedFor("rendering stopped at its deadline of 30s") ||
			run.deniedFor("CPU limit of 30s on each processor (render timeout)")
		if run.timedOut || !byTimeout || run.took > render.DefaultTimeout+slack {
			t.Errorf("backflow plan: after %s (killed: %v): %s %q; stderr %s", run.took, run.timedOut, run.outcome, run.reasons, run.stderrMsg)
		}
		kv = append(kv, "plan_deadline_s", render.DefaultTimeout.Seconds(), "plan_denied_after_s", round(run.took.Seconds()))
	}
	report(t, "31", "render-deadline-enforced", kv...)
}

// Case 32: a 122-byte template rendering 100,000 ConfigMaps (670-700 MB
// before), `until 100000000000` (a crash: fatal error: out of memory) and
// tpl recursion (806 MB): each `backflow plan` is denied, naming the chart
// and the bound, with no crash, and the planning process's own peak RSS
// stays small: the rendering ran, and died, in its child.
func TestCase32RenderOutputBounded(t *testing.T) {
	inputs := []struct{ name, template, want string }{
		{"100k-configmaps", manyConfigMaps, "more than 10000 documents (object bound)"},
		{"until-1e11", hugeList, "passed its memory budget of 512 MiB"},
		{"tpl-recursion", tplRecursion, "rendering stopped"},
	}
	denied, crashes := 0, 0
	var peak, tree int64
	kv := []any{}
	for _, in := range inputs {
		run := backflowPlan(t, chartFiles(t, plainReplicas, in.template), 2*render.DefaultTimeout)
		peak, tree = max(peak, run.peakRSS), max(tree, run.treeRSS)
		switch {
		case run.timedOut || run.outcome == "":
			crashes++
			t.Errorf("%s: backflow plan exit %d after %s (killed %v): %s", in.name, run.exit, run.took, run.timedOut, run.stderrMsg)
		case run.deniedFor(in.want):
			denied++
		default:
			t.Errorf("%s: %s %q, want a deny naming the chart and %q", in.name, run.outcome, run.reasons, in.want)
		}
		kv = append(kv, in.name+"_s", round(run.took.Seconds()))
	}
	// The planning process holds no rendering; its child holds at most its
	// budget and the address space headroom (the default 512 MiB and 256).
	const planCeiling, childCeiling = 200 << 20, 1 << 30
	if peak == 0 || peak > planCeiling || tree > childCeiling {
		t.Errorf("the planning process peaked at %d bytes (want 1 to %d), its children at %d (want at most %d)", peak, planCeiling, tree, childCeiling)
	}
	report(t, "32", "render-output-bounded", append([]any{"denied", fmt.Sprintf("%d/%d", denied, len(inputs)), "crashes", crashes,
		"plan_peak_rss_bytes", peak, "render_child_peak_rss_bytes", tree}, kv...)...)
}

// Case 33: a chart whose spec.replicas (the accepted field) adds randInt 0 2
// to the value: 2 allows and 6 denies in 8 runs of the same inputs before.
// Now every run refuses the chart as nondeterministic, naming the field.
func TestCase33NondeterministicChartRefused(t *testing.T) {
	files := chartFiles(t, "{{ add .Values.replica.replicaCount (randInt 0 2) }}", "")
	const field = "nondeterministic chart: two renderings of the same values differ (random or clock functions), so no decision can rest on them: apps/v1|StatefulSet|redis|redis-replicas spec.replicas"
	outcomes := map[string]int{}
	naming := 0
	runs := 8
	for range runs {
		run := backflowPlan(t, files, 2*render.DefaultTimeout)
		outcomes[run.outcome]++
		if run.deniedFor(field) {
			naming++
		}
	}
	if len(outcomes) != 1 || naming != runs {
		t.Errorf("outcomes %v, %d of %d denials naming the field: want one outcome, deny, naming it every run", outcomes, naming, runs)
	}
	report(t, "33", "nondeterministic-chart-refused", "runs", runs, "distinct_decisions", len(outcomes), "refusals_naming_the_field", fmt.Sprintf("%d/%d", naming, runs))
}

func round(s float64) float64 { return float64(int(s*1000+0.5)) / 1000 }
