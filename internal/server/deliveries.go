package server

import (
	"container/list"
	"sync"
	"time"
)

// deliveries remembers the X-GitHub-Delivery ids already accepted, so that a
// redelivery (GitHub keeps the id) is acknowledged without a second effect.
// Memory is bounded twice: at most max ids, each for at most ttl.
type deliveries struct {
	mu    sync.Mutex
	max   int
	ttl   time.Duration
	order *list.List // front: most recently added; values are *delivery
	byID  map[string]*list.Element
}

type delivery struct {
	id   string
	seen time.Time
}

func newDeliveries(limit int, ttl time.Duration) *deliveries {
	return &deliveries{max: limit, ttl: ttl, order: list.New(), byID: map[string]*list.Element{}}
}

// claim records id at now and reports whether it was new. Checking and
// recording happen under one lock, so of concurrent deliveries with the same
// id exactly one claims it.
func (d *deliveries) claim(id string, now time.Time) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.expire(now)
	if _, ok := d.byID[id]; ok {
		return false
	}
	d.byID[id] = d.order.PushFront(&delivery{id: id, seen: now})
	for d.order.Len() > d.max {
		d.remove(d.order.Back())
	}
	return true
}

// release forgets id, so that a redelivery is processed: for deliveries that
// were claimed but could not be queued.
func (d *deliveries) release(id string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if e, ok := d.byID[id]; ok {
		d.remove(e)
	}
}

func (d *deliveries) len() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.order.Len()
}

// expire drops ids older than ttl; the oldest are at the back.
func (d *deliveries) expire(now time.Time) {
	for e := d.order.Back(); e != nil; e = d.order.Back() {
		if now.Sub(e.Value.(*delivery).seen) < d.ttl {
			return
		}
		d.remove(e)
	}
}

func (d *deliveries) remove(e *list.Element) {
	delete(d.byID, e.Value.(*delivery).id)
	d.order.Remove(e)
}
