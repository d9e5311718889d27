package cli

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/backflow-dev/backflow/internal/render"
)

// runAsCLI makes the test binary act as the backflow command when this
// variable is set, so that process tests run the real command line (signals,
// exit codes) without building another binary.
const runAsCLI = "BACKFLOW_TEST_RUN_CLI"

func TestMain(m *testing.M) {
	render.ChildMain()
	if os.Getenv(runAsCLI) == "1" {
		os.Exit(Run(os.Args[1:], os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

// cliProcess starts the backflow command line as a child process.
func cliProcess(t *testing.T, args ...string) (*exec.Cmd, io.Reader, io.Reader) {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), runAsCLI+"=1")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	return cmd, stdout, stderr
}

// logWatch reads serve's JSON log lines as they are written and counts
// them by message.
type logWatch struct {
	lines  <-chan map[string]any
	counts map[string]int
}

func watchLogs(r io.Reader) *logWatch {
	ch := make(chan map[string]any, 1000)
	go func() {
		defer close(ch)
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			var m map[string]any
			if json.Unmarshal(sc.Bytes(), &m) == nil {
				ch <- m
			}
		}
	}()
	return &logWatch{lines: ch, counts: map[string]int{}}
}

// wait returns once n records with message msg have been logged in all;
// the bound only turns a hang into a failure.
func (w *logWatch) wait(t *testing.T, msg string, n int) {
	t.Helper()
	timeout := time.After(60 * time.Second)
	for w.counts[msg] < n {
		select {
		case m, ok := <-w.lines:
			if !ok {
				t.Fatalf("serve exited before logging %q %d times", msg, n)
			}
			if s, _ := m["msg"].(string); s != "" {
				w.counts[s]++
			}
		case <-timeout:
			t.Fatalf("serve logged %q %d times, want %d", msg, w.counts[msg], n)
		}
	}
}

// drain reads the rest of the log until serve closes it.
func (w *logWatch) drain() {
	for range w.lines {
	}
}

// freePort returns a loopback address that was free a moment ago: the local
// hub must be told serve's webhook URL before serve starts.
func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// TestServeAndLocalhubAsProcesses runs `backflow localhub` and `backflow
// serve` as separate processes: the hub's signed webhooks are accepted, an
// observation pushed to /observations becomes a pull request, a forged
// webhook is refused, /metrics shows the counts and SIGTERM exits cleanly.
func TestServeAndLocalhubAsProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("starts two processes")
	}
	dir := t.TempDir()
	repo, err := filepath.Abs("testdata/serve/gitops")
	if err != nil {
		t.Fatal(err)
	}
	serveAddr := freePort(t)
	hub, hubOut, _ := cliProcess(t, "localhub", "--listen", "127.0.0.1:0", "--dir", filepath.Join(dir, "hub"),
		"--repo", "acme/gitops="+repo, "--webhook-url", "http://"+serveAddr+"/webhook")
	var ep struct {
		APIURL, GraphQLURL, PrivateKeyPath, WebhookSecretPath string
		AppID                                                 int64
	}
	line, err := bufio.NewReader(hubOut).ReadBytes('\n')
	if err != nil || json.Unmarshal(line, &ep) != nil {
		t.Fatalf("localhub endpoints: %q %v", line, err)
	}
	writeFile(t, dir, "push-token", "process-push-token")
	config := writeFile(t, dir, "config.yaml", fmt.Sprintf(`version: 1
github:
  appId: %d
  privateKeyFile: %s
  baseURL: %s
  graphqlURL: %s
server:
  listen: %s
  webhook: {secretFile: %s}
  observations: {tokenFile: push-token, trust: audit-log}
`, ep.AppID, ep.PrivateKeyPath, ep.APIURL, ep.GraphQLURL, serveAddr, ep.WebhookSecretPath))

	serve, _, serveErr := cliProcess(t, "serve", "--config", config)
	logs := watchLogs(serveErr)
	logs.wait(t, "serving", 1)
	logs.wait(t, "cycle done", 1) // the startup cycle

	now := time.Now().UTC()
	doc := redisObservation(t, now.Format(time.RFC3339))
	req, _ := http.NewRequest(http.MethodPost, "http://"+serveAddr+"/observations", strings.NewReader(doc))
	req.Header.Set("Authorization", "Bearer process-push-token")
	pushed := time.Now()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("push: %d", resp.StatusCode)
	}
	logs.wait(t, "cycle done", 2)
	t.Logf("observation push to the end of its cycle: %s", time.Since(pushed))
	// The pull request's own webhooks (opened, labels, checks) arrive signed
	// by the hub and are accepted.
	logs.wait(t, "webhook", 1)

	forged, _ := http.NewRequest(http.MethodPost, "http://"+serveAddr+"/webhook", strings.NewReader(`{}`))
	forged.Header.Set("X-GitHub-Event", "push")
	forged.Header.Set("X-GitHub-Delivery", "forged")
	forged.Header.Set("X-Hub-Signature", "sha1=0000000000000000000000000000000000000000")
	if resp, err := http.DefaultClient.Do(forged); err != nil || resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("forged webhook: %v, want 401", err)
	}

	metrics := get(t, "http://"+serveAddr+"/metrics")
	for _, want := range []string{
		`backflow_pull_requests_total{action="open"} 1`,
		`backflow_webhook_deliveries_total{event="push",result="unauthorized"} 1`,
		`backflow_cycles_total{result="ok"}`,
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}

	if err := serve.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	logs.wait(t, "stopped", 1)
	logs.drain()
	if err := serve.Wait(); err != nil {
		t.Errorf("serve after SIGTERM: %v, want exit 0", err)
	}
	_ = hub.Process.Signal(syscall.SIGTERM)
	_ = hub.Wait()
}
