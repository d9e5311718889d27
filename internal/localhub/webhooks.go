package localhub

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// webhookQueueSize bounds pending deliveries; beyond it a delivery is
// recorded as dropped rather than blocking the API, as GitHub does not
// redeliver either.
const webhookQueueSize = 256

// webhookTimeout is GitHub's: a receiver must answer within 10 s.
const webhookTimeout = 10 * time.Second

// hookID is the id of the App's one webhook.
const hookID = 1

// Delivery is one webhook delivery attempt.
type Delivery struct {
	ID      string // X-GitHub-Delivery
	Event   string // X-GitHub-Event
	Action  string
	Payload []byte
	Status  int    // the receiver's status; 0 when it could not be reached
	Error   string // transport failure, or "dropped: queue full"
}

// WebhookLog records deliveries in the order they were attempted.
type WebhookLog struct {
	mu      sync.Mutex
	list    []Delivery
	changed chan struct{}
}

// All returns the deliveries made so far.
func (l *WebhookLog) All() []Delivery {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]Delivery(nil), l.list...)
}

// Wait blocks until at least n deliveries were attempted or ctx ends.
func (l *WebhookLog) Wait(ctx context.Context, n int) ([]Delivery, error) {
	for {
		l.mu.Lock()
		if len(l.list) >= n {
			out := append([]Delivery(nil), l.list...)
			l.mu.Unlock()
			return out, nil
		}
		ch := l.changed
		l.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return l.All(), fmt.Errorf("waiting for %d webhook deliveries: %w", n, ctx.Err())
		}
	}
}

func (l *WebhookLog) add(d Delivery) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.list = append(l.list, d)
	close(l.changed)
	l.changed = make(chan struct{})
}

type webhookJob struct {
	event, action string
	payload       []byte
}

// webhooks delivers events asynchronously, one at a time, in order.
type webhooks struct {
	hub    *Hub
	mu     sync.Mutex
	url    string
	secret string
	queue  chan webhookJob
	done   chan struct{}
	stop   context.CancelFunc
	ctx    context.Context
	client *http.Client
	log    WebhookLog
	closed bool
}

func newWebhooks(h *Hub, url, secret string) *webhooks {
	ctx, cancel := context.WithCancel(context.Background())
	w := &webhooks{
		hub:    h,
		url:    url,
		secret: secret,
		queue:  make(chan webhookJob, webhookQueueSize),
		done:   make(chan struct{}),
		ctx:    ctx,
		stop:   cancel,
		client: &http.Client{Timeout: webhookTimeout},
	}
	w.log.changed = make(chan struct{})
	go w.run()
	return w
}

func (w *webhooks) setURL(u string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.url = u
}

// enqueue schedules a delivery; it never blocks the caller.
func (w *webhooks) enqueue(event, action string, payload obj) {
	w.mu.Lock()
	url, closed := w.url, w.closed
	w.mu.Unlock()
	if url == "" || closed {
		return
	}
	if action != "" {
		payload["action"] = action
	}
	b, err := json.Marshal(payload)
	if err != nil {
		w.hub.logger.Error("encoding webhook payload", "event", event, "err", err)
		return
	}
	select {
	case w.queue <- webhookJob{event, action, b}:
	default:
		w.hub.logger.Warn("webhook dropped: queue full", "event", event)
		w.log.add(Delivery{ID: newUUID(), Event: event, Action: action, Payload: b, Error: "dropped: queue full"})
	}
}

func (w *webhooks) run() {
	defer close(w.done)
	for {
		select {
		case <-w.ctx.Done():
			return
		case job := <-w.queue:
			w.deliver(job)
		}
	}
}

func (w *webhooks) deliver(job webhookJob) {
	w.mu.Lock()
	url, secret := w.url, w.secret
	w.mu.Unlock()
	d := Delivery{ID: newUUID(), Event: job.event, Action: job.action, Payload: job.payload}
	req, err := http.NewRequestWithContext(w.ctx, http.MethodPost, url, bytes.NewReader(job.payload))
	if err != nil {
		d.Error = err.Error()
		w.log.add(d)
		return
	}
	mac256 := hmac.New(sha256.New, []byte(secret))
	mac256.Write(job.payload)
	mac1 := hmac.New(sha1.New, []byte(secret))
	mac1.Write(job.payload)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "GitHub-Hookshot/localhub")
	req.Header.Set("X-GitHub-Event", job.event)
	req.Header.Set("X-GitHub-Delivery", d.ID)
	req.Header.Set("X-GitHub-Hook-ID", strconv.Itoa(hookID))
	req.Header.Set("X-GitHub-Hook-Installation-Target-Type", "integration")
	req.Header.Set("X-GitHub-Hook-Installation-Target-ID", strconv.FormatInt(w.hub.AppID(), 10))
	req.Header.Set("X-Hub-Signature", "sha1="+hex.EncodeToString(mac1.Sum(nil)))
	req.Header.Set("X-Hub-Signature-256", "sha256="+hex.EncodeToString(mac256.Sum(nil)))
	resp, err := w.client.Do(req)
	if err != nil {
		d.Error = err.Error()
		w.hub.logger.Warn("webhook delivery failed", "event", job.event, "delivery", d.ID, "err", err)
	} else {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
		resp.Body.Close()
		d.Status = resp.StatusCode
	}
	w.log.add(d)
}

func (w *webhooks) close() {
	w.mu.Lock()
	w.closed = true
	w.mu.Unlock()
	w.stop()
	<-w.done
}

func newUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}
