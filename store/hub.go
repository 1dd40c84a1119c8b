package store

import "sync"

// Hub fans wake-ups out to in-process subscribers. The PostgreSQL Listener
// feeds it from NOTIFY; the SQLite driver feeds it after its own commits.
type Hub struct {
	mu      sync.Mutex
	changes map[string]map[chan struct{}]struct{}
	// calls are the functions OnChange registered, by request.
	calls map[string]map[*call]struct{}
	ready map[chan struct{}]struct{}
}

// call is one OnChange registration; a pointer so that two registrations
// of the same function stay two.
type call struct{ wake func() }

var (
	_ Notifier     = (*Hub)(nil)
	_ ChangeCaller = (*Hub)(nil)
)

// NewHub returns a Hub with no subscribers.
func NewHub() *Hub {
	return &Hub{
		changes: make(map[string]map[chan struct{}]struct{}),
		calls:   make(map[string]map[*call]struct{}),
		ready:   make(map[chan struct{}]struct{}),
	}
}

// SubscribeChange returns a channel signalled when the request changes, and a
// function that ends the subscription.
func (h *Hub) SubscribeChange(requestID string) (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	h.mu.Lock()
	subs := h.changes[requestID]
	if subs == nil {
		subs = make(map[chan struct{}]struct{})
		h.changes[requestID] = subs
	}
	subs[ch] = struct{}{}
	h.mu.Unlock()
	return ch, func() {
		h.mu.Lock()
		delete(subs, ch)
		if len(subs) == 0 {
			delete(h.changes, requestID)
		}
		h.mu.Unlock()
	}
}

// OnChange calls wake whenever the request changes and on every Broadcast,
// with the Hub locked, until cancel (see ChangeCaller).
func (h *Hub) OnChange(requestID string, wake func()) func() {
	c := &call{wake: wake}
	h.mu.Lock()
	subs := h.calls[requestID]
	if subs == nil {
		subs = make(map[*call]struct{}, 1)
		h.calls[requestID] = subs
	}
	subs[c] = struct{}{}
	h.mu.Unlock()
	return func() {
		h.mu.Lock()
		delete(subs, c)
		if len(subs) == 0 {
			delete(h.calls, requestID)
		}
		h.mu.Unlock()
	}
}

// SubscribeReady returns a channel signalled when an execution becomes ready.
func (h *Hub) SubscribeReady() (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	h.mu.Lock()
	h.ready[ch] = struct{}{}
	h.mu.Unlock()
	return ch, func() {
		h.mu.Lock()
		delete(h.ready, ch)
		h.mu.Unlock()
	}
}

// NotifyChange wakes the request's subscribers.
func (h *Hub) NotifyChange(requestID string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for ch := range h.changes[requestID] {
		signal(ch)
	}
	for c := range h.calls[requestID] {
		c.wake()
	}
}

// NotifyReady wakes the ready subscribers.
func (h *Hub) NotifyReady() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for ch := range h.ready {
		signal(ch)
	}
}

// Broadcast wakes every subscriber, for when notifications may have been lost.
func (h *Hub) Broadcast() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, subs := range h.changes {
		for ch := range subs {
			signal(ch)
		}
	}
	for _, subs := range h.calls {
		for c := range subs {
			c.wake()
		}
	}
	for ch := range h.ready {
		signal(ch)
	}
}

func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// Waiting reports how many subscribers wait on changes to a request, by
// channel or by function.
func (h *Hub) Waiting(requestID string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.changes[requestID]) + len(h.calls[requestID])
}
