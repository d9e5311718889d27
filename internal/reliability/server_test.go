package reliability

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/backflow-dev/backflow/internal/bot"
	ghforge "github.com/backflow-dev/backflow/internal/forge/github"
	"github.com/backflow-dev/backflow/internal/server"
)

// recCycler is the server's Cycler over a real bot, recording every
// trigger each cycle answered.
type recCycler struct {
	adapter *ghforge.Adapter
	bot     *bot.Bot

	mu       sync.Mutex
	triggers []server.Trigger
	cycles   int
	done     chan []server.Trigger // one per finished cycle
}

func (c *recCycler) Repositories(ctx context.Context) ([]string, error) {
	repos, err := c.adapter.Repositories(ctx)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, r := range repos {
		out = append(out, r.FullName())
	}
	return out, nil
}

func (c *recCycler) Cycle(ctx context.Context, repo string, why []server.Trigger) error {
	rep, err := c.bot.CycleRepos(ctx, []string{repo})
	if rep != nil {
		captureText(rep.Text())
	}
	c.mu.Lock()
	c.triggers = append(c.triggers, why...)
	c.cycles++
	c.mu.Unlock()
	c.done <- slices.Clone(why)
	return err
}

// deliveries counts the triggers that carried each delivery id.
func (c *recCycler) deliveries() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string]int{}
	for _, t := range c.triggers {
		if t.Delivery != "" {
			out[t.Delivery]++
		}
	}
	return out
}

// serverEnv is backflow's server running on loopback in front of a real
// bot on the local hub, started and past its start-up cycle.
type serverEnv struct {
	*hubEnv
	srv     *server.Server
	url     string
	secret  server.Secret
	cycler  *recCycler
	src     *staticSource
	adapter *ghforge.Adapter
	client  *http.Client
}

func newServerEnv(t *testing.T, edit func(*server.Config)) *serverEnv {
	t.Helper()
	e := newHubEnv(t, gitopsFiles(t))
	secret := "whsec-canary-" + randomHex(t, 12)
	addCanary("webhook secret", secret)
	a := e.adapter(nil)
	src := &staticSource{}
	c := &recCycler{adapter: a, bot: e.newBot(a, src, "git"), done: make(chan []server.Trigger, 1000)}
	cfg := server.DefaultConfig()
	cfg.Listen = "127.0.0.1:0"
	cfg.Schedule = "0 0 1 1 *" // once a year: only webhooks cause cycles here
	cfg.Jitter = 0
	cfg.ShutdownTimeout = 30 * time.Second
	cfg.WebhookSecret = server.NewSecret([]byte(secret))
	if edit != nil {
		edit(&cfg)
	}
	srv, err := server.New(cfg, server.Deps{Cycler: c, Logger: e.log})
	if err != nil {
		t.Fatalf("server.New: %v", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan error, 1)
	go func() { stopped <- srv.Run(ctx, ln) }()
	s := &serverEnv{hubEnv: e, srv: srv, url: "http://" + ln.Addr().String(), secret: cfg.WebhookSecret, cycler: c, src: src, adapter: a,
		client: &http.Client{Timeout: 30 * time.Second}}
	t.Cleanup(func() {
		s.scrapeMetrics()
		cancel()
		if err := <-stopped; err != nil {
			t.Errorf("server stopped with %v", err)
		}
	})
	select {
	case <-srv.ReadyC():
	case <-time.After(30 * time.Second):
		t.Fatal("the server never became ready")
	}
	s.waitCycle(func(why []server.Trigger) bool { return why[0].Kind == server.TriggerStartup })
	e.hub.Requests().Reset()
	return s
}

// waitCycle waits for a finished cycle whose triggers satisfy ok, failing
// after a generous bound (a hang, not a timing assertion).
func (s *serverEnv) waitCycle(ok func([]server.Trigger) bool) {
	s.t.Helper()
	for {
		select {
		case why := <-s.cycler.done:
			if ok(why) {
				return
			}
		case <-time.After(60 * time.Second):
			s.t.Fatal("no such cycle finished")
		}
	}
}

// waitDelivery waits for the cycle that answers delivery id.
func (s *serverEnv) waitDelivery(id string) {
	s.t.Helper()
	s.waitCycle(func(why []server.Trigger) bool {
		return slices.ContainsFunc(why, func(t server.Trigger) bool { return t.Delivery == id })
	})
}

// hook is one webhook delivery as sent over HTTP.
type hook struct {
	delivery string
	body     []byte
	header   map[string][]string // signature headers, set as given
	noLength bool                // send chunked, without Content-Length
	reader   io.Reader           // a streamed body instead of body
	length   int64               // the streamed body's Content-Length
}

func pushBody(ref string) []byte {
	return []byte(fmt.Sprintf(`{"ref":%q,"after":"%s","repository":{"full_name":%q,"default_branch":"main"}}`, ref, strings.Repeat("a", 40), fullName))
}

// signed is a correctly signed push delivery.
func (s *serverEnv) signed(id string) hook {
	body := pushBody("refs/heads/main")
	return hook{delivery: id, body: body, header: map[string][]string{"X-Hub-Signature-256": {server.Sign(s.secret, body)}}}
}

// send posts h to /webhook and returns the status (0 when no answer came).
func (s *serverEnv) send(h hook) int {
	s.t.Helper()
	var body io.Reader = bytes.NewReader(h.body)
	if h.reader != nil {
		body = h.reader
	}
	if h.noLength {
		body = io.MultiReader(body) // hides the length from the client
	}
	req, err := http.NewRequest(http.MethodPost, s.url+"/webhook", body)
	if err != nil {
		s.t.Fatal(err)
	}
	switch {
	case h.noLength:
		req.ContentLength = -1
	case h.reader != nil:
		req.ContentLength = h.length
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-GitHub-Event", "push")
	req.Header.Set("X-GitHub-Delivery", h.delivery)
	for k, vs := range h.header {
		req.Header[k] = vs
	}
	resp, err := s.client.Do(req)
	if err != nil {
		var ne net.Error
		if errors.As(err, &ne) || strings.Contains(err.Error(), "broken pipe") || strings.Contains(err.Error(), "reset") {
			return 0
		}
		s.t.Fatalf("posting %s: %v", h.delivery, err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	captureText(string(out))
	return resp.StatusCode
}

// metrics scrapes /metrics.
func (s *serverEnv) metrics() string {
	resp, err := s.client.Get(s.url + "/metrics")
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// scrapeMetrics adds a scrape of /metrics to the capture.
func (s *serverEnv) scrapeMetrics() { captureText(s.metrics()) }

// metricValue reads one sample of the exposition text, 0 when absent.
func metricValue(text, series string) float64 {
	for _, line := range strings.Split(text, "\n") {
		if name, value, ok := strings.Cut(line, " "); ok && name == series {
			var v float64
			fmt.Sscan(value, &v)
			return v
		}
	}
	return 0
}
