package reliability

import (
	"crypto/hmac"
	"crypto/sha1"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/backflow-dev/backflow/internal/server"
)

// badSignature is one way a delivery's signature can be wrong.
type badSignature struct {
	name   string
	header func(secret []byte, body []byte) map[string][]string
}

func macHex(newHash string, key, body []byte) string {
	switch newHash {
	case "sha1":
		m := hmac.New(sha1.New, key)
		m.Write(body)
		return hex.EncodeToString(m.Sum(nil))
	case "sha512":
		m := hmac.New(sha512.New, key)
		m.Write(body)
		return hex.EncodeToString(m.Sum(nil))
	}
	return strings.TrimPrefix(server.Sign(server.NewSecret(key), body), "sha256=")
}

func sig256(v ...string) map[string][]string { return map[string][]string{"X-Hub-Signature-256": v} }

// badSignatures are refused by a strict check; several are accepted by
// lenient ones (go-github's ValidatePayload falls back to SHA-1 and reads
// the hash from the prefix).
var badSignatures = []badSignature{
	{"missing", func([]byte, []byte) map[string][]string { return nil }},
	{"empty", func([]byte, []byte) map[string][]string { return sig256("") }},
	{"prefix only", func([]byte, []byte) map[string][]string { return sig256("sha256=") }},
	{"SHA-1 only (X-Hub-Signature)", func(k, b []byte) map[string][]string {
		return map[string][]string{"X-Hub-Signature": {"sha1=" + macHex("sha1", k, b)}}
	}},
	{"sha1= in the SHA-256 header", func(k, b []byte) map[string][]string { return sig256("sha1=" + macHex("sha1", k, b)) }},
	{"sha512= in the SHA-256 header", func(k, b []byte) map[string][]string { return sig256("sha512=" + macHex("sha512", k, b)) }},
	{"truncated by one character", func(k, b []byte) map[string][]string {
		v := macHex("sha256", k, b)
		return sig256("sha256=" + v[:len(v)-1])
	}},
	{"truncated to half", func(k, b []byte) map[string][]string { return sig256("sha256=" + macHex("sha256", k, b)[:32]) }},
	{"no prefix", func(k, b []byte) map[string][]string { return sig256(macHex("sha256", k, b)) }},
	{"one bit flipped", func(k, b []byte) map[string][]string {
		v := []byte(macHex("sha256", k, b))
		v[10] ^= 1
		return sig256("sha256=" + string(v))
	}},
	{"not hexadecimal", func([]byte, []byte) map[string][]string { return sig256("sha256=" + strings.Repeat("zz", 32)) }},
	{"another secret", func(_, b []byte) map[string][]string {
		return sig256("sha256=" + macHex("sha256", []byte("not-the-secret"), b))
	}},
	{"keyed with the secret's base64", func(k, b []byte) map[string][]string {
		return sig256("sha256=" + macHex("sha256", []byte(base64.StdEncoding.EncodeToString(k)), b))
	}},
	{"empty key", func(_, b []byte) map[string][]string { return sig256("sha256=" + macHex("sha256", nil, b)) }},
	{"signature of another body", func(k, _ []byte) map[string][]string {
		return sig256("sha256=" + macHex("sha256", k, pushBody("refs/heads/other")))
	}},
	{"two headers, the first wrong", func(k, b []byte) map[string][]string {
		return sig256("sha256="+macHex("sha256", []byte("x"), b), "sha256="+macHex("sha256", k, b))
	}},
	{"the secret itself", func(k, _ []byte) map[string][]string { return sig256("sha256=" + string(k)) }},
}

// Case 1: deliveries with bad, missing, SHA-1-only, sha1=/sha512=-prefixed,
// truncated or empty signatures are all refused with no side effect: no
// cycle, no request to the forge, no delivery id used up. A correctly
// signed delivery sent afterwards is the control: it must cause exactly one
// cycle. A server without a secret refuses to start.
func TestCase01WebhookSignatures(t *testing.T) {
	s := newServerEnv(t, nil)
	n := count(170, 1000)
	accepted, refused := 0, 0
	for i := range n {
		bad := badSignatures[i%len(badSignatures)]
		h := s.signed(fmt.Sprintf("bad-%d", i))
		h.header = bad.header(s.secret.Reveal(), h.body)
		switch status := s.send(h); status {
		case http.StatusUnauthorized:
			refused++
		default:
			accepted++
			t.Errorf("%s: status %d, want 401", bad.name, status)
		}
	}
	forgeRequests := len(s.hub.Requests().All())
	// The control: the same server takes a good delivery and cycles once.
	if status := s.send(s.signed("good-1")); status != http.StatusAccepted {
		t.Fatalf("the control delivery: status %d, want 202", status)
	}
	s.waitDelivery("good-1")
	effects := 0
	for id, k := range s.cycler.deliveries() {
		if strings.HasPrefix(id, "bad-") {
			effects += k
		}
	}
	unauthorized := metricValue(s.metrics(), `backflow_webhook_deliveries_total{event="push",result="unauthorized"}`)
	if forgeRequests != 0 || effects != 0 {
		t.Errorf("bad deliveries caused %d forge requests and %d cycle triggers, want 0", forgeRequests, effects)
	}
	if int(unauthorized) != n {
		t.Errorf("metric of unauthorized deliveries = %v, want %d", unauthorized, n)
	}

	// Without a secret the server does not start.
	started := 0
	cfg := server.DefaultConfig()
	if _, err := server.New(cfg, server.Deps{Cycler: s.cycler}); !errors.Is(err, server.ErrNoWebhookSecret) {
		started++
		t.Errorf("a server without a webhook secret: %v, want ErrNoWebhookSecret", err)
	}
	report(t, "1", "webhook-signatures", "accepted", accepted, "deliveries", n, "variants", len(badSignatures),
		"forge_requests", forgeRequests, "cycle_triggers", effects, "started_without_secret", started)
}

// zeros streams n zero bytes without holding them.
type zeros struct{ n int64 }

func (z *zeros) Read(p []byte) (int, error) {
	if z.n <= 0 {
		return 0, io.EOF
	}
	k := min(int64(len(p)), z.n)
	clear(p[:k])
	z.n -= k
	return int(k), nil
}

// Case 2: bodies over the cap are refused with 413 before the signature is
// checked (a bad signature still gets 413, and the unauthorized counter does
// not move) and with bounded memory: the process (client and server
// together) allocates a small multiple of the cap whatever the body's size,
// with or without Content-Length.
func TestCase02BodyCap(t *testing.T) {
	const capBytes = 1 << 20
	s := newServerEnv(t, func(c *server.Config) { c.MaxBodyBytes, c.MaxWebhookBytes = capBytes, capBytes })
	size := int64(count(16<<20, 64<<20))
	var peak uint64
	for _, tc := range []struct {
		name     string
		noLength bool
		badSig   bool
	}{
		{"with Content-Length, signed", false, false},       // refused from the header alone
		{"with Content-Length, bad signature", false, true}, // the cap comes first
		{"chunked, signed", true, false},                    // refused once the reader passes the cap
		{"chunked, bad signature", true, true},              // the cap comes first
	} {
		h := hook{delivery: "big-" + tc.name, reader: &zeros{n: size}, length: size, noLength: tc.noLength,
			header: sig256("sha256=" + macHex("sha256", s.secret.Reveal(), nil))}
		if tc.badSig {
			h.header = sig256("sha256=" + strings.Repeat("0", 64))
		}
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		status := s.send(h)
		runtime.ReadMemStats(&after)
		grew := after.TotalAlloc - before.TotalAlloc
		peak = max(peak, grew)
		t.Logf("%s: %d-byte body -> status %d, %d bytes allocated", tc.name, size, status, grew)
		if status != http.StatusRequestEntityTooLarge && status != 0 {
			t.Errorf("%s: status %d, want 413", tc.name, status)
		}
		// Bounded by the cap, not the body: io.ReadAll's doubling buffer
		// up to the cap, plus connection buffers (more under -race).
		if grew > 8*capBytes {
			t.Errorf("%s: %d bytes allocated for a %d-byte cap", tc.name, grew, capBytes)
		}
	}
	m := s.metrics()
	tooLarge := metricValue(m, `backflow_webhook_deliveries_total{event="push",result="too-large"}`)
	unauthorized := metricValue(m, `backflow_webhook_deliveries_total{event="push",result="unauthorized"}`)
	if tooLarge != 4 || unauthorized != 0 {
		t.Errorf("metrics: %v too large, %v unauthorized; want 4 and 0 (the cap is checked before the signature)", tooLarge, unauthorized)
	}
	if n := len(s.hub.Requests().All()); n != 0 {
		t.Errorf("oversized bodies caused %d forge requests", n)
	}
	report(t, "2", "body-cap", "peak_memory_growth_bytes", peak, "body_bytes", size, "cap_bytes", capBytes,
		"refused", int(tooLarge))
}

// Case 3: the same X-GitHub-Delivery 50 times, sequentially and then
// concurrently, has one effect: one cycle trigger and one pull request.
func TestCase03DuplicateDeliveries(t *testing.T) {
	s := newServerEnv(t, nil)
	s.src.set(replicas(usEastNode, 4, s.clock.Now()))
	const times = 50
	dup := 0
	for _, mode := range []string{"sequential", "concurrent"} {
		id := "dup-" + mode
		h := s.signed(id)
		statuses := make([]int, times)
		if mode == "sequential" {
			for i := range times {
				statuses[i] = s.send(h)
			}
		} else {
			var wg sync.WaitGroup
			for i := range times {
				wg.Add(1)
				go func() { defer wg.Done(); statuses[i] = s.send(h) }()
			}
			wg.Wait()
		}
		queued := 0
		for _, st := range statuses {
			if st == http.StatusAccepted {
				queued++
			} else if st != http.StatusOK {
				t.Errorf("%s: status %d", mode, st)
			}
		}
		// A fence: every duplicate that was queued runs in a cycle at or
		// before the fence's.
		fence := "fence-" + mode
		s.send(s.signed(fence))
		s.waitDelivery(fence)
		got := s.cycler.deliveries()[id]
		if got != 1 || queued != 1 {
			t.Errorf("%s: %d deliveries queued and %d cycle triggers, want 1", mode, queued, got)
		}
		dup += max(got-1, 0) + max(queued-1, 0)
	}
	prs := s.pulls(s.adapter, s.repo)
	if len(prs) != 1 {
		t.Errorf("%d pull requests, want 1", len(prs))
	}
	dup += max(len(prs)-1, 0)
	report(t, "3", "duplicate-deliveries", "duplicate_effects", dup, "deliveries_per_id", times, "pull_requests", len(prs))
}
