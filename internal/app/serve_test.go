package app

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/backflow-dev/backflow/internal/bot"
	"github.com/backflow-dev/backflow/internal/botconfig"
	"github.com/backflow-dev/backflow/internal/forge"
	"github.com/backflow-dev/backflow/internal/localhub"
	"github.com/backflow-dev/backflow/internal/repoconfig"
	"github.com/backflow-dev/backflow/internal/server"
)

// writeFile writes data under dir and returns the path.
func writeFile(t *testing.T, dir, name, data string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// gitopsHub starts a local hub serving the sample repository
// testdata/serve/gitops as acme/gitops, installed for acme.
func gitopsHub(t *testing.T, autoMerge bool) *localhub.Server {
	t.Helper()
	hub, err := localhub.Listen("127.0.0.1:0", localhub.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { hub.Close() })
	repoDir, err := filepath.Abs("testdata/serve/gitops")
	if err != nil {
		t.Fatal(err)
	}
	if err := hub.CreateRepo(localhub.RepoOptions{Owner: "acme", Name: "gitops", Dir: repoDir, AllowAutoMerge: autoMerge}); err != nil {
		t.Fatal(err)
	}
	if _, err := hub.Install("acme"); err != nil {
		t.Fatal(err)
	}
	return hub
}

// hubConfig writes, in a new folder, the hub's App key and webhook secret,
// the files given, and a bot config for the hub whose server section (after
// its listen address and before its webhook) is server, indented by two;
// it returns the config's path.
func hubConfig(t *testing.T, hub *localhub.Server, files map[string]string, server string) string {
	t.Helper()
	dir := t.TempDir()
	writeFile(t, dir, "app.pem", string(hub.PrivateKeyPEM()))
	writeFile(t, dir, "webhook-secret", hub.WebhookSecret())
	for name, data := range files {
		writeFile(t, dir, name, data)
	}
	return writeFile(t, dir, "config.yaml", fmt.Sprintf(`version: 1
github:
  appId: %d
  privateKeyFile: app.pem
  baseURL: %s
  graphqlURL: %s
server:
  listen: 127.0.0.1:0
%s  webhook:
    secretFile: webhook-secret
`, hub.AppID(), hub.APIURL(), hub.GraphQLURL(), server))
}

// pushConfig is hubConfig for pushed observations from prod-us-east-1 at
// audit-log, with the token in push-token.
func pushConfig(t *testing.T, hub *localhub.Server, token, server string) string {
	t.Helper()
	return hubConfig(t, hub, map[string]string{"push-token": token}, server+`  observations:
    tokenFile: push-token
    trust: audit-log
    cluster: prod-us-east-1
`)
}

const serveBotSection = `version: 1
github:
  appId: 1
  privateKeyFile: app.pem
  baseURL: http://127.0.0.1:9/
`

func TestLoadServeConfig(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "app.pem", "not read here")
	writeFile(t, dir, "hook", "hook-canary-5d1e\n")
	writeFile(t, dir, "token", "token-canary-0b7a")
	for _, tc := range []struct {
		name, config, wantErr string
	}{
		{"bot config and server section", serveBotSection + `server:
  listen: 127.0.0.1:0
  schedule: "@every 10m"
  jitter: 0s
  webhook: {secretFile: hook}
  observations: {tokenFile: token, trust: audit-log, cluster: prod-us-east-1}
`, ""},
		{"server section first", `server:
  webhook:
    secretFile: hook
` + serveBotSection, ""}, // order does not matter
		{"no server section", serveBotSection, "server: required"}, // the listen address and webhook secret live there
		{"unknown server key", serveBotSection + "server:\n  webhook: {secretFile: hook}\n  listne: :8080\n", "config.yaml: line 8: unknown key server.listne"},                // strict, with the file's line and the key's dotted path
		{"wrong server type", serveBotSection + "server:\n  webhook: {secretFile: hook}\n  maxBodyBytes: lots\n", "config.yaml: line 8: server.maxBodyBytes: want an integer"}, // the key's path, never a Go type name
		{"bad server duration", serveBotSection + "server:\n  webhook: {secretFile: hook}\n  shutdownTimeout: soon\n", "line 8: server.shutdownTimeout: want a duration"},
		{"unknown bot key", serveBotSection + "sever: {}\nserver:\n  webhook: {secretFile: hook}\n", "sever"}, // the bot config stays strict
		{"bot error keeps its line", "version: 2\nserver:\n  webhook: {secretFile: hook}\ngithub:\n  appId: 0\n  privateKeyFile: app.pem\n", "version"},
		{"no webhook secret", serveBotSection + "server:\n  listen: :8080\n", "refusing to start"}, // never serve unsigned webhooks
		{"bad trust", serveBotSection + "server:\n  webhook: {secretFile: hook}\n  observations: {tokenFile: token, trust: total}\n", "server.observations.trust"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := writeFile(t, dir, "config.yaml", tc.config)
			cfg, err := botconfig.LoadServeConfig(p)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want %q", err, tc.wantErr)
				}
				if strings.Contains(err.Error(), "canary") {
					t.Errorf("the error reveals a secret: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if string(cfg.Server.WebhookSecret.Reveal()) != "hook-canary-5d1e" {
				t.Error("webhook secret not read from the file next to the config")
			}
			if cfg.Bot.GitHub.PrivateKeyFile != filepath.Join(dir, "app.pem") {
				t.Errorf("private key path %q, want it anchored at the config's folder", cfg.Bot.GitHub.PrivateKeyFile)
			}
		})
	}
}

// syncBuffer is a log sink written by the server's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// notifier is a slog handler that also sends each record's message on a
// channel, so a test waits for "cycle done" as an event instead of polling.
type notifier struct {
	slog.Handler
	msgs chan<- string
}

func (n notifier) Handle(ctx context.Context, r slog.Record) error {
	// The line is written before it is announced: a test that reads the
	// logs when told of a message finds it there.
	err := n.Handler.Handle(ctx, r)
	select {
	case n.msgs <- r.Message:
	default: // nobody is listening for this many: drop the notification, not the log line
	}
	return err
}

func (n notifier) WithAttrs(as []slog.Attr) slog.Handler {
	return notifier{n.Handler.WithAttrs(as), n.msgs}
}

func (n notifier) WithGroup(g string) slog.Handler { return notifier{n.Handler.WithGroup(g), n.msgs} }

// waitMsg waits for a log record with message msg; the bound only turns a
// hang into a failure.
func waitMsg(t *testing.T, msgs <-chan string, msg string, logs *syncBuffer) {
	t.Helper()
	timeout := time.After(60 * time.Second)
	for {
		select {
		case m := <-msgs:
			if m == msg {
				return
			}
		case <-timeout:
			t.Fatalf("no %q logged; logs:\n%s", msg, logs.String())
		}
	}
}

// TestServeObservationBecomesPullRequest runs serve's wiring in-process
// against the local hub: the App's webhooks go to serve, an observation
// pushed to /observations becomes an auto-merged pull request without
// waiting for the schedule, and an observation of the forward apply after
// the merge proves its receipt.
func TestServeObservationBecomesPullRequest(t *testing.T) {
	hub := gitopsHub(t, true)
	config := pushConfig(t, hub, "push-token-canary-33", `  schedule: "@every 1h"
`)

	base, logs, msgs, stop := startServe(t, config, hub)

	// The startup cycle has nothing to do; wait for it so that the
	// measurement below is the observation's alone.
	waitMsg(t, msgs, "cycle done", logs)

	now := time.Now().UTC()
	doc := replicasObservation(now)

	pushedAt := time.Now()
	pushObservations(t, base, "push-token-canary-33", doc)
	answered := time.Since(pushedAt)

	// The hub sends pull_request "opened" to serve's /webhook when the PR
	// is created: wait for that delivery.
	wctx, wcancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer wcancel()
	seen := 0
	waitDelivery := func(what string, match func(localhub.Delivery) bool) {
		t.Helper()
		for {
			seen++
			ds, err := hub.Webhooks().Wait(wctx, seen)
			if err != nil {
				t.Fatalf("no delivery %s: %v\nlogs:\n%s", what, err, logs.String())
			}
			if match(ds[seen-1]) {
				return
			}
		}
	}
	waitDelivery("of the pull request opened", func(d localhub.Delivery) bool { return d.Event == "pull_request" && d.Action == "opened" })
	opened := time.Since(pushedAt)
	t.Logf("observation push answered in %s; pull request opened %s after the push", answered, opened)
	waitMsg(t, msgs, "cycle done", logs)

	// Pre-authorized: it merges. Then the forward apply writes the accepted
	// value (field manager kustomize-controller), an observation of that is
	// pushed, and the follow-up proves the receipt at once.
	waitDelivery("of the merge", func(d localhub.Delivery) bool { return d.Event == "pull_request" && d.Action == "closed" })
	after := time.Now().UTC()
	applied := strings.NewReplacer("live: 4\n      desired: 3\n      manager: kubectl", "live: 4\n      desired: 4\n      manager: kustomize-controller").
		Replace(strings.Replace(doc, now.Format(time.RFC3339), after.Format(time.RFC3339Nano), 1))
	pushObservations(t, base, "push-token-canary-33", applied)
	waitDelivery("of the proven label", func(d localhub.Delivery) bool {
		return d.Event == "pull_request" && d.Action == "labeled" && strings.Contains(string(d.Payload), "reverse-reconcile:proven")
	})
	// The cycle that proved it records its metrics before it logs its end.
	for !strings.Contains(get(t, base+"/metrics"), `backflow_fixes_total{result="proven"} 1`) {
		waitMsg(t, msgs, "cycle done", logs)
	}

	// Every delivery the hub signed was accepted by serve's strict check.
	for _, d := range hub.Webhooks().All() {
		if d.Status < 200 || d.Status > 299 {
			t.Errorf("webhook %s %s answered %d", d.Event, d.Action, d.Status)
		}
	}
	// One forged delivery is refused.
	forged, _ := http.NewRequest(http.MethodPost, base+"/webhook", strings.NewReader(`{"ref":"refs/heads/main","repository":{"full_name":"acme/gitops","default_branch":"main"}}`))
	forged.Header.Set("X-GitHub-Event", "push")
	forged.Header.Set("X-GitHub-Delivery", "forged-1")
	forged.Header.Set("X-Hub-Signature-256", "sha256="+strings.Repeat("ab", 32))
	if resp, err := http.DefaultClient.Do(forged); err != nil || resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("forged webhook: %v %v, want 401", resp.StatusCode, err)
	}

	metrics := get(t, base+"/metrics")
	for _, want := range []string{
		`backflow_pull_requests_total{action="open"} 1`,
		`backflow_decisions_total{outcome="allow"} 1`,
		`backflow_webhook_deliveries_total{event="push",result="unauthorized"} 1`,
		`backflow_observation_pushes_total{result="queued"} 2`,
		`backflow_fixes_total{result="proven"} 1`,
		`backflow_github_rate_limit_remaining`,
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	if err := stop(); err != nil {
		t.Errorf("serve after shutdown: %v", err)
	}
	for _, secret := range []string{"push-token-canary-33", hub.WebhookSecret(), strings.TrimSpace(string(hub.PrivateKeyPEM()))} {
		if strings.Contains(logs.String(), secret) || strings.Contains(metrics, secret) {
			t.Error("a secret appears in the logs or the metrics")
		}
	}
}

func TestCycleReportBecomesMetrics(t *testing.T) {
	m := NewMetrics("test")
	c := &Cycler{metrics: m}
	c.record(&bot.Report{
		SourceErrors: bot.Errors{errors.New("a source failed")},
		Repos: []*bot.RepoReport{{
			Repo:      "acme/gitops",
			Decisions: []bot.DecisionReport{{Outcome: "allow", Attribution: "audit-log"}, {Outcome: "deny", Attribution: "unknown"}, {Outcome: "deny", Attribution: "unknown"}},
			Actions: []bot.Action{
				{Kind: bot.ActOpen}, {Kind: bot.ActAutoMerge}, {Kind: bot.ActMerge},
				{Kind: bot.ActUpdate, DryRun: true}, // described, not done: not counted
				{Kind: bot.ActProven}, {Kind: bot.ActReverted}, {Kind: bot.ActComment},
				{Kind: bot.ActCheck}, // a failed receipt check posted
			},
			// Errors keep their sentinels, and are counted by class.
			Errors: bot.Errors{errors.New("error reading the head"),
				&bot.UnitError{Unit: "backflow/prod/redis", Err: fmt.Errorf("error labelling #1: %w", forge.ErrUnauthorized)},
				fmt.Errorf("reading .github/backflow.yaml: %w", repoconfig.ErrInvalid)},
		}},
	})
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	body := rec.Body.String()
	for _, want := range []string{
		`backflow_decisions_total{outcome="allow"} 1`,
		`backflow_decisions_total{outcome="deny"} 2`,
		`backflow_pull_requests_total{action="open"} 1`,
		`backflow_pull_requests_total{action="auto-merge"} 1`,
		`backflow_pull_requests_total{action="merge"} 1`,
		`backflow_fixes_total{result="proven"} 1`,
		`backflow_fixes_total{result="reverted"} 1`,
		`backflow_errors_total{kind="observation"} 1`,
		`backflow_errors_total{kind="repository"} 1`,
		`backflow_errors_total{kind="unauthorized"} 1`,
		`backflow_errors_total{kind="repo-config"} 1`,
		`backflow_decision_attributions_total{attribution="unknown"} 2`,
		`backflow_decision_attributions_total{attribution="audit-log"} 1`,
		`backflow_receipts_refused_total 1`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	if !strings.Contains(body, `backflow_pull_requests_total{action="update"} 0`) {
		t.Error("a dry-run action was counted")
	}
}

func get(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// startServe runs backflow serve with config in the background, points the
// hub's webhooks at it and waits until it is ready. stop shuts it down and
// returns Serve's error.
func startServe(t *testing.T, config string, hub *localhub.Server) (base string, logs *syncBuffer, msgs chan string, stop func() error) {
	t.Helper()
	logs = &syncBuffer{}
	msgs = make(chan string, 1000)
	logger := slog.New(notifier{slog.NewJSONHandler(logs, nil), msgs})
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	type started struct {
		addr net.Addr
		srv  *server.Server
	}
	up := make(chan started, 1)
	done := make(chan error, 1)
	go func() {
		done <- Serve(ctx, config, logger, func(a net.Addr, s *server.Server) { up <- started{a, s} })
	}()
	var st started
	select {
	case st = <-up:
	case err := <-done:
		t.Fatalf("serve did not start: %v\n%s", err, logs.String())
	}
	base = "http://" + st.addr.String()
	hub.SetWebhookURL(base + "/webhook")
	<-st.srv.ReadyC()
	return base, logs, msgs, func() error { cancel(); return <-done }
}

// replicasObservation is alice's scale of redis-replicas, as pushed.
func replicasObservation(now time.Time) string {
	now = now.UTC()
	return fmt.Sprintf(`apiVersion: backflow.dev/v1alpha1
kind: ObjectStateObserved
metadata:
  name: redis-replicas
spec:
  source: kubernetes
  cluster: prod-us-east-1
  observedAt: %q
  object: "apps/v1|StatefulSet|redis|redis-replicas"
  change:
    actor: alice
    groups: [sre]
    attribution: audit-log
    at: %q
    intent: "incident-fix: scale replicas to absorb a load spike"
  fields:
    - field: spec.replicas
      live: 4
      desired: 3
      manager: kubectl
`, now.Format(time.RFC3339), now.Add(-time.Minute).Format(time.RFC3339))
}

// pushObservations posts doc to serve's /observations at base with token
// and fails the test unless serve accepts it (202); it returns the answer.
func pushObservations(t *testing.T, base, token, doc string) string {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, base+"/observations", strings.NewReader(doc))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("push to %s: %d %s", base, resp.StatusCode, body)
	}
	return string(body)
}
