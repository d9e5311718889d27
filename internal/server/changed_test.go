package server

import (
	"slices"
	"sync"
	"testing"
	"time"
)

// Why: state cached about a repository is dropped by the webhooks that say
// it changed, including events that queue no cycle (an issue edited, a pull
// request opened), and only by authenticated, first deliveries.
func TestWebhooksTellWhatChanged(t *testing.T) {
	var mu sync.Mutex
	var got []string
	c := newFakeCycler("acme/gitops")
	s, err := New(testConfig(), Deps{Cycler: c, Clock: newFakeClock(time.Date(2026, 6, 18, 12, 0, 0, 0, time.UTC)),
		Changed: func(repo, event, action string) {
			mu.Lock()
			defer mu.Unlock()
			got = append(got, repo+" "+event+" "+action)
		}})
	if err != nil {
		t.Fatal(err)
	}
	s.setRepos(c.repos)
	serve(s, signedHook("push", "d-1", pushPayload("acme/gitops", "refs/heads/main")).request())
	serve(s, signedHook("push", "d-1", pushPayload("acme/gitops", "refs/heads/main")).request()) // a redelivery
	serve(s, signedHook("issues", "d-2", []byte(`{"action":"edited","repository":{"full_name":"acme/gitops"}}`)).request())
	serve(s, signedHook("pull_request", "d-3", []byte(`{"action":"opened","repository":{"full_name":"acme/gitops"}}`)).request())
	forged := signedHook("issues", "d-4", []byte(`{"action":"closed","repository":{"full_name":"acme/gitops"}}`))
	forged.signature = Sign(NewSecret([]byte("another secret")), forged.body)
	serve(s, forged.request())
	settle(t, s)
	want := []string{"acme/gitops push ", "acme/gitops issues edited", "acme/gitops pull_request opened"}
	if !slices.Equal(got, want) {
		t.Fatalf("changes told = %q, want %q", got, want)
	}
}
