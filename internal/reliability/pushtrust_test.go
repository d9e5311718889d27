package reliability

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/backflow-dev/backflow/internal/app"
	"github.com/backflow-dev/backflow/internal/forge"
	"github.com/backflow-dev/backflow/internal/server"
)

// briefRepo is a second copy of the GitOps repository whose config lets a
// higher-trust observation outrank a lower one for one second only: past
// it, the planner decides on the newest observation whatever its trust,
// and only the lifecycle's own rule keeps the lower one from closing or
// re-planning the pull request.
const briefRepo = "gitops-brief"

// Case 35: a lower-trust push never overrules a trusted one. serve takes
// alice's change by the bearer token (trusted at audit-log; review
// required) and opens a pull request in each repository; then the secret
// URL (asserted) says the object has no changed field, then that it is at
// 5, then that it was deleted and at 5 again: none closes the pull
// requests nor rewrites them, within the freshness window and past it,
// and the deletion drops only what the secret URL's trust reaches. A
// later observation by the bearer token saying live is back at desired
// closes both.
func TestCase35LowerTrustPushNeverOverrules(t *testing.T) {
	files := gitopsFiles(t)
	reviewOnly(files)
	e := newHubEnv(t, files)
	brief := map[string]string{}
	for p, data := range files {
		brief[p] = data
	}
	brief[configPath] += "observations:\n  freshness: 1s\n"
	briefFR := e.createRepo(briefRepo, brief)
	a := e.adapter(nil)
	const bearer, urlToken = "case35-bearer-canary-7c1d0e9f", "case35-secret-url-canary-4b2a19e8d7c6f5a4"
	addCanary("push bearer token", bearer)
	addCanary("secret URL token", urlToken)
	dir := t.TempDir()
	for name, data := range map[string]string{"app.pem": string(e.hub.PrivateKeyPEM()), "webhook-secret": e.hub.WebhookSecret(),
		"push-token": bearer, "url-tokens": urlToken + "\n"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	config := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(config, []byte(fmt.Sprintf(`version: 1
github:
  appId: %d
  privateKeyFile: app.pem
  baseURL: %s/
  graphqlURL: %s/graphql
server:
  listen: 127.0.0.1:0
  schedule: "@every 1h"
  observations:
    tokenFile: push-token
    trust: audit-log
    urlTokensFile: url-tokens
    cluster: prod-us-east-1
  webhook:
    secretFile: webhook-secret
`, e.hub.AppID(), e.url, e.url)), 0o600); err != nil {
		t.Fatal(err)
	}
	cycles := make(chan cycleNote, 1024)
	denials := &denialCount{byRepo: map[string]int{}}
	base := startServe(t, config, slog.New(cycleNotes{Handler: e.log.Handler(), ch: cycles, denials: denials}))
	e.hub.SetWebhookURL(base + "/webhook")
	repos := []forge.Repo{e.repo, briefFR}

	// Alice's change, ten seconds old: fresh for gitops, past the window
	// of gitops-brief.
	now := time.Now().UTC().Truncate(time.Second)
	push(t, base+"/observations", bearer, pushedReplicas(now.Add(-10*time.Second), "4"))
	waitCycles(t, cycles, "observation", fullName, owner+"/"+briefRepo)
	heads := map[string]string{}
	for _, r := range repos {
		prs := e.pulls(a, r)
		if len(prs) != 1 || prs[0].State != forge.StateOpen || !strings.Contains(prs[0].Title, "3 -> 4") {
			t.Fatalf("%s: want alice's pull request open for review, got %+v", r.Name, prs)
		}
		heads[r.Name] = prs[0].HeadSHA
	}

	// The secret URL: no changed field, then 5, claimed as alice's.
	overruled := 0
	for i, live := range []string{"", "5"} {
		push(t, base+"/observations/"+urlToken, "", pushedReplicas(now.Add(time.Duration(i)*time.Second), live))
		waitCycles(t, cycles, "observation", fullName, owner+"/"+briefRepo)
		for _, r := range repos {
			prs := e.pulls(a, r)
			if len(prs) != 1 || prs[0].State != forge.StateOpen || prs[0].HeadSHA != heads[r.Name] {
				overruled++
				t.Errorf("%s: an asserted push (live %q) closed or rewrote the pull request: %+v", r.Name, live, prs)
			}
		}
	}

	// The secret URL says the object was deleted, then again that it is
	// at 5: the deletion drops the asserted observation only, so in gitops
	// (default freshness) the bearer's change still outranks the asserted
	// claim, and the cycle decides on it, denying nothing.
	push(t, base+"/observations/"+urlToken, "", deletedReplicas(now.Add(2*time.Second)))
	denials.reset()
	push(t, base+"/observations/"+urlToken, "", pushedReplicas(now.Add(3*time.Second), "5"))
	waitCycles(t, cycles, "observation", fullName, owner+"/"+briefRepo)
	for _, r := range repos {
		prs := e.pulls(a, r)
		if len(prs) != 1 || prs[0].State != forge.StateOpen || prs[0].HeadSHA != heads[r.Name] {
			overruled++
			t.Errorf("%s: after an asserted deletion, an asserted push closed or rewrote the pull request: %+v", r.Name, prs)
		}
	}
	trustedKept := 0
	if n := denials.of(fullName); n == 0 {
		trustedKept = 1
	} else {
		t.Errorf("%s: %d denials after the asserted deletion: the bearer's change was wiped and the asserted claim decided", fullName, n)
	}

	// The bearer token: live is back at desired. It closes both.
	push(t, base+"/observations", bearer, pushedReplicas(now.Add(4*time.Second), ""))
	waitCycles(t, cycles, "observation", fullName, owner+"/"+briefRepo)
	closedByTrusted := 0
	for _, r := range repos {
		prs := e.pulls(a, r)
		if len(prs) == 1 && prs[0].State == forge.StateClosed && !prs[0].Merged {
			closedByTrusted++
		} else {
			t.Errorf("%s: the bearer's observation at desired did not close the pull request: %+v", r.Name, prs)
		}
	}
	report(t, "35", "lower-trust-push-never-overrules", "asserted_pushes", 4, "pull_requests", len(repos),
		"closed_or_rewritten_by_asserted", overruled, "trusted_change_kept_after_asserted_deletion", trustedKept,
		"closed_by_the_trusted_push", closedByTrusted)
}

// deletedReplicas is cub-scout's resource.deleted of redis-replicas at at.
func deletedReplicas(at time.Time) string {
	ts := at.Format(time.RFC3339Nano)
	return fmt.Sprintf(`{"type":"resource.deleted","timestamp":%q,"observation":{"source":"kubernetes-api",`+
		`"mode":"watch-poll","observedAt":%q,"freshness":"point-in-time","scope":{"cluster":"prod-us-east-1",`+
		`"namespace":"redis","kind":"StatefulSet"}},"resource":{"kind":"StatefulSet","name":"redis-replicas",`+
		`"namespace":"redis"},"owner":{"type":"Flux","name":"redis"},"details":{"lastOwner":"Flux"}}`, ts, ts)
}

// denialCount counts serve's "unauthorized drift" lines by repository.
type denialCount struct {
	mu     sync.Mutex
	byRepo map[string]int
}

func (d *denialCount) add(repo string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.byRepo[repo]++
}

func (d *denialCount) of(repo string) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.byRepo[repo]
}

func (d *denialCount) reset() {
	d.mu.Lock()
	defer d.mu.Unlock()
	clear(d.byRepo)
}

// pushedReplicas is a pushed observation of redis-replicas at at: with
// live set, spec.replicas at live (3 desired), claimed as alice's audit-
// logged change; with live empty, no changed field (live is at desired).
func pushedReplicas(at time.Time, live string) string {
	doc := fmt.Sprintf(`apiVersion: backflow.dev/v1alpha1
kind: ObjectStateObserved
spec:
  source: kubernetes
  cluster: prod-us-east-1
  observedAt: %q
  object: "apps/v1|StatefulSet|redis|redis-replicas"
`, at.Format(time.RFC3339))
	if live == "" {
		return doc + "  fields: []\n"
	}
	// The claim is the same by either credential: the credential decides
	// how far it is believed.
	return doc + fmt.Sprintf(`  change: {actor: alice, groups: [sre], attribution: audit-log, at: %q, intent: "incident-fix: scale replicas"}
  fields:
    - {field: spec.replicas, live: %s, desired: 3, manager: kubectl}
`, at.Add(-time.Minute).Format(time.RFC3339), live)
}

// push posts doc to url, with the bearer token when one is given, and
// fails the test unless serve accepts it.
func push(t *testing.T, url, bearer, doc string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(doc))
	if err != nil {
		t.Fatal(err)
	}
	if bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("push to serve: %d %s", resp.StatusCode, body)
	}
}

// startServe runs backflow serve in-process with config until the test
// ends, and returns its base URL once it is ready.
func startServe(t *testing.T, config string, logger *slog.Logger) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	up := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- app.Serve(ctx, config, logger, func(a net.Addr, s *server.Server) {
			go func() { <-s.ReadyC(); up <- "http://" + a.String() }()
		})
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	select {
	case base := <-up:
		return base
	case err := <-done:
		t.Fatalf("serve did not start: %v", err)
	case <-time.After(time.Minute):
		t.Fatal("serve not ready within a minute")
	}
	return ""
}

// cycleNote is one "cycle done" (or "cycle failed") line of serve: the
// repository and why it cycled.
type cycleNote struct {
	repo string
	why  []string
}

// cycleNotes hands each cycle's end to ch, after logging it as the
// wrapped handler does.
type cycleNotes struct {
	slog.Handler
	ch      chan<- cycleNote
	repo    string
	denials *denialCount // when set, counts denied drift by repository
}

func (n cycleNotes) Handle(ctx context.Context, r slog.Record) error {
	err := n.Handler.Handle(ctx, r)
	if n.denials != nil && r.Message == "unauthorized drift: not written back" {
		n.denials.add(n.repo)
	}
	if r.Message == "cycle done" || r.Message == "cycle failed" {
		note := cycleNote{repo: n.repo}
		r.Attrs(func(a slog.Attr) bool {
			switch a.Key {
			case "repo":
				note.repo = a.Value.String()
			case "why":
				note.why, _ = a.Value.Any().([]string)
			}
			return true
		})
		n.ch <- note
	}
	return err
}

func (n cycleNotes) WithAttrs(as []slog.Attr) slog.Handler {
	out := cycleNotes{Handler: n.Handler.WithAttrs(as), ch: n.ch, repo: n.repo, denials: n.denials}
	for _, a := range as {
		if a.Key == "repo" {
			out.repo = a.Value.String()
		}
	}
	return out
}

func (n cycleNotes) WithGroup(g string) slog.Handler {
	return cycleNotes{Handler: n.Handler.WithGroup(g), ch: n.ch, repo: n.repo, denials: n.denials}
}

// waitCycles waits until each of repos has ended a cycle started for kind;
// the bound only turns a hang into a failure.
func waitCycles(t *testing.T, ch <-chan cycleNote, kind string, repos ...string) {
	t.Helper()
	left := slices.Clone(repos)
	timeout := time.After(2 * time.Minute)
	for len(left) > 0 {
		select {
		case n := <-ch:
			if slices.Contains(n.why, kind) {
				left = slices.DeleteFunc(left, func(r string) bool { return r == n.repo })
			}
		case <-timeout:
			t.Fatalf("no %s cycle of %v ended within two minutes", kind, left)
		}
	}
}
