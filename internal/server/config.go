package server

import (
	"errors"
	"fmt"
	"time"

	"github.com/robfig/cron/v3"
)

// Defaults of Config.
const (
	DefaultListen       = ":8080"
	DefaultSchedule     = "*/5 * * * *"
	DefaultJitter       = 30 * time.Second
	DefaultMaxBodyBytes = 2 << 20
	// DefaultMaxWebhookBytes is GitHub's own cap on a webhook payload
	// (25 MB): a smaller one refuses deliveries GitHub does send.
	DefaultMaxWebhookBytes = 25 << 20
	DefaultMaxConcurrent   = 4
	DefaultShutdownTimeout = 30 * time.Second
	DefaultDeliveryMemory  = 10000
	DefaultDeliveryTTL     = 72 * time.Hour
	DefaultRetryRepos      = 10 * time.Second
	DefaultRevalidate      = 10 * time.Minute
	DefaultPerInstallation = 4
)

// Config is how the server runs. Start from DefaultConfig and set the
// secrets.
type Config struct {
	// Listen is the address to listen on, host:port.
	Listen string
	// Schedule is a cron expression (five fields, or a descriptor such as
	// "@every 5m" or "@hourly") for cycles over every repository.
	Schedule string
	// Jitter delays each scheduled run by a random duration below it, so
	// that many installations do not call GitHub at the same second. Zero
	// disables it.
	Jitter time.Duration
	// WebhookSecret checks X-Hub-Signature-256 on /webhook. Required: the
	// server refuses to start without one.
	WebhookSecret Secret
	// ObservationSecret checks X-Backflow-Signature-256 on /observations.
	ObservationSecret Secret
	// ObservationToken is the bearer token accepted on /observations.
	ObservationToken Secret
	// ObservationURLTokens are the tokens accepted in the secret URL
	// /observations/{token}, for senders that cannot set a header; several
	// let one be rotated out while the next is rolled in.
	ObservationURLTokens []Secret
	// MaxBodyBytes caps request bodies on /observations.
	MaxBodyBytes int64
	// MaxWebhookBytes caps request bodies on /webhook.
	MaxWebhookBytes int64
	// MaxConcurrent bounds cycles running at once across repositories.
	MaxConcurrent int
	// ShutdownTimeout bounds how long running cycles may take to finish
	// after a shutdown signal.
	ShutdownTimeout time.Duration
	// DeliveryMemory is how many X-GitHub-Delivery ids are remembered.
	DeliveryMemory int
	// DeliveryTTL is how long a delivery id is remembered.
	DeliveryTTL time.Duration
	// RetryRepositories is the first wait after the repository list failed
	// to load; it doubles up to five minutes.
	RetryRepositories time.Duration
	// Revalidate is the longest a repository's cached state (its default
	// branch's head, pull requests and drift issues) is trusted without a
	// check: webhooks drop it when it changes, and this heals a lost one.
	// The server passes it to the Cycler's wiring without reading it.
	Revalidate time.Duration
	// MaxConcurrentPerInstallation bounds the cycles of one installation's
	// repositories running at once (within MaxConcurrent); the Cycler's
	// wiring applies it.
	MaxConcurrentPerInstallation int
}

// DefaultConfig returns the defaults: every five minutes with 30 s of
// jitter, 2 MiB bodies, no secrets.
func DefaultConfig() Config {
	return Config{
		Listen:            DefaultListen,
		Schedule:          DefaultSchedule,
		Jitter:            DefaultJitter,
		MaxBodyBytes:      DefaultMaxBodyBytes,
		MaxWebhookBytes:   DefaultMaxWebhookBytes,
		MaxConcurrent:     DefaultMaxConcurrent,
		ShutdownTimeout:   DefaultShutdownTimeout,
		DeliveryMemory:    DefaultDeliveryMemory,
		DeliveryTTL:       DefaultDeliveryTTL,
		RetryRepositories: DefaultRetryRepos,
		Revalidate:        DefaultRevalidate,

		MaxConcurrentPerInstallation: DefaultPerInstallation,
	}
}

// ErrNoWebhookSecret is returned by New without a webhook secret: a server
// that accepted unsigned webhooks would let anyone trigger its work.
var ErrNoWebhookSecret = errors.New("refusing to start: no webhook secret is configured")

// parseSchedule reads a cron expression as Config.Schedule documents.
func parseSchedule(spec string) (cron.Schedule, error) {
	sched, err := cron.ParseStandard(spec)
	if err != nil {
		return nil, fmt.Errorf("schedule %q: %w", spec, err)
	}
	return sched, nil
}

// check validates c.
func (c Config) check(withSink bool) (cron.Schedule, error) {
	if c.WebhookSecret.Empty() {
		return nil, ErrNoWebhookSecret
	}
	if withSink && c.ObservationSecret.Empty() && c.ObservationToken.Empty() && len(c.ObservationURLTokens) == 0 {
		return nil, errors.New("refusing to start: observation pushes are enabled without a secret or a token")
	}
	sched, err := parseSchedule(c.Schedule)
	if err != nil {
		return nil, err
	}
	switch {
	case c.Jitter < 0:
		return nil, fmt.Errorf("jitter %s: must not be negative", c.Jitter)
	case c.MaxBodyBytes <= 0:
		return nil, fmt.Errorf("max body bytes %d: must be positive", c.MaxBodyBytes)
	case c.MaxWebhookBytes <= 0:
		return nil, fmt.Errorf("max webhook bytes %d: must be positive", c.MaxWebhookBytes)
	case c.MaxConcurrent <= 0:
		return nil, fmt.Errorf("max concurrent cycles %d: must be positive", c.MaxConcurrent)
	case c.ShutdownTimeout <= 0:
		return nil, fmt.Errorf("shutdown timeout %s: must be positive", c.ShutdownTimeout)
	case c.DeliveryMemory <= 0 || c.DeliveryTTL <= 0:
		return nil, errors.New("delivery memory and TTL must be positive")
	case c.RetryRepositories <= 0:
		return nil, fmt.Errorf("repository retry %s: must be positive", c.RetryRepositories)
	case c.MaxConcurrentPerInstallation <= 0:
		return nil, fmt.Errorf("max concurrent cycles per installation %d: must be positive", c.MaxConcurrentPerInstallation)
	case c.Revalidate <= 0:
		return nil, fmt.Errorf("revalidate %s: must be positive", c.Revalidate)
	}
	return sched, nil
}
