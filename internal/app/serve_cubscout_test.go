package app

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestServeSecretURLTakesCubScoutWatch runs serve in-process over loopback
// and posts to its secret URL exactly what `cub-scout watch --webhook URL`
// posts: one event, Content-Type and no other header. The event starts a
// cycle that looks again at the object on the cluster the event's scope
// names; an event that names only cub-scout's "default" cluster is refused,
// because no cluster is configured to stand for it.
func TestServeSecretURLTakesCubScoutWatch(t *testing.T) {
	hub := gitopsHub(t, true)
	const token = "cubscout-url-canary-5f0e9d8c7b6a59483726"
	config := hubConfig(t, hub, map[string]string{"url-tokens": "# one token per line\n" + token + "\n"}, `  schedule: "@every 1h"
  observations:
    urlTokensFile: url-tokens
`)

	base, logs, msgs, stop := startServe(t, config, hub)
	waitMsg(t, msgs, "cycle done", logs) // the startup cycle

	post := func(path, body string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, base+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	event := func(cluster string) string {
		return `{"type":"drift.detected","timestamp":"2026-06-18T12:00:30.771029411Z","observation":{"source":"kubernetes-api","mode":"watch-poll","observedAt":"2026-06-18T12:00:30.771029411Z","freshness":"point-in-time","scope":{"cluster":"` + cluster + `","namespace":"redis","kind":"StatefulSet"}},"resource":{"kind":"StatefulSet","name":"redis-replicas","namespace":"redis"},"owner":{"type":"Flux","name":"redis"},"severity":"warning","details":{"category":"DRIFT","message":"replicas: live 4 differs from git 3"}}`
	}

	if code, body := post("/observations/not-the-token-0123456789abcdef0123", event("prod-us-east-1")); code != http.StatusUnauthorized {
		t.Fatalf("a wrong secret URL: %d %s, want 401", code, body)
	}
	if code, body := post("/observations/"+token, event("default")); code != http.StatusBadRequest || !strings.Contains(body, "names no cluster") {
		t.Fatalf("cub-scout's default cluster: %d %s, want 400 naming the missing cluster", code, body)
	}
	code, body := post("/observations/"+token, event("prod-us-east-1"))
	if code != http.StatusAccepted || !strings.Contains(body, `"repositories":["acme/gitops"]`) {
		t.Fatalf("the secret URL: %d %s, want 202 and a cycle of acme/gitops", code, body)
	}
	waitMsg(t, msgs, "look again", logs)
	waitMsg(t, msgs, "cycle done", logs)
	if !strings.Contains(logs.String(), `"msg":"look again","source":"POST /observations","object":"|StatefulSet|redis|redis-replicas","cluster":"prod-us-east-1","owner":"Flux"`) {
		t.Errorf("the cycle did not look again at redis-replicas on prod-us-east-1:\n%s", logs.String())
	}
	if !strings.Contains(logs.String(), `"via":"secret-url"`) {
		t.Error("the push is not logged as having come by the secret URL")
	}
	if err := stop(); err != nil {
		t.Errorf("serve after shutdown: %v", err)
	}
	if strings.Contains(logs.String(), token) {
		t.Error("the secret URL's token is in the logs")
	}
}
