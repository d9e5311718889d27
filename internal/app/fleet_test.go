package app

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/backflow-dev/backflow/internal/forge/forgetest"
	"github.com/backflow-dev/backflow/internal/localhub"
)

var fleetSizes = flag.String("fleet", "", "run the fleet benchmark for these repository counts, comma-separated (make bench-fleet)")

// TestFleet is the fleet benchmark, not a timed test: it runs only with
// -args -fleet N,... and BACKFLOW_BIN naming a built binary (make
// bench-fleet). For each N it serves N copies of the sample repository
// (each claiming its own namespace's objects) from a local hub, runs
// backflow serve as a process against it, and prints what one scheduled
// tick costs when nothing happened: with webhooks flowing (the state cache
// trusted) and as a revalidation sweep (server.revalidate shorter than the
// tick), then how long an observation pushed for one repository takes to
// become its pull request.
func TestFleet(t *testing.T) {
	if *fleetSizes == "" {
		t.Skip("the fleet benchmark runs with -args -fleet 10,100,1000 (make bench-fleet)")
	}
	bin := os.Getenv("BACKFLOW_BIN")
	if bin == "" {
		t.Fatal("BACKFLOW_BIN must name a built backflow binary (make bench-fleet builds one)")
	}
	var rows []string
	for _, f := range strings.Split(*fleetSizes, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 {
			t.Fatalf("-fleet %q: want repository counts", *fleetSizes)
		}
		rows = append(rows, runFleet(t, bin, n)...)
	}
	fmt.Println("| repositories | tick | requests (total) | rate-counted | per repository | tick wall | serve CPU per tick | serve RSS | push to PR |")
	fmt.Println("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
	for _, r := range rows {
		fmt.Println(r)
	}
}

// fleetFiles are the sample repository's files with its units and its
// policy naming namespace ns instead of redis.
func fleetFiles(t *testing.T, ns string) map[string]string {
	t.Helper()
	files := forgetest.ReadFiles(t, "testdata/serve/gitops")
	for _, f := range []string{".github/backflow.yaml", ".github/reverse-reconcile-policy.yaml"} {
		files[f] = strings.ReplaceAll(files[f], "|redis|redis-", "|"+ns+"|redis-")
	}
	return files
}

// serveProc is backflow serve running as a process, its log lines parsed.
type serveProc struct {
	cmd  *exec.Cmd
	base string
	logs chan map[string]any
}

func startServeProc(t *testing.T, bin, config string) *serveProc {
	t.Helper()
	cmd := exec.Command(bin, "serve", "--config", config)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &serveProc{cmd: cmd, logs: make(chan map[string]any, 1<<16)}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		_ = cmd.Wait()
	})
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 1<<20), 1<<24)
		for sc.Scan() {
			var m map[string]any
			if json.Unmarshal(sc.Bytes(), &m) == nil {
				p.logs <- m
			}
		}
		close(p.logs)
	}()
	m := p.waitFor(t, func(m map[string]any) bool { return m["msg"] == "serving" }, time.Minute)
	p.base = "http://" + m["addr"].(string)
	return p
}

// waitFor reads log lines until match says yes.
func (p *serveProc) waitFor(t *testing.T, match func(map[string]any) bool, limit time.Duration) map[string]any {
	t.Helper()
	timeout := time.After(limit)
	for {
		select {
		case m, ok := <-p.logs:
			if !ok {
				t.Fatal("serve exited")
			}
			if m["level"] == "ERROR" {
				t.Logf("serve: %v", m)
			}
			if match(m) {
				return m
			}
		case <-timeout:
			t.Fatalf("serve: nothing matched within %s", limit)
		}
	}
}

// cycles waits for n "cycle done" lines whose reasons include why.
func (p *serveProc) cycles(t *testing.T, n int, why string, limit time.Duration) {
	t.Helper()
	for range n {
		p.waitFor(t, func(m map[string]any) bool {
			if m["msg"] != "cycle done" && m["msg"] != "cycle failed" {
				return false
			}
			reasons, _ := m["why"].([]any)
			return slices.Contains(reasons, any(why))
		}, limit)
	}
}

// cpu is the process's user and system time so far.
func (p *serveProc) cpu(t *testing.T) time.Duration {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.cmd.Process.Pid))
	if err != nil {
		t.Fatal(err)
	}
	// The fields after the command name's closing parenthesis: utime and
	// stime are the 12th and 13th, in clock ticks (100 a second on Linux).
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+2:]))
	u, _ := strconv.ParseInt(f[11], 10, 64)
	s, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(u+s) * 10 * time.Millisecond
}

// rss is the process's resident set, in MB.
func (p *serveProc) rss(t *testing.T) float64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.cmd.Process.Pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
			return kb / 1024
		}
	}
	return 0
}

func runFleet(t *testing.T, bin string, n int) []string {
	hub, err := localhub.Listen("127.0.0.1:0", localhub.Options{RateLimit: 100_000_000})
	if err != nil {
		t.Fatal(err)
	}
	defer hub.Close()
	for i := range n {
		if err := hub.CreateRepo(localhub.RepoOptions{Owner: "fleet", Name: fmt.Sprintf("r%04d", i), Files: fleetFiles(t, fmt.Sprintf("ns-%04d", i)), AllowAutoMerge: true}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := hub.Install("fleet"); err != nil {
		t.Fatal(err)
	}
	// The first tick must come after the start-up cycles are done (they read
	// every repository's files): a generous 100 ms a repository.
	period := max(10*time.Second, time.Duration(n)*100*time.Millisecond)
	var rows []string
	for _, sc := range []struct {
		name       string
		revalidate time.Duration
		push       bool
	}{
		{"idle, webhooks flowing", time.Hour, true},
		{"revalidation sweep", time.Second, false},
	} {
		config := pushConfig(t, hub, "fleet-push-token", fmt.Sprintf(`  schedule: "@every %s"
  jitter: 0s
  revalidate: %s
`, period, sc.revalidate))
		p := startServeProc(t, bin, config)
		hub.SetWebhookURL(p.base + "/webhook")
		p.cycles(t, n, "startup", 30*time.Minute)
		hub.Requests().Reset()
		cpu0 := p.cpu(t)
		p.cycles(t, n, "schedule", period+30*time.Minute)
		done := time.Now()
		reqs := hub.Requests().All()
		cpu := p.cpu(t) - cpu0
		counted := 0
		for _, r := range reqs {
			if r.Status != http.StatusNotModified {
				counted++
			}
		}
		wall := time.Duration(0)
		if len(reqs) > 0 {
			wall = done.Sub(reqs[0].Time)
		}
		latency := "-"
		if sc.push {
			latency = pushToPR(t, hub, p, n/2).Round(time.Millisecond).String()
		}
		rows = append(rows, fmt.Sprintf("| %d | %s | %d | %d | %.2f | %s | %s | %.0f MB | %s |", n, sc.name, len(reqs), counted,
			float64(len(reqs))/float64(n), wall.Round(time.Millisecond), cpu, p.rss(t), latency))
		t.Log(rows[len(rows)-1])
		_ = p.cmd.Process.Signal(os.Interrupt)
		_ = p.cmd.Wait()
		hub.SetWebhookURL("")
	}
	return rows
}

// pushToPR pushes an observation of repository i's object and returns how
// long its pull request took to open.
func pushToPR(t *testing.T, hub *localhub.Server, p *serveProc, i int) time.Duration {
	t.Helper()
	now := time.Now().UTC()
	doc := fmt.Sprintf(`apiVersion: backflow.dev/v1alpha1
kind: ObjectStateObserved
spec:
  source: kubernetes
  cluster: prod-us-east-1
  observedAt: %q
  object: "apps/v1|StatefulSet|ns-%04d|redis-replicas"
  change: {actor: alice, groups: [sre], attribution: audit-log, at: %q}
  fields:
    - {field: spec.replicas, live: 4, desired: 3, manager: kubectl}
`, now.Format(time.RFC3339), i, now.Add(-time.Minute).Format(time.RFC3339))
	seen := len(hub.Webhooks().All())
	start := time.Now()
	body := pushObservations(t, p.base, "fleet-push-token", doc)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	want := fmt.Sprintf(`"full_name":"fleet/r%04d"`, i)
	for {
		seen++
		ds, err := hub.Webhooks().Wait(ctx, seen)
		if err != nil {
			t.Fatalf("no pull request opened for fleet/r%04d: %v (push answered %s)", i, err, body)
		}
		d := ds[seen-1]
		if d.Event == "pull_request" && d.Action == "opened" && strings.Contains(string(d.Payload), want) {
			return time.Since(start)
		}
	}
}
