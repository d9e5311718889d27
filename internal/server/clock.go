package server

import (
	"math/rand/v2"
	"time"
)

// Clock tells the time and waits. The scheduler reads time only through it,
// so tests drive the schedule without sleeping.
type Clock interface {
	Now() time.Time
	// After returns a channel that receives once d has passed.
	After(d time.Duration) <-chan time.Time
}

// SystemClock is the wall clock.
type SystemClock struct{}

// Now implements Clock.
func (SystemClock) Now() time.Time { return time.Now() }

// After implements Clock.
func (SystemClock) After(d time.Duration) <-chan time.Time { return time.After(d) }

// JitterFunc returns a delay in [0, limit); limit is positive.
type JitterFunc func(limit time.Duration) time.Duration

// RandomJitter draws the delay uniformly from the process's random source.
func RandomJitter(limit time.Duration) time.Duration {
	return time.Duration(rand.Int64N(int64(limit)))
}
